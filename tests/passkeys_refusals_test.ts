/**
 * Passkeys over raw HTTP, the bad input: client data that is not a JSON object, truncated or oversized CBOR,
 * missing fields, an unknown algorithm, weak keys (RSA under 2048 bits or with e ≠ 65537, a P-256 point off
 * the curve, an Ed25519 point of small order), another user's passkey in a second step. Each is 400
 * `passkey_refused` with `details.reason` and a `passkey.refused` event with the same reason, never a 500;
 * EdDSA and RS256 keys of the right kind register and sign in.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { baseUrl, http, loginProject, test } from "./helpers.ts";
import { authorizeOidc, Browser, signIn } from "./oidc_support.ts";
import { b64url, cbor, type Ceremony, coseOf, fromB64url, SoftKey } from "./passkey_support.ts";

const json = async (res: Response) => ({ status: res.status, body: await res.json() });

async function post(b: Browser, path: string, body: unknown): Promise<Response> {
  return b.take(
    await http(path, {
      method: "POST",
      headers: { ...b.header(), "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
}

const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];

/** A signed-in user's account page: registers passkeys, or sends any answer to a fresh challenge. */
async function accountOf(p: { clientId: string; email: string; password: string; project: { id: string } }) {
  const base = await baseUrl();
  const site = { origin: new URL(base).origin, rpId: new URL(base).hostname };
  const browser = new Browser();
  await signIn(browser, p);
  const csrf = field(await (await browser.get("/account")).text(), "csrf");
  const project = p.project.id;
  /** Asks for options, then posts what `answer` makes of their challenge. */
  const attempt = async (answer: (o: Ceremony) => Record<string, unknown>) => {
    const options = await json(
      await post(browser, "/account/passkeys/options", { csrf, project, current_password: p.password }),
    );
    assert.equal(options.status, 200);
    const made = answer({ challenge: options.body.challenge, ...site });
    return await json(await post(browser, "/account/passkeys", { csrf, project, name: "Key", ...made }));
  };
  return { site, attempt, register: (key: SoftKey) => attempt((o) => key.create(o)) };
}

/** A login page of the project in a new browser: its form fields, and a passkey answer to a fresh challenge. */
async function loginPage(clientId: string) {
  const b = new Browser();
  const { html } = await authorizeOidc(b, clientId);
  const form = { request_id: field(html, "request_id"), csrf: field(html, "csrf") };
  const answer = async (make: (challenge: string) => Record<string, unknown>) => {
    const options = await json(await post(b, "/authorize/passkey/options", form));
    assert.equal(options.status, 200);
    return await json(await post(b, "/authorize/passkey", { ...form, ...make(options.body.challenge) }));
  };
  return { b, form, answer };
}

async function refusedReasons(p: { project: { id: string }; token: string }): Promise<string[]> {
  const events =
    await (await http(`/api/v1/projects/${p.project.id}/audit-events?type=passkey.refused&limit=100`, {
      headers: { authorization: `Bearer ${p.token}` },
    })).json();
  return events.data.map((e: { details: { reason: string } }) => e.details.reason).sort();
}

function assertRefused(res: { status: number; body: Record<string, unknown> }, reason: string) {
  assert.deepEqual(
    [res.status, res.body.error, (res.body.details as { reason?: string } | undefined)?.reason],
    [400, "passkey_refused", reason],
    `${reason}: ${JSON.stringify(res.body)}`,
  );
}

/** An attestation object whose authData byte string claims 65,535 bytes more than it holds. */
function oversized(key: SoftKey, o: Ceremony): Uint8Array {
  const authData = key.authData(o.rpId, 0x45, true);
  const head = cbor(new Map<string, unknown>([["fmt", "none"], ["attStmt", new Map()]]));
  head[0] = 0xa3;
  const length = authData.length + 65535;
  return new Uint8Array([
    ...head,
    ...cbor("authData"),
    0x5a,
    length >>> 24,
    (length >> 16) & 255,
    (length >> 8) & 255,
    length & 255,
    ...authData,
  ]);
}

const rsa = (modulusLength: number, publicExponent = 65537) =>
  coseOf("rs256", generateKeyPairSync("rsa", { modulusLength, publicExponent }).publicKey);
const ed25519 = (x: Uint8Array) =>
  new Uint8Array(cbor(new Map<number, unknown>([[1, 1], [3, -8], [-1, 6], [-2, x]])));
