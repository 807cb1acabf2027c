/**
 * The token, revocation and introspection endpoints' errors read against the RFCs: RFC 6749 §5.2 codes in
 * `error`, the service's code in `error_code`, the statuses and headers §5.2 asks for, and an unmodified OAuth
 * client library (oauth4webapi) acting on them. Also a confidential client that authenticates with HTTP Basic
 * only, without repeating its `client_id` in the form (RFC 6749 §2.3.1, §4.1.3).
 */
import assert from "node:assert/strict";
import { oauth } from "./deps.ts";
import {
  Api,
  authorizationCode,
  baseUrl,
  basic,
  expectOAuthError,
  http,
  loginProject,
  newProject,
  postToken,
  REDIRECT_URI,
  test,
  userTokens,
} from "./helpers.ts";

/** RFC 6749 §5.2 and RFC 6749 §4.1.2.1 (`server_error`, `temporarily_unavailable`). */
const RFC_CODES = [
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "server_error",
  "temporarily_unavailable",
];
/** RFC 6749 §5.2: `error` and `error_description` use %x20-21 / %x23-5B / %x5D-7E only. */
const NQSCHAR = /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/;

const form = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  http(path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(body).toString(),
  });

test("every error of the form endpoints is an RFC 6749 §5.2 error with the service's code beside it", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  const auth = { authorization: basic(p.clientId, p.secret) };
  const wrong = { authorization: basic(p.clientId, "wrong") };
  const spent = await userTokens(p);
  assert.equal(
    (await postToken({
      grant_type: "refresh_token",
      client_id: p.clientId,
      refresh_token: spent.refresh_token,
    })).status,
    200,
  );
  const stopped = await p.api.clients.createClient(p.project.id, { name: "stopped" });
  await p.api.clients.updateClient(p.project.id, stopped.id, { name: "stopped", is_active: false });
  const worker = await p.api.clients.createClient(p.project.id, { name: "worker" });
  const refreshOf = (extra: Record<string, string>, headers: Record<string, string> = {}) =>
    postToken({ grant_type: "refresh_token", refresh_token: t.refresh_token, ...extra }, headers);
  const cases: [string, Promise<Response>, number, string, string][] = [
    ["missing grant_type", postToken({}, auth), 400, "invalid_request", "invalid_params"],
    [
      "password grant",
      postToken({ grant_type: "password", username: "u", password: "p" }, auth),
      400,
      "unsupported_grant_type",
      "invalid_params",
    ],
    [
      "missing refresh_token",
      postToken({ grant_type: "refresh_token", client_id: p.clientId }),
      400,
      "invalid_request",
      "invalid_params",
    ],
    [
      "unknown client, Basic",
      postToken({ grant_type: "client_credentials" }, { authorization: basic("nobody", "x") }),
      401,
      "invalid_client",
      "invalid_client",
    ],
    ["unknown client, form", refreshOf({ client_id: "nobody" }), 400, "invalid_client", "invalid_client"],
    [
      "wrong secret",
      postToken({ grant_type: "client_credentials" }, wrong),
      401,
      "invalid_client",
      "invalid_client_credentials",
    ],
    [
      "malformed Basic",
      postToken({ grant_type: "client_credentials" }, { authorization: "Basic !" }),
      401,
      "invalid_client",
      "invalid_client_credentials",
    ],
    [
      "no client authentication",
      postToken({ grant_type: "client_credentials" }),
      401,
      "invalid_client",
      "invalid_params",
    ],
    [
      "client_secret_post",
      refreshOf({ client_id: p.clientId, client_secret: p.secret }),
      401,
      "invalid_client",
      "invalid_params",
    ],
    [
      "two authentication methods",
      refreshOf({ client_secret: p.secret }, auth),
      400,
      "invalid_request",
      "invalid_params",
    ],
    [
      "inactive client, Basic",
      postToken({ grant_type: "client_credentials" }, {
        authorization: basic(stopped.id, stopped.client_secret),
      }),
      401,
      "invalid_client",
      "client_not_active",
    ],
    [
      "inactive client, form",
      refreshOf({ client_id: stopped.id }),
      400,
      "invalid_client",
      "client_not_active",
    ],
    [
      "another client's refresh token",
      refreshOf({}, { authorization: basic(worker.id, worker.client_secret) }),
      400,
      "invalid_grant",
      "invalid_refresh_token",
    ],
    [
      "unknown refresh token",
      postToken({ grant_type: "refresh_token", client_id: p.clientId, refresh_token: "nope" }),
      400,
      "invalid_grant",
      "invalid_refresh_token",
    ],
    [
      "spent refresh token",
      postToken({ grant_type: "refresh_token", client_id: p.clientId, refresh_token: spent.refresh_token }),
      400,
      "invalid_grant",
      "refresh_token_already_used",
    ],
    [
      "unknown code",
      postToken({
        grant_type: "authorization_code",
        client_id: p.clientId,
        code: "nope",
        redirect_uri: REDIRECT_URI,
        code_verifier: "v".repeat(43),
      }),
      400,
      "invalid_grant",
      "invalid_authorization_code",
    ],
    [
      "revoke without token",
      form("/api/v1/tokens/revoke", {}, auth),
      400,
      "invalid_request",
      "invalid_params",
    ],
    [
      "revoke, wrong secret",
      form("/api/v1/tokens/revoke", { token: t.access_token }, wrong),
      401,
      "invalid_client",
      "invalid_client_credentials",
    ],
    [
      "revoke, unknown public client",
      form("/api/v1/tokens/revoke", { token: t.access_token, client_id: "nobody" }),
      400,
      "invalid_client",
      "invalid_client",
    ],
    [
      "introspect without Basic",
      form("/api/v1/tokens/introspect", { token: t.access_token }),
      401,
      "invalid_client",
      "invalid_client_credentials",
    ],
    [
      "introspect, wrong secret",
      form("/api/v1/tokens/introspect", { token: t.access_token }, wrong),
      401,
      "invalid_client",
      "invalid_client_credentials",
    ],
    [
      "introspect, inactive client",
      form("/api/v1/tokens/introspect", { token: t.access_token }, {
        authorization: basic(stopped.id, stopped.client_secret),
      }),
      401,
      "invalid_client",
      "client_not_active",
    ],
    [
      "introspect without token",
      form("/api/v1/tokens/introspect", {}, auth),
      400,
      "invalid_request",
      "invalid_params",
    ],
  ];
  for (const [name, call, status, error, errorCode] of cases) {
    const res = await call;
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/, name);
    assert.equal(res.headers.get("pragma"), "no-cache", name);
    const body = await expectOAuthError(res, status, error, errorCode);
    assert.ok(RFC_CODES.includes(body.error), name);
    assert.match(body.error, NQSCHAR, name);
    assert.match(body.error_description, NQSCHAR, `${name}: ${body.error_description}`);
    const keys = Object.keys(body).filter((k) => k !== "headers").sort();
    assert.deepEqual(
      keys,
      ["error", "error_code", "error_description", ...(body.details ? ["details"] : [])].sort(),
      name,
    );
  }
});

