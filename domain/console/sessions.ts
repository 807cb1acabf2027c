/**
 * The admin console's sessions. The browser holds a random value in an HttpOnly cookie; the database holds only
 * its SHA-256 and the user's tokens sealed (AES-256-GCM) with a key derived from that value. The console's
 * CSRF token is derived from the value too, so it needs no row of its own and dies with the session.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import {
  claimConsoleRefresh,
  deleteConsoleSession,
  findConsoleSession,
  insertConsoleSession,
  storeRefreshedConsoleSession,
} from "../../db/console/sessions.ts";
import type { Sql } from "../../db/connection.ts";
import { encodeBase64Url } from "../shared/base64.ts";
import { newSecret } from "../shared/ids.ts";
import { hashSecret } from "../shared/secrets.ts";

/** What the console keeps of a sign-in: the token endpoint's answer. */
export type ConsoleTokens = {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  refresh_token_expires_in: number;
};

export type ConsoleSession = {
  /** The cookie's value. */
  secret: string;
  projectId: string;
  accessToken: string;
  refreshToken: string;
  /** The access token is expired or about to be: refresh before use. */
  stale: boolean;
};

const derive = (purpose: string, secret: string) =>
  new Uint8Array(createHash("sha256").update(`${purpose}:${secret}`, "utf8").digest());

async function sealKey(secret: string): Promise<CryptoKey> {
  return await crypto.subtle.importKey("raw", derive("seal", secret), "AES-GCM", false, [
    "encrypt",
    "decrypt",
  ]);
}

async function seal(secret: string, tokens: { access: string; refresh: string }): Promise<Uint8Array> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const plain = new TextEncoder().encode(JSON.stringify(tokens));
  const box = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealKey(secret), plain),
  );
  const out = new Uint8Array(iv.length + box.length);
  out.set(iv);
  out.set(box, iv.length);
  return out;
}

async function unseal(
  secret: string,
  sealed: Uint8Array,
): Promise<{ access: string; refresh: string } | null> {
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: sealed.slice(0, 12) },
      await sealKey(secret),
      sealed.slice(12),
    );
    return JSON.parse(new TextDecoder().decode(plain));
  } catch {
    return null; // sealed with another secret, or altered: no session, the console asks to sign in
  }
}

/** The CSRF token of every form of a session. */
export const csrfOf = (secret: string) => encodeBase64Url(derive("csrf", secret));

export function csrfMatches(secret: string, presented: unknown): boolean {
  if (typeof presented !== "string") return false;
  const a = new TextEncoder().encode(csrfOf(secret));
  const b = new TextEncoder().encode(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Stores a new session for these tokens; returns the cookie's value. */
export async function openConsoleSession(
  sql: Sql,
  projectId: string,
  tokens: ConsoleTokens,
): Promise<string> {
  const secret = newSecret();
  await insertConsoleSession(sql, {
    id_hash: hashSecret(secret),
    project_id: projectId,
    sealed: await seal(secret, { access: tokens.access_token, refresh: tokens.refresh_token }),
    accessTtl: tokens.expires_in,
    ttl: tokens.refresh_token_expires_in,
  });
  return secret;
}

/** The live session of a cookie's value, or null (unknown, expired, or not a value we made). */
export async function consoleSession(sql: Sql, secret: string | undefined): Promise<ConsoleSession | null> {
  if (!secret || !/^[A-Za-z0-9_-]{43}$/.test(secret)) return null;
  const row = await findConsoleSession(sql, hashSecret(secret));
  if (!row) return null;
  const tokens = await unseal(secret, row.sealed);
  if (!tokens) return null;
  return {
    secret,
    projectId: row.project_id,
    accessToken: tokens.access,
    refreshToken: tokens.refresh,
    stale: row.stale,
  };
}

/**
 * Refreshes a session's tokens with `exchange` (the token endpoint), once across parallel requests: the one
 * that claims the refresh spends the refresh token; the others wait for its result. Null when the session is
 * over (the refresh was refused, or the session is gone).
 */
export async function refreshConsoleSession(
  sql: Sql,
  session: ConsoleSession,
  exchange: (refreshToken: string) => Promise<ConsoleTokens | null>,
): Promise<ConsoleSession | null> {
  const idHash = hashSecret(session.secret);
  if (await claimConsoleRefresh(sql, idHash)) {
    const tokens = await exchange(session.refreshToken);
    if (!tokens) {
      await deleteConsoleSession(sql, idHash);
      return null;
    }
    await storeRefreshedConsoleSession(sql, {
      id_hash: idHash,
      sealed: await seal(session.secret, { access: tokens.access_token, refresh: tokens.refresh_token }),
      accessTtl: tokens.expires_in,
      ttl: tokens.refresh_token_expires_in,
    });
    return { ...session, accessToken: tokens.access_token, refreshToken: tokens.refresh_token, stale: false };
  }
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await consoleSession(sql, session.secret);
    if (!now) return null;
    if (now.refreshToken !== session.refreshToken) return now;
  }
  return null;
}

export async function closeConsoleSession(sql: Sql, secret: string): Promise<void> {
  await deleteConsoleSession(sql, hashSecret(secret));
}
