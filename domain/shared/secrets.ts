/**
 * Hashing of high-entropy secrets (client secrets, later codes and refresh tokens). They carry 256 random
 * bits, so one SHA-256 is enough: no dictionary applies and a slow hash would only slow the token endpoint.
 * Passwords, which are low-entropy, use a memory-hard hash instead.
 */
import { createHash, timingSafeEqual } from "node:crypto";

export function hashSecret(secret: string): Uint8Array {
  return new Uint8Array(createHash("sha256").update(secret, "utf8").digest());
}

/** Compares a presented secret with a stored hash in time independent of where they differ. */
export function secretMatches(presented: string, storedHash: Uint8Array): boolean {
  const presentedHash = hashSecret(presented);
  return storedHash.length === presentedHash.length && timingSafeEqual(presentedHash, storedHash);
}

/** A cookie value the service could have set: 256 bits in base64url. */
export const isBrowserSecret = (v: string | undefined): v is string =>
  v !== undefined && /^[A-Za-z0-9_-]{43}$/.test(v);
