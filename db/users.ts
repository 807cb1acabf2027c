/**
 * Queries on users; a user row is the API's `User`. The password hash is read only by the functions that need
 * it, never by listings.
 */
import type { PageOf } from "../openapi/fields.ts";
import type { User, UserListQuery } from "../openapi/users.ts";
import { fixed, quoted, timestampsText } from "./columns.ts";
import type { Sql } from "./connection.ts";
import { containsPattern, offsetOf, pageOf } from "./lists.ts";

/** The stored fields of a user that an update sets (the password hash aside). */
export type UserFields = Pick<
  User,
  "display_name" | "avatar_url" | "external_user_id" | "email" | "role_id" | "is_active"
>;

/** A user row's columns as text, per alias (`u`, or the table's own name). */
const columnText = (alias: string) =>
  ["id", "project_id", "display_name", "avatar_url", "external_user_id", "email", "role_id", "is_active"]
    .map((c) => quoted(`${alias}.${c}`)).join(", ") + `, ${timestampsText(alias)}`;
const COLUMNS = { u: columnText("u"), users: columnText("users") };

const columns = (sql: Sql, alias: keyof typeof COLUMNS = "u") => fixed(sql, COLUMNS[alias]);

export async function insertUser(
  sql: Sql,
  u: UserFields & { project_id: string; id: string; password_hash: string | null },
): Promise<User> {
  // postgres.js's insert helper needs `insert into users` right before it, so no alias here.
  const [row] = await sql<User[]>`insert into users ${sql(u)} returning ${columns(sql, "users")}`;
  return row;
}

/** Updates the user; a null `password_hash` keeps the stored one. */
export async function updateUserRow(
  sql: Sql,
  projectId: string,
  userId: string,
  u: UserFields & { password_hash: string | null },
): Promise<User | undefined> {
  const [row] = await sql<User[]>`
    update users as u set
      display_name = ${u.display_name}, avatar_url = ${u.avatar_url}, external_user_id = ${u.external_user_id},
      email = ${u.email}, role_id = ${u.role_id}, is_active = ${u.is_active},
      password_hash = coalesce(${u.password_hash}, u.password_hash), updated_at = now()
    where u.project_id = ${projectId} and u.id = ${userId}
    returning ${columns(sql)}`;
  return row;
}

export async function findUserByExternalId(
  sql: Sql,
  projectId: string,
  externalUserId: string,
): Promise<User | undefined> {
  const [row] = await sql<User[]>`
    select ${
    columns(sql)
  } from users u where u.project_id = ${projectId} and u.external_user_id = ${externalUserId}`;
  return row;
}

export function listUserRows(sql: Sql, projectId: string, q: UserListQuery): Promise<PageOf<User>> {
  const like = q.search ? containsPattern(q.search) : null;
  const where = sql`
    where u.project_id = ${projectId}
    ${like === null ? sql`` : sql`and (u.display_name ilike ${like} or u.email ilike ${like})`}
    ${q.is_active === undefined ? sql`` : sql`and u.is_active = ${q.is_active}`}
    ${q.role_id === undefined ? sql`` : sql`and u.role_id = ${q.role_id}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return pageOf(
    sql<(User & { total_count: number })[]>`
      select ${columns(sql)}, count(*) over ()::int as total_count from users u ${where}
      order by ${sql("u." + q.sort_by)} ${dir}, u.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from users u ${where}`,
  );
}

/** The user; `lock` holds the row for the rest of the transaction, `withPasswordHash` adds the hash. */
export async function findUser(
  sql: Sql,
  projectId: string,
  userId: string,
  opts: { lock?: boolean; withPasswordHash?: boolean } = {},
): Promise<(User & { password_hash?: string | null }) | undefined> {
  const [row] = await sql<(User & { password_hash?: string | null })[]>`
    select ${columns(sql)} ${opts.withPasswordHash ? sql`, u.password_hash` : sql``}
    from users u where u.project_id = ${projectId} and u.id = ${userId}
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

export type LoginUserRow = { id: string; password_hash: string | null; is_active: boolean };

export async function findLoginUser(
  sql: Sql,
  projectId: string,
  email: string,
): Promise<LoginUserRow | undefined> {
  const [row] = await sql<LoginUserRow[]>`
    select id, password_hash, is_active from users where project_id = ${projectId} and email = ${email}`;
  return row;
}
