/**
 * APIs as resources with an indicator, and tokens asked for one (RFC 8707): the indicator's rules and
 * uniqueness, `resource` at the token endpoint (client credentials, the code and refresh grants) and at
 * /authorize, the tokens' `aud` and `scope`, introspection, and the refusals (`invalid_target`). Driven by
 * oauth4webapi, unmodified, where a client library has a say.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { oauth } from "./deps.ts";
import { createProtectedResource } from "../sdk/src/mod.ts";
import { protectedResource, type ProtectedResourceVariables } from "../sdk/src/hono.ts";
import { authorizeOidc, Browser, redeem, signIn as signInOidc } from "./oidc_support.ts";
import {
  baseUrl,
  challengeOf,
  clientWith,
  expectError,
  http,
  newProject,
  newVerifier,
  openLoginPage,
  postToken,
  REDIRECT_URI,
  submitLogin,
  test,
  type TestProject,
} from "./helpers.ts";

const options = { [oauth.allowInsecureRequests]: true };

async function server(): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(await baseUrl());
  return await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options }),
  );
}

/** A project with an API (`read`, `write`, `admin`) whose indicator is unique to this test. */
async function apiProject(body: Record<string, unknown> = {}) {
  const p = await newProject({ redirect_uris: [REDIRECT_URI], ...body });
  const indicator = `https://api-${crypto.randomUUID().slice(0, 8)}.example.com/mcp`;
  const resource = await p.api.resources.createResource(p.project.id, {
    name: "Notes API",
    code: "notes",
    indicator,
    permissions: [
      { name: "Read", code: "read" },
      { name: "Write", code: "write" },
      { name: "Admin", code: "admin" },
    ],
  });
  const ids = Object.fromEntries(resource.permissions.map((x) => [x.code, x.id]));
  return { p, indicator, resource, ids };
}

/** A client-credentials token asked through oauth4webapi with these extra parameters; the parsed answer. */
async function clientToken(
  p: { clientId: string; secret: string },
  params: Record<string, string | string[]>,
) {
  const as = await server();
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const one of [v].flat()) form.append(k, one);
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    { client_id: p.clientId },
    oauth.ClientSecretBasic(p.secret),
    form,
    options,
  );
  return { as, response };
}

const claimsOf = (jwt: string) => JSON.parse(atob(jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));

test("a resource's indicator: an absolute https URI (http on loopback), no fragment, unique across the service", async () => {
  const { p, indicator, resource } = await apiProject();
  assert.equal(resource.indicator, indicator);
  assert.equal((await p.api.resources.getResource(p.project.id, resource.id)).indicator, indicator);
  const bad = [
    "notes",
    "/mcp",
    "ftp://api.example.com/",
    "http://api.example.com/mcp",
    "https://api.example.com/mcp#frag",
    "https://user:pw@api.example.com/mcp",
  ];
  for (const value of bad) {
    const err = await expectError(
      p.api.resources.createResource(p.project.id, {
        name: "X",
        code: `x${bad.indexOf(value)}`,
        indicator: value,
      }),
      400,
      "invalid_params",
    );
    assert.equal(err.details?.[0].field, "indicator", value);
  }
  for (const value of ["http://localhost:3000/mcp", "http://127.0.0.1:8080/", "http://[::1]/api"]) {
    const unique = `${value}${value.endsWith("/") ? "" : "/"}${crypto.randomUUID().slice(0, 8)}`;
    const made = await p.api.resources.createResource(p.project.id, {
      name: "Local",
      code: `local${crypto.randomUUID().slice(0, 6)}`,
      indicator: unique,
    });
    assert.equal(made.indicator, unique);
  }
  // Unique across the whole service: another project cannot take it.
  const other = await newProject();
  await expectError(
    other.api.resources.createResource(other.project.id, { name: "Copy", code: "copy", indicator }),
    409,
    "resource_indicator_already_used",
  );
  // Omitted keeps it, null clears it.
  const kept = await p.api.resources.updateResource(p.project.id, resource.id, {
    name: "Notes",
    code: "notes",
  });
  assert.equal(kept.indicator, indicator);
  const cleared = await p.api.resources.updateResource(p.project.id, resource.id, {
    name: "Notes",
    code: "notes",
    indicator: null,
  });
  assert.equal(cleared.indicator, null);
});

