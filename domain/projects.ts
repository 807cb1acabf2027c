/** Projects: the system project, default resources, each project's admin client, and the project rules. */
import { type Sql, transaction } from "../db/connection.ts";
import { grantDefaultPermissions, insertClient } from "../db/clients.ts";
import type { Page, Sort } from "../db/lists.ts";
import {
  findProject,
  insertProject,
  listProjects as listProjectRows,
  type ProjectRow,
  type ProjectSortField,
  updateProject as updateProjectRow,
} from "../db/projects.ts";
import { insertResources, type NewResource } from "../db/resources.ts";
import { AppError } from "./errors.ts";
import { newId, newSecret } from "./ids.ts";
import { hashSecret } from "./secrets.ts";
import type { Principal } from "./gate.ts";

export const SYSTEM_PROJECT_ID = "system";
export const SYSTEM_ADMIN_CLIENT_ID = "system-admin";

export type ProjectRecord = {
  id: string;
  name: string;
  description: string | null;
  redirect_uris: string[];
  is_active: boolean;
  is_system: boolean;
  created_at: string;
  updated_at: string;
};

export type AdminClientCredentials = { client_id: string; client_secret: string };

export function projectRecord(row: ProjectRow): ProjectRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    redirect_uris: row.redirect_uris,
    is_active: row.is_active,
    is_system: row.id === SYSTEM_PROJECT_ID,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const DEFAULTS: { code: string; name: string; noun: string; actions: string[] }[] = [
  {
    code: "resources",
    name: "Resources",
    noun: "resources and their permissions",
    actions: ["read", "create", "update"],
  },
  { code: "roles", name: "Roles", noun: "roles", actions: ["read", "create", "update"] },
  { code: "users", name: "Users", noun: "users", actions: ["read", "create", "update"] },
  { code: "clients", name: "Clients", noun: "machine clients", actions: ["read", "create", "update"] },
  { code: "projects", name: "Projects", noun: "projects", actions: ["read", "update"] },
];

const VERBS: Record<string, string> = { read: "Read", create: "Create", update: "Update" };

/** The read-only resources every project starts with; the system project may also create projects. */
export function defaultResources(isSystem: boolean): NewResource[] {
  return DEFAULTS.map((d) => {
    const actions = isSystem && d.code === "projects" ? ["read", "create", "update"] : d.actions;
    return {
      id: newId(),
      name: d.name,
      code: d.code,
      description: `Administration of ${d.noun} (default resource)`,
      is_default: true,
      permissions: actions.map((a) => ({
        id: newId(),
        name: `${VERBS[a]} ${d.code}`,
        code: a,
        description: `${VERBS[a]} ${d.noun} of the project`,
      })),
    };
  });
}

export type ProjectInput = {
  name: string;
  description?: string | null;
  redirect_uris?: string[];
  is_active?: boolean;
};

/** Creates a project, its default resources and its admin client in one transaction. */
export async function createProject(
  sql: Sql,
  input: ProjectInput,
  opts: { id?: string; adminClientId?: string; adminSecret?: string } = {},
): Promise<ProjectRecord & { admin_client: AdminClientCredentials }> {
  const id = opts.id ?? newId();
  const clientId = opts.adminClientId ?? newId();
  const secret = opts.adminSecret ?? newSecret();
  const row = await transaction(sql, async (tx) => {
    const project = await insertProject(tx, {
      id,
      name: input.name,
      description: input.description ?? null,
      redirect_uris: input.redirect_uris ?? [],
      is_active: input.is_active ?? true,
    });
    await insertResources(tx, id, defaultResources(id === SYSTEM_PROJECT_ID));
    await insertClient(tx, {
      project_id: id,
      id: clientId,
      name: "Admin client",
      description: "Created with the project; holds every default permission",
      secret_hash: hashSecret(secret),
      is_admin: true,
    });
    await grantDefaultPermissions(tx, id, clientId);
    return project;
  });
  return { ...projectRecord(row), admin_client: { client_id: clientId, client_secret: secret } };
}

export async function getProject(sql: Sql, id: string): Promise<ProjectRecord> {
  const row = await findProject(sql, id);
  if (!row) throw new AppError("project_not_found");
  return projectRecord(row);
}

/**
 * PUT semantics of the whole API: `name` is required; an omitted optional field keeps its value, and null
 * (or an empty string) clears `description`. Only a system-project token may change `is_active`, and the
 * system project cannot be deactivated.
 */
export async function updateProject(
  sql: Sql,
  principal: Principal,
  id: string,
  input: ProjectInput,
): Promise<ProjectRecord> {
  return await transaction(sql, async (tx) => {
    const current = await tx<
      ProjectRow[]
    >`select id, name, description, redirect_uris, is_active, created_at, updated_at
      from projects where id = ${id} for update`.then((r) => r[0]);
    if (!current) throw new AppError("project_not_found");
    const isActive = input.is_active ?? current.is_active;
    if (isActive !== current.is_active) {
      if (!principal.isSystem) {
        throw new AppError("insufficient_permission", {
          description: "only a system-project token may activate or deactivate a project",
        });
      }
      if (id === SYSTEM_PROJECT_ID) {
        throw new AppError("invalid_params", {
          details: [{ field: "is_active", issue: "the system project cannot be deactivated" }],
        });
      }
    }
    const row = await updateProjectRow(tx, id, {
      name: input.name,
      description: input.description === undefined ? current.description : input.description || null,
      redirect_uris: input.redirect_uris ?? current.redirect_uris,
      is_active: isActive,
    });
    return projectRecord(row!);
  });
}

export async function listProjects(
  sql: Sql,
  q: Page & Sort<ProjectSortField> & { search?: string; is_active?: boolean },
): Promise<{ data: ProjectRecord[]; pagination: Page & { total: number } }> {
  const { rows, total } = await listProjectRows(sql, q);
  return {
    data: rows.map(projectRecord),
    pagination: { page_num: q.page_num, page_size: q.page_size, total },
  };
}

/** `https`, or `http` on a loopback host; absolute, without a fragment or credentials. */
export function redirectUriIssue(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "must be an absolute URI";
  }
  if (uri.includes("#")) return "must not contain a fragment";
  // The answer's own parameters would be duplicated, and a client library might read the wrong one.
  for (const name of ["code", "state", "iss", "error", "error_description", "error_uri"]) {
    if (url.searchParams.has(name)) return `must not have a query parameter named ${name}`;
  }
  // Matching is byte for byte, so the stored string must be exactly what a URL parser reads back.
  if (url.href !== uri) return `must be written in canonical form: ${JSON.stringify(url.href)}`;
  if (url.username || url.password) return "must not contain credentials";
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:" && loopback) return null;
  return "must use https (http is allowed only on localhost, 127.0.0.1 and [::1])";
}
