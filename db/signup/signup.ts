/**
 * The row a sign-up writes: a user with an address, a password and the project's `default_role_id` (read in the
 * same statement, so a change of it applies from the next sign-up on), unless the address is taken.
 */
import type { Sql } from "../connection.ts";

/**
 * Inserts the user, or nothing when the project already has a user with this address (a concurrent sign-up
 * included: the unique index decides, so a race never answers an error). Returns the new user's id, or null.
 */
export async function insertSignupUser(
  sql: Sql,
  u: { project_id: string; id: string; display_name: string; email: string; password_hash: string },
): Promise<{ id: string; role_id: string | null } | null> {
  const rows = await sql<{ id: string; role_id: string | null }[]>`
    insert into users (project_id, id, display_name, email, email_verified, password_hash, role_id, is_active)
    select ${u.project_id}, ${u.id}, ${u.display_name}, ${u.email}, false, ${u.password_hash}, p.default_role_id, true
    from projects p where p.id = ${u.project_id}
    on conflict (project_id, email) do nothing
    returning id, role_id`;
  return rows[0] ?? null;
}
