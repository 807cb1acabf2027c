/**
 * Organizations as SCIM Groups read them: the whitelist of filterable columns (a member's through `exists`), a
 * page of organizations and their members. A group's `externalId` is the organization's property
 * `scim_external_id`; its version changes with the organization and with its member list.
 */
import type { Sql } from "../connection.ts";
import { isoText } from "../columns.ts";
import { type Cond, scimPage, type Table, whereOf } from "./scim_sql.ts";
import type { EventSource } from "./users_import.ts";

export type ScimGroupRow = {
  id: string;
  name: string;
  external_id: string | null;
  default_role_ids: string[];
  created_at: string;
  updated_at: string;
  version: string;
};

export type ScimMemberRow = { organization_id: string; user_id: string; display_name: string };

/** The property of an organization that holds its group's externalId. */
export const EXTERNAL_ID_PROPERTY = "scim_external_id";

const LAST_MODIFIED = `greatest(o.updated_at, (select max(lm.updated_at) from organization_members lm
  where lm.project_id = o.project_id and lm.organization_id = o.id))`;

export const GROUP_TABLE: Table = {
  columns: {
    id: "o.id",
    displayName: "o.name",
    externalId: `(o.properties->>'${EXTERNAL_ID_PROPERTY}')`,
    created: "o.created_at",
    lastModified: LAST_MODIFIED,
  },
  member: {
    columns: { value: "m.user_id", display: "mu.display_name", type: "'User'" },
    exists: (inner) =>
      `exists (select 1 from organization_members m
        join users mu on mu.project_id = m.project_id and mu.id = m.user_id
        where m.project_id = o.project_id and m.organization_id = o.id and ${inner})`,
  },
};

const SELECT = `o.id, o.name, o.properties->>'${EXTERNAL_ID_PROPERTY}' as external_id,
  array(select r.role_id from organization_default_roles r where r.organization_id = o.id
        order by r.role_id collate "C") as default_role_ids,
  ${isoText("o.created_at")} as created_at,
  to_char(${LAST_MODIFIED} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at,
  md5((extract(epoch from o.updated_at) * 1000000)::bigint::text || ':' || coalesce((
    select string_agg(vm.user_id, ',' order by vm.user_id collate "C") from organization_members vm
    where vm.project_id = o.project_id and vm.organization_id = o.id), '')) as version`;

export async function listScimGroups(
  sql: Sql,
  projectId: string,
  q: { cond: Cond; sort: { column: string; descending: boolean } | null; offset: number; count: number },
): Promise<{ total: number; rows: ScimGroupRow[] }> {
  const params: unknown[] = [projectId];
  const where = `o.project_id = $1 and ${whereOf(q.cond, GROUP_TABLE, params)}`;
  const dir = q.sort?.descending ? "desc" : "asc";
  const orderBy = q.sort
    ? `${GROUP_TABLE.columns[q.sort.column]} ${dir} nulls last, o.id ${dir}`
    : "o.created_at asc, o.id asc";
  return await scimPage<ScimGroupRow>(sql, {
    select: SELECT,
    from: "organizations o",
    where,
    params,
    orderBy,
    offset: q.offset,
    count: q.count,
  });
}

/** One organization of the project as a group. */
export async function findScimGroup(
  sql: Sql,
  projectId: string,
  id: string,
): Promise<ScimGroupRow | undefined> {
  const [row] = await sql.unsafe<ScimGroupRow[]>(
    `select ${SELECT} from organizations o where o.project_id = $1 and o.id = $2`,
    [projectId, id],
  );
  return row;
}

/** The members of these organizations, oldest membership first. */
export async function membersOf(
  sql: Sql,
  projectId: string,
  organizationIds: string[],
): Promise<ScimMemberRow[]> {
  if (organizationIds.length === 0) return [];
  return await sql<ScimMemberRow[]>`
    select m.organization_id, m.user_id, u.display_name
    from organization_members m join users u on u.project_id = m.project_id and u.id = m.user_id
    where m.project_id = ${projectId} and m.organization_id = any(${organizationIds}::text[])
    order by m.created_at, m.user_id`;
}

