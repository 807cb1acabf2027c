/**
 * Queries of single sign-on browser sessions (one row per browser and project, found by the hash of the
 * browser's cookie) and of the login sessions a user can list and end. Every liveness check is the database's:
 * idle and absolute expiry, the user and the project active.
 */
import type { Sql } from "../connection.ts";
import { offsetOf, type Page, pageOf } from "../lists.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type { Session } from "../../openapi/sessions.ts";

export type SsoSessionRow = {
  id: string;
  project_id: string;
  user_id: string;
  auth_time: Date;
  amr: string[] | null;
};

/** Opens a browser session; it ends `idleSeconds` after its last use, and `ttlSeconds` after the login at most. */
export async function insertSsoSession(
  sql: Sql,
  s: {
    project_id: string;
    id: string;
    browser_hash: Uint8Array;
    user_id: string;
    idleSeconds: number;
    ttlSeconds: number;
    /** The identity provider the user signed in through, if any. */
    provider_id?: string | null;
    /** How the user authenticated (RFC 8176). */
    amr?: string[] | null;
  },
): Promise<SsoSessionRow> {
  const [row] = await sql<SsoSessionRow[]>`
    insert into sso_sessions (project_id, id, browser_hash, user_id, auth_time, idle_expires_at, expires_at,
                              provider_id, amr)
    values (${s.project_id}, ${s.id}, ${s.browser_hash}, ${s.user_id}, now(),
            now() + make_interval(secs => least(${s.idleSeconds}::int, ${s.ttlSeconds}::int)),
            now() + make_interval(secs => ${s.ttlSeconds}), ${s.provider_id ?? null}, ${s.amr ?? null})
    returning id, project_id, user_id, auth_time, amr`;
  return row;
}

/** A new cookie value for the browser's live sessions (every login turns the cookie over). */
export async function rekeyBrowser(sql: Sql, from: Uint8Array, to: Uint8Array): Promise<void> {
  await sql`update sso_sessions set browser_hash = ${to} where browser_hash = ${from} and ended_at is null`;
}

const live = (sql: Sql) =>
  sql`s.ended_at is null and s.idle_expires_at > now() and s.expires_at > now()
      and exists (select 1 from users u join projects p on p.id = u.project_id
                  where u.id = s.user_id and u.project_id = s.project_id and u.is_active and p.is_active)`;

/**
 * Uses the browser's live session in the project: its idle expiry moves forward in the same statement that
 * checks it, so a session that expired a moment ago is never used. `age` is seconds since the login.
 */
export async function useSsoSession(
  sql: Sql,
  browserHash: Uint8Array,
  projectId: string,
  idleSeconds: number,
): Promise<(SsoSessionRow & { age: number; provider_id: string | null }) | undefined> {
  const [row] = await sql<(SsoSessionRow & { age: number; provider_id: string | null })[]>`
    update sso_sessions s
    set idle_expires_at = least(now() + make_interval(secs => ${idleSeconds}), s.expires_at)
    where s.id = (
      select s.id from sso_sessions s
      where s.browser_hash = ${browserHash} and s.project_id = ${projectId} and ${live(sql)}
      order by s.created_at desc limit 1
    ) and ${live(sql)}
    returning s.id, s.project_id, s.user_id, s.auth_time, s.amr, s.provider_id,
              extract(epoch from now() - s.auth_time)::float8 as age`;
  return row;
}

export type EndedSsoSession = { id: string; project_id: string; user_id: string; sessions_revoked: number };

/**
 * Ends browser sessions (of a browser, in one project or in all; or one by id) and revokes the login sessions
 * each created, in one statement. Returns what it ended, for the audit trail.
 */
export async function endSsoSessions(
  sql: Sql,
  which: { browserHash: Uint8Array; projectId: string | null } | { id: string; projectId: string },
): Promise<EndedSsoSession[]> {
  const where = "id" in which
    ? sql`id = ${which.id} and project_id = ${which.projectId}`
    : which.projectId === null
    ? sql`browser_hash = ${which.browserHash}`
    : sql`browser_hash = ${which.browserHash} and project_id = ${which.projectId}`;
  return await sql<EndedSsoSession[]>`
    with ended as (
      update sso_sessions set ended_at = now() where ${where} and ended_at is null
      returning project_id, id, user_id
    ), revoked as (
      update sessions s set revoked_at = now() from ended e
      where s.project_id = e.project_id and s.sso_session_id = e.id and s.revoked_at is null
      returning s.sso_session_id
    )
    select e.id, e.project_id, e.user_id,
           (select count(*) from revoked r where r.sso_session_id = e.id)::int as sessions_revoked
    from ended e order by e.project_id, e.id`;
}

/** A deactivated user, or a new password: the user's browser sessions end (their login sessions apart). */
export async function endUserSsoSessions(sql: Sql, userId: string): Promise<void> {
  await sql`update sso_sessions set ended_at = now() where user_id = ${userId} and ended_at is null`;
}

/**
 * A deactivated project: its browser sessions end in every browser, so that reactivating it signs nobody in
 * without the form.
 */
export async function endProjectSsoSessions(sql: Sql, projectId: string): Promise<void> {
  await sql`update sso_sessions set ended_at = now() where project_id = ${projectId} and ended_at is null`;
}

