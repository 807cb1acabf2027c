/**
 * The device authorization grant (RFC 8628) for a CLI or any device without a browser: `deviceAuthorization` asks
 * for the codes, and `pollDeviceToken` waits for the user's decision at the verification page, honouring `interval`
 * and `slow_down`, until the tokens come or the user denies or the codes expire.
 */
import type { Api } from "./generated/models.ts";
import { ApiError } from "./errors.ts";
import type { Wire } from "./wire.ts";

export type DeviceAuthorization = Wire<Api.DeviceAuthorizationResponse>;
export type DeviceTokens = Wire<Api.TokenResponse>;

export type DeviceClientOptions = {
  /** The service's URL (its `PUBLIC_URL`, the metadata's `issuer`). */
  issuer: string;
  /** A client whose `device_grant` is true. */
  clientId: string;
  /** For a confidential client (`client_secret_basic`): sent with HTTP Basic. */
  clientSecret?: string;
  /** The fetch to send requests with; the platform's by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
};

const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";

/** RFC 6749 §2.3.1: the id and secret form-urlencoded, then joined and base64-encoded. */
function basic(clientId: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  const bytes = new TextEncoder().encode(`${enc(clientId)}:${enc(secret)}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

async function postForm(
  o: DeviceClientOptions,
  path: string,
  form: Record<string, string>,
): Promise<Response> {
  const send = o.fetch ??
    ((url: string, init: RequestInit) => fetch(url, init));
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  const body = new URLSearchParams(form);
  if (o.clientSecret !== undefined) {
    headers.authorization = basic(o.clientId, o.clientSecret);
  } else body.set("client_id", o.clientId);
  return await send(`${o.issuer.replace(/\/+$/, "")}${path}`, {
    method: "POST",
    headers,
    body: body.toString(),
  });
}

/**
 * Asks for a device code and a user code (`POST /api/v1/tokens/device_authorization`). Show the user
 * `verification_uri` and `user_code` (or a QR code of `verification_uri_complete`), then `pollDeviceToken`.
 * Throws ApiError (`unauthorized_client` when the client's `device_grant` is false).
 */
export async function deviceAuthorization(
  o: DeviceClientOptions & { scope?: string; resource?: string },
): Promise<DeviceAuthorization> {
  const form: Record<string, string> = {};
  if (o.scope !== undefined) form.scope = o.scope;
  if (o.resource !== undefined) form.resource = o.resource;
  const res = await postForm(o, "/api/v1/tokens/device_authorization", form);
  if (!res.ok) throw await ApiError.fromResponse(res);
  return await res.json();
}

/**
 * Polls the token endpoint with the device code until the user decided: waits `interval` seconds between polls
 * (RFC 8628 §3.5), 5 more after each `slow_down`, goes on through `authorization_pending`, and returns the user's
 * tokens. Throws ApiError for `access_denied` (the user denied), `expired_token` (start again) and any other
 * refusal; an aborted `signal` stops the wait.
 */
export async function pollDeviceToken(
  o: DeviceClientOptions & {
    deviceCode: string;
    /** The `interval` of the device authorization, seconds (5 when omitted). */
    interval?: number;
    signal?: AbortSignal;
    /** How to wait, for tests; `setTimeout` by default. */
    sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  },
): Promise<DeviceTokens> {
  let interval = o.interval ?? 5;
  const sleep = o.sleep ?? wait;
  for (;;) {
    await sleep(interval * 1000, o.signal);
    const res = await postForm(o, "/api/v1/tokens", {
      grant_type: GRANT_TYPE,
      device_code: o.deviceCode,
    });
    if (res.ok) return await res.json();
    const err = await ApiError.fromResponse(res);
    if (err.error === "authorization_pending") continue;
    if (err.error === "slow_down") {
      interval += 5;
      continue;
    }
    throw err;
  }
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
