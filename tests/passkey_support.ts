/**
 * A software authenticator for raw-HTTP passkey tests (ES256 over node:crypto, CBOR encoded by hand), as
 * tests/passkeys_test.ts drives it: `create` answers a registration's options, `get` a sign-in's.
 */
import { createHash, generateKeyPairSync, sign } from "node:crypto";

const b64url = (b: Uint8Array) =>
  btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const sha256 = (b: Uint8Array | string) => new Uint8Array(createHash("sha256").update(b).digest());
const fromB64url = (s: string) =>
  Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

/** CBOR (RFC 8949) of what an authenticator sends: ints, byte and text strings, maps. */
function cbor(v: unknown): number[] {
  const head = (major: number, n: number): number[] =>
    n < 24 ? [major << 5 | n] : n < 256 ? [major << 5 | 24, n] : [major << 5 | 25, n >> 8, n & 255];
  if (typeof v === "number") return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === "string") {
    const b = new TextEncoder().encode(v);
    return [...head(3, b.length), ...b];
  }
  if (v instanceof Uint8Array) return [...head(2, v.length), ...v];
  if (v instanceof Map) return [...head(5, v.size), ...[...v].flatMap(([k, x]) => [...cbor(k), ...cbor(x)])];
  throw new Error("unsupported");
}

/** A passkey on a software authenticator: its key pair, id and counter. */
export class SoftKey {
  readonly id = crypto.getRandomValues(new Uint8Array(16));
  readonly keys = generateKeyPairSync("ec", { namedCurve: "P-256" });
  counter = 0;

  cose(): Uint8Array {
    const jwk = this.keys.publicKey.export({ format: "jwk" });
    return new Uint8Array(
      cbor(
        new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, fromB64url(jwk.x!)], [
          -3,
          fromB64url(jwk.y!),
        ]]),
      ),
    );
  }

  authData(rpId: string, flags: number, attested: boolean): Uint8Array {
    const count = [
      this.counter >>> 24,
      (this.counter >> 16) & 255,
      (this.counter >> 8) & 255,
      this.counter & 255,
    ];
    const head = [...sha256(rpId), flags, ...count];
    if (!attested) return new Uint8Array(head);
    return new Uint8Array([...head, ...new Uint8Array(16), 0, this.id.length, ...this.id, ...this.cose()]);
  }

  create(o: { challenge: string; rpId: string; origin: string; flags?: number }) {
    const clientData = new TextEncoder().encode(
      JSON.stringify({ type: "webauthn.create", challenge: o.challenge, origin: o.origin }),
    );
    const authData = this.authData(o.rpId, o.flags ?? 0x45, true);
    const attestation = new Uint8Array(
      cbor(new Map<string, unknown>([["fmt", "none"], ["attStmt", new Map()], ["authData", authData]])),
    );
    return {
      id: b64url(this.id),
      clientDataJSON: b64url(clientData),
      attestationObject: b64url(attestation),
    };
  }

  get(o: { challenge: string; rpId: string; origin: string; flags?: number; tamper?: boolean }) {
    this.counter++;
    const clientData = new TextEncoder().encode(
      JSON.stringify({ type: "webauthn.get", challenge: o.challenge, origin: o.origin }),
    );
    const authData = this.authData(o.rpId, o.flags ?? 0x05, false);
    const signature = new Uint8Array(
      sign("sha256", new Uint8Array([...authData, ...sha256(clientData)]), this.keys.privateKey),
    );
    if (o.tamper) signature[signature.length - 1] ^= 1;
    return {
      id: b64url(this.id),
      clientDataJSON: b64url(clientData),
      authenticatorData: b64url(authData),
      signature: b64url(signature),
      userHandle: null,
    };
  }
}
