/**
 * Unit tests of the passkey checks, no database: answers recorded from real authenticators
 * (tests/fixtures/webauthn_vectors.ts) through verifyRegistration and verifyAssertion with the relying party,
 * origin and challenge each was made for; the key checks on every small-order Ed25519 point, weak RSA keys and
 * P-256 points off the curve; the library's refusals turned into our reasons.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { verifyAssertion, verifyRegistration, WebAuthnError } from "../domain/factors/webauthn.ts";
import { keyRefusal } from "../domain/factors/passkey_keys.ts";
import { AUTHENTICATIONS, REGISTRATIONS } from "./fixtures/webauthn_vectors.ts";
import { b64url, cbor, coseOf, fromB64url } from "./passkey_support.ts";

async function reasonOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (err) {
    if (err instanceof WebAuthnError) return err.reason;
    throw err;
  }
}

for (const v of REGISTRATIONS) {
  Deno.test(`recorded registration, ${v.name}: ${v.refused ? `refused ${v.refused}` : "verified"}`, async () => {
    const answer = { id: v.id, clientDataJSON: v.clientDataJSON, attestationObject: v.attestationObject };
    const expected = { challenge: v.challenge, origin: v.origin, rpId: v.rpId };
    const checked = v.refused === "user_not_verified" ? { ...expected, userVerification: false } : expected;
    if (v.refused) assert.equal(await reasonOf(verifyRegistration(answer, expected)), v.refused);
    if (v.refused && v.refused !== "user_not_verified") return;
    const got = await verifyRegistration(answer, checked);
    assert.equal(got.credentialId, v.id);
    assert.equal(b64url(got.publicKey), v.publicKey);
    assert.equal(got.signCount, v.counter);
    assert.equal(await keyRefusal(got.publicKey), null);
    // The same answer for another origin, relying party or challenge is refused.
    assert.equal(
      await reasonOf(verifyRegistration(answer, { ...checked, origin: "https://evil.example" })),
      "wrong_origin",
    );
    assert.equal(
      await reasonOf(verifyRegistration(answer, { ...checked, rpId: "evil.example" })),
      "wrong_rp_id",
    );
    assert.equal(
      await reasonOf(verifyRegistration(answer, { ...checked, challenge: "x" })),
      "wrong_challenge",
    );
  });
}

for (const v of AUTHENTICATIONS) {
  Deno.test(`recorded assertion, ${v.name}: ${v.refused ? `refused ${v.refused}` : "verified"}`, async () => {
    const answer = {
      clientDataJSON: v.clientDataJSON,
      authenticatorData: v.authenticatorData,
      signature: v.signature,
    };
    const stored = { id: v.id, publicKey: fromB64url(v.publicKey), signCount: v.storedCounter };
    const expected = { challenge: v.challenge, origin: v.origin, rpId: v.rpId };
    const checked = v.userVerified ? expected : { ...expected, userVerification: false };
    if (!v.userVerified) {
      assert.equal(await reasonOf(verifyAssertion(answer, stored, expected)), "user_not_verified");
    }
    if (v.refused) {
      assert.equal(await reasonOf(verifyAssertion(answer, stored, checked)), v.refused);
      return;
    }
    const got = await verifyAssertion(answer, stored, checked);
    assert.equal(got.signCount, v.newCounter);
    // Replayed once its counter is stored: the counter does not move forward.
    if (got.signCount > 0) {
      assert.equal(
        await reasonOf(verifyAssertion(answer, { ...stored, signCount: got.signCount }, checked)),
        "counter_went_back",
      );
    }
    // Tampered signature, authenticator data cut short, or client data that is not an object.
    const sig = fromB64url(v.signature);
    sig[sig.length - 1] ^= 1;
    // A forged answer is a bad signature even with a stale counter: only a signed counter tells a clone.
    assert.equal(
      await reasonOf(
        verifyAssertion({ ...answer, signature: b64url(sig) }, { ...stored, signCount: 1e9 }, checked),
      ),
      "bad_signature",
    );
    assert.equal(
      await reasonOf(verifyAssertion({ ...answer, signature: b64url(sig) }, stored, checked)),
      "bad_signature",
    );
    assert.equal(
      await reasonOf(
        verifyAssertion({ ...answer, authenticatorData: v.authenticatorData.slice(0, 40) }, stored, checked),
      ),
      "malformed_authenticator_data",
    );
    for (const value of ["null", "[]", "1", '"x"']) {
      const clientDataJSON = b64url(new TextEncoder().encode(value));
      assert.equal(
        await reasonOf(verifyAssertion({ ...answer, clientDataJSON }, stored, checked)),
        "malformed_client_data",
      );
    }
  });
}

const hex = (s: string) => Uint8Array.from(s.match(/../g)!, (h) => parseInt(h, 16));
const okp = (x: Uint8Array) =>
  new Uint8Array(cbor(new Map<number, unknown>([[1, 1], [3, -8], [-1, 6], [-2, x]])));

Deno.test("key checks: the eight small-order Ed25519 points are refused, a real Ed25519 key passes", async () => {
  // The torsion subgroup E[8]: orders 1, 2, 4, 4, 8, 8, 8, 8 (the canonical encodings)
  for (
    const point of [
      "0100000000000000000000000000000000000000000000000000000000000000",
      "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
      "0000000000000000000000000000000000000000000000000000000000000000",
      "0000000000000000000000000000000000000000000000000000000000000080",
      "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
      "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
      "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
      "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    ]
  ) {
    assert.equal(await keyRefusal(okp(hex(point))), "small_order_key", point);
  }
  // Non-canonical (y ≥ p) and not on the curve.
  assert.equal(
    await keyRefusal(okp(hex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"))),
    "key_off_curve",
  );
  assert.equal(await keyRefusal(okp(hex("02".padEnd(64, "0")))), "key_off_curve");
  assert.equal(await keyRefusal(okp(new Uint8Array(31))), "malformed_public_key");
  assert.equal(await keyRefusal(coseOf("ed25519", generateKeyPairSync("ed25519").publicKey)), null);
});

Deno.test("key checks: RSA under 2048 bits or with e ≠ 65537 refused; P-256 off the curve refused; others' algorithms refused", async () => {
  const rsa = (modulusLength: number, publicExponent = 65537) =>
    coseOf("rs256", generateKeyPairSync("rsa", { modulusLength, publicExponent }).publicKey);
  assert.equal(await keyRefusal(rsa(512)), "rsa_key_too_short");
  assert.equal(await keyRefusal(rsa(1024)), "rsa_key_too_short");
  assert.equal(await keyRefusal(rsa(2040)), "rsa_key_too_short");
  assert.equal(await keyRefusal(rsa(2048, 3)), "rsa_exponent_not_65537");
  assert.equal(await keyRefusal(rsa(2048, 17)), "rsa_exponent_not_65537");
  assert.equal(await keyRefusal(rsa(2048)), null);
  const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey;
  assert.equal(await keyRefusal(coseOf("es256", ec)), null);
  const jwk = ec.export({ format: "jwk" });
  const y = fromB64url(jwk.y!);
  y[31] ^= 1;
  const ec2 = (x: Uint8Array, y: Uint8Array, alg = -7, crv = 1) =>
    new Uint8Array(cbor(new Map<number, unknown>([[1, 2], [3, alg], [-1, crv], [-2, x], [-3, y]])));
  assert.equal(await keyRefusal(ec2(fromB64url(jwk.x!), y)), "key_off_curve");
  assert.equal(
    await keyRefusal(ec2(new Uint8Array(32), new Uint8Array(32))),
    "key_off_curve",
  );
  assert.equal(
    await keyRefusal(ec2(new Uint8Array(32), new Uint8Array(31))),
    "malformed_public_key",
  );
  assert.equal(
    await keyRefusal(ec2(fromB64url(jwk.x!), fromB64url(jwk.y!), -35, 2)),
    "unsupported_algorithm",
  );
  assert.equal(
    await keyRefusal(ec2(fromB64url(jwk.x!), fromB64url(jwk.y!), -7, 2)),
    "unsupported_algorithm",
  );
  // Not a COSE key; one cut short (its y).
  const good = coseOf("es256", ec);
  assert.equal(await keyRefusal(new Uint8Array([0x01])), "malformed_public_key");
  assert.equal(await keyRefusal(good.slice(0, -3)), "malformed_public_key");
});