test("changing an indicator needs a caller covering the resource's permissions", async () => {
  const { p, indicator, resource } = await apiProject();
  const limited = await clientWith(p, ["resources:read", "resources:update"]);
  const err = await expectError(
    limited.api.resources.updateResource(p.project.id, resource.id, {
      name: "Notes",
      code: "notes",
      indicator: `${indicator}/v2`,
    }),
    403,
    "insufficient_permission",
  );
  assert.match(err.error_description, /indicator/);
  // A rename alone is theirs to make.
  const renamed = await limited.api.resources.updateResource(p.project.id, resource.id, {
    name: "Renamed",
    code: "notes",
  });
  assert.equal(renamed.indicator, indicator);
});

test("client credentials with resource: aud is the indicator, scope what was asked and is held; introspection is live", async () => {
  const { p, indicator, ids, resource } = await apiProject();
  const caller = await p.api.clients.createClient(p.project.id, {
    name: "agent",
    permission_ids: [ids.read, ids.write],
  });
  const c = { clientId: caller.id, secret: caller.client_secret };
  // Asked for read and admin: only read is held of those.
  const { as, response } = await clientToken(c, { resource: indicator, scope: "read admin openid" });
  const tokens = await oauth.processClientCredentialsResponse(as, { client_id: c.clientId }, response);
  assert.equal(tokens.scope, "read");
  const claims = claimsOf(tokens.access_token);
  assert.equal(claims.aud, indicator);
  assert.equal(claims.scope, "read");
  // A resource server checks it as an RFC 9068 token for its own indicator.
  const request = new Request(indicator, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  const validated = await oauth.validateJwtAccessToken(as, request, indicator, options);
  assert.equal(validated.sub, c.clientId);
  // No scope of the API named: everything held of it.
  const all = await oauth.processClientCredentialsResponse(
    as,
    { client_id: c.clientId },
    (await clientToken(c, { resource: indicator })).response,
  );
  assert.equal(all.scope, "read write");

  // It is not a token for the admin API.
  const admin = await http(`/api/v1/projects/${p.project.id}`, {
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  assert.equal(admin.status, 401);
  await admin.body?.cancel();

  // Introspection by a client of the project: active, the API's aud, the scope still held.
  const introspect = async () =>
    await (await http("/api/v1/tokens/introspect", {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa(`${p.clientId}:${p.secret}`)}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ token: all.access_token }).toString(),
    })).json();
  const seen = await introspect();
  assert.equal(seen.active, true);
  assert.equal(seen.aud, indicator);
  assert.equal(seen.scope, "read write");
  // The client loses write: the next introspection says so.
  await p.api.clients.updateClient(p.project.id, c.clientId, {
    name: "agent",
    is_active: true,
    permission_ids: [ids.read],
  });
  assert.equal((await introspect()).scope, "read");
  // The API loses its indicator: its tokens are no longer active.
  await p.api.resources.updateResource(p.project.id, resource.id, {
    name: "Notes API",
    code: "notes",
    indicator: null,
  });
  assert.equal((await introspect()).active, false);
});

test("invalid_target: unknown, another project's, not absolute, a fragment, or repeated", async () => {
  const { p, indicator } = await apiProject();
  const other = await apiProject();
  const cases: [string | string[], RegExp][] = [
    ["https://nobody.example.com/api", /no API of this project/],
    [other.indicator, /no API of this project/],
    ["notes", /absolute URI/],
    [`${indicator}#x`, /fragment/],
    [[indicator, other.indicator], /one resource per request/],
  ];
  for (const [resource, why] of cases) {
    const { as, response } = await clientToken(p, { resource });
    const err = await oauth.processClientCredentialsResponse(as, { client_id: p.clientId }, response).then(
      () => assert.fail(`accepted ${resource}`),
      (e: unknown) => e as oauth.ResponseBodyError,
    );
    assert.ok(err instanceof oauth.ResponseBodyError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.error, "invalid_target");
    assert.match(err.error_description ?? "", why);
  }
});

