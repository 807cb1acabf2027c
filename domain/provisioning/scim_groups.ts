/**
 * SCIM Groups (RFC 7643 §4.2) over the project's organizations: `displayName` is the organization's name,
 * `externalId` its property `scim_external_id`, `members` its members (users). Changes go through the
 * organizations' own functions (domain/organizations/), with their least privilege and audit events. A member
 * added through SCIM gets the organization's `default_role_ids`, as a member joining by domain or just in time
 * does; the caller must cover those roles (403 otherwise).
 */
import { retryRead, type Sql, transaction, type Tx } from "../../db/connection.ts";
import { findOrganization, touchOrganization } from "../../db/organizations/organizations.ts";
import {
  deleteMembers,
  EXTERNAL_ID_PROPERTY,
  findScimGroup,
  insertMembers,
  insertOrganizationEvents,
  listScimGroups,
  lockMembers,
  lockUsersShared,
  membersOf,
  type ScimGroupRow,
  type ScimMemberRow,
} from "../../db/provisioning/scim_groups.ts";
import { auditEvents } from "../../telemetry/families.ts";
import { sourceOf } from "../audit/audit.ts";
import { organizationRoles, requireGivable, requireRemovable } from "../organizations/members.ts";
import { newId } from "../shared/ids.ts";
import {
  createOrganization,
  deleteOrganization,
  updateOrganization,
} from "../organizations/organizations.ts";
import type { Principal } from "../shared/principal.ts";
import { invalidValue, ScimError } from "./scim_errors.ts";
import {
  applySteps,
  canonicalBody,
  type Json,
  MAX_MEMBER_CHANGES,
  parsePatch,
  requireObject,
  requireSchema,
} from "./scim_patch.ts";
import { type ListParams, listQuery, project } from "./scim_query.ts";
import { GROUP_SCHEMA, LIST_SCHEMA } from "./scim_schema.ts";
import { requireVersion, type Versioned } from "./scim_versions.ts";

export { MAX_MEMBER_CHANGES };

function groupResource(base: string, row: ScimGroupRow, members: ScimMemberRow[] | undefined): Json {
  return {
    schemas: [GROUP_SCHEMA],
    id: row.id,
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
    displayName: row.name,
    ...(members
      ? {
        members: members.map((m) => ({
          value: m.user_id,
          display: m.display_name,
          type: "User",
          $ref: `${base}/Users/${m.user_id}`,
        })),
      }
      : {}),
    meta: {
      resourceType: "Group",
      created: row.created_at,
      lastModified: row.updated_at,
      location: `${base}/Groups/${row.id}`,
      version: etagOf(row),
    },
  };
}

const etagOf = (row: { version: string }) => `W/"${row.version}"`;
const notFound = (id: string) => new ScimError(404, undefined, `no group ${id} in this project`);

/** Whether the answer needs the members (they may be many: Entra ID asks with excludedAttributes=members). */
function wantsMembers(q: { attributes?: string[]; excludedAttributes?: string[] }): boolean {
  const named = (list: string[] | undefined) =>
    list?.some((n) => /^(urn:.*:Group:)?members(\..*)?$/i.test(n));
  if (q.attributes) return named(q.attributes) ?? false;
  return !(q.excludedAttributes?.some((n) => /^(urn:.*:Group:)?members$/i.test(n)) ?? false);
}

export async function listGroups(
  sql: Sql,
  projectId: string,
  base: string,
  params: ListParams,
): Promise<Json> {
  const q = listQuery("Group", params);
  const page = await retryRead(() => listScimGroups(sql, projectId, q));
  const members = wantsMembers(q)
    ? await retryRead(() => membersOf(sql, projectId, page.rows.map((r) => r.id)))
    : undefined;
  return {
    schemas: [LIST_SCHEMA],
    totalResults: page.total,
    startIndex: q.startIndex,
    itemsPerPage: page.rows.length,
    Resources: page.rows.map((row) =>
      project("Group", groupResource(base, row, members?.filter((m) => m.organization_id === row.id)), q)
    ),
  };
}

export async function getGroup(
  sql: Sql,
  projectId: string,
  base: string,
  id: string,
  params: ListParams,
): Promise<Versioned> {
  const q = listQuery("Group", {
    attributes: params.attributes,
    excludedAttributes: params.excludedAttributes,
  });
  const row = await retryRead(() => findScimGroup(sql, projectId, id));
  if (!row) throw notFound(id);
  const members = wantsMembers(q) ? await retryRead(() => membersOf(sql, projectId, [id])) : undefined;
  return { resource: project("Group", groupResource(base, row, members), q), etag: etagOf(row) };
}

