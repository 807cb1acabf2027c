/** The whole user flow, driven by a standards-strict OAuth client library (oauth4webapi). */
import assert from "node:assert/strict";
import { oauth } from "./deps.ts";
import { baseUrl, loginProject, openLoginPage, REDIRECT_URI, sdk, submitLogin, test } from "./helpers.ts";

test("oauth4webapi: discovery, PKCE, login, code exchange, refresh, introspection, revocation", async () => {
  const p = await loginProject();
  const issuer = new URL(await baseUrl());
  const options = { [oauth.allowInsecureRequests]: true };
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options }),
  );
  assert.equal(as.authorization_response_iss_parameter_supported, true);
  assert.deepEqual(as.code_challenge_methods_supported, ["S256"]);

  // The application: a public client using PKCE.
  const client: oauth.Client = { client_id: p.clientId };
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const authUrl = new URL(as.authorization_endpoint!);
  authUrl.searchParams.set("client_id", client.client_id);
  authUrl.searchParams.set("redirect_uri", REDIRECT_URI);
  authUrl.searchParams.set("response_type", "code");
  authUrl.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(verifier));
  authUrl.searchParams.set("code_challenge_method", "S256");
  authUrl.searchParams.set("state", state);

  // The browser: the login page, then the form.
  const page = await openLoginPage(Object.fromEntries(authUrl.searchParams));
  assert.equal(page.status, 200);
  const login = await submitLogin(page, p.email, p.password);
  assert.equal(login.status, 303);
  const callback = new URL(login.headers.get("location")!);

  // Back in the application: state and iss are checked (RFC 9207), then the code is exchanged.
  const params = oauth.validateAuthResponse(as, client, callback, state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    REDIRECT_URI,
    verifier,
    options,
  );
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  assert.equal(tokens.token_type, "bearer");
  assert.ok(tokens.refresh_token);
  assert.equal(tokens.expires_in, 900);

  // A resource server validates the access token as an RFC 9068 JWT.
  const request = new Request(`${issuer.href.replace(/\/$/, "")}/api/v1/users/current`, {
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  const claims = await oauth.validateJwtAccessToken(as, request, p.project.id, options);
  assert.equal(claims.sub, p.userId);
  assert.equal(claims.client_id, p.clientId);
  assert.equal(typeof claims.sid, "string");
  const me = await (await fetch(request)).json();
  assert.equal(me.id, p.userId);
  assert.equal(me.email, p.email);
  assert.deepEqual(me.permissions, []);

  // Refresh rotates both tokens.
  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, options),
  );
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
  assert.notEqual(refreshed.access_token, tokens.access_token);

  // Introspection by a confidential client of the project (the admin client).
  const admin: oauth.Client = { client_id: p.clientId };
  const introspected = await oauth.processIntrospectionResponse(
    as,
    admin,
    await oauth.introspectionRequest(
      as,
      admin,
      oauth.ClientSecretBasic(p.secret),
      refreshed.access_token,
      options,
    ),
  );
  assert.equal(introspected.active, true);
  assert.equal(introspected.sub, p.userId);
  assert.deepEqual(introspected.permissions, []);

  // Revoking the refresh token ends the session: its access tokens stop working at once.
  const revoked = await oauth.revocationRequest(
    as,
    admin,
    oauth.ClientSecretBasic(p.secret),
    refreshed.refresh_token!,
    options,
  );
  await oauth.processRevocationResponse(revoked);
  const after = await oauth.processIntrospectionResponse(
    as,
    admin,
    await oauth.introspectionRequest(
      as,
      admin,
      oauth.ClientSecretBasic(p.secret),
      refreshed.access_token,
      options,
    ),
  );
  assert.equal(after.active, false);
  const denied = await fetch(`${issuer.href.replace(/\/$/, "")}/api/v1/users/current`, {
    headers: { authorization: `Bearer ${refreshed.access_token}` },
  });
  assert.equal(denied.status, 401);
  await denied.body?.cancel();
});

test("GET /.well-known/oauth-authorization-server publishes the RFC 8414 metadata", async () => {
  const url = await baseUrl();
  const res = await fetch(`${url}/.well-known/oauth-authorization-server`);
  assert.equal(res.status, 200);
  const m = await res.json();
  assert.equal(m.issuer, url);
  assert.equal(m.authorization_endpoint, `${url}/authorize`);
  assert.equal(m.token_endpoint, `${url}/api/v1/tokens`);
  assert.equal(m.jwks_uri, `${url}/.well-known/jwks.json`);
  assert.equal(m.revocation_endpoint, `${url}/api/v1/tokens/revoke`);
  assert.equal(m.introspection_endpoint, `${url}/api/v1/tokens/introspect`);
  assert.deepEqual(m.response_types_supported, ["code"]);
  assert.deepEqual(m.grant_types_supported.sort(), [
    "authorization_code",
    "client_credentials",
    "refresh_token",
    "urn:ietf:params:oauth:grant-type:device_code",
    "urn:ietf:params:oauth:grant-type:token-exchange",
  ]);
  assert.equal(m.device_authorization_endpoint, `${url}/api/v1/tokens/device_authorization`);
  assert.deepEqual(m.code_challenge_methods_supported, ["S256"]);
  assert.deepEqual(m.token_endpoint_auth_methods_supported, ["client_secret_basic", "none"]);
  assert.equal(m.authorization_response_iss_parameter_supported, true);
});

test("a user's token acts on the admin API with the permissions of the user's role, live", async () => {
  const p = await loginProject();
  const { permissionIds, userTokens } = await import("./helpers.ts");
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [ids["users:read"]],
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "L",
    is_active: true,
    email: p.email,
    role_id: role.id,
  });
  const t = await userTokens(p);
  const user = await sdk(t.access_token);
  assert.ok(
    (await user.users.listUsers(p.project.id, 1, 10, undefined, undefined, undefined, undefined, undefined))
      .pagination.total >= 1,
  );
  const { expectError } = await import("./helpers.ts");
  await expectError(
    user.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
    403,
    "insufficient_permission",
  );
  await p.api.roles.updateRole(p.project.id, role.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [ids["roles:read"]],
  });
  assert.equal(
    (await user.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined)).pagination
      .total,
    1,
  );
  await expectError(
    user.users.listUsers(p.project.id, 1, 10, undefined, undefined, undefined, undefined, undefined),
    403,
    "insufficient_permission",
  );
  assert.deepEqual((await user.users.getCurrentUser()).permissions, ["roles:read"]);
});
