/**
 * The verification page of the device grant (RFC 8628 §3.3): the user enters the code, signs in through the
 * ordinary login, and approves or denies the device. The sign-in is an authorization request of the device's client
 * whose redirect URI is this service's /device/callback, with a PKCE challenge whose verifier the device code
 * keeps: so every rule of a sign-in (the project's policy, a second factor, passkeys, upstream providers, a
 * verified address, consent for a third-party client) applies as at /authorize, in the one place that writes a
 * code (domain/signin/codes.ts). The callback redeems that code here, server-side, for who signed in.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import { consumeAuthorizationCode, findAuthorizationCode } from "../../db/oauth/sessions.ts";
import {
  decideDeviceCode,
  type DeviceCodeRow,
  findDeviceCodeByState,
  findDeviceCodeByUserCode,
  holdDeviceLogin,
  startDeviceLogin,
} from "../../db/oauth/device_codes.ts";
import { findClientWithProject } from "../../db/oauth/clients.ts";
import { countAttempt } from "../../db/shared/throttle.ts";
import { record, type Source, userSource } from "../audit/audit.ts";
import { normalizeUserCode, userCodeHash } from "../oauth/device_authorization.ts";
import { s256 } from "../oauth/grants/authorization_code.ts";
import { deviceCallbackUri } from "../projects/redirect_uris.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { newId, newSecret } from "../shared/ids.ts";
import { hashSecret, secretMatches } from "../shared/secrets.ts";
import { addressKey, notThrottled, THROTTLE, throttled } from "../shared/throttle.ts";
import { type Asked, askedOf } from "./consent.ts";
import { AuthorizePageError } from "./login.ts";

/** One answer for an unknown, expired, used or decided code: the page never tells which codes exist. */
export class DeviceCodeNotValid extends AuthorizePageError {
  constructor() {
    super("This code is not valid. Check the code your device shows, or start again on the device.");
  }
}

/** A form or callback of another browser, or one whose step has passed: nothing changes. */
export const STALE =
  "This page has expired or was not opened in this browser. Enter the code from your device again.";

/** A live device authorization still waiting for its user: pending, unused, unexpired, nobody signed in. */
const waiting = (row: DeviceCodeRow | undefined): row is DeviceCodeRow =>
  row !== undefined && row.status === "pending" && !row.used && !row.expired && row.user_id === null;

/**
 * The user code entered at /device: the login's /authorize URL for its device authorization, which this browser
 * (its cookie's secret) and only it may finish. Wrong codes are counted per address (THROTTLE.deviceCode): past
 * the limit every entry, right or wrong, answers 429 until the window passes.
 */
export async function enterUserCode(
  sql: Sql,
  entered: string,
  browserSecret: string,
  request: RequestInfo,
  publicUrl: string,
): Promise<string> {
  const key = `device:${addressKey(request.ip)}`;
  await notThrottled(sql, key, THROTTLE.deviceCode);
  const letters = normalizeUserCode(entered);
  const row = letters === null ? undefined : await findDeviceCodeByUserCode(sql, userCodeHash(letters));
  if (!waiting(row)) {
    const wait = await countAttempt(sql, key, THROTTLE.deviceCode);
    if (wait !== null) throw throttled(wait, "too many wrong codes");
    throw new DeviceCodeNotValid();
  }
  const verifier = newSecret();
  const state = newSecret();
  const challenge = s256(verifier);
  const started = await startDeviceLogin(sql, row.id, {
    browser_hash: hashSecret(browserSecret),
    state_hash: hashSecret(state),
    code_verifier: verifier,
    code_challenge: challenge,
  });
  if (!started) throw new DeviceCodeNotValid();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: row.client_id,
    redirect_uri: deviceCallbackUri(publicUrl),
    code_challenge: challenge,
    code_challenge_method: "S256",
    state,
  });
  if (row.scope !== null) query.set("scope", row.scope);
  if (row.resource !== null) query.set("resource", row.resource);
  return `${publicUrl}/authorize?${query}`;
}

/** The device authorization of a callback or a confirmation form, if this browser started its login. */
async function ownRow(sql: Sql, state: string | undefined, browserSecret: string | undefined) {
  if (!state || !browserSecret || state.length > 100) throw new AuthorizePageError(STALE);
  const row = await findDeviceCodeByState(sql, hashSecret(state));
  if (!row || !row.browser_hash || !secretMatches(browserSecret, row.browser_hash)) {
    throw new AuthorizePageError(STALE);
  }
  if (row.status !== "pending" || row.used || row.expired) throw new DeviceCodeNotValid();
  return row;
}

