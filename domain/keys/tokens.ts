/**
 * Access tokens: RFC 9068 JWTs signed with the current signing key (EdDSA, ES256 or RS256) and verified with
 * any published one. Keys are immutable by kid, so each instance caches them by kid; which key signs, and
 * whether a key still counts, is read from the database with every decision (the grant's query names the
 * current kid; the gate's checks the token's kid), so a rotation or revocation reaches every instance at once.
 */
import type { JWK } from "jose";
import { createHash } from "node:crypto";
import { retryRead, type Sql } from "../../db/connection.ts";
import { findKeyState, findPrivateKey, listPublishedKeys } from "../../db/keys/keys.ts";
import { newId } from "../shared/ids.ts";
import {
  encodeHeader,
  privateKeyOf,
  publicKeyOf,
  publicKeyOfSigner,
  signCompact,
  type SigningKey,
  verifyCompact,
  type VerifyingKey,
} from "./jws.ts";
import type { KeyVault } from "./key_vault.ts";

/**
 * Reloads of the published keys for unknown kids start at least this far apart: forged kids cost the database at
 * most 1000 / RELOAD_SPACING_MS queries a second, and a token of a key just made waits at most this long.
 */
const RELOAD_SPACING_MS = 200;
/** Verified tokens remembered (a signature's validity never changes; everything else is checked live). */
const VERIFIED_CACHE = 10_000;
/** How far this process's clock may run ahead of the database's before it turns away a token on its own. */
const CLOCK_LEEWAY_SECONDS = 60;

export type AccessClaims = {
  /** The project (RFC 9068 `aud`), or the API's resource indicator for a token asked for one (RFC 8707). */
  aud: string;
  /** A token for an API: the granted permission codes of that resource, space-separated (RFC 9068 §2.2.3). */
  scope?: string;
  /** The user id, or the client id for client credentials. */
  sub: string;
  client_id: string;
  jti: string;
  iat: number;
  exp: number;
  /** The session, on user tokens only. */
  sid?: string;
  /** A user token of an organization: the organization the user signed in to, as a member (issue 49). */
  org_id?: string;
  /** A token of an exchange (RFC 8693 §4.1): who acts for the subject, the former actors nested inside. */
  act?: Actor;
  /** RFC 8693 §4.4: the one client that may exchange this token (its client's `may_act`). */
  may_act?: { sub: string };
};

/** RFC 8693 §4.1: the acting party (a client of the project), and the one it acts for in turn, if any. */
export type Actor = { sub: string; act?: Actor };

