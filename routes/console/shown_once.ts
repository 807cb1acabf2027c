/**
 * Secrets shown once after a post, for the page the post redirects to (post, redirect, get: a reload repeats
 * nothing). A secret waits here, in this process's memory, a few minutes under a random key, bound to the console
 * session that created it, and is handed out once; afterwards the key only tells that it was shown. Never in a
 * URL, a cookie or the database. With several instances behind a balancer, the redirect's page on another
 * instance says the secret cannot be shown there, and the rotation is the way to a new one.
 */
import { encodeBase64Url } from "../../domain/shared/base64.ts";

/** A client's credentials: its id (not secret) and its secret. */
export type Credentials = { id: string; secret: string };

type Entry = { owner: string; id: string; secret: string | null; until: number };

const KEEP_MS = 10 * 60_000;
const MAX = 1_000;
const kept = new Map<string, Entry>();

function purge(now: number) {
  for (const [key, e] of kept) if (e.until <= now || kept.size > MAX) kept.delete(key);
}

/** Keeps the credentials for the console session `owner` (its cookie's value); returns the key for the URL. */
export function keepOnce(owner: string, credentials: Credentials): string {
  const now = Date.now();
  purge(now);
  const key = encodeBase64Url(crypto.getRandomValues(new Uint8Array(18)));
  kept.set(key, { owner, id: credentials.id, secret: credentials.secret, until: now + KEEP_MS });
  return key;
}

/**
 * The credentials kept under `key` for this session: the secret the first time ("fresh"), only the client's id
 * after ("shown"), or "unknown" (no such key, another session's, expired, or kept by another instance).
 */
export function takeOnce(
  owner: string,
  key: string | undefined,
): { state: "fresh"; credentials: Credentials } | { state: "shown"; id: string } | { state: "unknown" } {
  purge(Date.now());
  const e = key ? kept.get(key) : undefined;
  if (!e || e.owner !== owner) return { state: "unknown" };
  if (e.secret === null) return { state: "shown", id: e.id };
  const credentials = { id: e.id, secret: e.secret };
  e.secret = null;
  return { state: "fresh", credentials };
}
