/** Client secrets the console shows once after a redirect (domain/console/shown_once.ts). */
import type { Sql } from "../connection.ts";

export type ShownOnceRow = {
  client_id: string;
  secret: string | null;
  secret_sealed: Uint8Array | null;
  shown_at: Date | null;
};

/** Keeps a secret for its redirect; removes the long expired ones on the way. */
export async function insertShownOnce(
  sql: Sql,
  r: {
    key_hash: Uint8Array;
    owner_hash: Uint8Array;
    client_id: string;
    secret: string | null;
    secret_sealed: Uint8Array | null;
    ttlSeconds: number;
  },
): Promise<void> {
  await sql`delete from console_shown_once where expires_at < now() - interval '1 hour'`;
  await sql`
    insert into console_shown_once (key_hash, owner_hash, client_id, secret, secret_sealed, expires_at)
    values (${r.key_hash}, ${r.owner_hash}, ${r.client_id}, ${r.secret}, ${r.secret_sealed},
            now() + make_interval(secs => ${r.ttlSeconds}))`;
}

/**
 * The row of this key and owner, as it was, while the secret is wiped in the same statement: of two reads at
 * once one gets the secret, the other `shown_at`. Undefined when unknown, another owner's, or expired.
 */
export async function takeShownOnce(
  sql: Sql,
  keyHash: Uint8Array,
  ownerHash: Uint8Array,
): Promise<ShownOnceRow | undefined> {
  const [row] = await sql<ShownOnceRow[]>`
    with old as (
      select key_hash, client_id, secret, secret_sealed, shown_at from console_shown_once
      where key_hash = ${keyHash} and owner_hash = ${ownerHash} and expires_at > now()
      for update
    )
    update console_shown_once c set secret = null, secret_sealed = null, shown_at = coalesce(c.shown_at, now())
    from old where c.key_hash = old.key_hash
    returning old.client_id, old.secret, old.secret_sealed, old.shown_at`;
  return row;
}
