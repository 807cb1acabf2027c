/**
 * A user's password hash replaced by the service's own after a sign-in with an imported one, and a project's
 * imported hash for the sign-in decoy.
 */
import type { Sql } from "../connection.ts";

/**
 * Stores `next` only while the user's hash is still `current` (a compare-and-set): a password changed or reset
 * meanwhile is never overwritten by the rehash of the old one. Whether it was stored.
 *
 * In the same statement, the user's unused account links (verification, reset, invitation) stamped with the old
 * hash (`password_stamp`, the SHA-256 of the hash: db/events/mail.ts) are stamped with the new one: a rehash is
 * the same password, so a link mailed before it (after an import, say) keeps working; a link issued under
 * another password stays dead. `updated_at` is left as it is: a rehash changes none of the user's data.
 */
export async function replacePasswordHash(
  sql: Sql,
  projectId: string,
  userId: string,
  current: string,
  next: string,
): Promise<boolean> {
  const rows = await sql`
    with replaced as (
      update users set password_hash = ${next}
      where project_id = ${projectId} and id = ${userId} and password_hash = ${current}
      returning project_id, id
    ), restamped as (
      update account_links l
      set password_stamp = encode(sha256(convert_to(${next}::text, 'UTF8')), 'hex')
      from replaced r
      where l.project_id = r.project_id and l.user_id = r.id and l.used_at is null
        and l.password_stamp = encode(sha256(convert_to(${current}::text, 'UTF8')), 'hex')
      returning 1
    )
    select 1 from replaced`;
  return rows.length === 1;
}

/**
 * One imported (foreign) password hash of the project that verification reads (not the service's own argon2id,
 * not one of no known scheme), or null when the project has none: the partial index
 * `users__foreign_hash` (db/migrations/0037_foreign_hashes.sql) answers it.
 */
export async function findForeignHash(sql: Sql, projectId: string): Promise<string | null> {
  const [row] = await sql<{ password_hash: string }[]>`
    select password_hash from users
    where project_id = ${projectId} and password_scheme <> 'argon2id' and password_scheme <> 'unknown'
    limit 1`;
  return row?.password_hash ?? null;
}

/** The user's password hash as it is now (null: no password, or no such user). */
export async function findPasswordHash(sql: Sql, projectId: string, userId: string): Promise<string | null> {
  const [row] = await sql<{ password_hash: string | null }[]>`
    select password_hash from users where project_id = ${projectId} and id = ${userId}`;
  return row?.password_hash ?? null;
}
