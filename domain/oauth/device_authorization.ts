/**
 * The device authorization endpoint (RFC 8628 §3.1–3.2): a client allowed the grant (`device_grant`) gets a device
 * code to poll with and a user code for its user to enter at /device. Also the user code's alphabet and shape.
 */
import { addressKey, attempt, THROTTLE } from "../shared/throttle.ts";
import { randomInt } from "node:crypto";
import type { Sql } from "../../db/connection.ts";
import { insertDeviceCode } from "../../db/oauth/device_codes.ts";
import type { DeviceAuthorizationRequest, DeviceAuthorizationResponse } from "../../openapi/tokens.ts";
import { authenticateClient, type PresentedClient } from "./client_auth.ts";
import { AppError } from "../shared/errors.ts";
import { newId, newSecret } from "../shared/ids.ts";
import { hashSecret } from "../shared/secrets.ts";
import { formIndicator, indicatorOfProject } from "./resource_indicators.ts";

/** How long both codes live, seconds (RFC 8628 §3.2 `expires_in`). */
export const DEVICE_CODE_TTL = 600;
/** The first wait between polls, seconds; each `slow_down` adds 5 (§3.5). */
export const DEVICE_POLL_INTERVAL = 5;
/** The grant type the device polls the token endpoint with (§3.4). */
export const DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";

/**
 * Consonants only (RFC 8628 §6.1): no vowels, so no words; no digits, so no 0/O or 1/I to confuse. 20^8 ≈ 2^34.6
 * codes, against guesses limited per address at the page.
 */
const ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const LENGTH = 8;

/** A user code as entered (any case, spaces or a dash anywhere): its eight letters, or null when it has not. */
export function normalizeUserCode(entered: string): string | null {
  const letters = entered.toUpperCase().replace(/[\s-]/g, "");
  if (letters.length !== LENGTH) return null;
  for (const ch of letters) if (!ALPHABET.includes(ch)) return null;
  return letters;
}

/** The user code as shown: `XXXX-XXXX`. */
export const formatUserCode = (letters: string) => `${letters.slice(0, 4)}-${letters.slice(4)}`;

/** How a user code is kept (its normalised letters, hashed), for the lookup at the page. */
export const userCodeHash = (letters: string) => hashSecret(`user-code:${letters}`);

function newUserCode(): string {
  let out = "";
  for (let i = 0; i < LENGTH; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}

/**
 * Authenticates the client as the token endpoint does, checks it may use the grant and the API it names, and
 * stores both codes, hashed.
 */
export async function authorizeDevice(
  sql: Sql,
  form: DeviceAuthorizationRequest,
  presented: PresentedClient,
  publicUrl: string,
): Promise<DeviceAuthorizationResponse> {
  const indicator = formIndicator(form.resource);
  const client = await authenticateClient(sql, presented, "token");
  if (!client.device_grant) {
    throw new AppError("unauthorized_client", {
      description: "the client may not use the device grant (device_grant is false)",
    });
  }
  if (indicator !== undefined) await indicatorOfProject(sql, client.project_id, indicator);
  // Each authorization is a stored row that a public client's id alone can ask for: counted per client and address.
  await attempt(
    sql,
    `device:${client.id}:${addressKey(presented.request.ip)}`,
    THROTTLE.deviceAuthorization,
  );
  const deviceCode = newSecret();
  for (let tries = 0; tries < 5; tries++) {
    const userCode = newUserCode();
    const inserted = await insertDeviceCode(sql, {
      project_id: client.project_id,
      id: newId(),
      client_id: client.id,
      device_code_hash: hashSecret(deviceCode),
      user_code_hash: userCodeHash(userCode),
      scope: form.scope ?? null,
      resource: indicator ?? null,
      interval: DEVICE_POLL_INTERVAL,
      ttlSeconds: DEVICE_CODE_TTL,
    });
    if (!inserted) continue; // another authorization holds this user code: draw again
    const shown = formatUserCode(userCode);
    const verification = `${publicUrl}/device`;
    return {
      device_code: deviceCode,
      user_code: shown,
      verification_uri: verification,
      verification_uri_complete: `${verification}?${new URLSearchParams({ user_code: shown })}`,
      expires_in: DEVICE_CODE_TTL,
      interval: DEVICE_POLL_INTERVAL,
    };
  }
  throw new Error("no free user code after 5 draws");
}
