/** POST /api/v1/tokens with client credentials: success, the JWT and its JWKS, and every error. */
import assert from "node:assert/strict";
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import {
  ADMIN_SECRET,
  baseUrl,
  basic,
  clientToken,
  expectOAuthError,
  http,
  newProject,
  postToken,
  sdk,
  systemToken,
  test,
} from "./helpers.ts";

test("bootstrap: the system admin client gets a token with BOOTSTRAP_ADMIN_SECRET", async () => {
  const res = await postToken({ grant_type: "client_credentials" }, {
    authorization: basic("system-admin", ADMIN_SECRET),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), "no-store");
  assert.equal(res.headers.get("pragma"), "no-cache");
  const body = await res.json();
  assert.deepEqual(Object.keys(body).sort(), ["access_token", "expires_in", "token_type"]);
  assert.equal(body.token_type, "Bearer");
  assert.equal(body.expires_in, 900);
});

test("POST /api/v1/tokens issues an RFC 9068 JWT that verifies against the JWKS", async () => {
  const p = await newProject();
  const token = await clientToken(p.clientId, p.secret);
  const url = await baseUrl();
  const header = decodeProtectedHeader(token);
  assert.equal(header.alg, "EdDSA");
  assert.equal(header.typ, "at+jwt");
  assert.equal(typeof header.kid, "string");
  const jwks = createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`));
  const { payload } = await jwtVerify(token, jwks, { issuer: url, audience: p.project.id, typ: "at+jwt" });
  assert.equal(payload.sub, p.clientId);
  assert.equal(payload.client_id, p.clientId);
  assert.equal(payload.aud, p.project.id);
  assert.equal(payload.exp! - payload.iat!, 900);
  assert.ok(Math.abs(payload.iat! - Date.now() / 1000) < 60);
  assert.match(payload.jti!, /^[0-9a-f-]{36}$/);
  assert.equal(payload.sid, undefined);
  assert.equal(payload.permissions, undefined, "permissions are evaluated live, never carried in the token");
  const again = await clientToken(p.clientId, p.secret);
  const second = await jwtVerify(again, jwks);
  assert.notEqual(second.payload.jti, payload.jti);
});

test("GET /.well-known/jwks.json publishes only public Ed25519 keys", async () => {
  const res = await http("/.well-known/jwks.json");
  assert.equal(res.status, 200);
  const { keys } = await res.json();
  assert.ok(keys.length >= 1);
  for (const k of keys) {
    assert.equal(k.kty, "OKP");
    assert.equal(k.crv, "Ed25519");
    assert.equal(k.alg, "EdDSA");
    assert.equal(k.use, "sig");
    assert.equal(k.d, undefined, "no private part");
  }
});

test("POST /api/v1/tokens decodes Basic credentials per RFC 6749 §2.3.1 (form-encoded, URL-safe base64)", async () => {
  const p = await newProject();
  // A client id with characters that must be form-encoded cannot exist, but encoding must still be undone.
  const encoded = `Basic ${btoa(`${encodeURIComponent(p.clientId)}:${encodeURIComponent(p.secret)}`)}`;
  assert.equal(
    (await postToken({ grant_type: "client_credentials" }, { authorization: encoded })).status,
    200,
  );
  const urlSafe = `basic ${
    btoa(`${p.clientId}:${p.secret}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
  }`;
  assert.equal(
    (await postToken({ grant_type: "client_credentials" }, { authorization: urlSafe })).status,
    200,
  );
  const withCharset = await postToken("grant_type=client_credentials", {
    authorization: basic(p.clientId, p.secret),
    "content-type": "application/x-www-form-urlencoded; charset=UTF-8",
  });
  assert.equal(withCharset.status, 200);
});

test("POST /api/v1/tokens refuses bad requests with invalid_request / invalid_params", async () => {
  const p = await newProject();
  const auth = { authorization: basic(p.clientId, p.secret) };
  const cases: [string, Promise<Response>][] = [
    ["no grant_type", postToken({}, auth)],
    ["empty grant_type", postToken({ grant_type: "" }, auth)],
    ["repeated grant_type", postToken("grant_type=client_credentials&grant_type=client_credentials", auth)],
    [
      "client_secret in the body besides Basic",
      postToken({ grant_type: "client_credentials", client_secret: p.secret }, auth),
    ],
    [
      "client_id that differs from Basic",
      postToken({ grant_type: "client_credentials", client_id: "other" }, auth),
    ],
    [
      "JSON body",
      http("/api/v1/tokens", {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify({ grant_type: "client_credentials" }),
      }),
    ],
    [
      "text body",
      http("/api/v1/tokens", {
        method: "POST",
        headers: { "content-type": "text/plain", ...auth },
        body: "grant_type=client_credentials",
      }),
    ],
    ["empty body", http("/api/v1/tokens", { method: "POST", headers: auth })],
  ];
  for (const [name, call] of cases) {
    const res = await call;
    const body = await res.json();
    assert.equal(res.status, 400, name);
    assert.deepEqual([body.error, body.error_code], ["invalid_request", "invalid_params"], name);
    assert.equal(res.headers.get("cache-control"), "no-store", name);
  }
  // RFC 6749 §5.2: a grant type the service does not offer has its own code.
  for (const grant of ["password", "implicit", "urn:ietf:params:oauth:grant-type:jwt-bearer"]) {
    const err = await expectOAuthError(
      postToken({ grant_type: grant, username: "a@b.c", password: "secret" }, auth),
      400,
      "unsupported_grant_type",
      "invalid_params",
    );
    assert.equal(err.details?.[0].field, "grant_type");
  }
  // No client authentication where the grant needs it: invalid_client, with the scheme to use.
  const missing = await expectOAuthError(
    postToken({ grant_type: "client_credentials" }),
    401,
    "invalid_client",
    "invalid_params",
  );
  assert.deepEqual(missing.details, [{
    field: "Authorization",
    issue: "required for grant_type=client_credentials",
  }]);
});

test("POST /api/v1/tokens answers malformed Basic credentials with 401 invalid_client / invalid_client_credentials", async () => {
  const p = await newProject();
  const headers = [
    "Basic !!!not-base64!!!",
    `Basic ${btoa("no-colon-here")}`,
    `Basic ${btoa(`${p.clientId}:`)}`,
    "Basic",
    `Bearer ${p.token}`,
    `Digest ${btoa(`${p.clientId}:${p.secret}`)}`,
    `Basic ${btoa(`${p.clientId}:%zz`)}`,
  ];
  for (const authorization of headers) {
    const err = await expectOAuthError(
      await postToken({ grant_type: "client_credentials" }, { authorization }),
      401,
      "invalid_client",
      "invalid_client_credentials",
    );
    assert.match(err.headers.get("www-authenticate") ?? "", /^Basic /, authorization);
  }
});

test("POST /api/v1/tokens: unknown client or wrong secret, 401 invalid_client", async () => {
  const p = await newProject();
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, {
      authorization: basic("no-such-client", p.secret),
    }),
    401,
    "invalid_client",
    "invalid_client",
  );
  const wrong = await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, {
      authorization: basic(p.clientId, p.secret + "x"),
    }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  assert.match(wrong.headers.get("www-authenticate") ?? "", /^Basic realm=/);
  // Another project's secret does not open this client.
  const other = await newProject();
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: basic(p.clientId, other.secret) }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
});