type GroupInput = { name: string; externalId: string | null; members: string[] };

function readGroup(doc: Json): GroupInput {
  const name = doc.displayName;
  if (typeof name !== "string" || name.trim() === "") throw invalidValue("displayName", "is required");
  if (name.trim().length > 50) throw invalidValue("displayName", "at most 50 characters");
  const ext = doc.externalId;
  if (ext !== undefined && ext !== null && (typeof ext !== "string" || ext.length > 100)) {
    throw invalidValue("externalId", "a string of at most 100 characters");
  }
  const list = doc.members ?? [];
  if (!Array.isArray(list)) throw invalidValue("members", "must be a list");
  const members = list.map((m, i) => {
    const value = m !== null && typeof m === "object" ? (m as Json).value : undefined;
    if (typeof value !== "string" || value === "" || value.length > 100) {
      throw invalidValue(`members[${i}].value`, "must be a user's id");
    }
    return value;
  });
  return {
    name: name.trim(),
    externalId: typeof ext === "string" && ext.trim() !== "" ? ext : null,
    members: [...new Set(members)],
  };
}

const tooManyChanges = () =>
  new ScimError(400, "tooMany", `at most ${MAX_MEMBER_CHANGES} members change in one request`);

/**
 * These users made members with the organization's default roles, set-based (a few statements whatever their
 * number), with one `organization.member_added` event each, as addMember records it. The roles are checked
 * once: organization roles of the project, held `for share`, each covered by the caller (403 otherwise); the
 * users must be the project's (400 `invalidValue` naming those that are not), held `for key share`.
 */
async function addMembers(
  tx: Tx,
  caller: Principal,
  projectId: string,
  organizationId: string,
  defaultRoleIds: string[],
  userIds: string[],
): Promise<void> {
  if (userIds.length === 0) return;
  if (userIds.length > MAX_MEMBER_CHANGES) throw tooManyChanges();
  const found = await lockUsersShared(tx, projectId, userIds);
  const missing = userIds.filter((id) => !found.has(id));
  if (missing.length > 0) {
    throw invalidValue("members", `no user of this project has the id ${missing.slice(0, 5).join(", ")}`);
  }
  const roleIds = await organizationRoles(tx, projectId, defaultRoleIds, "default_role_ids");
  await requireGivable(tx, caller, projectId, roleIds, defaultRoleIds, "default_role_ids");
  const inserted = await insertMembers(tx, projectId, organizationId, userIds, roleIds);
  const roles = [...roleIds].sort();
  await insertOrganizationEvents(
    tx,
    projectId,
    organizationId,
    "organization.member_added",
    eventSource(caller),
    inserted.map((userId) => ({
      id: newId(),
      details: JSON.stringify({ user_id: userId, role_ids: roles }),
    })),
  );
  auditEvents.child("organization.member_added").value += inserted.length;
}

/**
 * These members removed, set-based, with one `organization.member_removed` event each. The caller must cover
 * every role they hold here, each distinct role checked once (403 otherwise), as removeMember asks.
 */
async function removeMembers(
  tx: Tx,
  caller: Principal,
  projectId: string,
  organizationId: string,
  userIds: string[],
): Promise<void> {
  if (userIds.length === 0) return;
  if (userIds.length > MAX_MEMBER_CHANGES) throw tooManyChanges();
  const members = await lockMembers(tx, projectId, organizationId, userIds);
  await requireRemovable(tx, caller, projectId, [...new Set(members.flatMap((m) => m.role_ids))].sort());
  await deleteMembers(tx, projectId, organizationId, members.map((m) => m.user_id));
  await insertOrganizationEvents(
    tx,
    projectId,
    organizationId,
    "organization.member_removed",
    eventSource(caller),
    members.map((m) => ({
      id: newId(),
      details: JSON.stringify({ user_id: m.user_id, role_ids: m.role_ids }),
    })),
  );
  auditEvents.child("organization.member_removed").value += members.length;
}

function eventSource(caller: Principal) {
  const { actor, request } = sourceOf(caller);
  return {
    actor_type: actor.type,
    actor_id: actor.id,
    actor_token_jti: actor.token_jti,
    request_id: request?.id ?? null,
    request_ip: request?.ip ?? null,
    request_user_agent: request?.user_agent ?? null,
  };
}

