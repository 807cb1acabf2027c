/**
 * Secrets shown once after a post, for the page the post redirects to (post, redirect, get: a reload repeats
 * nothing). A secret waits in the database a few minutes under the hash of a random key, bound to the hash of the
 * console session's cookie, sealed with KEY_ENCRYPTION_KEY when it is set, and is handed out once, by whichever
 * instance serves the redirect; afterwards the key only tells that it was shown. Never in a URL or a cookie.
 */
import type { Sql } from "../../db/connection.ts";
import { insertShownOnce, takeShownOnce } from "../../db/console/shown_once.ts";
import type { KeyVault } from "../keys/key_vault.ts";
import { encodeBase64Url } from "../shared/base64.ts";
import { hashSecret } from "../shared/secrets.ts";

/** A client's credentials: its id (not secret) and its secret. */
export type Credentials = { id: string; secret: string };

const KEEP_SECONDS = 600;
const sealId = (clientId: string) => `shown-once:${clientId}`;

/** Keeps the credentials for the console session `owner` (its cookie's value); returns the key for the URL. */
export async function keepOnce(
  sql: Sql,
  vault: KeyVault | null,
  owner: string,
  credentials: Credentials,
): Promise<string> {
  const key = encodeBase64Url(crypto.getRandomValues(new Uint8Array(18)));
  await insertShownOnce(sql, {
    key_hash: hashSecret(`shown-once:${key}`),
    owner_hash: hashSecret(`console:${owner}`),
    client_id: credentials.id,
    secret: vault ? null : credentials.secret,
    secret_sealed: vault ? vault.sealText(sealId(credentials.id), credentials.secret) : null,
    ttlSeconds: KEEP_SECONDS,
  });
  return key;
}

export type Once = { state: "fresh"; credentials: Credentials } | { state: "shown"; id: string } | {
  state: "unknown";
};

/**
 * The credentials kept under `key` for this session: the secret the first time ("fresh"), only the client's id
 * after ("shown"), or "unknown" (no such key, another session's, or expired).
 */
export async function takeOnce(
  sql: Sql,
  vault: KeyVault | null,
  owner: string,
  key: string | undefined,
): Promise<Once> {
  if (!key || key.length > 64) return { state: "unknown" };
  const row = await takeShownOnce(sql, hashSecret(`shown-once:${key}`), hashSecret(`console:${owner}`));
  if (!row) return { state: "unknown" };
  if (row.shown_at !== null) return { state: "shown", id: row.client_id };
  const secret = row.secret_sealed
    ? vault?.openText(sealId(row.client_id), row.secret_sealed) ?? null
    : row.secret;
  if (secret === null) return { state: "shown", id: row.client_id };
  return { state: "fresh", credentials: { id: row.client_id, secret } };
}
