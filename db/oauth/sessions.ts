/** Queries of the user login: authorization requests and codes, sessions, refresh tokens, revocations, throttling. */
import type { Sql } from "../connection.ts";
import { fixed } from "../columns.ts";
import { currentKidSql } from "../keys/keys.ts";
import { endProjectSsoSessions, endUserSsoSessions } from "../signin/sso.ts";

export type AuthorizationRequestRow = {
  id: string;
  project_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | null;
  /** OpenID Connect: the granted scopes (space-separated, with `openid`), null for a plain OAuth request. */
  scope: string | null;
  nonce: string | null;
  /** `2` when the OpenID request's `acr_values` asked for a second factor. */
  acr: string | null;
  /** RFC 8707: the API asked for (its indicator) and the scope the request asked, or null. */
  resource: string | null;
  resource_scope: string | null;
  /** The organization the user signs in to (`organization`), or null. */
  organization_id: string | null;
  csrf_hash: Uint8Array;
  browser_hash: Uint8Array;
  expired: boolean;
  used: boolean;
};

export async function insertAuthorizationRequest(
  sql: Sql,
  r: Omit<AuthorizationRequestRow, "expired" | "used"> & { ttlSeconds: number },
): Promise<void> {
  await sql`
    insert into authorization_requests
      (id, project_id, client_id, redirect_uri, code_challenge, state, scope, nonce, acr, resource, resource_scope,
       organization_id, csrf_hash, browser_hash, expires_at)
    values (${r.id}, ${r.project_id}, ${r.client_id}, ${r.redirect_uri}, ${r.code_challenge}, ${r.state},
            ${r.scope}, ${r.nonce}, ${r.acr}, ${r.resource}, ${r.resource_scope}, ${r.organization_id}, ${r.csrf_hash},
            ${r.browser_hash}, now() + make_interval(secs => ${r.ttlSeconds}))`;
}

export async function findAuthorizationRequest(
  sql: Sql,
  id: string,
): Promise<AuthorizationRequestRow | undefined> {
  const [row] = await sql<AuthorizationRequestRow[]>`
    select id, project_id, client_id, redirect_uri, code_challenge, state, scope, nonce, acr, resource,
           resource_scope, organization_id, csrf_hash, browser_hash, expires_at <= now() as expired,
           used_at is not null as used
    from authorization_requests where id = ${id}`;
  return row;
}

/**
 * A login request becomes a sign-in to the organization whose own provider the user chose (when it asked for
 * none): its code and tokens are then that organization's.
 */
export async function setRequestOrganization(sql: Sql, id: string, organizationId: string): Promise<void> {
  await sql`
    update authorization_requests set organization_id = ${organizationId}
    where id = ${id} and organization_id is null and used_at is null`;
}

/** Marks the request used; false when another submission got there first. */
export async function consumeAuthorizationRequest(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`
    update authorization_requests set used_at = now()
    where id = ${id} and used_at is null and expires_at > now() returning id`;
  return rows.length === 1;
}

export async function insertAuthorizationCode(
  sql: Sql,
  c: {
    project_id: string;
    code_hash: Uint8Array;
    client_id: string;
    user_id: string;
    redirect_uri: string;
    code_challenge: string;
    ttlSeconds: number;
  } & Partial<CodeLogin>,
): Promise<void> {
  await sql`
    insert into authorization_codes (project_id, code_hash, client_id, user_id, redirect_uri, code_challenge, expires_at,
                                     scope, nonce, auth_time, sso_session_id, ip, user_agent, amr, resource,
                                     resource_scope, organization_id)
    values (${c.project_id}, ${c.code_hash}, ${c.client_id}, ${c.user_id}, ${c.redirect_uri}, ${c.code_challenge},
            now() + make_interval(secs => ${c.ttlSeconds}), ${c.scope ?? null}, ${c.nonce ?? null},
            ${c.auth_time ?? null}, ${c.sso_session_id ?? null}, ${c.ip ?? null}, ${c.user_agent ?? null},
            ${c.amr ?? null}, ${c.resource ?? null}, ${c.resource_scope ?? null}, ${
    c.organization_id ?? null
  })`;
}

/**
 * How the user signed in, carried by the code into the session: the OpenID Connect scopes and nonce (null for
 * a plain OAuth request), when the user authenticated, the single sign-on session it belongs to, and the
 * browser's address and user agent (what the session list shows).
 */
