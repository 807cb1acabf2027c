/**
 * Second factors in tests: TOTP computed here from the enrolled key (RFC 6238 with WebCrypto, independently of
 * the service's code), enrolment through the current user's API, and the second step of a login over raw HTTP.
 */
import assert from "node:assert/strict";
import { decodeQR } from "./deps.ts";
import { http, userTokens } from "./helpers.ts";
import { authorizeOidc, Browser } from "./oidc_support.ts";

function base32Decode(text: string): Uint8Array<ArrayBuffer> {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0, value = 0;
  const out: number[] = [];
  for (const ch of text.replace(/=+$/, "")) {
    value = (value << 5) | alphabet.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return new Uint8Array(out);
}

/** The 6-digit code of `secret` at `ms` (RFC 6238: HMAC-SHA-1, 30-second steps). */
export async function totp(secret: string, ms = Date.now()): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    base32Decode(secret),
    { name: "HMAC", hash: "SHA-1" },
    false,
    ["sign"],
  );
  const counter = new Uint8Array(8);
  new DataView(counter.buffer).setBigUint64(0, BigInt(Math.floor(ms / 30_000)));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, counter));
  const o = mac[19] & 0xf;
  const n = ((mac[o] & 0x7f) << 24) | (mac[o + 1] << 16) | (mac[o + 2] << 8) | mac[o + 3];
  return String(n % 1_000_000).padStart(6, "0");
}

/** A JSON call of the current user's API with a user's access token. */
export async function asUser(token: string, method: string, path: string, body?: unknown): Promise<Response> {
  return await http(path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

/**
 * Enrols an authenticator for the user through the API: answers its key and the recovery codes. The enrolment
 * spends the code of the current step, so sign-ins use `totp(secret, Date.now() + 30_000)` (the next step).
 */
export async function enrolTotp(
  p: { clientId: string; email: string; password: string },
): Promise<{ secret: string; recoveryCodes: string[]; accessToken: string }> {
  const { access_token } = await userTokens(p);
  const started = await asUser(access_token, "POST", "/api/v1/users/current/totp", {
    current_password: p.password,
  });
  assert.equal(started.status, 200);
  const { secret, otpauth_uri } = await started.json();
  assert.match(otpauth_uri, /^otpauth:\/\/totp\//);
  const confirmed = await asUser(access_token, "POST", "/api/v1/users/current/totp/confirm", {
    code: await totp(secret),
  });
  assert.equal(confirmed.status, 200);
  const { recovery_codes } = await confirmed.json();
  return { secret, recoveryCodes: recovery_codes, accessToken: access_token };
}

const field = (html: string, name: string) =>
  new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";

/** Opens an OpenID login in `browser` and submits the password: answers the second step's page. */
export async function passwordStep(
  browser: Browser,
  p: { clientId: string; email: string; password: string },
  extra: Record<string, string> = {},
): Promise<{ res: Response; html: string; verifier: string; requestId: string; csrf: string }> {
  const { res: page, verifier, html: loginHtml } = await authorizeOidc(browser, p.clientId, extra);
  assert.equal(page.status, 200, loginHtml);
  const res = await browser.post("/authorize", {
    request_id: field(loginHtml, "request_id"),
    csrf: field(loginHtml, "csrf"),
    email: p.email,
    password: p.password,
  });
  const html = await res.text();
  return { res, html, verifier, requestId: field(html, "request_id"), csrf: field(html, "csrf") };
}

/** Submits the second step's form. */
export async function codeStep(
  browser: Browser,
  step: { requestId: string; csrf: string },
  code: string,
): Promise<{ res: Response; html: string }> {
  const res = await browser.post("/authorize/mfa", { request_id: step.requestId, csrf: step.csrf, code });
  return { res, html: res.status === 303 ? "" : await res.text() };
}

/**
 * Reads the account page's QR code back from its SVG: each `M x y h1v1h-1z` square becomes a block of black
 * pixels (8 × 8) on white, and the decoder reads the picture as a camera would.
 */
export function decodeQrSvg(svg: string): string {
  const size = Number(/viewBox="0 0 (\d+) \1"/.exec(svg)![1]);
  const scale = 8;
  const w = size * scale;
  const data = new Uint8Array(w * w * 4).fill(255);
  for (const m of svg.matchAll(/M(\d+) (\d+)h1v1h-1z/g)) {
    const [x, y] = [Number(m[1]), Number(m[2])];
    for (let dy = 0; dy < scale; dy++) {
      for (let dx = 0; dx < scale; dx++) {
        const i = ((y * scale + dy) * w + x * scale + dx) * 4;
        data[i] = data[i + 1] = data[i + 2] = 0;
      }
    }
  }
  return decodeQR({ width: w, height: w, data });
}