/** Which of these ids are users of the project. */
export async function existingUsers(sql: Sql, projectId: string, userIds: string[]): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const rows = await sql<{ id: string }[]>`
    select id from users where project_id = ${projectId} and id = any(${userIds}::text[])`;
  return new Set(rows.map((r) => r.id));
}

/**
 * Which of these ids are users of the project, each held `for key share` until the transaction ends (as one
 * member's addition holds its user: not deleted before the membership commits).
 */
export async function lockUsersShared(sql: Sql, projectId: string, userIds: string[]): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const rows = await sql<{ id: string }[]>`
    select id from users where project_id = ${projectId} and id = any(${userIds}::text[])
    order by id for key share`;
  return new Set(rows.map((r) => r.id));
}

/**
 * These users made members of the organization, each with these roles, in two statements: one already a member
 * (made meanwhile) is skipped. Answers the user ids inserted.
 */
export async function insertMembers(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userIds: string[],
  roleIds: string[],
): Promise<string[]> {
  if (userIds.length === 0) return [];
  const inserted = (await sql<{ user_id: string }[]>`
    insert into organization_members (project_id, organization_id, user_id)
    select ${projectId}, ${organizationId}, u from unnest(${userIds}::text[]) as u
    on conflict do nothing
    returning user_id`).map((r) => r.user_id);
  if (inserted.length > 0 && roleIds.length > 0) {
    await sql`
      insert into organization_member_roles (project_id, organization_id, user_id, role_id)
      select ${projectId}, ${organizationId}, u, r from unnest(${inserted}::text[]) as u
      cross join unnest(${roleIds}::text[]) as r
      on conflict (organization_id, user_id, role_id) do nothing`;
  }
  return inserted;
}

/** The members among these users, held `for update`, with the roles each holds here. */
export async function lockMembers(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userIds: string[],
): Promise<{ user_id: string; role_ids: string[] }[]> {
  if (userIds.length === 0) return [];
  return await sql<{ user_id: string; role_ids: string[] }[]>`
    select m.user_id, array(select mr.role_id from organization_member_roles mr
      where mr.organization_id = m.organization_id and mr.user_id = m.user_id
      order by mr.role_id collate "C") as role_ids
    from organization_members m
    where m.project_id = ${projectId} and m.organization_id = ${organizationId}
      and m.user_id = any(${userIds}::text[])
    order by m.user_id for update of m`;
}

/** Removes these members with their roles here, in one statement. */
export async function deleteMembers(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userIds: string[],
): Promise<void> {
  if (userIds.length === 0) return;
  await sql`
    delete from organization_members
    where project_id = ${projectId} and organization_id = ${organizationId} and user_id = any(${userIds}::text[])`;
}

/**
 * One event of `type` on the organization per item, in one statement, as db/audit's insertEvent writes one
 * (`fans_out` computed once; the trigger then writes the webhook deliveries as for any event).
 */
export async function insertOrganizationEvents(
  sql: Sql,
  projectId: string,
  organizationId: string,
  type: string,
  source: EventSource,
  events: { id: string; details: string }[],
): Promise<void> {
  if (events.length === 0) return;
  await sql`
    insert into audit_events (project_id, id, occurred_at, type, actor_type, actor_id, actor_token_jti,
                              request_id, request_ip, request_user_agent, target_type, target_id, changes, details,
                              fans_out)
    select ${projectId}::text, e.id, clock_timestamp(), ${type}::text, ${source.actor_type}::text,
           ${source.actor_id}::text, ${source.actor_token_jti}::text, ${source.request_id}::text,
           ${source.request_ip}::text, ${source.request_user_agent}::text, 'organization', ${organizationId}::text,
           null, e.details::jsonb, exists (select 1 from webhooks w where w.project_id = ${projectId} and w.is_active)
    from unnest(${events.map((e) => e.id)}::text[], ${
    events.map((e) => e.details)
  }::text[]) as e (id, details)`;
}