export type CodeLogin = {
  scope: string | null;
  nonce: string | null;
  auth_time: Date | null;
  sso_session_id: string | null;
  ip: string | null;
  user_agent: string | null;
  /** How the user authenticated (RFC 8176), e.g. `["pwd", "otp", "mfa"]`; null for logins before it was kept. */
  amr: string[] | null;
  /** RFC 8707: the API the authorization asked for, and the scope it asked; null for a token of the project. */
  resource: string | null;
  resource_scope: string | null;
  /** The organization the user signed in to (`org_id`), or null; kept by each refresh token, which may switch it. */
  organization_id: string | null;
};

export type CodeRow = {
  project_id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  used: boolean;
  expired: boolean;
  session_id: string | null;
  user_active: boolean;
  /** False when the browser session the code was issued in has ended since (logout, sign-out, password). */
  sso_live: boolean;
} & CodeLogin;

/**
 * A login's code (or a device's approval) counts only while the browser session it was given in is live:
 * the condition on the column (an SQL expression) holding that session's id, as text.
 */
export const ssoLiveText = (column: string) =>
  `(${column} is null or exists (select 1 from sso_sessions b where b.id = ${column} and b.ended_at is null))`;
const ssoLive = (sql: Sql) => fixed(sql, ssoLiveText("a.sso_session_id"));

export async function findAuthorizationCode(sql: Sql, codeHash: Uint8Array): Promise<CodeRow | undefined> {
  const [row] = await sql<CodeRow[]>`
    select a.project_id, a.client_id, a.user_id, a.redirect_uri, a.code_challenge, a.used_at is not null as used,
           a.expires_at <= now() as expired, a.session_id, u.is_active as user_active,
           a.scope, a.nonce, a.auth_time, a.sso_session_id, a.ip, a.user_agent, a.amr, a.resource, a.resource_scope,
           a.organization_id, ${ssoLive(sql)} as sso_live
    from authorization_codes a join users u on u.id = a.user_id
    where a.code_hash = ${codeHash}`;
  return row;
}

/**
 * Spends the code for this session in one statement: of concurrent redemptions exactly one gets the database's
 * time (which stamps the tokens) and the kid of the current signing key, the others null.
 */
export async function consumeAuthorizationCode(
  sql: Sql,
  codeHash: Uint8Array,
  sessionId: string,
): Promise<{ now: Date; kid: string } | null> {
  const rows = await sql`
    update authorization_codes a set used_at = now(), session_id = ${sessionId}
    where code_hash = ${codeHash} and used_at is null and expires_at > now() and ${ssoLive(sql)}
    returning now() as now, ${currentKidSql(sql)} as kid`;
  return rows.length === 1 ? rows[0] as { now: Date; kid: string } : null;
}

/**
 * Opens a login session with its first refresh token, in one statement. The session ends `maxTtlSeconds`
 * after the login whatever the refreshes; the refresh token lives `ttlSeconds`, at most that long. Returns
 * the refresh token's lifetime in seconds.
 */
export async function openSession(
  sql: Sql,
  s: {
    project_id: string;
    id: string;
    user_id: string;
    client_id: string;
    token_hash: Uint8Array;
    ttlSeconds: number;
    maxTtlSeconds: number;
  } & Partial<Omit<CodeLogin, "nonce">>,
): Promise<number> {
  const [row] = await sql<{ expires_in: number }[]>`
    with s as (
      insert into sessions (project_id, id, user_id, client_id, expires_at, max_expires_at,
                            scope, auth_time, sso_session_id, ip, user_agent, amr, resource, resource_scope)
      values (${s.project_id}, ${s.id}, ${s.user_id}, ${s.client_id},
              now() + make_interval(secs => least(${s.ttlSeconds}::int, ${s.maxTtlSeconds}::int)),
              now() + make_interval(secs => ${s.maxTtlSeconds}),
              ${s.scope ?? null}, ${s.auth_time ?? null}, ${s.sso_session_id ?? null}, ${s.ip ?? null},
              ${s.user_agent ?? null}, ${s.amr ?? null}, ${s.resource ?? null}, ${s.resource_scope ?? null})
      returning project_id, id, expires_at
    )
    insert into refresh_tokens (project_id, token_hash, session_id, expires_at, organization_id)
    select s.project_id, ${s.token_hash}, s.id, s.expires_at, ${s.organization_id ?? null} from s
    returning floor(extract(epoch from expires_at - now()))::int as expires_in`;
  return row.expires_in;
}

export async function revokeSession(sql: Sql, sessionId: string): Promise<void> {
  await sql`update sessions set revoked_at = now() where id = ${sessionId} and revoked_at is null`;
}

