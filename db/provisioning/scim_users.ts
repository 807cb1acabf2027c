/** Users as SCIM reads them: the whitelist of filterable columns, a page of users, and the groups of users. */
import type { Sql } from "../connection.ts";
import { isoText } from "../columns.ts";
import { type Cond, scimPage, type Table, whereOf } from "./scim_sql.ts";

/** A user's row as SCIM shows it; `version` changes with every write (microseconds of `updated_at`). */
export type ScimUserRow = {
  id: string;
  display_name: string;
  given_name: string | null;
  family_name: string | null;
  external_user_id: string | null;
  email: string | null;
  is_active: boolean;
  created_at: string;
  updated_at: string;
  version: string;
};

/** The filterable and sortable columns (domain/provisioning/scim_query.ts names them). */
export const USER_TABLE: Table = {
  columns: {
    id: "u.id",
    userName: "u.email",
    externalId: "u.external_user_id",
    displayName: "u.display_name",
    givenName: "u.given_name",
    familyName: "u.family_name",
    formatted: "nullif(concat_ws(' ', u.given_name, u.family_name), '')",
    emailValue: "u.email",
    emailType: "(case when u.email is not null then 'work' end)",
    emailPrimary: "(case when u.email is not null then true end)",
    active: "u.is_active",
    created: "u.created_at",
    lastModified: "u.updated_at",
  },
};

const SELECT = `u.id, u.display_name, u.given_name, u.family_name, u.external_user_id, u.email, u.is_active,
  ${isoText("u.created_at")} as created_at, ${isoText("u.updated_at")} as updated_at,
  (extract(epoch from u.updated_at) * 1000000)::bigint::text as version`;

/** A page of the project's users matching `cond`, ordered by `sort` (a column name) then id. */
export async function listScimUsers(
  sql: Sql,
  projectId: string,
  q: { cond: Cond; sort: { column: string; descending: boolean } | null; offset: number; count: number },
): Promise<{ total: number; rows: ScimUserRow[] }> {
  const params: unknown[] = [projectId];
  const where = `u.project_id = $1 and ${whereOf(q.cond, USER_TABLE, params)}`;
  const dir = q.sort?.descending ? "desc" : "asc";
  const orderBy = q.sort
    ? `${USER_TABLE.columns[q.sort.column]} ${dir} nulls last, u.id ${dir}`
    : "u.created_at asc, u.id asc";
  return await scimPage<ScimUserRow>(sql, {
    select: SELECT,
    from: "users u",
    where,
    params,
    orderBy,
    offset: q.offset,
    count: q.count,
  });
}

/** One user of the project; `lock` holds the row for the rest of the transaction. */
export async function findScimUser(
  sql: Sql,
  projectId: string,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<ScimUserRow | undefined> {
  const [row] = await sql.unsafe<ScimUserRow[]>(
    `select ${SELECT} from users u where u.project_id = $1 and u.id = $2 ${opts.lock ? "for update" : ""}`,
    [projectId, id],
  );
  return row;
}

/** The organizations of each of these users: user id → [{id, name}]. */
export async function groupsOfUsers(
  sql: Sql,
  projectId: string,
  userIds: string[],
): Promise<Map<string, { id: string; name: string }[]>> {
  const rows = await sql<{ user_id: string; id: string; name: string }[]>`
    select m.user_id, o.id, o.name from organization_members m
    join organizations o on o.project_id = m.project_id and o.id = m.organization_id
    where m.project_id = ${projectId} and m.user_id = any(${userIds}::text[])
    order by o.name collate "C", o.id`;
  const map = new Map<string, { id: string; name: string }[]>();
  for (const r of rows) map.set(r.user_id, [...(map.get(r.user_id) ?? []), { id: r.id, name: r.name }]);
  return map;
}
