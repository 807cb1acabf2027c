/** What ID tokens and userinfo read: a login session's scopes and the user's claims. */
import type { Sql } from "./connection.ts";

export type ClaimsRow = {
  scope: string | null;
  display_name: string;
  avatar_url: string | null;
  email: string | null;
  email_verified: boolean;
};

/** The session's granted scopes and its user's profile; undefined when the session is not the user's. */
export async function findSessionClaims(
  sql: Sql,
  projectId: string,
  sessionId: string,
  userId: string,
): Promise<ClaimsRow | undefined> {
  const [row] = await sql<ClaimsRow[]>`
    select s.scope, u.display_name, u.avatar_url, u.email, u.email_verified
    from sessions s join users u on u.project_id = s.project_id and u.id = s.user_id
    where s.project_id = ${projectId} and s.id = ${sessionId} and s.user_id = ${userId}`;
  return row;
}
