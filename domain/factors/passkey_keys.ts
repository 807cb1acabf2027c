/**
 * The credential public keys a passkey may have: ES256 on P-256, EdDSA on Ed25519, RS256 of 2048 bits or more
 * with the exponent 65537. @simplewebauthn/server decodes the COSE key (RFC 9053) but, with attestation
 * `none`, imports it only at the first sign-in and never judges its strength; this refuses at registration a
 * key that could never be trusted: an RSA modulus under 2048 bits or an exponent other than 65537, an EC point
 * off its curve, an Ed25519 point of small order (one fixed signature verifies for every challenge) or in a
 * non-canonical encoding. The points are decoded by @noble/curves.
 */

/** The algorithms the options offer (COSE ids: EdDSA, ES256, RS256), most preferred first. */
export const ALGORITHM_IDS = [-8, -7, -257];

/** The parsers, loaded at the first ceremony rather than at start (about 100 ms of imports). */
async function loadParsers() {
  const [{ cose, decodeCredentialPublicKey }, { ed25519 }, { p256 }] = await Promise.all([
    import("@simplewebauthn/server/helpers"),
    import("@noble/curves/ed25519.js"),
    import("@noble/curves/nist.js"),
  ]);
  return { cose, decodeCredentialPublicKey, ed25519, p256 };
}
type Parsers = Awaited<ReturnType<typeof loadParsers>>;
let parsers: Promise<Parsers> | undefined;

/** A key refused, and why (webauthn.ts answers it as a `WebAuthnError` of the same reason). */
class KeyRefused extends Error {
  constructor(readonly reason: string) {
    super(`public key refused: ${reason}`);
  }
}

const MIN_RSA_BITS = 2048;
/** Past this a modulus is a denial of service (every sign-in does a modular exponentiation), not a key. */
const MAX_RSA_BITS = 8192;

/** An integer's bytes (big-endian) without leading zeros. */
function stripped(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  return b.subarray(i);
}

function bitLength(b: Uint8Array): number {
  const n = stripped(b);
  return n.length === 0 ? 0 : (n.length - 1) * 8 + (32 - Math.clz32(n[0]));
}

function bytes(key: Map<number, unknown>, label: number): Uint8Array {
  const v = key.get(label);
  if (!(v instanceof Uint8Array)) throw new KeyRefused("malformed_public_key");
  return v;
}

/** Decodes a COSE key or refuses it. */
function decodeCoseKey({ decodeCredentialPublicKey }: Parsers, publicKey: Uint8Array): Map<number, unknown> {
  // Read as the library reads it at sign-in. A key cut short inside authenticator data is refused by the
  // library at registration (bytes left over); a coordinate cut short, by the lengths checked below.
  let key: unknown;
  try {
    key = decodeCredentialPublicKey(new Uint8Array(publicKey));
  } catch {
    throw new KeyRefused("malformed_public_key");
  }
  if (!(key instanceof Map)) throw new KeyRefused("malformed_public_key");
  return key as Map<number, unknown>;
}

/**
 * Why a COSE public key is refused, or null when it is one of the offered algorithms on its own key type and
 * curve and is not weak: unsupported_algorithm, malformed_public_key, rsa_key_too_short, rsa_key_too_long,
 * rsa_exponent_not_65537, key_off_curve, small_order_key.
 */
export async function keyRefusal(publicKey: Uint8Array): Promise<string | null> {
  const p = await (parsers ??= loadParsers());
  try {
    checkPublicKey(p, publicKey);
    return null;
  } catch (err) {
    if (err instanceof KeyRefused) return err.reason;
    throw err;
  }
}

function checkPublicKey(p: Parsers, publicKey: Uint8Array): void {
  const { cose, ed25519, p256 } = p;
  const key = decodeCoseKey(p, publicKey);
  const kty = key.get(cose.COSEKEYS.kty), alg = key.get(cose.COSEKEYS.alg), crv = key.get(cose.COSEKEYS.crv);
  if (typeof alg !== "number" || !ALGORITHM_IDS.includes(alg)) {
    throw new KeyRefused("unsupported_algorithm");
  }
  if (alg === cose.COSEALG.ES256) {
    if (kty !== cose.COSEKTY.EC2 || crv !== cose.COSECRV.P256) {
      throw new KeyRefused("unsupported_algorithm");
    }
    const x = bytes(key, cose.COSEKEYS.x), y = bytes(key, cose.COSEKEYS.y);
    if (x.length !== 32 || y.length !== 32) throw new KeyRefused("malformed_public_key");
    try {
      p256.Point.fromBytes(new Uint8Array([4, ...x, ...y])); // checks y² = x³ + ax + b and the range of x, y
    } catch {
      throw new KeyRefused("key_off_curve");
    }
  } else if (alg === cose.COSEALG.EdDSA) {
    if (kty !== cose.COSEKTY.OKP || crv !== cose.COSECRV.ED25519) {
      throw new KeyRefused("unsupported_algorithm");
    }
    const x = bytes(key, cose.COSEKEYS.x);
    if (x.length !== 32) throw new KeyRefused("malformed_public_key");
    let point;
    try {
      point = ed25519.Point.fromBytes(x, false); // strict RFC 8032 decoding: canonical and on the curve
    } catch {
      throw new KeyRefused("key_off_curve");
    }
    if (point.isSmallOrder()) throw new KeyRefused("small_order_key");
  } else {
    if (kty !== cose.COSEKTY.RSA) throw new KeyRefused("unsupported_algorithm");
    const n = bytes(key, cose.COSEKEYS.n), e = stripped(bytes(key, cose.COSEKEYS.e));
    const bits = bitLength(n);
    if (bits < MIN_RSA_BITS) throw new KeyRefused("rsa_key_too_short");
    if (bits > MAX_RSA_BITS) throw new KeyRefused("rsa_key_too_long");
    if (e.length !== 3 || e[0] !== 1 || e[1] !== 0 || e[2] !== 1) {
      throw new KeyRefused("rsa_exponent_not_65537");
    }
  }
}
