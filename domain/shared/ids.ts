/** Identifiers and secrets: UUIDv7 ids (time-ordered, random tail) and 256-bit opaque secrets. */
import { encodeBase64Url } from "./base64.ts";

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * Random bytes for ids, drawn from the system's CSPRNG 4 KB at a time (one call per 409 ids instead of one
 * each): every byte is handed out once, never again.
 */
let pool = new Uint8Array(0);
let taken = 0;
function randomBytes(n: number): Uint8Array {
  if (taken + n > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(4096));
    taken = 0;
  }
  const out = pool.subarray(taken, taken + n);
  taken += n;
  return out;
}

/** RFC 9562 UUIDv7: 48-bit millisecond timestamp (now, or `ms`), then 74 random bits. */
export function newId(ms: number = Date.now()): string {
  const r = randomBytes(10);
  const t = Math.trunc(ms).toString(16).padStart(12, "0").slice(-12);
  return `${t.slice(0, 8)}-${t.slice(8)}-${HEX[0x70 | (r[0] & 0x0f)]}${HEX[r[1]]}-${
    HEX[0x80 | (r[2] & 0x3f)]
  }${HEX[r[3]]}-${HEX[r[4]]}${HEX[r[5]]}${HEX[r[6]]}${HEX[r[7]]}${HEX[r[8]]}${HEX[r[9]]}`;
}

/** The millisecond timestamp of a UUIDv7, or null for anything else. */
export function uuidV7Time(id: string): number | null {
  const m = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.exec(id);
  return m ? parseInt(m[1] + m[2], 16) : null;
}

/** A 256-bit random secret, base64url without padding (43 characters). */
export function newSecret(): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)));
}