test("throttled client authentication is 429 temporarily_unavailable with Retry-After, never invalid_client", async () => {
  const p = await newProject();
  const victim = await p.api.clients.createClient(p.project.id, { name: "victim" });
  let answer: Response | undefined;
  for (let i = 0; i < 20; i++) {
    answer = await postToken({ grant_type: "client_credentials" }, {
      authorization: basic(victim.id, `no-${i}`),
    });
    if (answer.status === 429) break;
    await answer.body?.cancel();
  }
  const err = await expectOAuthError(answer!, 429, "temporarily_unavailable", "too_many_requests");
  assert.ok(Number(err.headers.get("retry-after")) >= 1);
});

test("the admin API keeps the specification's codes, without error_code", async () => {
  const res = await http("/api/v1/projects/nope", { headers: { authorization: "Bearer x" } });
  const body = await res.json();
  assert.deepEqual([res.status, body.error, "error_code" in body], [
    401,
    "invalid_authorization_token",
    false,
  ]);
});

test("the OpenAPI document gives the three form endpoints the OAuthError schema, with each pair by status", async () => {
  const doc = await (await http("/openapi.json")).json();
  const schema = doc.components.schemas.OAuthError;
  assert.deepEqual(schema.required.sort(), ["error", "error_code", "error_description"]);
  assert.equal(schema.properties.error.$ref, "#/components/schemas/OAuthErrorCode");
  assert.deepEqual(doc.components.schemas.OAuthErrorCode.enum, [
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unsupported_grant_type",
    "invalid_target",
    "unauthorized_client",
    "authorization_pending",
    "slow_down",
    "expired_token",
    "access_denied",
    "invalid_scope",
    "server_error",
    "temporarily_unavailable",
  ]);
  for (const path of ["/api/v1/tokens", "/api/v1/tokens/revoke", "/api/v1/tokens/introspect"]) {
    const responses = doc.paths[path].post.responses;
    for (const status of ["400", "401", "413", "429", "500", "503"]) {
      assert.equal(
        responses[status]?.content["application/json"].schema.$ref,
        "#/components/schemas/OAuthError",
        `${path} ${status}`,
      );
    }
  }
  const token = doc.paths["/api/v1/tokens"].post.responses;
  assert.match(token["400"].description, /`invalid_grant` \(`refresh_token_already_used`\)/);
  assert.match(token["400"].description, /`unsupported_grant_type` \(`invalid_params`\)/);
  assert.match(token["401"].description, /`invalid_client` \(`invalid_client_credentials`\)/);
  assert.match(token["429"].description, /`temporarily_unavailable` \(`too_many_requests`\)/);
  // The admin API keeps the error shape of the specification.
  assert.equal(
    doc.paths["/api/v1/projects"].post.responses["400"].content["application/json"].schema.$ref,
    "#/components/schemas/Error",
  );
});

