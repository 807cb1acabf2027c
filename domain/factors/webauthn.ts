/**
 * WebAuthn ceremonies (§7.1 registration, §7.2 authentication) verified by @simplewebauthn/server, behind the
 * shape the passkey pages send. Before the library, the answer's shape: each field a base64url string of
 * bounded size, client data that is a JSON object with its type, challenge (compared in constant time) and
 * origin, not cross-origin, and CBOR that is exactly as long as it says. After it, the credential's key
 * strength (passkey_keys.ts). Every refusal is a `WebAuthnError` with a stable reason. Pure: the caller
 * supplies the expected challenge and keeps the counters.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { decodeBase64Strict } from "../shared/base64.ts";
import { ALGORITHM_IDS, keyRefusal } from "./passkey_keys.ts";

/** Why a ceremony was refused (audited, and answered as `passkey_refused` with this reason). */
export class WebAuthnError extends Error {
  constructor(readonly reason: string) {
    super(`passkey refused: ${reason}`);
  }
}

/**
 * What the ceremony must match. `userVerification` is always `true` for this service's passkeys; `false` only
 * lets the published test vectors of authenticators without it be checked for everything else.
 */
export type Expected = { challenge: string; origin: string; rpId: string; userVerification?: boolean };

export type AuthenticatorData = {
  signCount: number;
  /** Backup eligible (a synced passkey) and backed up, §6.1 flags BE and BS. */
  backupEligible: boolean;
  backupState: boolean;
};

/** The library, loaded at the first ceremony rather than at start (about 100 ms of imports). */
async function loadLibrary() {
  const [server, helpers] = await Promise.all([
    import("@simplewebauthn/server"),
    import("@simplewebauthn/server/helpers"),
  ]);
  return { ...server, ...helpers };
}
let library: ReturnType<typeof loadLibrary> | undefined;

/** A base64url field's longest accepted text (the pages' bodies are 16 KiB at most). */
const MAX_FIELD = 16_384;

const sha256 = (b: Uint8Array | string) => new Uint8Array(createHash("sha256").update(b).digest());
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b);

function field(value: unknown, what: string): { text: string; bytes: Uint8Array } {
  if (value === undefined || value === null || value === "") throw new WebAuthnError(`missing_${what}`);
  // base64url, its padding tolerated (some clients keep it; a credential id with it matches no credential)
  if (typeof value !== "string" || value.length > MAX_FIELD || !/^[A-Za-z0-9_-]*={0,2}$/.test(value)) {
    throw new WebAuthnError(`malformed_${what}`);
  }
  const bytes = decodeBase64Strict(value);
  if (!bytes) throw new WebAuthnError(`malformed_${what}`);
  return { text: value, bytes };
}

/** §7.1 steps 5–10 and §7.2 steps 9–14: the client data, before the library reads it as an object. */
function checkClientData(json: Uint8Array, type: string, e: Expected): void {
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(json));
  } catch {
    throw new WebAuthnError("malformed_client_data");
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new WebAuthnError("malformed_client_data"); // `null`, a number, a string or an array
  }
  const d = data as Record<string, unknown>;
  if (typeof d.type !== "string" || typeof d.challenge !== "string" || typeof d.origin !== "string") {
    throw new WebAuthnError("missing_client_data_fields");
  }
  if (d.type !== type) throw new WebAuthnError("wrong_type");
  if (!same(sha256(d.challenge), sha256(e.challenge))) throw new WebAuthnError("wrong_challenge");
  if (d.origin !== e.origin) throw new WebAuthnError("wrong_origin");
  if (d.crossOrigin === true) throw new WebAuthnError("cross_origin");
}

function checkAuthenticatorData(
  { parseAuthenticatorData }: Awaited<ReturnType<typeof loadLibrary>>,
  bytes: Uint8Array,
  withCredential: boolean,
): void {
  let parsed;
  try {
    parsed = parseAuthenticatorData(bytes.slice()); // it may patch a byte while it reads
  } catch {
    throw new WebAuthnError("malformed_authenticator_data"); // truncated, or bytes left over
  }
  if (withCredential && !(parsed.flags.at && parsed.credentialID && parsed.credentialPublicKey)) {
    throw new WebAuthnError("no_attested_credential");
  }
}

type CborMap = Map<string, unknown>;

/** The library's refusals (plain Errors) by what their messages name; anything else is `otherwise`. */
const LIBRARY_REFUSALS: [RegExp, string][] = [
  [/RP ID/, "wrong_rp_id"],
  [/user verification/i, "user_not_verified"],
  [/user presence|not present/i, "user_not_present"],
  [/\balg\b/, "unsupported_algorithm"],
  [/backed up/i, "malformed_flags"],
  [/token ?binding/i, "malformed_client_data"],
];

function refusal(err: unknown, otherwise: string): WebAuthnError {
  if (err instanceof WebAuthnError) return err;
  const message = err instanceof Error ? err.message : "";
  return new WebAuthnError(LIBRARY_REFUSALS.find(([re]) => re.test(message))?.[1] ?? otherwise);
}

