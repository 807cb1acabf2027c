/** Queries of passkeys (WebAuthn credentials) and their pending challenges. */
import type { Sql } from "../connection.ts";

export type PasskeyRow = {
  id: string;
  user_id: string;
  public_key: Uint8Array;
  sign_count: number;
  backup_eligible: boolean;
  backup_state: boolean;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
};

const columns = (sql: Sql) =>
  sql`id, user_id, public_key, sign_count::float8 as sign_count, backup_eligible, backup_state, name, created_at,
      last_used_at`;

export async function insertPasskey(
  sql: Sql,
  p: Omit<PasskeyRow, "created_at" | "last_used_at"> & { project_id: string },
): Promise<void> {
  await sql`
    insert into passkeys (project_id, id, user_id, public_key, sign_count, backup_eligible, backup_state, name)
    values (${p.project_id}, ${p.id}, ${p.user_id}, ${p.public_key}, ${p.sign_count}, ${p.backup_eligible},
            ${p.backup_state}, ${p.name})`;
}

export async function listPasskeys(sql: Sql, projectId: string, userId: string): Promise<PasskeyRow[]> {
  return await sql<PasskeyRow[]>`
    select ${columns(sql)} from passkeys where project_id = ${projectId} and user_id = ${userId}
    order by created_at, id`;
}

export async function findPasskey(sql: Sql, projectId: string, id: string): Promise<PasskeyRow | undefined> {
  const [row] = await sql<PasskeyRow[]>`
    select ${columns(sql)} from passkeys where project_id = ${projectId} and id = ${id}`;
  return row;
}

/**
 * Records a use: the new counter only when it moves forward (or both are 0, an authenticator without a counter),
 * in one statement, so that of two uses with one counter value only one passes. False: the counter went back.
 */
export async function usePasskey(
  sql: Sql,
  projectId: string,
  id: string,
  u: { sign_count: number; backup_state: boolean },
): Promise<boolean> {
  const rows = await sql`
    update passkeys set sign_count = ${u.sign_count}, backup_state = ${u.backup_state}, last_used_at = now()
    where project_id = ${projectId} and id = ${id}
      and ((${u.sign_count}::bigint = 0 and sign_count = 0) or ${u.sign_count}::bigint > sign_count)
    returning id`;
  return rows.length === 1;
}

export async function deletePasskey(
  sql: Sql,
  projectId: string,
  userId: string,
  id: string,
): Promise<boolean> {
  const rows = await sql`
    delete from passkeys where project_id = ${projectId} and user_id = ${userId} and id = ${id} returning id`;
  return rows.length === 1;
}

export async function countPasskeys(sql: Sql, projectId: string, userId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from passkeys where project_id = ${projectId} and user_id = ${userId}`;
  return row.n;
}

export async function putRegistrationChallenge(
  sql: Sql,
  projectId: string,
  userId: string,
  challenge: string,
  ttlSeconds: number,
): Promise<void> {
  await sql`
    insert into passkey_registrations (project_id, user_id, challenge, expires_at)
    values (${projectId}, ${userId}, ${challenge}, now() + make_interval(secs => ${ttlSeconds}))
    on conflict (project_id, user_id) do update set challenge = excluded.challenge, expires_at = excluded.expires_at`;
}

/** Spends the user's registration challenge; undefined when none is live. */
export async function takeRegistrationChallenge(
  sql: Sql,
  projectId: string,
  userId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ challenge: string; live: boolean }[]>`
    delete from passkey_registrations where project_id = ${projectId} and user_id = ${userId}
    returning challenge, expires_at > now() as live`;
  return row?.live ? row.challenge : undefined;
}

export async function putLoginChallenge(sql: Sql, requestId: string, challenge: string): Promise<void> {
  await sql`update authorization_requests set passkey_challenge = ${challenge}
            where id = ${requestId} and used_at is null`;
}

/** Spends the login page's passkey challenge; undefined when none is live. */
export async function takeLoginChallenge(sql: Sql, requestId: string): Promise<string | undefined> {
  const [row] = await sql<{ challenge: string }[]>`
    with old as (
      select id, passkey_challenge from authorization_requests
      where id = ${requestId} and passkey_challenge is not null and used_at is null and expires_at > now()
      for update
    )
    update authorization_requests a set passkey_challenge = null from old where a.id = old.id
    returning old.passkey_challenge as challenge`;
  return row?.challenge;
}
