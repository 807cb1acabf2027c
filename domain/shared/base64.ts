/** base64 and base64url without external modules (node:buffer does the work). */
import { Buffer } from "node:buffer";

export function encodeBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

/** Decodes standard or URL-safe base64 strictly: any other character, or bad padding, gives null. */
export function decodeBase64Strict(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/\-_]*={0,2}$/.test(text)) return null;
  const bare = text.replace(/=+$/, "");
  if (bare.length % 4 === 1) return null;
  if (text.includes("=") && text.length % 4 !== 0) return null;
  return new Uint8Array(Buffer.from(bare.replace(/-/g, "+").replace(/_/g, "/"), "base64"));
}
