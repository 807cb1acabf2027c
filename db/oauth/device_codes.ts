/** Queries on device authorizations (RFC 8628): the codes, the verification page's login, the decision, the polls. */
import type { Sql } from "../connection.ts";
import { currentKidSql } from "../keys/keys.ts";
import { fixed } from "../columns.ts";
import { type CodeLogin, ssoLiveText } from "./sessions.ts";

export type DeviceStatus = "pending" | "approved" | "denied";

/** A device authorization as the token endpoint and the verification page read it. */
export type DeviceCodeRow = {
  project_id: string;
  id: string;
  client_id: string;
  scope: string | null;
  resource: string | null;
  interval_seconds: number;
  status: DeviceStatus;
  expired: boolean;
  used: boolean;
  browser_hash: Uint8Array | null;
  code_verifier: string | null;
  confirm_csrf_hash: Uint8Array | null;
  user_id: string | null;
  session_id: string | null;
  /** How the user signed in (the redeemed code's), kept for the session the tokens open. */
  login: (Omit<CodeLogin, "auth_time"> & { auth_time: string | null }) | null;
  user_active: boolean | null;
  /** False once the browser session the user approved in has ended (a logout): the approval ends with it. */
  sso_live: boolean;
};

const ROW = `d.project_id, d.id, d.client_id, d.scope, d.resource, d.interval_seconds, d.status,
  d.expires_at <= now() as expired, d.used_at is not null as used, d.browser_hash, d.code_verifier,
  d.confirm_csrf_hash, d.user_id, d.session_id, d.login,
  (select u.is_active from users u where u.project_id = d.project_id and u.id = d.user_id) as user_active,
  ${ssoLiveText("(d.login ->> 'sso_session_id')")} as sso_live`;

/** Inserts a device authorization; false when its user code collides with another's (draw another). */
export async function insertDeviceCode(
  sql: Sql,
  d: {
    project_id: string;
    id: string;
    client_id: string;
    device_code_hash: Uint8Array;
    user_code_hash: Uint8Array;
    scope: string | null;
    resource: string | null;
    interval: number;
    ttlSeconds: number;
  },
): Promise<boolean> {
  const rows = await sql`
    insert into device_codes (project_id, id, client_id, device_code_hash, user_code_hash, scope, resource,
                              interval_seconds, expires_at)
    values (${d.project_id}, ${d.id}, ${d.client_id}, ${d.device_code_hash}, ${d.user_code_hash}, ${d.scope},
            ${d.resource}, ${d.interval}, now() + make_interval(secs => ${d.ttlSeconds}))
    on conflict (user_code_hash) do nothing
    returning id`;
  return rows.length === 1;
}

export async function findDeviceCodeByDeviceCode(
  sql: Sql,
  hash: Uint8Array,
): Promise<DeviceCodeRow | undefined> {
  const [row] = await sql<DeviceCodeRow[]>`
    select ${fixed(sql, ROW)} from device_codes d where d.device_code_hash = ${hash}`;
  return row;
}

export async function findDeviceCodeByUserCode(
  sql: Sql,
  hash: Uint8Array,
): Promise<DeviceCodeRow | undefined> {
  const [row] = await sql<DeviceCodeRow[]>`
    select ${fixed(sql, ROW)} from device_codes d where d.user_code_hash = ${hash}`;
  return row;
}

export async function findDeviceCodeByState(sql: Sql, hash: Uint8Array): Promise<DeviceCodeRow | undefined> {
  const [row] = await sql<DeviceCodeRow[]>`
    select ${fixed(sql, ROW)} from device_codes d where d.state_hash = ${hash}`;
  return row;
}

/**
 * Whether a pending, live device authorization of this client started a login with this PKCE challenge: what ties
 * an authorization request whose redirect URI is the internal /device/callback to a device code.
 */
export async function deviceLoginExists(sql: Sql, clientId: string, codeChallenge: string): Promise<boolean> {
  const rows = await sql`
    select 1 from device_codes
    where client_id = ${clientId} and code_challenge = ${codeChallenge} and status = 'pending'
      and used_at is null and user_id is null and expires_at > now()`;
  return rows.length > 0;
}

/** The verification page starts a login for the device code: binds it to the browser (a later entry replaces it). */
export async function startDeviceLogin(
  sql: Sql,
  id: string,
  l: { browser_hash: Uint8Array; state_hash: Uint8Array; code_verifier: string; code_challenge: string },
): Promise<boolean> {
  const rows = await sql`
    update device_codes set browser_hash = ${l.browser_hash}, state_hash = ${l.state_hash},
      code_verifier = ${l.code_verifier}, code_challenge = ${l.code_challenge}
    where id = ${id} and status = 'pending' and user_id is null and used_at is null and expires_at > now()
    returning id`;
  return rows.length === 1;
}

/** The login's code redeemed: who signed in, waiting for the user's decision on the confirmation page. */
export async function holdDeviceLogin(
  sql: Sql,
  id: string,
  h: { user_id: string; session_id: string; login: CodeLogin; confirm_csrf_hash: Uint8Array },
): Promise<boolean> {
  const rows = await sql`
    update device_codes set user_id = ${h.user_id}, session_id = ${h.session_id},
      login = ${sql.json(JSON.parse(JSON.stringify(h.login)))}, confirm_csrf_hash = ${h.confirm_csrf_hash},
      code_verifier = null
    where id = ${id} and status = 'pending' and user_id is null and used_at is null and expires_at > now()
    returning id`;
  return rows.length === 1;
}

/** The user's decision, once: false when the authorization was decided, used or expired meanwhile. */
export async function decideDeviceCode(
  sql: Sql,
  id: string,
  status: "approved" | "denied",
): Promise<boolean> {
  const rows = await sql`
    update device_codes set status = ${status}, decided_at = now(), confirm_csrf_hash = null
    where id = ${id} and status = 'pending' and used_at is null and expires_at > now()
    returning id`;
  return rows.length === 1;
}

/**
 * A poll of a pending authorization (RFC 8628 §3.5): stamps it, and when it came sooner than the interval after
 * the previous one, grows the interval by 5 seconds (kept for this device code). Returns whether it was too soon.
 */
export async function pollDeviceCode(sql: Sql, id: string): Promise<boolean> {
  const [row] = await sql<{ too_soon: boolean }[]>`
    update device_codes d set last_polled_at = now(),
      interval_seconds = case when p.too_soon then d.interval_seconds + 5 else d.interval_seconds end
    from (select id, coalesce(last_polled_at > now() - make_interval(secs => interval_seconds), false) as too_soon
          from device_codes where id = ${id} for update) p
    where d.id = p.id
    returning p.too_soon`;
  return row?.too_soon ?? false;
}

/**
 * Spends an approved authorization in one statement: of concurrent polls exactly one gets the database's time
 * and the current signing key, the others null.
 */
export async function consumeDeviceCode(sql: Sql, id: string): Promise<{ now: Date; kid: string } | null> {
  const rows = await sql`
    update device_codes set used_at = now()
    where id = ${id} and status = 'approved' and used_at is null and expires_at > now()
    returning now() as now, ${currentKidSql(sql)} as kid`;
  return rows.length === 1 ? rows[0] as { now: Date; kid: string } : null;
}
