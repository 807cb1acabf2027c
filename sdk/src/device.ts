/**
 * The device authorization grant (RFC 8628) for a CLI or any device without a browser: `deviceAuthorization` asks
 * for the codes, and `pollDeviceToken` waits for the user's decision at the verification page, honouring `interval`
 * and `slow_down`, until the tokens come or the user denies or the codes expire.
 */
import type { Api } from "./generated/models.ts";
import { ApiError } from "./errors.ts";
import type { Wire } from "./wire.ts";
import { postTokenForm, type TokenClientOptions } from "./token_forms.ts";

export type DeviceAuthorization = Wire<Api.DeviceAuthorizationResponse>;
export type DeviceTokens = Wire<Api.TokenResponse>;

/** A client whose `device_grant` is true, and where the service is. */
export type DeviceClientOptions = TokenClientOptions;

const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";
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
  const res = await postTokenForm(
    o,
    "/api/v1/tokens/device_authorization",
    form,
  );
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
    const res = await postTokenForm(o, "/api/v1/tokens", {
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