/** A user of `p` whose role holds these permission ids, and a login through /authorize with `query` added. */
async function signIn(p: TestProject, permissionIds: string[], query: Record<string, string>) {
  const role = await p.api.roles.createRole(p.project.id, {
    code: `r${crypto.randomUUID().slice(0, 6)}`,
    name: "Notes user",
    permission_ids: permissionIds,
  });
  const email = `u-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery";
  await p.api.users.createUser(p.project.id, { display_name: "U", email, password, role_id: role.id });
  const verifier = newVerifier();
  const page = await openLoginPage({
    client_id: p.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    state: "s1",
    ...query,
  });
  return { page, email, password, verifier, role };
}

test("the code and refresh grants: the authorization's resource gives aud and scope, never another API", async () => {
  const { p, indicator, ids } = await apiProject();
  const as = await server();
  const client: oauth.Client = { client_id: p.clientId };
  const { page, email, password, verifier } = await signIn(p, [ids.read, ids.write], {
    resource: indicator,
    scope: "write admin",
  });
  assert.equal(page.status, 200, page.html);
  const login = await submitLogin(page, email, password);
  assert.equal(login.status, 303);
  const params = oauth.validateAuthResponse(as, client, new URL(login.headers.get("location")!), "s1");
  const exchange = async (extra: Record<string, string>) =>
    await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT_URI, verifier, {
      ...options,
      additionalParameters: extra,
    });
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await exchange({ resource: indicator }),
  );
  assert.equal(tokens.scope, "write");
  assert.equal(claimsOf(tokens.access_token).aud, indicator);
  assert.equal(claimsOf(tokens.access_token).scope, "write");

  // Refresh: the same API (omitted: that one); another one is refused.
  const refresh = async (token: string, extra: Record<string, string>) =>
    await oauth.refreshTokenGrantRequest(as, client, oauth.None(), token, {
      ...options,
      additionalParameters: extra,
    });
  const other = await apiProject();
  const refused = await oauth.processRefreshTokenResponse(
    as,
    client,
    await refresh(tokens.refresh_token!, { resource: other.indicator }),
  ).then(() => assert.fail("another API"), (e: unknown) => e as oauth.ResponseBodyError);
  assert.equal(refused.error, "invalid_target");
  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    client,
    await refresh(tokens.refresh_token!, {}),
  );
  assert.equal(claimsOf(refreshed.access_token).aud, indicator);
  assert.equal(claimsOf(refreshed.access_token).scope, "write");
});

test("a sign-in without resource gives project tokens: asking for an API at the token endpoint is invalid_target", async () => {
  const { p, indicator, ids } = await apiProject();
  const { page, email, password, verifier } = await signIn(p, [ids.read], {});
  const login = await submitLogin(page, email, password);
  const code = new URL(login.headers.get("location")!).searchParams.get("code")!;
  const res = await postToken({
    grant_type: "authorization_code",
    client_id: p.clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    resource: indicator,
  });
  const body = await res.json();
  assert.equal(res.status, 400);
  assert.equal(body.error, "invalid_target");
});

test("/authorize with an unknown or foreign resource sends invalid_target back to the client", async () => {
  const { p, indicator } = await apiProject();
  const other = await apiProject();
  for (const resource of ["https://nobody.example.com/", other.indicator, `${indicator}#f`]) {
    const { page } = await signIn(p, [], { resource });
    assert.equal(page.status, 302, page.html);
    const location = new URL(page.headers.get("location")!);
    assert.equal(location.searchParams.get("error"), "invalid_target");
    assert.equal(location.searchParams.get("state"), "s1");
  }
  // Repeated: one API per authorization.
  const verifier = newVerifier();
  const query = new URLSearchParams({
    client_id: p.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
  });
  query.append("resource", indicator);
  query.append("resource", other.indicator);
  const res = await http(`/authorize?${query}`, { redirect: "manual" });
  await res.body?.cancel();
  assert.equal(new URL(res.headers.get("location")!).searchParams.get("error"), "invalid_target");
});