/** What the confirmation page shows: the client's name, the API (null: the project) and what it may do. */
export type DeviceShown = {
  clientName: string;
  projectId: string;
  projectName: string;
  asked: Asked;
  csrf: string;
  state: string;
};

/**
 * The login came back with a code (RFC 6749 §4.1.2): redeemed here with the verifier the device code kept, as the
 * token endpoint would (the device's client, this redirect URI, PKCE, unused, unexpired, a live browser session).
 * Who signed in and how is kept with the device code, which now waits for the user's decision.
 */
export async function redeemDeviceLogin(
  sql: Sql,
  p: { state?: string; code?: string; browserSecret?: string; publicUrl: string },
): Promise<DeviceShown> {
  const row = await ownRow(sql, p.state, p.browserSecret);
  if (row.user_id !== null || !row.code_verifier || !p.code) throw new AuthorizePageError(STALE);
  const codeHash = hashSecret(p.code);
  const code = await findAuthorizationCode(sql, codeHash);
  const fine = code && code.client_id === row.client_id && code.project_id === row.project_id &&
    code.redirect_uri === deviceCallbackUri(p.publicUrl) && !code.used && !code.expired && code.user_active &&
    code.sso_live && code.code_challenge === s256(row.code_verifier);
  if (!fine) throw new AuthorizePageError(STALE);
  const csrf = newSecret();
  const sessionId = newId();
  const held = await transaction(sql, async (tx) => {
    if ((await consumeAuthorizationCode(tx, codeHash, sessionId)) === null) return false;
    const { scope, nonce, auth_time, sso_session_id, ip, user_agent, amr, resource, resource_scope } = code;
    return await holdDeviceLogin(tx, row.id, {
      user_id: code.user_id,
      session_id: sessionId,
      // A device's tokens are the project's: the device grant asks for no organization.
      login: {
        scope,
        nonce,
        auth_time,
        sso_session_id,
        ip,
        user_agent,
        amr,
        resource,
        resource_scope,
        organization_id: null,
      },
      confirm_csrf_hash: hashSecret(csrf),
    });
  });
  if (!held) throw new AuthorizePageError(STALE);
  const client = await findClientWithProject(sql, row.client_id);
  const asked = await askedOf(sql, {
    project_id: row.project_id,
    client_id: row.client_id,
    user_id: code.user_id,
    resource: code.resource,
    resource_scope: code.resource_scope,
    scope: code.scope,
  });
  return {
    clientName: client?.name ?? row.client_id,
    projectId: row.project_id,
    projectName: client?.project_name ?? "",
    asked,
    csrf,
    state: p.state!,
  };
}

/**
 * The user's decision on the confirmation page (its CSRF token, this browser): `approved` lets the device's next
 * poll have the tokens, `denied` answers it `access_denied`. Recorded as `device.approved` / `device.denied`.
 */
export async function decideDevice(
  sql: Sql,
  p: { state?: string; csrf?: string; browserSecret?: string; approve: boolean },
  request: RequestInfo,
): Promise<{ projectId: string }> {
  const row = await ownRow(sql, p.state, p.browserSecret);
  if (!row.user_id || !row.confirm_csrf_hash || !p.csrf || !secretMatches(p.csrf, row.confirm_csrf_hash)) {
    throw new AuthorizePageError(STALE);
  }
  await decide(sql, row, p.approve, userSource(row.user_id, request));
  return { projectId: row.project_id };
}

/**
 * The login itself ended with `access_denied` (the user denied a third-party client on its consent page): the
 * device is denied too. Any other error of the login leaves the code waiting (the user may try again).
 */
export async function denyDeviceAtLogin(
  sql: Sql,
  p: { state?: string; browserSecret?: string },
  request: RequestInfo,
): Promise<void> {
  const row = await ownRow(sql, p.state, p.browserSecret);
  await decide(sql, row, false, userSource(row.user_id, request));
}

async function decide(sql: Sql, row: DeviceCodeRow, approve: boolean, source: Source): Promise<void> {
  const done = await transaction(sql, async (tx) => {
    if (!(await decideDeviceCode(tx, row.id, approve ? "approved" : "denied"))) return false;
    await record(tx, {
      projectId: row.project_id,
      type: approve ? "device.approved" : "device.denied",
      source,
      target: { type: "client", id: row.client_id },
      details: { client_id: row.client_id, device_id: row.id },
    });
    return true;
  });
  if (!done) throw new DeviceCodeNotValid();
}