/** §7.1: a new credential. Answers its id (base64url), COSE public key, counter and backup flags. */
export async function verifyRegistration(
  r: { id: unknown; clientDataJSON: unknown; attestationObject: unknown },
  e: Expected,
): Promise<AuthenticatorData & { credentialId: string; publicKey: Uint8Array }> {
  const id = field(r.id, "credential_id");
  const clientData = field(r.clientDataJSON, "client_data");
  const attestation = field(r.attestationObject, "attestation");
  checkClientData(clientData.bytes, "webauthn.create", e);
  const lib = await (library ??= loadLibrary());
  let decoded: CborMap;
  try {
    decoded = lib.decodeAttestationObject(new Uint8Array(attestation.bytes)) as unknown as CborMap;
    // tiny-cbor cuts a byte string that claims more bytes than there are, and ignores what follows the item:
    // only an object that encodes back to the same bytes was read whole
    if (!(decoded instanceof Map) || !same(lib.isoCBOR.encode(decoded as never), attestation.bytes)) {
      throw new Error("not exactly one CBOR map");
    }
  } catch {
    throw new WebAuthnError("malformed_attestation");
  }
  const authData = decoded.get("authData");
  if (
    typeof decoded.get("fmt") !== "string" || !(decoded.get("attStmt") instanceof Map) ||
    !(authData instanceof Uint8Array)
  ) throw new WebAuthnError("missing_attestation_fields");
  checkAuthenticatorData(lib, authData, true);
  let result;
  try {
    result = await lib.verifyRegistrationResponse({
      response: {
        id: id.text,
        rawId: id.text,
        type: "public-key",
        response: { clientDataJSON: clientData.text, attestationObject: attestation.text },
        clientExtensionResults: {},
      },
      expectedChallenge: (challenge: string) => same(sha256(challenge), sha256(e.challenge)),
      expectedOrigin: e.origin,
      expectedRPID: e.rpId,
      requireUserPresence: true,
      requireUserVerification: e.userVerification ?? true,
      supportedAlgorithmIDs: ALGORITHM_IDS,
    });
  } catch (err) {
    throw refusal(err, "malformed_attestation");
  }
  if (!result.verified) throw new WebAuthnError("attestation_not_verified");
  const { credential, credentialDeviceType, credentialBackedUp } = result.registrationInfo;
  if (credential.id !== id.text) throw new WebAuthnError("credential_id_mismatch");
  if (id.bytes.length > 1023) throw new WebAuthnError("malformed_credential_id"); // §5.8.3
  const weak = await keyRefusal(credential.publicKey);
  if (weak) throw new WebAuthnError(weak);
  return {
    credentialId: credential.id,
    publicKey: credential.publicKey,
    signCount: credential.counter,
    backupEligible: credentialDeviceType === "multiDevice",
    backupState: credentialBackedUp,
  };
}

/**
 * §7.2: an assertion of a stored credential (its id, COSE public key and last counter). Answers the
 * authenticator's counter and backup flags. A signed counter that does not move forward (a cloned
 * authenticator) is refused here, and the caller's update refuses it again against a concurrent use.
 */
export async function verifyAssertion(
  r: { clientDataJSON: unknown; authenticatorData: unknown; signature: unknown },
  stored: { id: string; publicKey: Uint8Array; signCount: number },
  e: Expected,
): Promise<AuthenticatorData> {
  const clientData = field(r.clientDataJSON, "client_data");
  const authData = field(r.authenticatorData, "authenticator_data");
  const signature = field(r.signature, "signature");
  checkClientData(clientData.bytes, "webauthn.get", e);
  const lib = await (library ??= loadLibrary());
  checkAuthenticatorData(lib, authData.bytes, false);
  const weak = await keyRefusal(stored.publicKey); // a key stored before these checks signs in no more
  if (weak) throw new WebAuthnError(weak);
  let result;
  try {
    result = await lib.verifyAuthenticationResponse({
      response: {
        id: stored.id,
        rawId: stored.id,
        type: "public-key",
        response: {
          clientDataJSON: clientData.text,
          authenticatorData: authData.text,
          signature: signature.text,
        },
        clientExtensionResults: {},
      },
      expectedChallenge: (challenge: string) => same(sha256(challenge), sha256(e.challenge)),
      expectedOrigin: e.origin,
      expectedRPID: e.rpId,
      // The counter is ours to judge, after the signature: a clone is told by a signed counter that went back
      credential: { id: stored.id, publicKey: new Uint8Array(stored.publicKey), counter: 0 },
      requireUserVerification: e.userVerification ?? true,
    });
  } catch (err) {
    throw refusal(err, "bad_signature"); // a signature the key cannot read is refused like a wrong one
  }
  if (!result.verified) throw new WebAuthnError("bad_signature");
  const info = result.authenticationInfo;
  // §6.1.1: a counter that does not move forward (both 0: an authenticator without one)
  if (!(info.newCounter > stored.signCount || (info.newCounter === 0 && stored.signCount === 0))) {
    throw new WebAuthnError("counter_went_back");
  }
  return {
    signCount: info.newCounter,
    backupEligible: info.credentialDeviceType === "multiDevice",
    backupState: info.credentialBackedUp,
  };
}
