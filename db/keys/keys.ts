/** Queries on the signing keys that every instance shares; their lifecycle is decided in domain/keys/keys.ts. */
import type { JWK } from "jose";
import type { SigningKey } from "../../openapi/keys.ts";
import { fixed, iso } from "../columns.ts";
import type { Sql } from "../connection.ts";

export type KeyAlg = SigningKey["alg"];
export type KeyState = SigningKey["state"];
export type PublicKeyRow = { kid: string; alg: KeyAlg; public_jwk: JWK };
export type PrivateKeyRow = {
  kid: string;
  alg: KeyAlg;
  state: KeyState;
  private_jwk: JWK | null;
  private_jwk_sealed: Uint8Array | null;
};
/** A key's row as the lifecycle needs it: state and times as seconds since the epoch. */
export type KeyStateRow = {
  kid: string;
  alg: KeyAlg;
  state: KeyState;
  created_at: number;
  activated_at: number | null;
  now: number;
};

/** A scalar subquery: the kid of the key that signs now. Grant queries carry it, so no instance lags. */
export const CURRENT_KID = `(select kid from signing_keys where state = 'current')`;
export const currentKidSql = (sql: Sql) => fixed(sql, CURRENT_KID);

const epoch = (sql: Sql, column: string) => sql`extract(epoch from ${sql(column)})::float8`;

/** Every key in the API's shape, current first, then next, previous, retired and revoked. */
export async function listKeys(sql: Sql, prepublishSeconds: number): Promise<SigningKey[]> {
  return await sql<SigningKey[]>`
    select kid, alg, state, ${iso(sql, "created_at")} as created_at, ${
    iso(sql, "activated_at")
  } as activated_at,
           case when state = 'next'
                then to_char((created_at + make_interval(secs => ${prepublishSeconds})) at time zone 'UTC',
                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') end as promotable_at,
           ${iso(sql, "retires_at")} as retires_at, ${iso(sql, "retired_at")} as retired_at,
           ${iso(sql, "revoked_at")} as revoked_at, public_jwk
    from signing_keys
    order by array_position(array['current', 'next', 'previous', 'retired', 'revoked'], state), created_at desc, kid`;
}

/** The keys in the JWKS: next, current and previous. */
export async function listPublishedKeys(sql: Sql): Promise<PublicKeyRow[]> {
  return await sql<PublicKeyRow[]>`
    select kid, alg, public_jwk from signing_keys where state in ('next', 'current', 'previous')
    order by array_position(array['current', 'next', 'previous'], state), created_at desc, kid`;
}

/** The states of the live keys, locked for the rest of the transaction (rotation, revocation). */
export async function lockLiveKeys(sql: Sql): Promise<KeyStateRow[]> {
  return await sql<KeyStateRow[]>`
    select kid, alg, state, ${epoch(sql, "created_at")} as created_at, ${
    epoch(sql, "activated_at")
  } as activated_at,
           extract(epoch from now())::float8 as now
    from signing_keys where state in ('next', 'current', 'previous')
    order by created_at for update`;
}

export async function findKeyState(sql: Sql, kid: string): Promise<{ state: KeyState } | undefined> {
  const [row] = await sql<{ state: KeyState }[]>`select state from signing_keys where kid = ${kid}`;
  return row;
}

export async function findPrivateKey(sql: Sql, kid: string): Promise<PrivateKeyRow | undefined> {
  const [row] = await sql<PrivateKeyRow[]>`
    select kid, alg, state, private_jwk, private_jwk_sealed from signing_keys where kid = ${kid}`;
  return row;
}

/** Private keys that still sign or may: to seal them, or to prove they can be opened. */
export async function listLivePrivateKeys(sql: Sql): Promise<PrivateKeyRow[]> {
  return await sql<PrivateKeyRow[]>`
    select kid, alg, state, private_jwk, private_jwk_sealed from signing_keys
    where state in ('next', 'current', 'previous')`;
}

export async function insertKey(
  sql: Sql,
  k: {
    kid: string;
    alg: KeyAlg;
    state: "next" | "current";
    public_jwk: JWK;
    private_jwk: JWK | null;
    private_jwk_sealed: Uint8Array | null;
  },
): Promise<void> {
  await sql`
    insert into signing_keys (kid, alg, state, public_jwk, private_jwk, private_jwk_sealed, activated_at)
    values (${k.kid}, ${k.alg}, ${k.state}, ${sql.json(k.public_jwk as Record<string, string>)},
            ${k.private_jwk === null ? null : sql.json(k.private_jwk as Record<string, string>)},
            ${k.private_jwk_sealed}, ${k.state === "current" ? sql`now()` : null})`;
}

/** Replaces a key's plain private JWK with its sealed form. */
export async function sealKey(sql: Sql, kid: string, sealed: Uint8Array): Promise<void> {
  await sql`update signing_keys set private_jwk = null, private_jwk_sealed = ${sealed} where kid = ${kid}`;
}

/** current → previous (published for `retireAfterSeconds` more), then `kid` → current. */
export async function promoteKey(sql: Sql, kid: string, retireAfterSeconds: number): Promise<void> {
  await sql`
    update signing_keys set state = 'previous', retires_at = now() + make_interval(secs => ${retireAfterSeconds})
    where state = 'current'`;
  await sql`update signing_keys set state = 'current', activated_at = now() where kid = ${kid}`;
}

/** Ends a key: out of the JWKS, private part forgotten. */
export async function endKey(sql: Sql, kid: string, state: "retired" | "revoked"): Promise<void> {
  await sql`
    update signing_keys set state = ${state}, private_jwk = null, private_jwk_sealed = null,
      retired_at = case when ${state} = 'retired' then now() else retired_at end,
      revoked_at = case when ${state} = 'revoked' then now() else revoked_at end
    where kid = ${kid}`;
}

/** The previous keys whose last token has expired. */
export async function listDueRetirements(sql: Sql): Promise<string[]> {
  const rows = await sql<{ kid: string }[]>`
    select kid from signing_keys where state = 'previous' and retires_at <= now()`;
  return rows.map((r) => r.kid);
}

/** The algorithms of the published keys, the current key's first. */
export async function publishedAlgorithms(sql: Sql): Promise<KeyAlg[]> {
  const rows = await sql<{ alg: KeyAlg }[]>`
    select alg from signing_keys where state in ('next', 'current', 'previous')
    group by alg order by min(array_position(array['current', 'next', 'previous'], state))`;
  return rows.map((r) => r.alg);
}
