/**
 * Queries on users; a user row is the API's `User`. The password hash is read only by the functions that need
 * it, never by listings.
 */
import type { Properties } from "../../openapi/fields.ts";
import type { User, UserListQuery } from "../../openapi/users.ts";
import { fixed, quoted, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, type PageStatement, pageStatement, type Params } from "../lists.ts";

/** The stored fields of a user that an update sets (the password hash aside). */
export type UserFields =
  & Pick<
    User,
    | "display_name"
    | "avatar_url"
    | "external_user_id"
    | "email"
    | "role_id"
    | "is_active"
    | "email_verified"
    | "pending_email"
  >
  & {
    /** The name in parts (SCIM's `name`); omitted: null on insert, kept on update. */
    given_name?: string | null;
    family_name?: string | null;
  };

/** A user row's columns as text, per alias (`u`, or the table's own name). */
const columnText = (alias: string) =>
  [
    "id",
    "project_id",
    "display_name",
    "given_name",
    "family_name",
    "avatar_url",
    "external_user_id",
    "email",
    "email_verified",
    "pending_email",
    "role_id",
    "is_active",
    "properties",
    "password_scheme",
  ]
    .map((c) => quoted(`${alias}.${c}`)).join(", ") + `, ${timestampsText(alias)}`;
const COLUMNS = { u: columnText("u"), users: columnText("users") };

const columns = (sql: Sql, alias: keyof typeof COLUMNS = "u") => fixed(sql, COLUMNS[alias]);

/** Inserts the user; omitted `properties` are `{}`. */
export async function insertUser(
  sql: Sql,
  u: UserFields & {
    project_id: string;
    id: string;
    password_hash: string | null;
    properties?: Properties;
  },
): Promise<User> {
  const { properties, ...given } = u;
  // Omitted fields take the column's default.
  const fields = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  const values = properties === undefined ? fields : { ...fields, properties: sql.json(properties) };
  // postgres.js's insert helper needs `insert into users` right before it, so no alias here.
  const [row] = await sql<User[]>`insert into users ${sql(values)} returning ${columns(sql, "users")}`;
  return row;
}

/**
 * Updates the user; a null `password_hash` keeps the stored one, omitted `properties`, `given_name` and
 * `family_name` the stored ones.
 */
