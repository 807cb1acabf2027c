/** The service's JWS on node:crypto agrees with jose both ways, for each algorithm, and refuses what it must. */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT } from "jose";
import { encodeHeader, privateKeyOf, publicKeyOf, signCompact, verifyCompact } from "../domain/keys/jws.ts";
import { test } from "./helpers.ts";

for (const alg of ["EdDSA", "ES256", "RS256"] as const) {
  test(`JWS ${alg}: node:crypto signatures verify with jose, and jose's with ours`, async () => {
    const { publicKey, privateKey } = await generateKeyPair(alg, {
      extractable: true,
      ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}),
    });
    const pub = await exportJWK(publicKey);
    const priv = await exportJWK(privateKey);
    const ours = signCompact(privateKeyOf(priv, alg, "k1"), encodeHeader({ alg, typ: "at+jwt", kid: "k1" }), {
      sub: "a",
      n: 1,
    });
    const { payload } = await jwtVerify(ours, await importJWK(pub, alg), { typ: "at+jwt" });
    assert.equal(payload.sub, "a");
    const theirs = await new SignJWT({ sub: "b" }).setProtectedHeader({ alg, kid: "k1" }).sign(privateKey);
    const key = publicKeyOf(pub, alg);
    const decoded = await verifyCompact(theirs, () => Promise.resolve(key));
    assert.equal(decoded?.payload.sub, "b");
    // Refused: a tampered payload, another algorithm named in the header, crit, a malformed token.
    const [h, p, s] = ours.split(".");
    const forged = `${h}.${
      btoa(JSON.stringify({ sub: "root" })).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")
    }.${s}`;
    assert.equal(await verifyCompact(forged, () => Promise.resolve(key)), null);
    const otherAlg = alg === "EdDSA" ? "ES256" : "EdDSA";
    assert.equal(await verifyCompact(ours, () => Promise.resolve({ ...key, alg: otherAlg })), null);
    const crit = `${encodeHeader({ alg, kid: "k1", crit: ["x"], x: 1 })}.${p}.${s}`;
    assert.equal(await verifyCompact(crit, () => Promise.resolve(key)), null);
    for (const bad of ["", "a.b", "a.b.c.d", `${h}.${p}.`, `${h}.${p}.${s}!`]) {
      assert.equal(await verifyCompact(bad, () => Promise.resolve(key)), null, bad);
    }
  });
}