test("POST /api/v1/tokens refuses a client of an inactive project with project_not_active", async () => {
  const p = await newProject();
  const admin = await sdk(await systemToken());
  await admin.projects.updateProject(p.project.id, { name: p.project.name, is_active: false });
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: basic(p.clientId, p.secret) }),
    401,
    "invalid_client",
    "project_not_active",
  );
  await admin.projects.updateProject(p.project.id, { name: p.project.name, is_active: true });
  assert.ok(await clientToken(p.clientId, p.secret));
});

test("POST /api/v1/tokens refuses an inactive client with client_not_active, after checking its secret", async () => {
  const p = await newProject();
  const c = await p.api.clients.createClient(p.project.id, { name: "worker" });
  await p.api.clients.updateClient(p.project.id, c.id, { name: "worker", is_active: false });
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: basic(c.id, c.client_secret) }),
    401,
    "invalid_client",
    "client_not_active",
  );
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: basic(c.id, "wrong") }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
});

test("POST /api/v1/tokens: the user grants name their missing parameters", async () => {
  const p = await newProject();
  const code = await expectOAuthError(
    await postToken({ grant_type: "authorization_code", client_id: p.clientId }),
    400,
    "invalid_request",
    "invalid_params",
  );
  assert.deepEqual(code.details?.map((d) => d.field).sort(), [
    "authorization_code",
    "code_verifier",
    "redirect_uri",
  ]);
  const refresh = await expectOAuthError(
    await postToken({ grant_type: "refresh_token" }),
    400,
    "invalid_request",
    "invalid_params",
  );
  assert.deepEqual(refresh.details?.map((d) => d.field).sort(), ["client_id", "refresh_token"]);
});

