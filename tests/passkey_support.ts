/**
 * A software authenticator for the passkey tests: ES256, EdDSA or RS256 keys from node:crypto (or any COSE key
 * a test makes up, to be refused), attestation `none` encoded in CBOR by hand, assertions signed over
 * authenticatorData ‖ SHA-256(clientDataJSON).
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from "node:crypto";

export const b64url = (b: Uint8Array) =>
  btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
export const fromB64url = (s: string) =>
  Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
export const sha256 = (b: Uint8Array | string) => new Uint8Array(createHash("sha256").update(b).digest());

/** CBOR (RFC 8949) of what an authenticator sends: ints, byte and text strings, maps. */
export function cbor(v: unknown): number[] {
  const head = (major: number, n: number): number[] =>
    n < 24
      ? [major << 5 | n]
      : n < 256
      ? [major << 5 | 24, n]
      : n < 65536
      ? [major << 5 | 25, n >> 8, n & 255]
      : [major << 5 | 26, n >>> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255];
  if (typeof v === "number") return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === "string") {
    const b = new TextEncoder().encode(v);
    return [...head(3, b.length), ...b];
  }
  if (v instanceof Uint8Array) return [...head(2, v.length), ...v];
  if (v instanceof Map) return [...head(5, v.size), ...[...v].flatMap(([k, x]) => [...cbor(k), ...cbor(x)])];
  throw new Error("unsupported");
}

export type KeyKind = "es256" | "ed25519" | "rs256";

/** The COSE key (RFC 9053) of a node:crypto public key. */
export function coseOf(kind: KeyKind, publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: "jwk" });
  const map = kind === "es256"
    ? new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, fromB64url(jwk.x!)], [-3, fromB64url(jwk.y!)]])
    : kind === "ed25519"
    ? new Map<number, unknown>([[1, 1], [3, -8], [-1, 6], [-2, fromB64url(jwk.x!)]])
    : new Map<number, unknown>([[1, 3], [3, -257], [-1, fromB64url(jwk.n!)], [-2, fromB64url(jwk.e!)]]);
  return new Uint8Array(cbor(map));
}

export type Ceremony = { challenge: string; rpId: string; origin: string; flags?: number };

/** A passkey on a software authenticator: its key pair, id and counter. */
export class SoftKey {
  readonly id = crypto.getRandomValues(new Uint8Array(16));
  readonly keys;
  counter = 0;

  /** `cose`: a public key to register instead of the pair's (the assertions are still signed by the pair). */
  constructor(readonly kind: KeyKind = "es256", readonly coseKey?: Uint8Array) {
    this.keys = kind === "es256"
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : kind === "ed25519"
      ? generateKeyPairSync("ed25519")
      : generateKeyPairSync("rsa", { modulusLength: 2048 });
  }

  cose(): Uint8Array {
    return this.coseKey ?? coseOf(this.kind, this.keys.publicKey);
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

  /** The attestation object (`none`) of this key, its bytes. */
  attestation(o: Ceremony): Uint8Array {
    const authData = this.authData(o.rpId, o.flags ?? 0x45, true);
    return new Uint8Array(
      cbor(new Map<string, unknown>([["fmt", "none"], ["attStmt", new Map()], ["authData", authData]])),
    );
  }

  create(o: Ceremony & { clientData?: unknown }) {
    const clientData = new TextEncoder().encode(
      JSON.stringify(
        "clientData" in o
          ? o.clientData
          : { type: "webauthn.create", challenge: o.challenge, origin: o.origin },
      ),
    );
    return {
      id: b64url(this.id),
      clientDataJSON: b64url(clientData),
      attestationObject: b64url(this.attestation(o)),
    };
  }

  get(o: Ceremony & { tamper?: boolean; clientData?: unknown }) {
    this.counter++;
    const clientData = new TextEncoder().encode(
      JSON.stringify(
        "clientData" in o ? o.clientData : { type: "webauthn.get", challenge: o.challenge, origin: o.origin },
      ),
    );
    const authData = this.authData(o.rpId, o.flags ?? 0x05, false);
    const signed = new Uint8Array([...authData, ...sha256(clientData)]);
    const signature = new Uint8Array(
      sign(this.kind === "ed25519" ? null : "sha256", signed, this.keys.privateKey),
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