test("oauth4webapi acts on the errors: invalid_grant for a spent refresh token, unsupported_grant_type", async () => {
  const p = await loginProject();
  const issuer = new URL(await baseUrl());
  const options = { [oauth.allowInsecureRequests]: true };
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options }),
  );
  const client: oauth.Client = { client_id: p.clientId };
  const t = await userTokens(p);
  const first = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), t.refresh_token, options);
  assert.ok((await oauth.processRefreshTokenResponse(as, client, first)).access_token);
  const again = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), t.refresh_token, options);
  const err = await oauth.processRefreshTokenResponse(as, client, again).then(
    () => assert.fail("a spent refresh token was accepted"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof oauth.ResponseBodyError, String(err));
  assert.equal(err.error, "invalid_grant");
  assert.equal(err.status, 400);
  assert.equal(err.cause.error_code, "refresh_token_already_used");
  const password = await oauth.genericTokenEndpointRequest(
    as,
    client,
    oauth.None(),
    "password",
    new URLSearchParams({ username: p.email, password: p.password }),
    options,
  );
  const refused = await oauth.processGenericTokenEndpointResponse(as, client, password).then(
    () => assert.fail("the password grant was accepted"),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof oauth.ResponseBodyError, String(refused));
  assert.equal(refused.error, "unsupported_grant_type");
});

test("a confidential client exchanges a code and a refresh token with HTTP Basic only, no client_id in the form", async () => {
  const p = await loginProject();
  const confidential = await p.api.clients.createClient(p.project.id, {
    name: "web backend",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });
  const auth = { authorization: basic(confidential.id, confidential.client_secret) };
  const { code, verifier } = await authorizationCode({
    clientId: confidential.id,
    email: p.email,
    password: p.password,
  });
  const exchanged = await postToken(
    { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
    auth,
  );
  const tokens = await exchanged.json();
  assert.equal(exchanged.status, 200, JSON.stringify(tokens));
  const refreshed = await postToken(
    { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
    auth,
  );
  const next = await refreshed.json();
  assert.equal(refreshed.status, 200, JSON.stringify(next));
  assert.ok(next.refresh_token);
  // Both sent: they must name the same client.
  const other = await postToken(
    { grant_type: "refresh_token", refresh_token: next.refresh_token, client_id: p.clientId },
    auth,
  );
  const body = await expectOAuthError(other, 400, "invalid_request", "invalid_params");
  assert.equal(body.details?.[0].field, "client_id");
  // Without Basic, a form without client_id names what is missing.
  const bare = await expectOAuthError(
    postToken({ grant_type: "refresh_token", refresh_token: next.refresh_token }),
    400,
    "invalid_request",
    "invalid_params",
  );
  assert.deepEqual(bare.details?.map((d) => d.field), ["client_id"]);
  // And the same with an unmodified library: oauth4webapi's client_secret_basic sends no client_id in the form.
  const issuer = new URL(await baseUrl());
  const options = { [oauth.allowInsecureRequests]: true };
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options }),
  );
  const client: oauth.Client = { client_id: confidential.id };
  const state = oauth.generateRandomState();
  const login = await authorizationCode(
    { clientId: confidential.id, email: p.email, password: p.password },
    { state },
  );
  const params = oauth.validateAuthResponse(as, client, login.location, state);
  const clientAuth = oauth.ClientSecretBasic(confidential.client_secret);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    clientAuth,
    params,
    REDIRECT_URI,
    login.verifier,
    options,
  );
  const libTokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  const libRefresh = await oauth.refreshTokenGrantRequest(
    as,
    client,
    clientAuth,
    libTokens.refresh_token!,
    options,
  );
  assert.ok((await oauth.processRefreshTokenResponse(as, client, libRefresh)).access_token);
});
