/**
 * Secrets the service must be able to use at rest (private signing keys, webhook signing secrets): sealed with
 * AES-256-GCM under KEY_ENCRYPTION_KEY, their id bound as additional data so that a sealed value cannot be
 * moved to another row. Layout: version 1 (one byte), the 12-byte nonce, the 16-byte tag, the ciphertext.
 */
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { JWK } from "jose";

const VERSION = 1;

export class KeyVault {
  constructor(private readonly key: Uint8Array) {
    if (key.length !== 32) throw new Error("KEY_ENCRYPTION_KEY must be 32 bytes");
  }

  sealText(id: string, text: string): Uint8Array {
    const nonce = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
    cipher.setAAD(new TextEncoder().encode(id));
    const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
    return new Uint8Array(Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), body]));
  }

  /** Throws when the key is not the one that sealed it, the id is another, or the bytes were changed. */
  openText(id: string, sealed: Uint8Array): string {
    const bytes = Buffer.from(sealed);
    if (bytes[0] !== VERSION || bytes.length < 29) throw new Error("not a sealed value");
    const decipher = createDecipheriv("aes-256-gcm", this.key, bytes.subarray(1, 13));
    decipher.setAAD(new TextEncoder().encode(id));
    decipher.setAuthTag(bytes.subarray(13, 29));
    return Buffer.concat([decipher.update(bytes.subarray(29)), decipher.final()]).toString("utf8");
  }

  seal(kid: string, jwk: JWK): Uint8Array {
    return this.sealText(kid, JSON.stringify(jwk));
  }

  open(kid: string, sealed: Uint8Array): JWK {
    return JSON.parse(this.openText(kid, sealed)) as JWK;
  }
}