const hex = (s: string) => Uint8Array.from(s.match(/../g)!, (h) => parseInt(h, 16));

test("passkey registration: bad client data, CBOR, missing fields, unknown algorithms and weak keys are 400 passkey_refused, audited", async () => {
  const p = await loginProject();
  const { attempt } = await accountOf(p);
  const key = new SoftKey();
  const expected: string[] = [];
  const refuse = async (reason: string, answer: (o: Ceremony) => Record<string, unknown>) => {
    assertRefused(await attempt(answer), reason);
    expected.push(reason);
  };

  // Client data that decodes to null, an array, a number or a string; an object without its fields.
  for (const clientData of [null, [], 42, "webauthn.create"]) {
    await refuse("malformed_client_data", (o) => key.create({ ...o, clientData }));
  }
  await refuse(
    "missing_client_data_fields",
    (o) => key.create({ ...o, clientData: { type: "webauthn.create" } }),
  );
  await refuse(
    "malformed_client_data",
    (o) => ({ ...key.create(o), clientDataJSON: b64url(new Uint8Array([0xff])) }),
  );
  // Missing fields of the answer.
  await refuse("missing_client_data", (o) => ({ ...key.create(o), clientDataJSON: undefined }));
  await refuse("missing_attestation", (o) => ({ ...key.create(o), attestationObject: undefined }));
  await refuse("missing_credential_id", (o) => ({ ...key.create(o), id: undefined }));
  await refuse("malformed_attestation", (o) => ({ ...key.create(o), attestationObject: 42 }));
  // Truncated, oversized or trailing CBOR; an attestation object that is not a map or lacks authData.
  await refuse("malformed_attestation", (o) => ({
    ...key.create(o),
    attestationObject: b64url(key.attestation(o).slice(0, -20)),
  }));
  await refuse(
    "malformed_attestation",
    (o) => ({ ...key.create(o), attestationObject: b64url(oversized(key, o)) }),
  );
  await refuse("malformed_attestation", (o) => ({
    ...key.create(o),
    attestationObject: b64url(new Uint8Array([...key.attestation(o), 0x00])),
  }));
  await refuse(
    "malformed_attestation",
    (o) => ({ ...key.create(o), attestationObject: b64url(new Uint8Array([0x18, 42])) }),
  );
  await refuse("missing_attestation_fields", (o) => ({
    ...key.create(o),
    attestationObject: b64url(
      new Uint8Array(cbor(new Map<string, unknown>([["fmt", "none"], ["attStmt", new Map()]]))),
    ),
  }));
  // A credential id the attestation does not hold.
  await refuse("credential_id_mismatch", (o) => ({ ...key.create(o), id: "AAAA" }));
  // An algorithm the options did not offer: ES384 on P-384.
  const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({ format: "jwk" });
  const es384 = new Uint8Array(
    cbor(
      new Map<number, unknown>([[1, 2], [3, -35], [-1, 2], [-2, fromB64url(p384.x!)], [
        -3,
        fromB64url(p384.y!),
      ]]),
    ),
  );
  await refuse("unsupported_algorithm", (o) => new SoftKey("es256", es384).create(o));
  // ES256 declared on an Ed25519 key.
  const mixed = new Uint8Array(
    cbor(new Map<number, unknown>([[1, 1], [3, -7], [-1, 6], [-2, new Uint8Array(32).fill(9)]])),
  );
  await refuse("unsupported_algorithm", (o) => new SoftKey("es256", mixed).create(o));

  // Weak keys: RSA of 512 and 1024 bits, RSA with e = 3, a P-256 point off the curve, Ed25519 of small order.
  await refuse("rsa_key_too_short", (o) => new SoftKey("rs256", rsa(512)).create(o));
  await refuse("rsa_key_too_short", (o) => new SoftKey("rs256", rsa(1024)).create(o));
  await refuse("rsa_exponent_not_65537", (o) => new SoftKey("rs256", rsa(2048, 3)).create(o));
  const offCurve = new Uint8Array(
    cbor(
      new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, new Uint8Array(32).fill(1)], [
        -3,
        new Uint8Array(32).fill(2),
      ]]),
    ),
  );
  await refuse("key_off_curve", (o) => new SoftKey("es256", offCurve).create(o));
  // The identity (order 1) and the point (0, -1) of order 2, two of Ed25519's eight small-order points.
  for (
    const point of [
      "0100000000000000000000000000000000000000000000000000000000000000",
      "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
      "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    ]
  ) {
    await refuse("small_order_key", (o) => new SoftKey("ed25519", ed25519(hex(point))).create(o));
  }
  // A y that does not decode to a point, and a non-canonical y (≥ p).
  await refuse("key_off_curve", (o) => new SoftKey("ed25519", ed25519(hex("02".padEnd(64, "0")))).create(o));
  await refuse(
    "key_off_curve",
    (o) =>
      new SoftKey("ed25519", ed25519(hex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")))
        .create(o),
  );

  // A body over the pages' limit: refused before it is read (no user is known for an event).
  const big = await attempt((o) => ({ ...key.create(o), padding: "x".repeat(20_000) }));
  assert.deepEqual([big.status, big.body.error, big.body.details.reason], [
    400,
    "passkey_refused",
    "too_large",
  ]);

  assert.deepEqual(await refusedReasons(p), expected.sort());
  // The same key, well formed, still registers, once.
  assert.equal((await attempt((o) => key.create(o))).status, 200);
  await refuse("already_registered", (o) => key.create(o));
  assert.deepEqual(await refusedReasons(p), expected.sort());
});

test("passkey sign-in: bad client data, missing or truncated fields, another user's passkey in a second step are 400 passkey_refused, audited; EdDSA and RS256 keys sign in", async () => {
  const p = await loginProject();
  const account = await accountOf(p);
  const ed = new SoftKey("ed25519"), rs = new SoftKey("rs256"), es = new SoftKey("es256");
  for (const key of [ed, rs, es]) {
    const done = await account.register(key);
    assert.equal(done.status, 200, JSON.stringify(done.body));
  }
  const { site } = account;
  // EdDSA and RS256 sign in, through the library's verification.
  for (const key of [ed, rs]) {
    const signedIn = await (await loginPage(p.clientId)).answer((challenge) =>
      key.get({ challenge, ...site })
    );
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
  }

  const expected: string[] = [];
  const refuse = async (reason: string, make: (challenge: string) => Record<string, unknown>) => {
    assertRefused(await (await loginPage(p.clientId)).answer(make), reason);
    expected.push(reason);
  };
  for (const clientData of [null, [], 7, "webauthn.get"]) {
    await refuse("malformed_client_data", (challenge) => es.get({ challenge, ...site, clientData }));
  }
  await refuse("missing_client_data_fields", (challenge) => es.get({ challenge, ...site, clientData: {} }));
  await refuse(
    "missing_signature",
    (challenge) => ({ ...es.get({ challenge, ...site }), signature: undefined }),
  );
  await refuse(
    "missing_client_data",
    (challenge) => ({ ...es.get({ challenge, ...site }), clientDataJSON: "" }),
  );
  await refuse(
    "malformed_signature",
    (challenge) => ({ ...es.get({ challenge, ...site }), signature: "a b" }),
  );
  await refuse("malformed_authenticator_data", (challenge) => {
    const a = es.get({ challenge, ...site });
    return { ...a, authenticatorData: a.authenticatorData.slice(0, 20) };
  });
  await refuse("malformed_authenticator_data", (challenge) => {
    const a = es.get({ challenge, ...site });
    return {
      ...a,
      authenticatorData: b64url(new Uint8Array([...es.authData(site.rpId, 0x05, false), 1, 2])),
    };
  });
  // A signature in the wrong form for its key (not DER for ES256): refused like a wrong one.
  await refuse("bad_signature", (challenge) => ({ ...es.get({ challenge, ...site }), signature: "AAAA" }));

  // Another user's passkey while the login awaits this user's second step.
  const other = await p.api.users.createUser(p.project.id, {
    display_name: "Other",
    email: `other-${crypto.randomUUID().slice(0, 8)}@example.com`,
    password: p.password,
  });
  const otherKey = new SoftKey();
  const otherAccount = await accountOf({ ...p, email: other.email! });
  assert.equal((await otherAccount.register(otherKey)).status, 200);
  const page = await loginPage(p.clientId);
  const second = await page.b.post("/authorize", { ...page.form, email: p.email, password: p.password });
  assert.equal(second.status, 200);
  assert.match(await second.text(), /Verify it is you/);
  const foreign = await page.answer((challenge) => otherKey.get({ challenge, ...site }));
  assertRefused(foreign, "another_user");
  expected.push("another_user");

  assert.deepEqual(await refusedReasons(p), expected.sort());
});