/** The `act` claim as this service writes it, or null: an object with a string `sub`, nested at most 5 deep. */
export function actorOf(value: unknown, depth = 1): Actor | null {
  if (depth > 5 || typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { sub, act } = value as Record<string, unknown>;
  if (typeof sub !== "string") return null;
  if (act === undefined) return { sub };
  const inner = actorOf(act, depth + 1);
  return inner ? { sub, act: inner } : null;
}

/** Whose permissions an access token's are: its user's (a token of a session), else its client's (`sub`). */
export const holderOf = (c: { sub: string; sid?: string }): { userId: string } | { clientId: string } =>
  c.sid ? { userId: c.sub } : { clientId: c.sub };

/** A verified token's claims and the key that signed it. */
export type VerifiedClaims = AccessClaims & { kid: string };

type Signer = { key: SigningKey; header: string; idHeader: string };

/** OpenID Connect Core §3.1.3.6: the hash of the signature's algorithm (SHA-512 for Ed25519), left half. */
const HALF_HASH: Record<SigningKey["alg"], string> = { EdDSA: "sha512", ES256: "sha256", RS256: "sha256" };

/** An ID token presented back to the service (`id_token_hint`), verified, or why it was refused. */
export type IdTokenHint =
  | { ok: true; aud: string; sub: string; sid: string | null }
  | { ok: false; reason: "forged" | "expired" };

export class TokenService {
  readonly #publicKeys = new Map<string, VerifyingKey>();
  readonly #signers = new Map<string, Promise<Signer>>();
  /** Token → its verified claims: a token's signature is checked once; its liveness on every request. */
  readonly #verified = new Map<string, VerifiedClaims>();
  /** When the last reload for unknown kids started (`performance.now()`). */
  #reloadStartedAt = -Infinity;
  /** The reload for unknown kids under way: one at a time. */
  #reloading: Promise<void> | null = null;
  /** The reload that starts next, after the one under way and the spacing: every unknown kid waits for it. */
  #nextReload: Promise<void> | null = null;

  constructor(
    private readonly sql: Sql,
    readonly issuer: string,
    readonly accessTokenTtl: number,
    private readonly vault: KeyVault | null,
  ) {}

  /**
   * Signs an access token with the key `kid`, the current key as the grant's query read it. `issuedAt` is the
   * database's clock from the same query, so that revocation cut-offs (also set by the database) compare one
   * clock with itself on every instance.
   */
  async issueAccessToken(
    c: {
      projectId: string;
      subject: string;
      clientId: string;
      sessionId?: string;
      issuedAt: Date;
      kid: string;
      /** For one API (RFC 8707): `aud` is its indicator, `scope` what was granted of it. */
      target?: { indicator: string; scope: string };
      /** A token of an exchange: who acts, what it was asked for (`scope`), and the subject token's end. */
      exchange?: { act: Actor; scope: string; notAfter: number };
      /** The one client that may exchange it (RFC 8693 §4.4), from its client's `may_act`. */
      mayAct?: string | null;
      /** Claims from decisions (domain/oauth/decision_claims.ts): named id lists, and `claims_truncated`. */
      decisionClaims?: Record<string, string[]>;
      /** A user token of an organization (`org_id`). */
      organizationId?: string | null;
    },
  ): Promise<{ token: string; claims: AccessClaims }> {
    const signer = await this.#signer(c.kid);
    const ms = c.issuedAt.getTime();
    const iat = Math.floor(ms / 1000);
    const scope = c.target?.scope ?? c.exchange?.scope;
    const claims: AccessClaims = {
      aud: c.target?.indicator ?? c.projectId,
      ...(scope ? { scope } : {}),
      sub: c.subject,
      client_id: c.clientId,
      jti: newId(ms),
      iat,
      // An exchanged token never outlives the token it was exchanged for (RFC 8693 §2.2.1's lifetime).
      exp: Math.min(iat + this.accessTokenTtl, c.exchange?.notAfter ?? Infinity),
      ...(c.sessionId ? { sid: c.sessionId } : {}),
      ...(c.organizationId ? { org_id: c.organizationId } : {}),
      ...(c.exchange ? { act: c.exchange.act } : {}),
      ...(c.mayAct ? { may_act: { sub: c.mayAct } } : {}),
    };
    const token = signCompact(signer.key, signer.header, {
      // First, so that no name can override ours (their names are never ours: RESERVED_CLAIM_NAMES).
      ...c.decisionClaims,
      iss: this.issuer,
      sub: claims.sub,
      aud: claims.aud,
      client_id: claims.client_id,
      ...(claims.scope ? { scope: claims.scope } : {}),
      ...(claims.sid ? { sid: claims.sid } : {}),
      ...(claims.org_id ? { org_id: claims.org_id } : {}),
      ...(claims.act ? { act: claims.act } : {}),
      ...(claims.may_act ? { may_act: claims.may_act } : {}),
      iat: claims.iat,
      exp: claims.exp,
      jti: claims.jti,
    });
    return { token, claims };
  }

  /**
   * Signs an OpenID Connect ID token with the key `kid` (the one that signs its access token), adding `iss` and
   * `at_hash` of the access token it comes with.
   */
  async signIdToken(kid: string, claims: Record<string, unknown>, accessToken: string): Promise<string> {
    const signer = await this.#signer(kid);
    const digest = createHash(HALF_HASH[signer.key.alg]).update(accessToken, "ascii").digest();
    const atHash = digest.subarray(0, digest.length / 2).toString("base64url");
    return signCompact(signer.key, signer.idHeader, { iss: this.issuer, ...claims, at_hash: atHash });
  }

  /**
   * Checks an ID token this service issued, as `id_token_hint` (OpenID Connect RP-Initiated Logout §2): signed
   * by a published key, our issuer, `typ` JWT. An expired one is named apart. Whether its client and session
   * still count is the caller's (live) question.
   */
  async verifyIdTokenHint(token: string): Promise<IdTokenHint> {
    let decoded;
    try {
      decoded = await verifyCompact(token, (header) => this.#keyFor(header));
    } catch (err) {
      if (err instanceof KeyLookupFailure) throw err.cause;
      return { ok: false, reason: "forged" };
    }
    if (!decoded || decoded.header.typ !== "JWT") return { ok: false, reason: "forged" };
    const { iss, aud, sub, sid, exp } = decoded.payload;
    if (
      iss !== this.issuer || typeof aud !== "string" || typeof sub !== "string" || typeof exp !== "number"
    ) {
      return { ok: false, reason: "forged" };
    }
    if (exp <= Math.floor(Date.now() / 1000)) return { ok: false, reason: "expired" };
    // Signed by a key that still counts: a revoked (leaked) or retired key's signatures prove nothing.
    const key = await retryRead(() => findKeyState(this.sql, decoded.header.kid as string));
    if (!key || !["next", "current", "previous"].includes(key.state)) return { ok: false, reason: "forged" };
    return { ok: true, aud, sub, sid: typeof sid === "string" ? sid : null };
  }

  /**
   * Verifies signature, type, issuer and lifetime; returns null for anything that is not our JWT. Whether its
   * key still counts (not revoked or retired) is for the caller's live check, with the returned `kid`.
   */
  async verifyAccessToken(token: string): Promise<VerifiedClaims | null> {
    // Expiry is decided exactly by the live check, on the database's clock (which stamped `iat` and `exp`); this
    // clock only turns away tokens that are long expired, so instances whose clocks drift a little agree.
    const now = Math.floor(Date.now() / 1000);
    const known = this.#verified.get(token);
    if (known) return known.exp > now - CLOCK_LEEWAY_SECONDS ? known : null;
    let decoded;
    try {
      decoded = await verifyCompact(token, (header) => this.#keyFor(header));
    } catch (err) {
      if (err instanceof KeyLookupFailure) throw err.cause;
      return null;
    }
    if (!decoded) return null;
    const claims = accessClaims(decoded.header, decoded.payload, this.issuer, now);
    if (!claims) return null;
    if (this.#verified.size >= VERIFIED_CACHE) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(token, claims);
    return claims;
  }

  /**
   * Why a bearer token was refused, for its 401's description (RFC 6750 §3 `error_description`): only on the
   * refusal's path, never to accept one. A token of ours whose signature holds but whose time is over is
   * `expired`; one of ours that is not an access token (an ID token, a logout token) is `not_access_token`;
   * anything else is `invalid`. A token that verifies and has not expired was refused by the live check.
   */
  async whyRefused(token: string): Promise<"expired" | "not_access_token" | "invalid" | "not_live"> {
    let decoded;
    try {
      decoded = await verifyCompact(token, (header) => this.#keyFor(header));
    } catch (err) {
      if (err instanceof KeyLookupFailure) throw err.cause;
      return "invalid";
    }
    if (!decoded) return "invalid";
    const claims = accessClaims(decoded.header, decoded.payload, this.issuer, 0);
    if (!claims) return decoded.payload.iss === this.issuer ? "not_access_token" : "invalid";
    return claims.exp <= Math.floor(Date.now() / 1000) ? "expired" : "not_live";
  }

  /** The published public keys (next, current, previous) as a JWKS. */
  async jwks(): Promise<{ keys: JWK[] }> {
    return { keys: (await listPublishedKeys(this.sql)).map((r) => r.public_jwk) };
  }

  /**
   * Learns the published public keys it does not know yet (a key's public part never changes, so keys are
   * remembered by kid; whether one still counts is the live check's). Run every minute by every instance, so
   * a next key is usually known long before it signs; a key made and signing at once is found by the reload
   * its first token starts (below).
   */
  async loadPublishedKeys(): Promise<void> {
    for (const row of await retryRead(() => listPublishedKeys(this.sql))) {
      if (!this.#publicKeys.has(row.kid)) this.#publicKeys.set(row.kid, publicKeyOf(row.public_jwk, row.alg));
    }
  }

  async #keyFor(header: Record<string, unknown>): Promise<VerifyingKey | null> {
    const kid = header.kid;
    // Our kids are RFC 7638 thumbprints; anything else is refused before it can reach the database.
    if (typeof kid !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(kid)) return null;
    const known = this.#publicKeys.get(kid);
    if (known) return known;
    // A key just made (a rotation, a forced revocation on any instance) is in the database before any token
    // it signs: a reload that starts after this request arrived finds it. Unknown kids that arrive together,
    // genuine or forged, share that reload.
    this.#nextReload ??= this.#reloadSoon();
    try {
      await this.#nextReload;
    } catch (err) {
      // A database failure must not read as "invalid token": it propagates and answers 503.
      throw new KeyLookupFailure(err);
    }
    return this.#publicKeys.get(kid) ?? null;
  }

  /** Reloads the published keys once the reload under way is done and the spacing since it started has passed. */
  async #reloadSoon(): Promise<void> {
    await this.#reloading?.catch(() => {}); // only its end is awaited: its failure is its own caller's
    const wait = this.#reloadStartedAt + RELOAD_SPACING_MS - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // From here on, an unknown kid that arrives waits for the reload after this one.
    this.#nextReload = null;
    this.#reloadStartedAt = performance.now();
    const run = this.loadPublishedKeys();
    this.#reloading = run;
    try {
      await run;
    } finally {
      this.#reloading = null;
    }
  }

  /**
   * Loads the signing key before a grant's transaction: inside it, loading would need a second connection,
   * and the embedded database has only one (a first token of a process from a user grant waited forever).
   */
  async prepareSigner(kid: string): Promise<void> {
    await this.#signer(kid);
  }

  #signer(kid: string): Promise<Signer> {
    let signer = this.#signers.get(kid);
    if (!signer) {
      signer = (async () => {
        const row = await retryRead(() => findPrivateKey(this.sql, kid));
        if (!row) throw new Error(`signing key ${kid} is not in the database`);
        const jwk = row.private_jwk_sealed ? this.vault?.open(kid, row.private_jwk_sealed) : row.private_jwk;
        if (!jwk) {
          throw new Error(`signing key ${kid} cannot be opened (KEY_ENCRYPTION_KEY missing, or retired)`);
        }
        const key = privateKeyOf(jwk, row.alg, kid);
        // This instance's tokens of the key verify here at once, whatever the reloads above are doing.
        if (!this.#publicKeys.has(kid)) this.#publicKeys.set(kid, publicKeyOfSigner(key));
        return {
          key,
          header: encodeHeader({ alg: row.alg, typ: "at+jwt", kid }),
          idHeader: encodeHeader({ alg: row.alg, typ: "JWT", kid }),
        };
      })();
      // A load that failed is forgotten, so the next use tries again; whoever awaits it gets the error.
      signer.catch(() => this.#signers.delete(kid));
      this.#signers.set(kid, signer);
    }
    return signer;
  }
}

/** RFC 9068 §2: `typ` at+jwt, our issuer, a lifetime that has not ended, and the claims we issue. */
function accessClaims(
  header: Record<string, unknown>,
  p: Record<string, unknown>,
  issuer: string,
  now: number,
): VerifiedClaims | null {
  const typ = typeof header.typ === "string" ? header.typ.toLowerCase() : "";
  if (typ !== "at+jwt" && typ !== "application/at+jwt") return null;
  const { iss, aud, sub, jti, client_id, sid, org_id, iat, exp, nbf, scope, act, may_act } = p;
  if (iss !== issuer) return null;
  if (typeof exp !== "number" || exp <= now - CLOCK_LEEWAY_SECONDS || typeof iat !== "number") return null;
  if (nbf !== undefined && (typeof nbf !== "number" || nbf > now)) return null;
  if (typeof aud !== "string" || typeof sub !== "string" || typeof jti !== "string") return null;
  if (typeof client_id !== "string" || (sid !== undefined && typeof sid !== "string")) return null;
  if (scope !== undefined && typeof scope !== "string") return null;
  // Only a user token (one of a session) belongs to an organization.
  if (org_id !== undefined && (typeof org_id !== "string" || sid === undefined)) return null;
  const actor = act === undefined ? undefined : actorOf(act);
  if (actor === null) return null;
  const mayAct = may_act === undefined ? undefined : actorOf(may_act, 5);
  if (mayAct === null) return null;
  return {
    aud,
    ...(scope ? { scope: scope as string } : {}),
    sub,
    jti,
    client_id,
    iat,
    exp,
    ...(sid ? { sid: sid as string } : {}),
    ...(org_id ? { org_id: org_id as string } : {}),
    ...(actor ? { act: actor } : {}),
    ...(mayAct ? { may_act: { sub: mayAct.sub } } : {}),
    kid: header.kid as string,
  };
}

class KeyLookupFailure extends Error {
  constructor(override readonly cause: unknown) {
    super("signing key lookup failed");
  }
}
