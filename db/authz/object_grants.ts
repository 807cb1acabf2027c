/** Queries on roles granted on objects (`object_grants`, migration 0012); a row is the API's `Grant`. */
import type { Grant, GrantListQuery } from "../../openapi/objects.ts";
import { fixed, isoText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { type PageStatement, type Params } from "../lists.ts";

/** A grant row as the API's JSON object, from `object_grants g` joined to its resource `r`. */
const JSON_ROW = `json_build_object(
    'id', g.id, 'project_id', g.project_id,
    'subject', json_build_object('type', case when g.user_id is null then 'client' else 'user' end,
                                 'id', g.subject_id),
    'role_id', g.role_id,
    'object', json_build_object('type', r.code, 'id', g.object_id, 'resource_id', g.resource_id),
    'expires_at', ${isoText("g.expires_at")},
    'is_expired', coalesce(g.expires_at <= now(), false),
    'condition', g.condition,
    'created_at', ${isoText("g.created_at")},
    'created_by', json_build_object('type', g.created_by_type, 'id', g.created_by_id))`;

/** The resource of the project with this code (case-insensitive), for a grant's `object.type`. */
export async function findResourceByCode(
  sql: Sql,
  projectId: string,
  code: string,
): Promise<{ id: string; code: string } | undefined> {
  const [row] = await sql<{ id: string; code: string }[]>`
    select id, code from resources where project_id = ${projectId} and lower(code) = lower(${code})`;
  return row;
}

/** The user (by id, else by external id) or the client of the project; its id, or undefined. */
export async function findSubject(
  sql: Sql,
  projectId: string,
  type: "user" | "client",
  id: string,
): Promise<string | undefined> {
  const rows = type === "user"
    ? await sql<{ id: string }[]>`
      select id from users where project_id = ${projectId} and (id = ${id} or external_user_id = ${id})
      order by id = ${id} desc limit 1 for share`
    : await sql<{ id: string }[]>`
      select id from clients where project_id = ${projectId} and id = ${id} for share`;
  return rows[0]?.id;
}

/** The permission ids the role holds on this resource (what a grant of it on an object gives). */
export async function rolePermissionsOn(
  sql: Sql,
  roleId: string,
  resourceId: string,
): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select pe.id from role_permissions rp join permissions pe on pe.id = rp.permission_id
    where rp.role_id = ${roleId} and pe.resource_id = ${resourceId} order by pe.id`;
  return rows.map((r) => r.id);
}

/** Inserts a grant; `expiresAt` must be after the database's now, else nothing is written (returns false). */
export async function insertGrant(
  sql: Sql,
  g: {
    project_id: string;
    id: string;
    user_id: string | null;
    client_id: string | null;
    role_id: string;
    resource_id: string;
    object_id: string;
    expires_at: string | null;
    condition: string | null;
    created_by_type: string;
    created_by_id: string | null;
  },
): Promise<boolean> {
  const rows = await sql`
    insert into object_grants (project_id, id, user_id, client_id, role_id, resource_id, object_id, expires_at,
                               condition, created_by_type, created_by_id)
    select ${g.project_id}, ${g.id}, ${g.user_id}, ${g.client_id}, ${g.role_id}, ${g.resource_id},
           ${g.object_id}, ${g.expires_at}::timestamptz, ${g.condition}, ${g.created_by_type}, ${g.created_by_id}
    where ${g.expires_at}::timestamptz is null or ${g.expires_at}::timestamptz > now()
    returning id`;
  return rows.length === 1;
}

/** One grant; `lock` holds it for the rest of the transaction. */
export async function findGrant(
  sql: Sql,
  projectId: string,
  grantId: string,
  opts: { lock?: boolean } = {},
): Promise<Grant | undefined> {
  const [row] = await sql<{ g: Grant }[]>`
    select ${fixed(sql, JSON_ROW)} as g
    from object_grants g join resources r on r.id = g.resource_id
    where g.project_id = ${projectId} and g.id = ${grantId}
    ${opts.lock ? sql`for update of g` : sql``}`;
  return row?.g;
}

export async function deleteGrantRow(sql: Sql, projectId: string, grantId: string): Promise<void> {
  await sql`delete from object_grants where project_id = ${projectId} and id = ${grantId}`;
}

/**
 * A page of grants as the answer's JSON text, newest first by default; filters as the query gives them. The
 * subject filter takes a user's or client's id; the object filter a resource code and an object id.
 */
export function grantListStatement(projectId: string, q: GrantListQuery): PageStatement {
  const params: Params = [projectId];
  let where = "where g.project_id = $1";
  if (q.subject_id !== undefined) where += ` and g.subject_id = $${params.push(q.subject_id)}`;
  if (q.subject_type === "user") where += " and g.user_id is not null";
  if (q.subject_type === "client") where += " and g.client_id is not null";
  if (q.role_id !== undefined) where += ` and g.role_id = $${params.push(q.role_id)}`;
  if (q.object_type !== undefined) where += ` and lower(r.code) = lower($${params.push(q.object_type)})`;
  if (q.object_id !== undefined) where += ` and g.object_id = $${params.push(q.object_id)}`;
  if (!q.include_expired) where += " and (g.expires_at is null or g.expires_at > now())";
  const source = `from object_grants g join resources r on r.id = g.resource_id ${where}`;
  const dir = q.sort_dir === "asc" ? "asc" : "desc";
  const sortBy = q.sort_by === "expires_at" ? "g.expires_at" : "g.created_at";
  const n = params.length;
  const [size, num] = [`$${n + 1}::int8`, `$${n + 2}::int8`];
  const text = `select '{"data":[' || coalesce((
      select string_agg(x.j::text, ',') from (
        select ${JSON_ROW} as j ${source}
        order by ${sortBy} ${dir} nulls last, g.id ${dir}
        limit ${size} offset (${num} - 1) * ${size}) x), '')
    || '],"pagination":{"page_num":' || ${num} || ',"page_size":' || ${size}
    || ',"total":' || (select count(*) ${source}) || '}}' as page`;
  return { text, params: [...params, q.page_size, q.page_num] };
}

export type ExpiredGrant = {
  project_id: string;
  id: string;
  subject_type: "user" | "client";
  subject_id: string;
  role_id: string;
  resource_id: string;
  object_id: string;
  expires_at: string;
  condition: string | null;
};

/** Deletes up to `limit` grants that expired more than `retentionDays` ago (oldest first); what went. */
export async function deleteExpiredGrants(
  sql: Sql,
  retentionDays: number,
  limit: number,
): Promise<ExpiredGrant[]> {
  return await sql<ExpiredGrant[]>`
    delete from object_grants g
    where g.id in (select id from object_grants
                   where expires_at < now() - make_interval(days => ${retentionDays})
                   order by expires_at limit ${limit} for update skip locked)
    returning g.project_id, g.id, case when g.user_id is null then 'client' else 'user' end as subject_type,
              g.subject_id, g.role_id, g.resource_id, g.object_id,
              ${fixed(sql, isoText("g.expires_at"))} as expires_at, g.condition`;
}

export type ReachingGrant = {
  id: string;
  subject: { type: "user" | "client"; id: string };
  role_id: string;
  object_id: string;
};

/**
 * The live grants that would reach `objectId` (and its subtree) under `parentId` and do not reach it now: those
 * on the new parent or one of its ancestors, but on none of the object's current ancestors. Oldest first.
 */
export async function grantsNewlyReaching(
  sql: Sql,
  resourceId: string,
  objectId: string,
  parentId: string,
): Promise<ReachingGrant[]> {
  return await sql<ReachingGrant[]>`
    select g.id, json_build_object('type', case when g.user_id is null then 'client' else 'user' end,
                                   'id', g.subject_id) as subject,
           g.role_id, g.object_id
    from object_grants g
    where g.resource_id = ${resourceId} and (g.expires_at is null or g.expires_at > now())
      and g.object_id in (select ancestor_id from object_paths
                          where resource_id = ${resourceId} and object_id = ${parentId})
      and g.object_id not in (select ancestor_id from object_paths
                              where resource_id = ${resourceId} and object_id = ${objectId})
    order by g.created_at, g.id`;
}

/** A grant ended with what it was on or for, as its `grant.deleted` event tells it. */
export type EndedGrant = {
  id: string;
  subject: { type: "user" | "client"; id: string };
  role_id: string;
  resource_id: string;
  object_id: string;
  expires_at: string | null;
  condition: string | null;
};

/** Whose grants end: a user's, a client's, a role's, a resource's, or those on an object's subtree. */
export type GrantsOf =
  | { userId: string }
  | { clientId: string }
  | { roleId: string }
  | { resourceId: string }
  | { resourceId: string; subtreeOf: string };

/**
 * Deletes the grants that deleting this user, client, role, resource or subtree would cascade to, first and
 * explicitly, so that each can be recorded; what went, oldest first.
 */
export async function deleteGrantsOf(sql: Sql, projectId: string, of: GrantsOf): Promise<EndedGrant[]> {
  const which = "userId" in of
    ? sql`g.user_id = ${of.userId}`
    : "clientId" in of
    ? sql`g.client_id = ${of.clientId}`
    : "roleId" in of
    ? sql`g.role_id = ${of.roleId}`
    : "subtreeOf" in of
    ? sql`g.resource_id = ${of.resourceId} and g.object_id in (
        select object_id from object_paths where resource_id = ${of.resourceId} and ancestor_id = ${of.subtreeOf})`
    : sql`g.resource_id = ${of.resourceId}`;
  const rows = await sql<(EndedGrant & { created_at: string })[]>`
    delete from object_grants g where g.project_id = ${projectId} and ${which}
    returning g.id, json_build_object('type', case when g.user_id is null then 'client' else 'user' end,
                                      'id', g.subject_id) as subject,
              g.role_id, g.resource_id, g.object_id, ${fixed(sql, isoText("g.expires_at"))} as expires_at,
              g.condition, ${fixed(sql, isoText("g.created_at"))} as created_at`;
  return rows.sort((a, b) =>
    a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1
  )
    .map(({ created_at: _, ...g }) => g);
}
