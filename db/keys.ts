/** Queries on the Ed25519 signing keys that every instance shares. */
import type { JWK } from "jose";
import type { Sql } from "./connection.ts";

export type KeyRow = { kid: string; alg: string; public_jwk: JWK; private_jwk: JWK };

export async function findSigningKey(sql: Sql): Promise<KeyRow | undefined> {
  const [row] = await sql<KeyRow[]>`
    select kid, alg, public_jwk, private_jwk from signing_keys
    where retired_at is null order by created_at desc, kid limit 1`;
  return row;
}

export async function findPublicKey(sql: Sql, kid: string): Promise<Omit<KeyRow, "private_jwk"> | undefined> {
  const [row] = await sql<Omit<KeyRow, "private_jwk">[]>`
    select kid, alg, public_jwk from signing_keys where kid = ${kid} and retired_at is null`;
  return row;
}

export async function listPublicKeys(sql: Sql): Promise<Omit<KeyRow, "private_jwk">[]> {
  return await sql<Omit<KeyRow, "private_jwk">[]>`
    select kid, alg, public_jwk from signing_keys where retired_at is null order by created_at desc, kid`;
}

export async function insertSigningKey(sql: Sql, key: KeyRow): Promise<void> {
  await sql`
    insert into signing_keys (kid, alg, public_jwk, private_jwk)
    values (${key.kid}, ${key.alg}, ${sql.json(key.public_jwk as Record<string, string>)}, ${
    sql.json(key.private_jwk as Record<string, string>)
  })`;
}
