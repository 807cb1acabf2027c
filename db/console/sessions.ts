/** Queries of the admin console: its built-in client per project, its sessions and the first operator's setup link. */
import type { Sql } from "../connection.ts";

/** The console's public client in a project (created with the project; migration 0008 for older ones). */
export async function insertConsoleClient(
  sql: Sql,
  c: { project_id: string; id: string; secret_hash: Uint8Array },
): Promise<void> {
  await sql`
    insert into clients (project_id, id, name, description, secret_hash, is_console, token_endpoint_auth_method)
    values (${c.project_id}, ${c.id}, 'Console', 'Built in: the admin console signs users in with it',
            ${c.secret_hash}, true, 'none')
    on conflict do nothing`;
}

export type ConsoleSessionRow = {
  project_id: string;
  sealed: Uint8Array;
  access_expires_at: Date;
  /** Whether the access token is expired or about to be (within 30 seconds, on the database's clock). */
  stale: boolean;
};

export async function insertConsoleSession(
  sql: Sql,
  s: { id_hash: Uint8Array; project_id: string; sealed: Uint8Array; accessTtl: number; ttl: number },
): Promise<void> {
  await sql`
    insert into console_sessions (id_hash, project_id, sealed, access_expires_at, expires_at)
    values (${s.id_hash}, ${s.project_id}, ${s.sealed}, now() + make_interval(secs => ${s.accessTtl}),
            now() + make_interval(secs => ${s.ttl}))`;
}

/** A live (unexpired) session. */
export async function findConsoleSession(
  sql: Sql,
  idHash: Uint8Array,
): Promise<ConsoleSessionRow | undefined> {
  const [row] = await sql<ConsoleSessionRow[]>`
    select project_id, sealed, access_expires_at, access_expires_at < now() + interval '30 seconds' as stale
    from console_sessions where id_hash = ${idHash} and expires_at > now()`;
  return row;
}

/** Claims the refresh of a session's tokens for a few seconds; false when another request holds it. */
export async function claimConsoleRefresh(sql: Sql, idHash: Uint8Array): Promise<boolean> {
  const rows = await sql`
    update console_sessions set refreshing_until = now() + interval '15 seconds'
    where id_hash = ${idHash} and (refreshing_until is null or refreshing_until < now()) returning 1`;
  return rows.length === 1;
}

export async function storeRefreshedConsoleSession(
  sql: Sql,
  s: { id_hash: Uint8Array; sealed: Uint8Array; accessTtl: number; ttl: number },
): Promise<void> {
  await sql`
    update console_sessions set sealed = ${s.sealed}, refreshing_until = null, updated_at = now(),
      access_expires_at = now() + make_interval(secs => ${s.accessTtl}),
      expires_at = now() + make_interval(secs => ${s.ttl})
    where id_hash = ${s.id_hash}`;
}

export async function deleteConsoleSession(sql: Sql, idHash: Uint8Array): Promise<void> {
  await sql`delete from console_sessions where id_hash = ${idHash}`;
}

/**
 * The `user_id` of a setup link that creates the first operator (a start that found none): its holder chooses
 * the email and password. It works only while no operator exists (`operatorExists`).
 */
export const NEW_OPERATOR = "";

/** Whether a user of the project can sign in: active, with a password. */
export async function operatorExists(sql: Sql, projectId: string): Promise<boolean> {
  const rows = await sql`
    select 1 from users where project_id = ${projectId} and is_active and password_hash is not null limit 1`;
  return rows.length === 1;
}

/** Serializes the setup links' completions (two links spent at once would make two first operators). */
export async function lockSetup(sql: Sql): Promise<void> {
  await sql`select pg_advisory_xact_lock(${SETUP_LOCK})`;
}

const SETUP_LOCK = 72_616_002;

export async function insertSetupToken(
  sql: Sql,
  t: { token_hash: Uint8Array; project_id: string; user_id: string; ttl: number },
): Promise<void> {
  await sql`
    insert into console_setup_tokens (token_hash, project_id, user_id, expires_at)
    values (${t.token_hash}, ${t.project_id}, ${t.user_id}, now() + make_interval(secs => ${t.ttl}))`;
}

/**
 * A setup token counts only while unused, unexpired, and: its user still has no password, or (a link that
 * creates the first operator) no user of the project can sign in.
 */
const setupUsable = (sql: Sql) =>
  sql`t.used_at is null and t.expires_at > now() and case when t.user_id = ${NEW_OPERATOR}
    then not exists (
      select 1 from users u where u.project_id = t.project_id and u.is_active and u.password_hash is not null)
    else exists (
      select 1 from users u where u.project_id = t.project_id and u.id = t.user_id and u.password_hash is null)
    end`;

/** Spends a setup token, once: the user it is for, or undefined when unknown, used, expired or moot. */
export async function consumeSetupToken(
  sql: Sql,
  tokenHash: Uint8Array,
): Promise<{ project_id: string; user_id: string } | undefined> {
  const [row] = await sql<{ project_id: string; user_id: string }[]>`
    update console_setup_tokens t set used_at = now()
    where t.token_hash = ${tokenHash} and ${setupUsable(sql)}
    returning t.project_id, t.user_id`;
  return row;
}

/** Whether a setup token is still usable, without spending it: the user it is for, or undefined. */
export async function findUsableSetupToken(
  sql: Sql,
  tokenHash: Uint8Array,
): Promise<{ user_id: string } | undefined> {
  const [row] = await sql<{ user_id: string }[]>`
    select t.user_id from console_setup_tokens t where t.token_hash = ${tokenHash} and ${setupUsable(sql)}`;
  return row;
}

/** Every permission of the project's default resources (what the first operator's `admin` role holds). */
export async function defaultPermissionIds(sql: Sql, projectId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select p.id from permissions p join resources r on r.id = p.resource_id
    where p.project_id = ${projectId} and r.is_default order by p.id`;
  return rows.map((r) => r.id);
}

/** The id of the project's role with this code (case-insensitively), if any. */
export async function findRoleIdByCode(
  sql: Sql,
  projectId: string,
  code: string,
): Promise<string | undefined> {
  const [row] = await sql<{ id: string }[]>`
    select id from roles where project_id = ${projectId} and lower(code) = lower(${code})`;
  return row?.id;
}

export async function setUserPasswordHash(
  sql: Sql,
  projectId: string,
  userId: string,
  passwordHash: string,
): Promise<void> {
  await sql`
    update users set password_hash = ${passwordHash}, updated_at = now()
    where project_id = ${projectId} and id = ${userId}`;
}