/** Whether the live single sign-on session `id` is this browser's. */
export async function browserOwnsSession(
  sql: Sql,
  browserHash: Uint8Array,
  id: string,
): Promise<boolean> {
  const rows =
    await sql`select 1 from sso_sessions s where s.id = ${id} and s.browser_hash = ${browserHash} and ${
      live(sql)
    }`;
  return rows.length > 0;
}

/**
 * Whether the browser still has a live session: in `projectId` when given, else in any project (when none, its
 * cookie can go).
 */
export async function browserHasSessions(
  sql: Sql,
  browserHash: Uint8Array,
  projectId: string | null = null,
): Promise<boolean> {
  const rows = await sql`select 1 from sso_sessions s where s.browser_hash = ${browserHash} and ${
    live(sql)
  } ${projectId === null ? sql`` : sql`and s.project_id = ${projectId}`} limit 1`;
  return rows.length > 0;
}

const sessionColumns = (sql: Sql) => sql`s.id, s.client_id, s.created_at, s.last_used_at, s.ip, s.user_agent`;

/** The user's live login sessions, newest first. */
export async function listUserSessions(
  sql: Sql,
  projectId: string,
  userId: string,
  page: Page,
): Promise<PageOf<Session>> {
  const where = sql`where s.project_id = ${projectId} and s.user_id = ${userId}
    and s.revoked_at is null and s.expires_at > now()`;
  return await pageOf(
    sql<(Session & { total_count: number })[]>`
      select ${sessionColumns(sql)}, count(*) over ()::int as total_count from sessions s ${where}
      order by s.created_at desc, s.id desc
      limit ${page.page_size} offset ${offsetOf(page)}`,
    page,
    () => sql<{ total: number }[]>`select count(*)::int as total from sessions s ${where}`,
  );
}

/** Ends one live login session of the user; undefined when the user has no such live session. */
/** Ends one login session of the user and the browser (single sign-on) session that opened it. */
export async function revokeUserSession(
  sql: Sql,
  projectId: string,
  userId: string,
  sessionId: string,
): Promise<{ id: string; client_id: string } | undefined> {
  const [row] = await sql<{ id: string; client_id: string }[]>`
    with ended as (
      update sessions set revoked_at = now()
      where project_id = ${projectId} and user_id = ${userId} and id = ${sessionId}
        and revoked_at is null and expires_at > now()
      returning id, client_id, sso_session_id
    ), browser as (
      -- The browser session that opened it ends too, or that browser would sign in again without the form.
      update sso_sessions set ended_at = now()
      where id in (select sso_session_id from ended) and ended_at is null
    )
    select id, client_id from ended`;
  return row;
}

/** Ends every live login session and browser session of the user; returns how many login sessions ended. */
export async function revokeAllUserSessions(sql: Sql, projectId: string, userId: string): Promise<number> {
  const rows = await sql`
    update sessions set revoked_at = now()
    where project_id = ${projectId} and user_id = ${userId} and revoked_at is null and expires_at > now()
    returning id`;
  await endUserSsoSessions(sql, userId);
  return rows.length;
}

export type BrowserAccountRow = {
  id: string;
  project_id: string;
  project_name: string;
  user_id: string;
  /** When the user last signed in again at their provider from the account page (fresh proof). */
  reauthenticated_at: Date | null;
};

/**
 * The browser's newest live session, in `projectId` when given, else in any project: who the account page is
 * for. Its idle expiry is not moved (looking at one's account is not a login).
 */
export async function findBrowserSession(
  sql: Sql,
  browserHash: Uint8Array,
  projectId: string | null,
): Promise<BrowserAccountRow | undefined> {
  const [row] = await sql<BrowserAccountRow[]>`
    select s.id, s.project_id, p.name as project_name, s.user_id, s.reauthenticated_at
    from sso_sessions s join projects p on p.id = s.project_id
    where s.browser_hash = ${browserHash} and ${live(sql)}
      ${projectId === null ? sql`` : sql`and s.project_id = ${projectId}`}
    order by s.created_at desc limit 1`;
  return row;
}

/** The live session of this browser and user, by id (a re-authentication coming back), or undefined. */
export async function findLiveSession(
  sql: Sql,
  id: string,
  browserHash: Uint8Array,
): Promise<{ id: string; project_id: string; user_id: string } | undefined> {
  const [row] = await sql<{ id: string; project_id: string; user_id: string }[]>`
    select s.id, s.project_id, s.user_id from sso_sessions s
    where s.id = ${id} and s.browser_hash = ${browserHash} and ${live(sql)}`;
  return row;
}

/** The session's user signed in again at their provider just now (fresh proof for the account page). */
export async function markReauthenticated(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`update sso_sessions s set reauthenticated_at = now() where s.id = ${id} and ${
    live(sql)
  }`;
  return rows.count === 1;
}

/** The projects the browser has a live session in, for the account page's switcher. */
export async function listBrowserProjects(
  sql: Sql,
  browserHash: Uint8Array,
): Promise<{ project_id: string; project_name: string }[]> {
  return await sql<{ project_id: string; project_name: string }[]>`
    select distinct s.project_id, p.name as project_name
    from sso_sessions s join projects p on p.id = s.project_id
    where s.browser_hash = ${browserHash} and ${live(sql)}
    order by p.name, s.project_id limit 20`;
}