test("POST /api/v1/tokens: requests sent together are each answered for their own client", async () => {
  // Lookups that reach the database in one turn share a statement (db/batch.ts): each answer must still be
  // its own request's, whatever else was asked with it, a live change just before included.
  const [a, b] = await Promise.all([newProject(), newProject()]);
  const worker = await a.api.clients.createClient(a.project.id, { name: "worker" });
  const stopped = await b.api.clients.createClient(b.project.id, { name: "stopped" });
  await b.api.clients.updateClient(b.project.id, stopped.id, { name: "stopped", is_active: false });
  const cases: { id: string; secret: string; expect: number | string; aud?: string }[] = [
    { id: a.clientId, secret: a.secret, expect: 200, aud: a.project.id },
    { id: b.clientId, secret: b.secret, expect: 200, aud: b.project.id },
    { id: worker.id, secret: worker.client_secret, expect: 200, aud: a.project.id },
    { id: a.clientId, secret: b.secret, expect: "invalid_client_credentials" },
    { id: `no-such-${crypto.randomUUID()}`, secret: a.secret, expect: "invalid_client" },
    // Ids that mean something in an array literal travel as parameters, never as syntax.
    { id: "NULL", secret: a.secret, expect: "invalid_client" },
    { id: `${a.clientId}","x\\{}`, secret: a.secret, expect: "invalid_client" },
    { id: stopped.id, secret: stopped.client_secret, expect: "client_not_active" },
  ];
  // The wrong secret five times only: at ten failures the client throttle (THROTTLE.client, per client and
  // address) refuses even a right secret of that client, and whether the batch's right ones are checked before
  // the tenth failure is counted is a race.
  const sent = Array.from(
    { length: 10 },
    (_, round) => cases.filter((c) => round < 5 || c.expect !== "invalid_client_credentials"),
  ).flat();
  const answers = await Promise.all(
    sent.map((c) =>
      postToken({ grant_type: "client_credentials" }, { authorization: basic(c.id, c.secret) })
    ),
  );
  for (const [i, res] of answers.entries()) {
    const c = sent[i];
    const body = await res.json();
    if (c.expect === 200) {
      assert.equal(res.status, 200, JSON.stringify(body));
      const claims = decodeJwt(body.access_token);
      assert.equal(claims.sub, c.id);
      assert.equal(claims.aud, c.aud);
    } else {
      assert.deepEqual([body.error, body.error_code], ["invalid_client", c.expect], JSON.stringify(body));
    }
  }
  // The very next requests after a deactivation are refused, together as alone.
  await a.api.clients.updateClient(a.project.id, worker.id, { name: "worker", is_active: false });
  const after = await Promise.all(
    Array.from(
      { length: 8 },
      () =>
        postToken({ grant_type: "client_credentials" }, {
          authorization: basic(worker.id, worker.client_secret),
        }),
    ),
  );
  for (const res of after) assert.equal((await res.json()).error_code, "client_not_active");
});
