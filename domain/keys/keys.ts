/**
 * The signing keys' lifecycle, stored in the database and shared by every instance:
 * next (published, not signing) → current (signs) → previous (published until its tokens expire) → retired.
 * A next key is published at least the pre-publish window before it signs, so that verifiers caching the JWKS
 * already know it; revocation takes a key out at once. Every change runs under one lock, so instances and
 * operators never rotate at the same time.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from "jose";
import { type Sql, transaction } from "../../db/connection.ts";
import {
  endKey,
  findKeyState,
  insertKey,
  type KeyAlg,
  type KeyStateRow,
  listDueRetirements,
  listKeys,
  listLivePrivateKeys,
  lockLiveKeys,
  promoteKey,
  publishedAlgorithms,
  sealKey,
} from "../../db/keys/keys.ts";
import type { KeySet } from "../../openapi/keys.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import { record, type Source, SYSTEM } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import type { KeyVault } from "./key_vault.ts";

/** Any fixed number: the advisory lock every change of the signing keys takes. */
const KEYS_LOCK = 72_616_002;

export type KeySettings = {
  /** The algorithm new keys use. */
  alg: KeyAlg;
  /** Days between automatic rotations; 0: none. */
  rotationDays: number;
  accessTokenTtl: number;
  /** Seals private keys at rest, when KEY_ENCRYPTION_KEY is set. */
  vault: KeyVault | null;
};

/** How long verifiers may cache the JWKS: short enough that a new key is known within the pre-publish window. */
export function jwksMaxAge(accessTokenTtl: number): number {
  return Math.min(300, accessTokenTtl);
}

/** A next key is published this long before it may sign: max(ACCESS_TOKEN_TTL, the JWKS max-age). */
export function prepublishSeconds(s: Pick<KeySettings, "accessTokenTtl">): number {
  return Math.max(s.accessTokenTtl, jwksMaxAge(s.accessTokenTtl));
}

/** A previous key stays published until its last token (issued up to the switch) expired, with a margin for clocks. */
const retireAfterSeconds = (s: KeySettings) => s.accessTokenTtl + 120;

const GENERATE: Record<KeyAlg, Parameters<typeof generateKeyPair>[1]> = {
  EdDSA: { crv: "Ed25519", extractable: true },
  ES256: { extractable: true },
  RS256: { modulusLength: 2048, extractable: true },
};

/** A fresh key pair: kid = RFC 7638 thumbprint; the private JWK sealed when a vault is configured. */
async function createKey(sql: Sql, s: KeySettings, state: "next" | "current"): Promise<string> {
  const { publicKey, privateKey } = await generateKeyPair(s.alg, GENERATE[s.alg]);
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid, alg: s.alg };
  await insertKey(sql, {
    kid,
    alg: s.alg,
    state,
    public_jwk: { ...publicJwk, kid, alg: s.alg, use: "sig" },
    private_jwk: s.vault ? null : privateJwk,
    private_jwk_sealed: s.vault ? s.vault.seal(kid, privateJwk) : null,
  });
  return kid;
}

/** Under the keys' lock: the live keys by state. */
async function lockedKeys(tx: Sql) {
  await tx`select pg_advisory_xact_lock(${KEYS_LOCK})`;
  const live = await lockLiveKeys(tx);
  return {
    now: live[0]?.now ?? Date.now() / 1000,
    current: live.find((k) => k.state === "current"),
    next: live.find((k) => k.state === "next"),
  };
}

const age = (k: KeyStateRow, now: number) => now - k.created_at;

/** Key changes are events of the system project. */
async function keyEvent(
  tx: Sql,
  type: "key.rotated" | "key.revoked",
  source: Source,
  kid: string,
  details: Record<string, unknown>,
): Promise<void> {
  await record(tx, { projectId: SYSTEM_PROJECT_ID, type, source, target: { type: "key", id: kid }, details });
}

/**
 * At start, under the bootstrap lock: seals plain private keys when KEY_ENCRYPTION_KEY is set, proves that
 * sealed ones open with it (a wrong or missing key stops the start: never a silent new key), and makes the
 * first keys of a new deployment.
 */
export async function prepareKeys(sql: Sql, s: KeySettings): Promise<void> {
  for (const k of await listLivePrivateKeys(sql)) {
    if (k.private_jwk_sealed) {
      if (!s.vault) {
        throw new Error(
          "the signing keys in the database are encrypted: set KEY_ENCRYPTION_KEY to the key that encrypted them",
        );
      }
      try {
        s.vault.open(k.kid, k.private_jwk_sealed);
      } catch {
        throw new Error(
          `KEY_ENCRYPTION_KEY does not decrypt the stored signing key ${k.kid}: it is not the key that encrypted ` +
            "them (no new key was made)",
        );
      }
    } else if (s.vault && k.private_jwk) {
      await sealKey(sql, k.kid, s.vault.seal(k.kid, k.private_jwk));
    }
  }
  await maintainKeys(sql, s);
}

/**
 * The rotation job (one instance at a time): retires previous keys whose tokens have expired; keeps a next key
 * published while rotation is on or the algorithm changes; promotes it once it has been published for the
 * pre-publish window and the current key is due (SIGNING_KEY_ROTATION_DAYS) or of another algorithm.
 */