export async function updateUserRow(
  sql: Sql,
  projectId: string,
  userId: string,
  u: UserFields & { password_hash: string | null; properties?: Properties },
): Promise<User | undefined> {
  const properties = u.properties === undefined ? null : sql.json(u.properties);
  const [row] = await sql<User[]>`
    update users as u set
      display_name = ${u.display_name}, avatar_url = ${u.avatar_url}, external_user_id = ${u.external_user_id},
      given_name = case when ${u.given_name === undefined} then u.given_name else ${u.given_name ?? null} end,
      family_name = case when ${u.family_name === undefined} then u.family_name else ${
    u.family_name ?? null
  } end,
      email = ${u.email}, email_verified = ${u.email_verified},
      pending_email = ${u.pending_email}, role_id = ${u.role_id}, is_active = ${u.is_active},
      properties = coalesce(${properties}::jsonb, u.properties),
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

/** The list's statement: one source for the list and for the read the gate attaches. */
export function userListStatement(projectId: string, q: UserListQuery): PageStatement {
  const params: Params = [projectId];
  let where = "where u.project_id = $1";
  if (q.search) {
    const like = `$${params.push(containsPattern(q.search))}`;
    where += ` and (u.display_name ilike ${like} or u.email ilike ${like})`;
  }
  if (q.is_active !== undefined) where += ` and u.is_active = $${params.push(q.is_active)}`;
  if (q.role_id !== undefined) where += ` and u.role_id = $${params.push(q.role_id)}`;
  return pageStatement({ table: "users", alias: "u" }, { columns: COLUMNS.u }, where, params, q);
}

/**
 * Whether the user is one of the project's, holding the user (`for key share`) for the rest of the transaction so
 * that it is not deleted before a row that names it (a membership) is written.
 */
export async function lockUserShared(sql: Sql, projectId: string, userId: string): Promise<boolean> {
  const rows =
    await sql`select 1 from users where project_id = ${projectId} and id = ${userId} for key share`;
  return rows.length === 1;
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

export type LoginUserRow = {
  id: string;
  password_hash: string | null;
  is_active: boolean;
  email_verified: boolean;
  /** The project refuses logins of users whose address is not verified. */
  require_verified_email: boolean;
};

export async function findLoginUser(
  sql: Sql,
  projectId: string,
  email: string,
): Promise<LoginUserRow | undefined> {
  const [row] = await sql<LoginUserRow[]>`
    select u.id, u.password_hash, u.is_active, u.email_verified, p.require_verified_email
    from users u join projects p on p.id = u.project_id
    where u.project_id = ${projectId} and u.email = ${email}`;
  return row;
}

/** What the project's sign-in policy needs of a user (domain/accounts/signin_policy.ts): the address and its state. */
export type SignInUserRow = {
  id: string;
  email: string | null;
  email_verified: boolean;
  require_verified_email: boolean;
};

export async function findSignInUser(
  sql: Sql,
  projectId: string,
  userId: string,
): Promise<SignInUserRow | undefined> {
  const [row] = await sql<SignInUserRow[]>`
    select u.id, u.email, u.email_verified, p.require_verified_email
    from users u join projects p on p.id = u.project_id
    where u.project_id = ${projectId} and u.id = ${userId}`;
  return row;
}

/**
 * Deletes the user: their login sessions (with refresh tokens), single sign-on sessions and unused codes go
 * with the row (foreign keys), and so do the trusted browsers of their email and an unused setup link, so
 * that an account made later with the same email starts afresh.
 */
export async function deleteUserRow(sql: Sql, projectId: string, user: { id: string; email: string | null }) {
  if (user.email !== null) {
    await sql`delete from login_devices where project_id = ${projectId} and email = ${user.email}`;
  }
  await sql`delete from console_setup_tokens where project_id = ${projectId} and user_id = ${user.id}`;
  // Mails not sent yet (an invitation, say) go too: their links would open nothing.
  await sql`delete from mail_outbox where project_id = ${projectId} and user_id = ${user.id} and status = 'pending'`;
  await sql`delete from users where project_id = ${projectId} and id = ${user.id}`;
}

/**
 * How the user's application names it to a decision: its `external_user_id` when it has one that is no other
 * user's id (a decision finds a user by id first), else its id. Conditions compare `subject.id` with what the
 * application stores, so claims computed for the user's tokens name it the same way.
 */
export async function subjectNameOf(sql: Sql, projectId: string, userId: string): Promise<string> {
  const [row] = await sql<{ name: string }[]>`
    select case when u.external_user_id is not null and not exists (
             select 1 from users o where o.project_id = u.project_id and o.id = u.external_user_id)
           then u.external_user_id else u.id end as name
    from users u where u.project_id = ${projectId} and u.id = ${userId}`;
  return row?.name ?? userId;
}

/**
 * Operators of the system project: its active users whose role holds every permission of its default
 * resources. `lock` takes the operators' lock (every change that could demote one takes it first, so such
 * changes take turns) and holds their rows for the rest of the transaction.
 */
export async function listOperators(sql: Sql, projectId: string, opts: { lock?: boolean } = {}) {
  if (opts.lock) await sql`select pg_advisory_xact_lock(hashtextextended(${"operators:" + projectId}, 0))`;
  const rows = await sql<{ id: string }[]>`
    select u.id from users u
    where u.project_id = ${projectId} and u.is_active and u.role_id is not null
      and not exists (
        select 1 from permissions pe join resources r on r.id = pe.resource_id
        where pe.project_id = ${projectId} and r.is_default
          and not exists (select 1 from role_permissions rp
                          where rp.role_id = u.role_id and rp.permission_id = pe.id
                            and rp.condition is null))
    order by u.id
    ${opts.lock ? sql`for update of u` : sql``}`;
  return rows.map((r) => r.id);
}