/** POST /Groups: an organization, with its members (no roles: a new organization has no default roles). */
export async function createScimGroup(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  body: unknown,
): Promise<Versioned> {
  const doc = canonicalBody("Group", requireObject(body));
  requireSchema(doc, GROUP_SCHEMA);
  const input = readGroup(doc);
  if (input.members.length > MAX_MEMBER_CHANGES) throw tooManyChanges();
  return await transaction(sql, async (tx) => {
    const org = await createOrganization(tx, caller, projectId, {
      name: input.name,
      properties: input.externalId === null ? {} : { [EXTERNAL_ID_PROPERTY]: input.externalId },
    });
    await addMembers(tx, caller, projectId, org.id, org.default_role_ids, input.members);
    const row = (await findScimGroup(tx, projectId, org.id))!;
    return {
      resource: groupResource(base, row, await membersOf(tx, projectId, [org.id])),
      etag: etagOf(row),
    };
  });
}

/** The change a replaced representation makes: the organization's fields, then members added and removed. */
async function change(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  id: string,
  ifMatch: string | undefined,
  next: (current: Json) => Json,
): Promise<Versioned> {
  return await transaction(sql, async (tx) => {
    const org = await findOrganization(tx, projectId, id, { lock: "update" });
    if (!org) throw notFound(id);
    const row = (await findScimGroup(tx, projectId, id))!;
    requireVersion(ifMatch, etagOf(row));
    const members = await membersOf(tx, projectId, [id]);
    const { meta: _, ...current } = groupResource(base, row, members);
    const doc = next(current);
    if (doc.id !== undefined && doc.id !== id) throw new ScimError(400, "mutability", "id is read-only");
    const input = readGroup(doc);
    const before = new Set(members.map((m) => m.user_id));
    const added = input.members.filter((m) => !before.has(m));
    const after = new Set(input.members);
    const removed = [...before].filter((m) => !after.has(m));
    if (added.length > MAX_MEMBER_CHANGES || removed.length > MAX_MEMBER_CHANGES) throw tooManyChanges();
    if (input.name !== row.name || input.externalId !== row.external_id) {
      const { [EXTERNAL_ID_PROPERTY]: _old, ...others } = org.properties as Record<string, unknown>;
      await updateOrganization(tx, caller, projectId, id, {
        name: input.name,
        properties: (input.externalId === null
          ? others
          : { ...others, [EXTERNAL_ID_PROPERTY]: input.externalId }) as never,
      });
    }
    await addMembers(tx, caller, projectId, id, org.default_role_ids, added);
    await removeMembers(tx, caller, projectId, id, removed);
    // A removal leaves no member row behind: the organization's own time says the group changed.
    if (removed.length > 0) await touchOrganization(tx, projectId, id);
    const updated = (await findScimGroup(tx, projectId, id))!;
    return {
      resource: groupResource(base, updated, await membersOf(tx, projectId, [id])),
      etag: etagOf(updated),
    };
  });
}

/** PUT /Groups/{id}: displayName, externalId and members replaced (omitted members: none). */
export async function replaceScimGroup(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  id: string,
  body: unknown,
  ifMatch: string | undefined,
): Promise<Versioned> {
  const doc = canonicalBody("Group", requireObject(body));
  requireSchema(doc, GROUP_SCHEMA);
  return await change(sql, caller, projectId, base, id, ifMatch, () => doc);
}

/** PATCH /Groups/{id}: Entra ID's and Okta's member additions, removals and replacements, renames. */
export async function patchScimGroup(
  sql: Sql,
  caller: Principal,
  projectId: string,
  base: string,
  id: string,
  body: unknown,
  ifMatch: string | undefined,
): Promise<Versioned> {
  const steps = parsePatch("Group", body); // read and sized whole before the organization is locked
  return await change(
    sql,
    caller,
    projectId,
    base,
    id,
    ifMatch,
    (current) => applySteps("Group", current, steps),
  );
}

export async function deleteScimGroup(
  sql: Sql,
  caller: Principal,
  projectId: string,
  id: string,
  ifMatch: string | undefined,
): Promise<void> {
  await transaction(sql, async (tx) => {
    // Held as change() holds it: the version compared is the one deleted.
    if (!(await findOrganization(tx, projectId, id, { lock: "update" }))) throw notFound(id);
    const row = (await findScimGroup(tx, projectId, id))!;
    requireVersion(ifMatch, etagOf(row));
    await deleteOrganization(tx, caller, projectId, id);
  });
}
