/** Queries of the user login: authorization requests and codes, sessions, refresh tokens, revocations, throttling. */
import type { Sql } from "./connection.ts";

export type AuthorizeClientRow = {
  client_id: string;
  project_id: string;
  project_name: string;
  client_active: boolean;
  project_active: boolean;
  redirect_uris: string[];
};

export async function findAuthorizeClient(
  sql: Sql,
  clientId: string,
): Promise<AuthorizeClientRow | undefined> {
  const [row] = await sql<AuthorizeClientRow[]>`
    select c.id as client_id, c.project_id, p.name as project_name, c.is_active as client_active,
           p.is_active as project_active, p.redirect_uris
    from clients c join projects p on p.id = c.project_id
    where c.id = ${clientId}`;
  return row;
}

export type AuthorizationRequestRow = {
  id: string;
  project_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | null;
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
      (id, project_id, client_id, redirect_uri, code_challenge, state, csrf_hash, browser_hash, expires_at)
    values (${r.id}, ${r.project_id}, ${r.client_id}, ${r.redirect_uri}, ${r.code_challenge}, ${r.state},
            ${r.csrf_hash}, ${r.browser_hash}, now() + make_interval(secs => ${r.ttlSeconds}))`;
}

export async function findAuthorizationRequest(
  sql: Sql,
  id: string,
): Promise<AuthorizationRequestRow | undefined> {
  const [row] = await sql<AuthorizationRequestRow[]>`
    select id, project_id, client_id, redirect_uri, code_challenge, state, csrf_hash, browser_hash,
           expires_at <= now() as expired, used_at is not null as used
    from authorization_requests where id = ${id}`;
  return row;
}

/** Marks the request used; false when another submission got there first. */
export async function consumeAuthorizationRequest(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`
    update authorization_requests set used_at = now()
    where id = ${id} and used_at is null and expires_at > now() returning id`;
  return rows.length === 1;
}

export type LoginUserRow = { id: string; password_hash: string | null; is_active: boolean };

export async function findLoginUser(
  sql: Sql,
  projectId: string,
  email: string,
): Promise<LoginUserRow | undefined> {
  const [row] = await sql<LoginUserRow[]>`
    select id, password_hash, is_active from users where project_id = ${projectId} and email = ${email}`;
  return row;
}

export type AttemptRow = {
  failures: number;
  seconds_since_previous: number | null;
  seconds_since_window: number;
};

/**
 * Counts a login attempt against a key before its password is checked, in one statement, so that parallel
 * guesses cannot all read a count from before any of them was recorded. A key whose window has passed starts
 * again at 1. Returns the count including this attempt and how long ago the attempt before it was.
 */
export async function countLoginAttempt(sql: Sql, key: string, windowSeconds: number): Promise<AttemptRow> {
  const [row] = await sql<AttemptRow[]>`
    insert into login_failures as f (key, failures, window_started_at, last_failed_at)
    values (${key}, 1, now(), now())
    on conflict (key) do update set
      failures = case when f.window_started_at < now() - make_interval(secs => ${windowSeconds})
                      then 1 else f.failures + 1 end,
      window_started_at = case when f.window_started_at < now() - make_interval(secs => ${windowSeconds})
                               then now() else f.window_started_at end,
      previous_failed_at = f.last_failed_at,
      last_failed_at = now()
    returning failures,
      case when failures = 1 then null else extract(epoch from now() - previous_failed_at)::float8 end
        as seconds_since_previous,
      extract(epoch from now() - window_started_at)::float8 as seconds_since_window`;
  return row;
}

/** Takes back an attempt that succeeded (for the address count, which counts failures only). */
export async function uncountLoginAttempt(sql: Sql, key: string): Promise<void> {
  await sql`update login_failures set failures = greatest(failures - 1, 0) where key = ${key}`;
}

export async function clearLoginFailures(sql: Sql, key: string): Promise<void> {
  await sql`delete from login_failures where key = ${key}`;
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
  },
): Promise<void> {
  await sql`
    insert into authorization_codes (project_id, code_hash, client_id, user_id, redirect_uri, code_challenge, expires_at)
    values (${c.project_id}, ${c.code_hash}, ${c.client_id}, ${c.user_id}, ${c.redirect_uri}, ${c.code_challenge},
            now() + make_interval(secs => ${c.ttlSeconds}))`;
}

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
};

export async function findAuthorizationCode(sql: Sql, codeHash: Uint8Array): Promise<CodeRow | undefined> {
  const [row] = await sql<CodeRow[]>`
    select a.project_id, a.client_id, a.user_id, a.redirect_uri, a.code_challenge, a.used_at is not null as used,
           a.expires_at <= now() as expired, a.session_id, u.is_active as user_active
    from authorization_codes a join users u on u.id = a.user_id
    where a.code_hash = ${codeHash}`;
  return row;
}

/** Spends the code for this session in one statement: of concurrent redemptions exactly one gets true. */
export async function consumeAuthorizationCode(
  sql: Sql,
  codeHash: Uint8Array,
  sessionId: string,
): Promise<boolean> {
  const rows = await sql`
    update authorization_codes set used_at = now(), session_id = ${sessionId}
    where code_hash = ${codeHash} and used_at is null and expires_at > now() returning session_id`;
  return rows.length === 1;
}

export async function insertSession(
  sql: Sql,
  s: { project_id: string; id: string; user_id: string; client_id: string; ttlSeconds: number },
): Promise<void> {
  await sql`
    insert into sessions (project_id, id, user_id, client_id, expires_at)
    values (${s.project_id}, ${s.id}, ${s.user_id}, ${s.client_id}, now() + make_interval(secs => ${s.ttlSeconds}))`;
}

export async function revokeSession(sql: Sql, sessionId: string): Promise<void> {
  await sql`update sessions set revoked_at = now() where id = ${sessionId} and revoked_at is null`;
}

/** Ends the user's other sessions (a password change), keeping the one in use. */
export async function revokeOtherSessions(sql: Sql, userId: string, keep: string): Promise<void> {
  await sql`update sessions set revoked_at = now() where user_id = ${userId} and id <> ${keep} and revoked_at is null`;
}

export async function insertRefreshToken(
  sql: Sql,
  t: { project_id: string; token_hash: Uint8Array; session_id: string; ttlSeconds: number },
): Promise<void> {
  await sql`
    insert into refresh_tokens (project_id, token_hash, session_id, expires_at)
    values (${t.project_id}, ${t.token_hash}, ${t.session_id}, now() + make_interval(secs => ${t.ttlSeconds}))`;
  // The session lives as long as its newest refresh token.
  await sql`
    update sessions set expires_at = greatest(expires_at, now() + make_interval(secs => ${t.ttlSeconds}))
    where id = ${t.session_id}`;
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
};

export async function findRefreshToken(sql: Sql, tokenHash: Uint8Array): Promise<RefreshRow | undefined> {
  const [row] = await sql<RefreshRow[]>`
    select t.project_id, t.session_id, s.client_id, s.user_id, t.used_at is not null as used,
           t.expires_at <= now() as expired,
           (s.revoked_at is null and s.expires_at > now()) as session_live, u.is_active as user_active,
           (c.is_active and p.is_active) as client_live,
           extract(epoch from t.expires_at)::bigint::int as exp
    from refresh_tokens t
    join sessions s on s.id = t.session_id
    join users u on u.id = s.user_id
    join clients c on c.id = s.client_id
    join projects p on p.id = t.project_id
    where t.token_hash = ${tokenHash}`;
  return row;
}

/** Spends the refresh token in one statement: of concurrent refreshes exactly one gets true. */
export async function consumeRefreshToken(sql: Sql, tokenHash: Uint8Array): Promise<boolean> {
  const rows = await sql`
    update refresh_tokens set used_at = now()
    where token_hash = ${tokenHash} and used_at is null and expires_at > now() returning session_id`;
  return rows.length === 1;
}

export async function revokeAccessToken(
  sql: Sql,
  t: { jti: string; project_id: string; exp: number },
): Promise<void> {
  await sql`
    insert into revoked_access_tokens (jti, project_id, expires_at)
    values (${t.jti}, ${t.project_id}, to_timestamp(${t.exp}))
    on conflict (jti) do nothing`;
}