export async function maintainKeys(sql: Sql, s: KeySettings): Promise<void> {
  await transaction(sql, async (tx) => {
    const { now, current, next } = await lockedKeys(tx);
    for (const kid of await listDueRetirements(tx)) await endKey(tx, kid, "retired");
    if (!current) {
      await createKey(tx, s, "current");
      if (s.rotationDays > 0) await createKey(tx, s, "next");
      return;
    }
    const algChange = current.alg !== s.alg;
    let pending = next;
    if (pending && pending.alg !== s.alg) {
      // Published but never signed: a key of the old algorithm is simply withdrawn.
      await endKey(tx, pending.kid, "retired");
      pending = undefined;
    }
    if (!pending) {
      if (s.rotationDays > 0 || algChange) await createKey(tx, s, "next");
      return;
    }
    const due = algChange ||
      (s.rotationDays > 0 && now - (current.activated_at ?? current.created_at) >= s.rotationDays * 86_400);
    if (due && age(pending, now) >= prepublishSeconds(s)) {
      await promoteKey(tx, pending.kid, retireAfterSeconds(s));
      if (s.rotationDays > 0) await createKey(tx, s, "next");
      await keyEvent(tx, "key.rotated", SYSTEM, pending.kid, {
        previous: current.kid,
        reason: algChange ? `SIGNING_ALG changed to ${s.alg}` : "scheduled rotation",
      });
    }
  });
}

/** The algorithms of the published keys, the current key's first (for discovery). */
export async function signingAlgorithms(sql: Sql): Promise<string[]> {
  return await publishedAlgorithms(sql);
}

export async function getKeys(sql: Sql, s: KeySettings): Promise<KeySet> {
  return { keys: await listKeys(sql, prepublishSeconds(s)) };
}

/**
 * Promotes the next key now (a planned rotation), making one first when none is published. A key published
 * for less than the pre-publish window is refused with 409 `key_rotation_too_soon` unless `force`: verifiers
 * that cached the JWKS before it was published would not know it. A new next key is published at once.
 */
export async function rotateKeys(sql: Sql, s: KeySettings, force: boolean, source: Source): Promise<KeySet> {
  const window = prepublishSeconds(s);
  const outcome = await transaction(sql, async (tx) => {
    const { now, current, next } = await lockedKeys(tx);
    const nextKid = next?.kid ?? await createKey(tx, s, "next");
    const published = next ? age(next, now) : 0;
    if (published < window && !force) {
      // Committed either way: the key made here is published now, ready after the window.
      return {
        refused: new AppError("key_rotation_too_soon", {
          description:
            `the next key ${nextKid} was published ${Math.floor(published)} s ago; verifiers may cache ` +
            `the JWKS for up to ${
              jwksMaxAge(s.accessTokenTtl)
            } s and tokens live ${s.accessTokenTtl} s, so it may ` +
            `sign ${Math.ceil(window - published)} s from now: rotate then, or now with force=true`,
        }),
      };
    }
    await promoteKey(tx, nextKid, retireAfterSeconds(s));
    await createKey(tx, s, "next");
    await keyEvent(tx, "key.rotated", source, nextKid, { previous: current?.kid ?? null, forced: force });
    return {
      notice:
        `${nextKid} signs every new token from now on. Tokens signed before stay valid until they expire; ` +
        `the previous key leaves the JWKS in ${retireAfterSeconds(s)} s.` +
        (published < window
          ? ` Forced: the key was published ${
            Math.floor(published)
          } s ago, so a verifier that cached the JWKS ` +
            "before then sees an unknown kid and must refetch the JWKS (every instance of this service " +
            "accepts its tokens at once)."
          : ""),
    };
  });
  if ("refused" in outcome) throw outcome.refused;
  return { ...(await getKeys(sql, s)), notice: outcome.notice };
}

/**
 * Emergency: the key leaves the JWKS at once and every token it signed is refused on its next request. If it
 * was the current key, the next key signs from the same moment; with no next key, revoking it needs `force`
 * (a new key is made and signs at once).
 */
export async function revokeKey(
  sql: Sql,
  s: KeySettings,
  kid: string,
  force: boolean,
  source: Source,
): Promise<KeySet> {
  const notice = await transaction(sql, async (tx) => {
    const { next } = await lockedKeys(tx);
    const found = await findKeyState(tx, kid);
    if (!found) throw new AppError("signing_key_not_found");
    if (found.state === "revoked") return `${kid} was already revoked.`;
    const gone = `${kid} is out of the JWKS and every token it signed is refused from the next request on.`;
    if (found.state !== "current") {
      await endKey(tx, kid, "revoked");
      await keyEvent(tx, "key.revoked", source, kid, { state: found.state });
      return gone;
    }
    if (!next && !force) {
      throw new AppError("only_signing_key", {
        description:
          `${kid} is the only key that can sign; revoking it with force=true makes a new key that signs ` +
          "at once, and verifiers that cached the JWKS see its kid as unknown until they refetch it",
      });
    }
    await endKey(tx, kid, "revoked");
    const successor = next?.kid ?? await createKey(tx, s, "current");
    if (next) await promoteKey(tx, next.kid, retireAfterSeconds(s));
    await createKey(tx, s, "next");
    await keyEvent(tx, "key.revoked", source, kid, { state: "current", successor, forced: force });
    return `${gone} ${successor} signs every new token from now on` +
      (next
        ? "; it was already in the JWKS."
        : "; it is new, so verifiers that cached the JWKS see an unknown kid and must refetch the JWKS " +
          "(every instance of this service accepts its tokens at once).");
  });
  return { ...(await getKeys(sql, s)), notice };
}
