/**
 * WebAuthn Level 2 ceremonies checked on the server (§7.1 registration, §7.2 authentication): the client data's
 * type, challenge and origin; the authenticator data's relying party id hash, user presence and user
 * verification; the credential's COSE public key (ES256, EdDSA, RS256); the assertion's signature over
 * authenticatorData ‖ SHA-256(clientDataJSON). Attestation is not asked for (`none`), so its statement is not
 * checked. Pure: the caller supplies the expected challenge and keeps the counters.
 */
import { createHash, createPublicKey, timingSafeEqual, verify } from "node:crypto";
import { decodeBase64Strict, encodeBase64Url } from "../shared/base64.ts";
import { type Cbor, decodeCbor } from "./cbor.ts";

/** Why a ceremony was refused (audited; the browser sees a generic message). */
export class WebAuthnError extends Error {
  constructor(readonly reason: string) {
    super(`passkey refused: ${reason}`);
  }
}

export type Expected = { challenge: string; origin: string; rpId: string };

export type AuthenticatorData = {
  signCount: number;
  /** Backup eligible (a synced passkey) and backed up, §6.1 flags BE and BS. */
  backupEligible: boolean;
  backupState: boolean;
};

const sha256 = (b: Uint8Array | string) => new Uint8Array(createHash("sha256").update(b).digest());
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b);

function bytesOf(b64url: unknown, what: string): Uint8Array {
  if (typeof b64url !== "string" || !/^[A-Za-z0-9_-]*$/.test(b64url) || b64url.length > 16_384) {
    throw new WebAuthnError(`malformed_${what}`);
  }
  const bytes = decodeBase64Strict(b64url);
  if (!bytes) throw new WebAuthnError(`malformed_${what}`);
  return bytes;
}

function checkClientData(json: Uint8Array, type: string, e: Expected): void {
  let data: { type?: unknown; challenge?: unknown; origin?: unknown; crossOrigin?: unknown };
  try {
    data = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(json));
  } catch {
    throw new WebAuthnError("malformed_client_data");
  }
  if (data.type !== type) throw new WebAuthnError("wrong_type");
  if (typeof data.challenge !== "string" || !same(sha256(data.challenge), sha256(e.challenge))) {
    throw new WebAuthnError("wrong_challenge");
  }
  if (data.origin !== e.origin) throw new WebAuthnError("wrong_origin");
  if (data.crossOrigin === true) throw new WebAuthnError("cross_origin");
}

function parseAuthData(a: Uint8Array, e: Expected, withCredential: boolean) {
  if (a.length < 37) throw new WebAuthnError("malformed_authenticator_data");
  if (!same(a.subarray(0, 32), sha256(e.rpId))) throw new WebAuthnError("wrong_rp_id");
  const flags = a[32];
  if (!(flags & 0x01)) throw new WebAuthnError("user_not_present");
  if (!(flags & 0x04)) throw new WebAuthnError("user_not_verified");
  const backupEligible = Boolean(flags & 0x08), backupState = Boolean(flags & 0x10);
  if (backupState && !backupEligible) throw new WebAuthnError("malformed_flags");
  const signCount = new DataView(a.buffer, a.byteOffset + 33, 4).getUint32(0);
  const out = {
    signCount,
    backupEligible,
    backupState,
    credentialId: null as Uint8Array | null,
    key: null as Uint8Array | null,
  };
  if (withCredential) {
    if (!(flags & 0x40) || a.length < 55) throw new WebAuthnError("no_attested_credential");
    const idLength = new DataView(a.buffer, a.byteOffset + 53, 2).getUint16(0);
    if (idLength > 1023 || a.length < 55 + idLength) throw new WebAuthnError("malformed_credential_id");
    out.credentialId = a.slice(55, 55 + idLength);
    try {
      const { end } = decodeCbor(a, 55 + idLength);
      out.key = a.slice(55 + idLength, end);
    } catch {
      throw new WebAuthnError("malformed_public_key");
    }
  }
  return out;
}

