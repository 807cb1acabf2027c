/**
 * The default resources: read-only resources whose permissions drive the admin API. Every project has them
 * (some only in the system project), its admin client holds all of them, and they are brought up to date in
 * every existing project at start, so that a new version's defaults reach projects created before it.
 */
import type { Sql } from "../../db/connection.ts";
import {
  grantAdminClientsDefaults,
  grantRolesDefaults,
  insertMissingDefault,
  type NewResource,
  rolesHoldingEveryDefault,
} from "../../db/authz/resources.ts";
import { newId } from "../shared/ids.ts";

type Default = {
  code: string;
  name: string;
  /** What the resource administers, for the descriptions. */
  noun: string;
  /** Permissions in every project that has the resource. */
  actions: readonly string[];
  /** Permissions only the system project's resource has. */
  systemActions?: readonly string[];
  /** Only the system project has the resource at all. */
  systemOnly?: boolean;
};

export const DEFAULTS = [
  {
    code: "resources",
    name: "Resources",
    noun: "resources and their permissions",
    actions: ["read", "create", "update", "delete"],
  },
  { code: "roles", name: "Roles", noun: "roles", actions: ["read", "create", "update", "delete"] },
  {
    code: "users",
    name: "Users",
    noun: "users",
    actions: ["read", "create", "update", "delete", "export_secrets"],
  },
  {
    code: "clients",
    name: "Clients",
    noun: "machine clients",
    actions: ["read", "create", "update", "delete"],
  },
  {
    code: "projects",
    name: "Projects",
    noun: "projects",
    actions: ["read", "update"],
    systemActions: ["create"],
  },
  { code: "keys", name: "Keys", noun: "the signing keys", actions: ["read", "update"], systemOnly: true },
  { code: "audit", name: "Audit", noun: "the audit trail", actions: ["read"] },
  { code: "webhooks", name: "Webhooks", noun: "webhooks", actions: ["read", "create", "update", "delete"] },
  {
    code: "identity_providers",
    name: "Identity providers",
    noun: "upstream identity providers",
    actions: ["read", "create", "update", "delete"],
  },
  {
    code: "objects",
    name: "Objects",
    noun: "the objects of resources",
    actions: ["read", "create", "update", "delete"],
  },
  { code: "grants", name: "Grants", noun: "roles granted on objects", actions: ["read", "create", "delete"] },
  {
    code: "organizations",
    name: "Organizations",
    noun: "organizations and their members",
    actions: ["read", "create", "update", "delete"],
  },
  { code: "scim", name: "SCIM", noun: "users and groups through SCIM 2.0", actions: ["read", "write"] },
  {
    code: "access",
    name: "Access",
    noun: "the project's access decisions (AuthZEN)",
    actions: ["evaluate", "search"],
  },
] as const satisfies readonly Default[];

type Defaults = typeof DEFAULTS[number];
/** `<resource code>:<permission code>` of a default resource, e.g. `users:create`. */
export type AdminPermission = {
  [D in Defaults as D["code"]]: `${D["code"]}:${
    | D["actions"][number]
    | (D extends { systemActions: readonly string[] } ? D["systemActions"][number] : never)}`;
}[Defaults["code"]];

const VERBS: Record<string, string> = {
  read: "Read",
  create: "Create",
  update: "Update",
  delete: "Delete",
  evaluate: "Evaluate",
  search: "Search",
  write: "Write",
  export_secrets: "Export the secrets of",
};

function actionsOf(d: Default, isSystem: boolean): readonly string[] {
  return isSystem && d.systemActions ? [...d.actions, ...d.systemActions] : d.actions;
}

const describe = (d: Default) => `Administration of ${d.noun} (default resource)`;
const permissionName = (d: Default, action: string) => `${VERBS[action] ?? action} ${d.code}`;
/** What each permission of `access` allows: subject and resource search reveal who holds what. */
const ACCESS: Record<string, string> = {
  evaluate: "Ask for access decisions about the project's users and clients, and search a subject's actions",
  search: "Search who may do an action, and on which objects (reveals who holds what)",
};
/** What the permissions whose verb says too little allow. */
const SPECIAL: Record<string, string> = {
  "users:export_secrets":
    "Export the users' password hashes (GET …/users/export?include_password_hashes=true)",
  "scim:read":
    "Read the project's users and groups (organizations) through SCIM 2.0 (/scim/v2/{project_id}/)",
  "scim:write": "Create, change (email included, as verified), deactivate and delete users and groups " +
    "(organizations, their members) through SCIM 2.0: the power of users:create, users:update, users:delete " +
    "and organizations' permissions, on the users and roles the client covers",
};
const permissionDescription = (d: Default, action: string) =>
  d.code === "access"
    ? ACCESS[action]
    : SPECIAL[`${d.code}:${action}`] ?? `${VERBS[action] ?? action} ${d.noun} of the project`;

/**
 * The default resources of a project other than the system project, as the API's descriptions list them:
 * "`resources` (read, create, update, delete), …, `webhooks` (…)". Made from DEFAULTS, so it never goes stale.
 */
export function listDefaultResources(): string {
  return (DEFAULTS as readonly Default[]).filter((d) => !d.systemOnly)
    .map((d) => `\`${d.code}\` (${d.actions.join(", ")})`).join(", ");
}

/** The default resources a new project starts with. */
export function defaultResources(isSystem: boolean): NewResource[] {
  return (DEFAULTS as readonly Default[]).filter((d) => isSystem || !d.systemOnly).map((d) => ({
    id: newId(),
    name: d.name,
    code: d.code,
    description: describe(d),
    is_default: true,
    permissions: actionsOf(d, isSystem).map((a) => ({
      id: newId(),
      name: permissionName(d, a),
      code: a,
      description: permissionDescription(d, a),
    })),
  }));
}

/**
 * Adds the default resources and permissions that existing projects lack, and grants them to each project's
 * admin client. Idempotent; run at start under the bootstrap lock. Returns the projects where a resource of
 * the project's own already has a default's code (the default is then left out there).
 */
export async function syncDefaultResources(sql: Sql, systemProjectId: string): Promise<string[]> {
  const clashes = new Set<string>();
  // The operators' roles (every default permission of the system project) keep holding every one: a version
  // that adds a default permission must not leave the service without operators after an upgrade.
  const operatorRoles = await rolesHoldingEveryDefault(sql, systemProjectId);
  for (const d of DEFAULTS as readonly Default[]) {
    const found = await insertMissingDefault(sql, {
      code: d.code,
      name: d.name,
      description: describe(d),
      onlyProject: d.systemOnly ? systemProjectId : null,
      permissions: d.actions.map((a) => ({
        code: a,
        name: permissionName(d, a),
        description: permissionDescription(d, a),
      })),
      systemPermissions: (d.systemActions ?? []).map((a) => ({
        code: a,
        name: permissionName(d, a),
        description: permissionDescription(d, a),
      })),
      systemProjectId,
    });
    for (const p of found) clashes.add(p);
  }
  await grantRolesDefaults(sql, systemProjectId, operatorRoles);
  await grantAdminClientsDefaults(sql);
  return [...clashes];
}
