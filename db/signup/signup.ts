/** The row a sign-up writes: a user with an address and a password, no role, unless the address is taken. */
import type { Sql } from "../connection.ts";

/**
 * Inserts the user, or nothing when the project already has a user with this address (a concurrent sign-up
 * included: the unique index decides, so a race never answers an error). Returns the new user's id, or null.
 */
export async function insertSignupUser(
  sql: Sql,
  u: { project_id: string; id: string; display_name: string; email: string; password_hash: string },
): Promise<string | null> {
  const rows = await sql<{ id: string }[]>`
    insert into users (project_id, id, display_name, email, email_verified, password_hash, role_id, is_active)
    values (${u.project_id}, ${u.id}, ${u.display_name}, ${u.email}, false, ${u.password_hash}, null, true)
    on conflict (project_id, email) do nothing
    returning id`;
  return rows[0]?.id ?? null;
}