/** The COSE key (RFC 9053) as a key node:crypto verifies with, and the hash its algorithm signs with. */
export function coseKey(cose: Uint8Array): { key: ReturnType<typeof createPublicKey>; hash: string | null } {
  let map: Cbor;
  try {
    map = decodeCbor(cose).value;
  } catch {
    throw new WebAuthnError("malformed_public_key");
  }
  if (!(map instanceof Map)) throw new WebAuthnError("malformed_public_key");
  const b64 = (k: number) => {
    const v = map.get(k);
    if (!(v instanceof Uint8Array)) throw new WebAuthnError("malformed_public_key");
    return encodeBase64Url(v);
  };
  const kty = map.get(1), alg = map.get(3), crv = map.get(-1);
  try {
    if (kty === 2 && alg === -7 && crv === 1) {
      return {
        key: createPublicKey({ key: { kty: "EC", crv: "P-256", x: b64(-2), y: b64(-3) }, format: "jwk" }),
        hash: "sha256",
      };
    }
    if (kty === 1 && alg === -8 && crv === 6) {
      return {
        key: createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: b64(-2) }, format: "jwk" }),
        hash: null,
      };
    }
    if (kty === 3 && alg === -257) {
      return {
        key: createPublicKey({ key: { kty: "RSA", n: b64(-1), e: b64(-2) }, format: "jwk" }),
        hash: "sha256",
      };
    }
  } catch (err) {
    if (err instanceof WebAuthnError) throw err;
    throw new WebAuthnError("malformed_public_key");
  }
  throw new WebAuthnError("unsupported_algorithm");
}

/** §7.1: a new credential. Answers its id (base64url), COSE public key, counter and backup flags. */
export function verifyRegistration(
  r: { id: unknown; clientDataJSON: unknown; attestationObject: unknown },
  e: Expected,
): AuthenticatorData & { credentialId: string; publicKey: Uint8Array } {
  checkClientData(bytesOf(r.clientDataJSON, "client_data"), "webauthn.create", e);
  let attestation: Cbor;
  try {
    attestation = decodeCbor(bytesOf(r.attestationObject, "attestation")).value;
  } catch (err) {
    if (err instanceof WebAuthnError) throw err;
    throw new WebAuthnError("malformed_attestation");
  }
  const authData = attestation instanceof Map ? attestation.get("authData") : undefined;
  if (!(authData instanceof Uint8Array)) throw new WebAuthnError("malformed_attestation");
  const parsed = parseAuthData(authData, e, true);
  const credentialId = encodeBase64Url(parsed.credentialId!);
  if (typeof r.id !== "string" || r.id !== credentialId) throw new WebAuthnError("credential_id_mismatch");
  coseKey(parsed.key!); // refuses a key it could not verify with later
  return { ...parsed, credentialId, publicKey: parsed.key! };
}

/** §7.2: an assertion of a stored credential. Answers the authenticator's counter and backup flags. */
export function verifyAssertion(
  r: { clientDataJSON: unknown; authenticatorData: unknown; signature: unknown },
  publicKey: Uint8Array,
  e: Expected,
): AuthenticatorData {
  const clientData = bytesOf(r.clientDataJSON, "client_data");
  checkClientData(clientData, "webauthn.get", e);
  const authData = bytesOf(r.authenticatorData, "authenticator_data");
  const parsed = parseAuthData(authData, e, false);
  const { key, hash } = coseKey(publicKey);
  const signed = new Uint8Array([...authData, ...sha256(clientData)]);
  let ok = false;
  try {
    ok = verify(hash, signed, key, bytesOf(r.signature, "signature"));
  } catch {
    ok = false; // a signature or key node:crypto cannot read: refused like a wrong signature, just below
  }
  if (!ok) throw new WebAuthnError("bad_signature");
  return {
    signCount: parsed.signCount,
    backupEligible: parsed.backupEligible,
    backupState: parsed.backupState,
  };
}
