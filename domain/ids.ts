/** Identifiers and secrets: UUIDv7 ids (time-ordered, random tail) and 256-bit opaque secrets. */
import { encodeBase64Url } from "./base64.ts";

/** RFC 9562 UUIDv7: 48-bit millisecond timestamp (now, or `ms`), then 74 random bits. */
export function newId(ms: number = Date.now()): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[0] = Math.floor(ms / 2 ** 40) & 0xff;
  b[1] = Math.floor(ms / 2 ** 32) & 0xff;
  b[2] = (ms >>> 24) & 0xff;
  b[3] = (ms >>> 16) & 0xff;
  b[4] = (ms >>> 8) & 0xff;
  b[5] = ms & 0xff;
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
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
