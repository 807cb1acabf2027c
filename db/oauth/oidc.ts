/** What ID tokens and userinfo read: a login session's scopes and the user's claims. */
import type { Sql } from "../connection.ts";

export type ClaimsRow = {
  scope: string | null;
  display_name: string;
  given_name: string | null;
  family_name: string | null;
  avatar_url: string | null;
  email: string | null;
  email_verified: boolean;
  /** The identity provider of the browser session the login belongs to, if the user signed in through one. */
  provider_id: string | null;
  /** How the user authenticated at the login (RFC 8176); null for logins before it was kept. */
  amr: string[] | null;
};

/** The session's granted scopes and its user's profile; undefined when the session is not the user's. */
export async function findSessionClaims(
  sql: Sql,
  projectId: string,
  sessionId: string,
  userId: string,
): Promise<ClaimsRow | undefined> {
  const [row] = await sql<ClaimsRow[]>`
    select s.scope, u.display_name, u.given_name, u.family_name, u.avatar_url, u.email, u.email_verified, b.provider_id, s.amr
    from sessions s join users u on u.project_id = s.project_id and u.id = s.user_id
    left join sso_sessions b on b.project_id = s.project_id and b.id = s.sso_session_id
    where s.project_id = ${projectId} and s.id = ${sessionId} and s.user_id = ${userId}`;
  return row;
}

/** How the login of a session authenticated: what it recorded, and the identity provider it went through. */
export async function findSessionAuth(
  sql: Sql,
  projectId: string,
  sessionId: string,
): Promise<{ amr: string[] | null; provider_id: string | null } | undefined> {
  const [row] = await sql<{ amr: string[] | null; provider_id: string | null }[]>`
    select s.amr, b.provider_id from sessions s
    left join sso_sessions b on b.project_id = s.project_id and b.id = s.sso_session_id
    where s.project_id = ${projectId} and s.id = ${sessionId}`;
  return row;
}