test("an API protected by the SDK's helper (RFC 9728) accepts the service's token for it, and nothing else", async () => {
  const { p, ids } = await apiProject();
  // The API listens on loopback; its indicator is its own URL.
  const app = new Hono<{ Variables: ProtectedResourceVariables }>();
  let api: ReturnType<typeof createProtectedResource> | undefined;
  app.use("*", (c, next) => protectedResource(api!)(c, next));
  app.get("/mcp", (c) => c.json({ sub: c.get("accessToken").sub }));
  app.post("/mcp", async (c, next) => {
    const write = await api!.authenticate(c.req.raw, { scopes: ["write"] });
    if (!write.ok) return write.response;
    await next();
    return c.json({ wrote: true });
  });
  const listener = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  try {
    const indicator = `http://127.0.0.1:${listener.addr.port}/mcp`;
    const resource = await p.api.resources.createResource(p.project.id, {
      name: "MCP",
      code: "mcp",
      indicator,
      permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
    });
    api = createProtectedResource({
      issuer: await baseUrl(),
      resource: indicator,
      scopesSupported: resource.permissions.map((x) => x.code),
    });
    // Discovery from the 401: the metadata it names, which names this service.
    const anonymous = await fetch(indicator);
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
    const challenge = anonymous.headers.get("www-authenticate")!;
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1];
    const metadata = await (await fetch(metadataUrl)).json();
    assert.equal(metadata.resource, indicator);
    assert.deepEqual(metadata.authorization_servers, [await baseUrl()]);

    const readers = await p.api.clients.createClient(p.project.id, {
      name: "reader",
      permission_ids: [ids.read, resource.permissions.find((x) => x.code === "read")!.id],
    });
    const reader = { clientId: readers.id, secret: readers.client_secret };
    const tokenFor = async (params: Record<string, string>) => {
      const { as, response } = await clientToken(reader, params);
      return (await oauth.processClientCredentialsResponse(as, { client_id: reader.clientId }, response))
        .access_token;
    };
    const call = async (token: string, method = "GET") => {
      const res = await fetch(indicator, { method, headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, challenge: res.headers.get("www-authenticate"), body: await res.text() };
    };
    // The project's token, or one for the project's other API, is not for this one.
    const notes = (await p.api.resources.listResources(
      p.project.id,
      undefined,
      undefined,
      undefined,
      undefined,
      "Notes",
      undefined,
    )).data.find((r) => r.code === "notes")!;
    for (const token of [await tokenFor({}), await tokenFor({ resource: notes.indicator! })]) {
      const refused = await call(token);
      assert.equal(refused.status, 401);
      assert.match(refused.challenge ?? "", /error="invalid_token"/);
    }
    const token = await tokenFor({ resource: indicator });
    const ok = await call(token);
    assert.equal(ok.status, 200, ok.body);
    assert.equal(JSON.parse(ok.body).sub, reader.clientId);
    // It holds read, not write: the write answers 403 insufficient_scope naming what it needs.
    const denied = await call(token, "POST");
    assert.equal(denied.status, 403);
    assert.match(denied.challenge ?? "", /error="insufficient_scope"/);
    assert.match(denied.challenge ?? "", /scope="write"/);
  } finally {
    await listener.shutdown();
  }
});

test("single sign-on: a silent OpenID authorization with resource gives tokens for that API, the ID token as ever", async () => {
  const { p, indicator, ids } = await apiProject();
  const role = await p.api.roles.createRole(p.project.id, {
    code: "notes_reader",
    name: "Notes reader",
    permission_ids: [ids.read],
  });
  const email = `sso-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const user = await p.api.users.createUser(p.project.id, {
    display_name: "S",
    email,
    password: "correct horse battery",
    role_id: role.id,
  });
  const browser = new Browser();
  // The first sign-in, through the form, opens the browser's session (no resource: tokens of the project).
  const first = await signInOidc(browser, { clientId: p.clientId, email, password: "correct horse battery" });
  assert.equal(claimsOf(first.access_token).aud, p.project.id);
  // The next authorization is answered at once, with the API's resource.
  const { res, verifier } = await authorizeOidc(browser, p.clientId, {
    resource: indicator,
    scope: "openid read",
  });
  assert.equal(res.status, 302, res.headers.get("location") ?? "");
  const tokens = await redeem(p.clientId, new URL(res.headers.get("location")!), verifier);
  const access = claimsOf(tokens.access_token);
  assert.equal(access.aud, indicator);
  assert.equal(access.scope, "read");
  assert.equal(access.sub, user.id);
  assert.equal(tokens.scope, "read", "the access token's scope");
  assert.equal(claimsOf(tokens.id_token).aud, p.clientId, "the ID token is the client's, as ever");
});
