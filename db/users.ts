/** Queries on users. The password hash is read only by the functions that need it, never by listings. */
import type { Sql } from "./connection.ts";
import { containsPattern, offsetOf, type Page, pageOf, type Sort } from "./lists.ts";

export type UserRow = {
  id: string;
  project_id: string;
  display_name: string;
  avatar_url: string | null;
  external_user_id: string | null;
  email: string | null;
  role_id: string | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
};

export type UserFields = {
  display_name: string;
  avatar_url: string | null;
  external_user_id: string | null;
  email: string | null;
  role_id: string | null;
  is_active: boolean;
};

const columns = (sql: Sql) =>
  sql`u.id, u.project_id, u.display_name, u.avatar_url, u.external_user_id, u.email, u.role_id, u.is_active,
      u.created_at, u.updated_at`;

export async function insertUser(
  sql: Sql,
  u: UserFields & { project_id: string; id: string; password_hash: string | null },
): Promise<UserRow> {
  // postgres.js's insert helper needs `insert into users` right before it, so no alias here.
  const [row] = await sql<UserRow[]>`
    insert into users ${sql(u)}
    returning id, project_id, display_name, avatar_url, external_user_id, email, role_id, is_active, created_at, updated_at`;
  return row;
}

/** Updates the user; a null `password_hash` keeps the stored one. */
export async function updateUserRow(
  sql: Sql,
  projectId: string,
  userId: string,
  u: UserFields & { password_hash: string | null },
): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    update users as u set
      display_name = ${u.display_name}, avatar_url = ${u.avatar_url}, external_user_id = ${u.external_user_id},
      email = ${u.email}, role_id = ${u.role_id}, is_active = ${u.is_active},
      password_hash = coalesce(${u.password_hash}, u.password_hash), updated_at = now()
    where u.project_id = ${projectId} and u.id = ${userId}
    returning ${columns(sql)}`;
  return row;
}

export async function findUserForUpdate(
  sql: Sql,
  projectId: string,
  userId: string,
): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    select ${columns(sql)} from users u where u.project_id = ${projectId} and u.id = ${userId} for update`;
  return row;
}

export async function findUserByExternalId(
  sql: Sql,
  projectId: string,
  externalUserId: string,
): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    select ${
    columns(sql)
  } from users u where u.project_id = ${projectId} and u.external_user_id = ${externalUserId}`;
  return row;
}

/** Ends every live session of the user (deactivation, password reset). */
export async function revokeUserSessions(sql: Sql, userId: string): Promise<void> {
  await sql`update sessions set revoked_at = now() where user_id = ${userId} and revoked_at is null`;
}

export type UserSortField =
  | "display_name"
  | "email"
  | "external_user_id"
  | "is_active"
  | "created_at"
  | "updated_at";

export function listUsers(
  sql: Sql,
  projectId: string,
  q: Page & Sort<UserSortField> & { search?: string; is_active?: boolean; role_id?: string },
): Promise<{ rows: UserRow[]; total: number }> {
  const like = q.search ? containsPattern(q.search) : null;
  const where = sql`
    where u.project_id = ${projectId}
    ${like === null ? sql`` : sql`and (u.display_name ilike ${like} or u.email ilike ${like})`}
    ${q.is_active === undefined ? sql`` : sql`and u.is_active = ${q.is_active}`}
    ${q.role_id === undefined ? sql`` : sql`and u.role_id = ${q.role_id}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return pageOf(
    sql<(UserRow & { total_count: number })[]>`
      select ${columns(sql)}, count(*) over ()::int as total_count from users u ${where}
      order by ${sql("u." + q.sort_by)} ${dir}, u.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from users u ${where}`,
  );
}

export async function findUser(sql: Sql, projectId: string, userId: string): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    select ${columns(sql)} from users u where u.project_id = ${projectId} and u.id = ${userId}`;
  return row;
}
