/** Access tokens: RFC 9068 JWTs signed with Ed25519 keys kept in the database and published as a JWKS. */
import {
  calculateJwkThumbprint,
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTHeaderParameters,
  jwtVerify,
  SignJWT,
} from "jose";
import type { Sql } from "../db/connection.ts";
import { findPublicKey, findSigningKey, insertSigningKey, listPublicKeys } from "../db/keys.ts";
import { newId } from "./ids.ts";

const ALG = "EdDSA";

export type AccessClaims = {
  /** The project (RFC 9068 `aud`). */
  aud: string;
  /** The user id, or the client id for client credentials. */
  sub: string;
  client_id: string;
  jti: string;
  iat: number;
  exp: number;
  /** The session, on user tokens only. */
  sid?: string;
};

/** Creates the first signing key when there is none; called under the bootstrap lock. */
export async function ensureSigningKey(sql: Sql): Promise<void> {
  if (await findSigningKey(sql)) return;
  const { publicKey, privateKey } = await generateKeyPair(ALG, { crv: "Ed25519", extractable: true });
  const public_jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(public_jwk);
  await insertSigningKey(sql, {
    kid,
    alg: ALG,
    public_jwk: { ...public_jwk, kid, alg: ALG, use: "sig" },
    private_jwk: await exportJWK(privateKey),
  });
}

export class TokenService {
  /**
   * Public keys by kid. A kid names one immutable key, so an entry never goes stale while keys are never
   * retired (there is no key retirement yet; when there is, retiring must reach this cache too).
   */
  readonly #publicKeys = new Map<string, CryptoKey>();
  #signing?: { kid: string; key: CryptoKey };

  constructor(private readonly sql: Sql, readonly issuer: string, readonly accessTokenTtl: number) {}

  /** Loads the newest signing key; call after bootstrap. */
  async init(): Promise<void> {
    const row = await findSigningKey(this.sql);
    if (!row) throw new Error("no signing key in the database; bootstrap did not run");
    this.#signing = { kid: row.kid, key: await importJWK(row.private_jwk, ALG) as CryptoKey };
  }

  async issueAccessToken(
    c: { projectId: string; subject: string; clientId: string; sessionId?: string },
  ): Promise<{ token: string; claims: AccessClaims }> {
    if (!this.#signing) throw new Error("TokenService.init() was not called");
    const iat = Math.floor(Date.now() / 1000);
    const claims: AccessClaims = {
      aud: c.projectId,
      sub: c.subject,
      client_id: c.clientId,
      jti: newId(),
      iat,
      exp: iat + this.accessTokenTtl,
      ...(c.sessionId ? { sid: c.sessionId } : {}),
    };
    const token = await new SignJWT({
      client_id: claims.client_id,
      ...(claims.sid ? { sid: claims.sid } : {}),
    })
      .setProtectedHeader({ alg: ALG, typ: "at+jwt", kid: this.#signing.kid })
      .setIssuer(this.issuer)
      .setSubject(claims.sub)
      .setAudience(claims.aud)
      .setIssuedAt(claims.iat)
      .setExpirationTime(claims.exp)
      .setJti(claims.jti)
      .sign(this.#signing.key);
    return { token, claims };
  }

  /** Verifies signature, type, issuer and lifetime; returns null for anything that is not our live JWT. */
  async verifyAccessToken(token: string): Promise<AccessClaims | null> {
    try {
      const { payload } = await jwtVerify(token, (header) => this.#keyFor(header), {
        issuer: this.issuer,
        algorithms: [ALG],
        typ: "at+jwt",
        requiredClaims: ["sub", "aud", "exp", "iat", "jti", "client_id"],
      });
      const { aud, sub, jti, client_id, sid, iat, exp } = payload;
      if (typeof aud !== "string" || typeof sub !== "string" || typeof jti !== "string") return null;
      if (typeof client_id !== "string" || (sid !== undefined && typeof sid !== "string")) return null;
      return { aud, sub, jti, client_id, iat: iat!, exp: exp!, ...(sid ? { sid } : {}) };
    } catch (err) {
      if (err instanceof KeyLookupFailure) throw err.cause;
      return null;
    }
  }

  async #keyFor(header: JWTHeaderParameters): Promise<CryptoKey> {
    const kid = header.kid;
    // Our kids are RFC 7638 thumbprints; anything else is refused before it can reach the database.
    if (typeof kid !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(kid)) throw new Error("not one of our kids");
    const cached = this.#publicKeys.get(kid);
    if (cached) return cached;
    let row;
    try {
      row = await findPublicKey(this.sql, kid);
    } catch (err) {
      // A database failure must not read as "invalid token": it propagates and answers 503.
      throw new KeyLookupFailure(err);
    }
    if (!row) throw new Error("unknown kid");
    const key = await importJWK(row.public_jwk, ALG) as CryptoKey;
    this.#publicKeys.set(kid, key);
    return key;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    return { keys: (await listPublicKeys(this.sql)).map((r) => r.public_jwk) };
  }
}

class KeyLookupFailure extends Error {
  constructor(override readonly cause: unknown) {
    super("signing key lookup failed");
  }
}