/**
 * Ends every live session of a user (optionally but one), a client or a project, with their refresh tokens (and,
 * for a user or a project, its browser sessions), so that a later reactivation brings none of them back. (A code not yet exchanged is checked against the
 * user, client and project when it is.)
 */
export async function endSessions(
  sql: Sql,
  of: { userId: string; except?: string } | { clientId: string } | { projectId: string },
): Promise<void> {
  const where = "userId" in of
    ? sql`user_id = ${of.userId}`
    : "clientId" in of
    ? sql`client_id = ${of.clientId}`
    : sql`project_id = ${of.projectId}`;
  const except = "userId" in of && of.except ? sql`and id <> ${of.except}` : sql``;
  await sql`update sessions set revoked_at = now() where ${where} ${except} and revoked_at is null`;
  // A deactivated user, or a new password, also ends the user's single sign-on sessions in every browser; a
  // deactivated project, every browser session of the project.
  if ("userId" in of) await endUserSsoSessions(sql, of.userId);
  if ("projectId" in of) await endProjectSsoSessions(sql, of.projectId);
}

export async function insertRefreshToken(
  sql: Sql,
  t: {
    project_id: string;
    token_hash: Uint8Array;
    session_id: string;
    ttlSeconds: number;
    organization_id: string | null;
  },
): Promise<number> {
  const [row] = await sql<{ expires_in: number }[]>`
    with s as (
      update sessions
      set expires_at = greatest(expires_at, least(now() + make_interval(secs => ${t.ttlSeconds}), max_expires_at)),
          last_used_at = now()
      where project_id = ${t.project_id} and id = ${t.session_id}
      returning project_id, id, least(now() + make_interval(secs => ${t.ttlSeconds}), max_expires_at) as until
    )
    insert into refresh_tokens (project_id, token_hash, session_id, expires_at, organization_id)
    select s.project_id, ${t.token_hash}, s.id, s.until, ${t.organization_id} from s
    returning floor(extract(epoch from expires_at - now()))::int as expires_in`;
  return row.expires_in;
}

export type RefreshRow = {
  project_id: string;
  session_id: string;
  client_id: string;
  user_id: string;
  used: boolean;
  expired: boolean;
  session_live: boolean;
  user_active: boolean;
  /** The session's client and the project are active. */
  client_live: boolean;
  exp: number;
  /** OpenID Connect sessions: their scopes, when the user authenticated and their single sign-on session. */
  scope: string | null;
  auth_time: Date | null;
  sso_session_id: string | null;
  /** RFC 8707: the API the session's tokens are for, and the scope its authorization asked. */
  resource: string | null;
  resource_scope: string | null;
  /** The organization of the token's family now (`org_id`), or null. */
  organization_id: string | null;
  /** When this refresh token was issued (to the millisecond). */
  issued_at: Date;
};

export async function findRefreshToken(sql: Sql, tokenHash: Uint8Array): Promise<RefreshRow | undefined> {
  const [row] = await sql<RefreshRow[]>`
    select t.project_id, t.session_id, s.client_id, s.user_id, t.used_at is not null as used,
           t.expires_at <= now() as expired,
           (s.revoked_at is null and s.expires_at > now()) as session_live, u.is_active as user_active,
           (c.is_active and p.is_active) as client_live,
           extract(epoch from t.expires_at)::bigint::int as exp, s.scope, s.auth_time, s.sso_session_id,
           s.resource, s.resource_scope, t.organization_id,
           date_trunc('milliseconds', t.created_at) as issued_at
    from refresh_tokens t
    join sessions s on s.id = t.session_id
    join users u on u.id = s.user_id
    join clients c on c.id = s.client_id
    join projects p on p.id = t.project_id
    where t.token_hash = ${tokenHash}`;
  return row;
}

/** Spends the refresh token in one statement: of concurrent refreshes exactly one gets the time and current kid. */
export async function consumeRefreshToken(
  sql: Sql,
  tokenHash: Uint8Array,
): Promise<{ now: Date; kid: string } | null> {
  const rows = await sql`
    update refresh_tokens set used_at = now()
    where token_hash = ${tokenHash} and used_at is null and expires_at > now()
    returning now() as now, ${currentKidSql(sql)} as kid`;
  return rows.length === 1 ? rows[0] as { now: Date; kid: string } : null;
}

export async function revokeAccessToken(
  sql: Sql,
  t: { jti: string; project_id: string; exp: number },
): Promise<boolean> {
  const rows = await sql`
    insert into revoked_access_tokens (jti, project_id, expires_at)
    values (${t.jti}, ${t.project_id}, to_timestamp(${t.exp}))
    on conflict (jti) do nothing
    returning jti`;
  return rows.length === 1;
}
