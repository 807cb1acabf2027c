/** Queries on an organization's members and the organization roles each holds there. */
import type { PageOf } from "../../openapi/fields.ts";
import type {
  MemberListQuery,
  OrganizationMember,
  UserOrganization,
  UserOrganizationListQuery,
} from "../../openapi/organizations.ts";
import { fixed, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, offsetOf, pageOf } from "../lists.ts";

const ROLE_IDS = `array(select mr.role_id from organization_member_roles mr
        where mr.organization_id = m.organization_id and mr.user_id = m.user_id order by mr.role_id collate "C")`;

const MEMBER_COLUMNS = `m.organization_id, m.user_id, ${ROLE_IDS} as role_ids, u.display_name, u.email,
      ${timestampsText("m")}`;
const memberColumns = (sql: Sql) => fixed(sql, MEMBER_COLUMNS);

const USER_ORGANIZATION_COLUMNS = `m.organization_id, o.name, ${ROLE_IDS} as role_ids, ${
  timestampsText("m")
}`;
const userOrganizationColumns = (sql: Sql) => fixed(sql, USER_ORGANIZATION_COLUMNS);

export async function insertMember(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<void> {
  await sql`
    insert into organization_members (project_id, organization_id, user_id)
    values (${projectId}, ${organizationId}, ${userId})`;
}

/** The member; `lock` holds the membership (`for update`) for the rest of the transaction. */
export async function findMember(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
  opts: { lock?: boolean } = {},
): Promise<OrganizationMember | undefined> {
  const [row] = await sql<OrganizationMember[]>`
    select ${memberColumns(sql)}
    from organization_members m join users u on u.project_id = m.project_id and u.id = m.user_id
    where m.project_id = ${projectId} and m.organization_id = ${organizationId} and m.user_id = ${userId}
    ${opts.lock ? sql`for update of m` : sql``}`;
  return row;
}

/** Replaces the member's roles with exactly these, and marks the membership changed. */
export async function setMemberRoles(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
  roleIds: string[],
): Promise<void> {
  await sql`
    delete from organization_member_roles
    where organization_id = ${organizationId} and user_id = ${userId} and role_id <> all(${roleIds}::text[])`;
  if (roleIds.length > 0) {
    await sql`
      insert into organization_member_roles (project_id, organization_id, user_id, role_id)
      select ${projectId}, ${organizationId}, ${userId}, r from unnest(${roleIds}::text[]) as r
      on conflict (organization_id, user_id, role_id) do nothing`;
  }
  await sql`
    update organization_members set updated_at = now()
    where project_id = ${projectId} and organization_id = ${organizationId} and user_id = ${userId}`;
}

/** Removes the member with their roles here. */
export async function deleteMemberRow(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<void> {
  await sql`
    delete from organization_members
    where project_id = ${projectId} and organization_id = ${organizationId} and user_id = ${userId}`;
}

/** The roles the organization's members hold there, each once. */
export async function rolesHeldIn(sql: Sql, projectId: string, organizationId: string): Promise<string[]> {
  const rows = await sql<{ role_id: string }[]>`
    select distinct role_id from organization_member_roles
    where project_id = ${projectId} and organization_id = ${organizationId} order by role_id`;
  return rows.map((r) => r.role_id);
}

/** A page of the organization's members: `search` matches the user's display name and email. */
export async function listMemberRows(
  sql: Sql,
  projectId: string,
  organizationId: string,
  q: MemberListQuery,
): Promise<PageOf<OrganizationMember>> {
  const where = sql`
    where m.project_id = ${projectId} and m.organization_id = ${organizationId}
    ${
    q.search
      ? sql`and (u.display_name ilike ${containsPattern(q.search)} or u.email ilike ${
        containsPattern(q.search)
      })`
      : sql``
  }
    ${
    q.role_id === undefined ? sql`` : sql`and exists (select from organization_member_roles mr
      where mr.organization_id = m.organization_id and mr.user_id = m.user_id and mr.role_id = ${q.role_id})`
  }`;
  const from =
    sql`from organization_members m join users u on u.project_id = m.project_id and u.id = m.user_id`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return await pageOf(
    sql<(OrganizationMember & { total_count: number })[]>`
      select ${memberColumns(sql)}, count(*) over ()::int as total_count ${from} ${where}
      order by ${sql("m." + q.sort_by)} ${dir}, m.user_id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total ${from} ${where}`,
  );
}

/** A page of the organizations the user belongs to: `search` matches the organization's name. */
export async function listUserOrganizationRows(
  sql: Sql,
  projectId: string,
  userId: string,
  q: UserOrganizationListQuery,
): Promise<PageOf<UserOrganization>> {
  const where = sql`
    where m.project_id = ${projectId} and m.user_id = ${userId}
    ${q.search ? sql`and o.name ilike ${containsPattern(q.search)}` : sql``}`;
  const from = sql`from organization_members m
    join organizations o on o.project_id = m.project_id and o.id = m.organization_id`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return await pageOf(
    sql<(UserOrganization & { total_count: number })[]>`
      select ${userOrganizationColumns(sql)}, count(*) over ()::int as total_count ${from} ${where}
      order by ${sql("m." + q.sort_by)} ${dir}, m.organization_id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total ${from} ${where}`,
  );
}
