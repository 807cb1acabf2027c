/** A user's password hash replaced by the service's own after a sign-in with an imported one. */
import type { Sql } from "../connection.ts";

/**
 * Stores `next` only while the user's hash is still `current` (a compare-and-set): a password changed or reset
 * meanwhile is never overwritten by the rehash of the old one. Whether it was stored.
 */
export async function replacePasswordHash(
  sql: Sql,
  projectId: string,
  userId: string,
  current: string,
  next: string,
): Promise<boolean> {
  const rows = await sql`
    update users set password_hash = ${next}
    where project_id = ${projectId} and id = ${userId} and password_hash = ${current}
    returning 1`;
  return rows.length === 1;
}
