/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP): HMAC-SHA-1, 6 digits, 30-second steps, the
 * way every authenticator app reads an `otpauth://totp/` URI. The key travels as RFC 4648 base32.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const TOTP_DIGITS = 6;
export const TOTP_PERIOD = 30;
/** Steps either side of now that are still accepted (clock drift, a code typed as it changed). */
export const TOTP_WINDOW = 1;

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32Encode(bytes: Uint8Array): string {
  let bits = 0, value = 0, out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Uint8Array {
  const clean = text.toUpperCase().replace(/[\s=-]/g, "");
  const out: number[] = [];
  let bits = 0, value = 0;
  for (const ch of clean) {
    const i = ALPHABET.indexOf(ch);
    if (i < 0) throw new Error("not base32"); // the secrets are this service's own: a fault, not a refusal
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return new Uint8Array(out);
}

/** A new 160-bit key (RFC 4226 §4 recommends 160 bits), base32. */
export function newTotpSecret(): string {
  return base32Encode(crypto.getRandomValues(new Uint8Array(20)));
}

/** The RFC 6238 step of a time in milliseconds. */
export const stepOf = (ms: number) => Math.floor(ms / 1000 / TOTP_PERIOD);

/** HOTP (RFC 4226 §5.3) of the key at a counter: dynamic truncation, then 6 decimal digits. */
export function hotp(key: Uint8Array, counter: number): string {
  const msg = new Uint8Array(8);
  new DataView(msg.buffer).setBigUint64(0, BigInt(counter));
  const mac = createHmac("sha1", key).update(msg).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const code = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) | (mac[offset + 2] << 8) |
    mac[offset + 3];
  return String(code % 10 ** TOTP_DIGITS).padStart(TOTP_DIGITS, "0");
}

/**
 * The step whose code `code` is, among now and `TOTP_WINDOW` steps either side, or null. Each candidate is
 * compared in constant time, and all of them are computed whatever matches.
 */
export function matchingStep(secret: string, code: string, nowMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const key = base32Decode(secret);
  const now = stepOf(nowMs);
  let found: number | null = null;
  for (let step = now - TOTP_WINDOW; step <= now + TOTP_WINDOW; step++) {
    const expected = new TextEncoder().encode(hotp(key, step));
    if (timingSafeEqual(expected, new TextEncoder().encode(code)) && found === null) found = step;
  }
  return found;
}

/** The `otpauth://` URI authenticator apps read from the QR code (Google Authenticator's key URI format). */
export function otpauthUri(p: { secret: string; issuer: string; account: string }): string {
  const label = `${encodeURIComponent(p.issuer)}:${encodeURIComponent(p.account)}`;
  const query = new URLSearchParams({
    secret: p.secret,
    issuer: p.issuer,
    algorithm: "SHA1",
    digits: String(TOTP_DIGITS),
    period: String(TOTP_PERIOD),
  });
  return `otpauth://totp/${label}?${query}`;
}
