/**
 * The SDK's protected resource (sdk/src/resource_server.ts, RFC 9728) and its Hono middleware (sdk/src/hono.ts):
 * the metadata, and the answers to missing, broken, invalid and under-scoped tokens, with tokens minted here and
 * keys served here, where the service publishes its own. No database.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { test } from "./helpers.ts";
import {
  type AccessTokenClaims,
  createAccessClient,
  createProtectedResource,
  type ProtectedResource,
} from "../sdk/src/mod.ts";
import { protectedResource, type ProtectedResourceVariables } from "../sdk/src/hono.ts";

const RESOURCE = "https://mcp.example.com/mcp";
const METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const TAIL = `resource_metadata="${METADATA_URL}"`;

const signing = await generateKeyPair("ES256", { extractable: true });
const stranger = await generateKeyPair("ES256");
const jwk = { ...(await exportJWK(signing.publicKey)), kid: "k1", alg: "ES256", use: "sig" };

// The issuer serves its keys where the service does, so the default jwksUri is the one under test.
let jwksRequests = 0;
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
  if (new URL(req.url).pathname !== "/.well-known/jwks.json") return new Response(null, { status: 404 });
  jwksRequests++;
  return Response.json({ keys: [jwk] });
});
server.unref();
const ISSUER = `http://127.0.0.1:${server.addr.port}`;

const api = createProtectedResource({
  issuer: ISSUER,
  resource: RESOURCE,
  scopesSupported: ["tools:call", "tools:list"],
  resourceName: "Example MCP",
});

type Mint = { header?: Record<string, unknown>; claims?: JWTPayload; key?: CryptoKey; drop?: string[] };

/** A token as the service issues it for this resource, changed as the test asks. */
async function mint({ header = {}, claims = {}, key = signing.privateKey, drop = [] }: Mint = {}) {
  const now = Math.floor(Date.now() / 1000);
  const payload: JWTPayload = {
    iss: ISSUER,
    aud: RESOURCE,
    sub: "user-1",
    client_id: "app-1",
    scope: "tools:call tools:list",
    jti: crypto.randomUUID(),
    iat: now,
    exp: now + 300,
    sid: "s-1",
    ...claims,
  };
  for (const name of drop) delete payload[name];
  return await new SignJWT(payload).setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: "k1", ...header })
    .sign(key);
}

function bearer(token: string, scheme = "Bearer"): Request {
  return new Request(RESOURCE, { method: "POST", headers: { authorization: `${scheme} ${token}` } });
}

/** The refusal `authenticate` answered: status, challenge and body. */
async function refusal(resource: ProtectedResource, request: Request, scopes?: string[]) {
  const outcome = await resource.authenticate(request, { scopes });
  assert.ok(!outcome.ok, "the request was accepted");
  const { response } = outcome;
  assert.equal(response.headers.get("content-type"), "application/json");
  return {
    status: response.status,
    challenge: response.headers.get("www-authenticate"),
    body: await response.json(),
  };
}

test("the metadata is served at the path-suffixed and the plain well-known address, with RFC 9728 fields", async () => {
  assert.equal(api.metadataPath, "/.well-known/oauth-protected-resource/mcp");
  assert.equal(api.metadataUrl, METADATA_URL);
  const expected = {
    resource: RESOURCE,
    authorization_servers: [ISSUER],
    scopes_supported: ["tools:call", "tools:list"],
    bearer_methods_supported: ["header"],
    resource_name: "Example MCP",
  };
  assert.deepEqual(api.metadata(), expected);
  for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
    const response = api.handleMetadata(new Request(`https://mcp.example.com${path}`));
    assert.ok(response, path);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal(response.headers.get("access-control-allow-origin"), "*");
    assert.deepEqual(await response.json(), expected);
  }
  assert.equal(api.handleMetadata(new Request(RESOURCE)), null);
  assert.equal(api.handleMetadata(new Request(`${METADATA_URL}/x`)), null);
  const post = api.handleMetadata(new Request(METADATA_URL, { method: "POST" }));
  assert.equal(post?.status, 405);
  assert.equal(post?.headers.get("allow"), "GET, HEAD");
});

test("a resource at its origin's root has the plain well-known path; a query or fragment is refused", () => {
  const root = createProtectedResource({ issuer: ISSUER, resource: "https://api.example.com" });
  assert.equal(root.metadataPath, "/.well-known/oauth-protected-resource");
  assert.equal(root.metadataUrl, "https://api.example.com/.well-known/oauth-protected-resource");
  assert.deepEqual(root.metadata(), {
    resource: "https://api.example.com",
    authorization_servers: [ISSUER],
    bearer_methods_supported: ["header"],
  });
  for (const resource of ["https://api.example.com/?x=1", "https://api.example.com/#x"]) {
    assert.throws(() => createProtectedResource({ issuer: ISSUER, resource }), TypeError, resource);
  }
  assert.throws(() => createProtectedResource({ issuer: "auth.example.com", resource: RESOURCE }), TypeError);
});

test("a request without a bearer token is 401 with resource_metadata and no error code in the challenge", async () => {
  const body = { error: "invalid_token", error_description: "a bearer token is required" };
  assert.deepEqual(await refusal(api, new Request(RESOURCE)), {
    status: 401,
    challenge: `Bearer ${TAIL}`,
    body,
  });
  // Another scheme is a request that did not try bearer authentication (RFC 6750 §3.1).
  assert.deepEqual(await refusal(api, bearer("YTpi", "Basic"), ["tools:call"]), {
    status: 401,
    challenge: `Bearer scope="tools:call", ${TAIL}`,
    body,
  });
});

test("a broken Authorization header is 400 invalid_request", async () => {
  const description = "the Authorization header is not one bearer token";
  for (const header of ["Bearer", "Bearer a b", "Bearer a,b", "Bearer  "]) {
    const request = new Request(RESOURCE, { headers: { authorization: header } });
    assert.deepEqual(await refusal(api, request), {
      status: 400,
      challenge: `Bearer error="invalid_request", error_description="${description}", ${TAIL}`,
      body: { error: "invalid_request", error_description: description },
    }, header);
  }
});

test("an invalid token is 401 invalid_token, saying what is wrong with it", async () => {
  const now = Math.floor(Date.now() / 1000);
  const b64 = (value: unknown) => btoa(JSON.stringify(value)).replaceAll("=", "");
  const hs256 = new SignJWT({ iss: ISSUER, aud: RESOURCE, sub: "u", client_id: "c", jti: "j", iat: now })
    .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: "k1" }).setExpirationTime("5m")
    .sign(new TextEncoder().encode("a-shared-secret-that-is-32-bytes!"));
  const cases: [string, Promise<string> | string, string][] = [
    ["another key's signature", mint({ key: stranger.privateKey }), "the token's signature is not valid"],
    ["an unknown kid", mint({ header: { kid: "k2" } }), "the token is not signed by a key of the issuer"],
    [
      "another issuer",
      mint({ claims: { iss: "https://evil.example.com" } }),
      "the token's iss is not accepted",
    ],
    [
      "another audience",
      mint({ claims: { aud: "https://a.example.com/" } }),
      "the token's aud is not accepted",
    ],
    ["expired", mint({ claims: { iat: now - 7200, exp: now - 3600 } }), "the token has expired"],
    [
      "typ JWT (an ID token, a project token)",
      mint({ header: { typ: "JWT" } }),
      "the token's typ is not accepted",
    ],
    ["no typ", mint({ header: { typ: undefined } }), "the token's typ is not accepted"],
    ["no client_id", mint({ drop: ["client_id"] }), "the token has no client_id"],
    ["no jti", mint({ drop: ["jti"] }), "the token has no jti"],
    ["a scope array", mint({ claims: { scope: ["tools:call"] } }), "the token's scope must be a string"],
    ["not a JWT", "abc", "the token is not a signed JWT"],
    ["three parts of nothing", "a.b.c", "the token is not a signed JWT"],
    [
      "alg none",
      `${b64({ alg: "none", typ: "at+jwt" })}.${b64({ sub: "x" })}.`,
      "the token's algorithm is not accepted",
    ],
    ["HS256, keyed by a guessable secret", hs256, "the token's algorithm is not accepted"],
  ];
  for (const [what, token, description] of cases) {
    assert.deepEqual(await refusal(api, bearer(await token)), {
      status: 401,
      challenge: `Bearer error="invalid_token", error_description="${description}", ${TAIL}`,
      body: { error: "invalid_token", error_description: description },
    }, what);
  }
});

test("a valid token lacking a scope is 403 insufficient_scope naming the scopes needed", async () => {
  const token = await mint({ claims: { scope: "tools:list" } });
  const description = "the token lacks tools:call";
  assert.deepEqual(await refusal(api, bearer(token), ["tools:list", "tools:call"]), {
    status: 403,
    challenge:
      `Bearer error="insufficient_scope", error_description="${description}", scope="tools:list tools:call", ${TAIL}`,
    body: { error: "insufficient_scope", error_description: description },
  });
  const none = await mint({ drop: ["scope"] });
  assert.equal((await refusal(api, bearer(none), ["tools:list"])).status, 403);
});

test("a valid token gives its claims; typ application/at+jwt and a lower-case scheme are accepted", async () => {
  const outcome = await api.authenticate(bearer(await mint()), { scopes: ["tools:call"] });
  assert.ok(outcome.ok);
  const claims: AccessTokenClaims = outcome.claims;
  assert.deepEqual(
    [claims.iss, claims.aud, claims.sub, claims.client_id, claims.scope, claims.sid],
    [ISSUER, RESOURCE, "user-1", "app-1", "tools:call tools:list", "s-1"],
  );
  const loads = jwksRequests;
  assert.ok(
    (await api.authenticate(bearer(await mint({ header: { typ: "application/at+jwt" } }), "bearer"))).ok,
  );
  assert.equal(jwksRequests, loads, "the keys are cached");
});

test("keys that cannot be loaded reject authenticate instead of blaming the token", async () => {
  const down = createProtectedResource({
    issuer: ISSUER,
    resource: RESOURCE,
    fetch: () => Promise.reject(new TypeError("connection refused")),
  });
  await assert.rejects(down.authenticate(bearer(await mint())), /connection refused/);
});

test("decide asks the AuthZEN API about the token's user, or its client for a client-credentials token", async () => {
  const sent: unknown[] = [];
  const access = createAccessClient({
    baseUrl: ISSUER,
    token: "the-api-s-own-token",
    fetch: (url, init) => {
      const authorization = new Headers(init.headers).get("authorization");
      sent.push({ url, authorization, body: JSON.parse(String(init.body)) });
      return Promise.resolve(Response.json({ decision: true }));
    },
  });
  const withAccess = createProtectedResource({ issuer: ISSUER, resource: RESOURCE, access });
  const user = await withAccess.authenticate(bearer(await mint()));
  assert.ok(user.ok);
  const tool = { action: { name: "call" }, resource: { type: "tools", id: "search" } };
  assert.equal((await withAccess.decide(user.claims, tool)).decision, true);
  const machine = await withAccess.authenticate(
    bearer(await mint({ claims: { sub: "app-1" }, drop: ["sid"] })),
  );
  assert.ok(machine.ok);
  await withAccess.decide(machine.claims, tool);
  const asked = (subject: unknown) => ({
    url: `${ISSUER}/access/v1/evaluation`,
    authorization: "Bearer the-api-s-own-token",
    body: { subject, ...tool },
  });
  assert.deepEqual(sent, [asked({ type: "user", id: "user-1" }), asked({ type: "client", id: "app-1" })]);
  await assert.rejects(api.decide(user.claims, tool), TypeError);
});

test("the Hono middleware serves the metadata and guards the API, end to end over HTTP", async () => {
  const app = new Hono<{ Variables: ProtectedResourceVariables }>();
  app.use("*", protectedResource(api, { scopes: ["tools:call"] }));
  app.post("/mcp", (c) => c.json({ sub: c.get("accessToken").sub, scope: c.get("accessToken").scope }));
  const mcp = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  const base = `http://127.0.0.1:${mcp.addr.port}`;
  const post = async (token?: string) =>
    await fetch(`${base}/mcp`, {
      method: "POST",
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
  try {
    const metadata = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(metadata.status, 200);
    assert.equal((await metadata.json()).resource, RESOURCE);

    const anonymous = await post();
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get("www-authenticate"), `Bearer scope="tools:call", ${TAIL}`);
    await anonymous.body?.cancel();

    const narrow = await post(await mint({ claims: { scope: "tools:list" } }));
    assert.equal(narrow.status, 403);
    assert.deepEqual(await narrow.json(), {
      error: "insufficient_scope",
      error_description: "the token lacks tools:call",
    });

    const ok = await post(await mint());
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { sub: "user-1", scope: "tools:call tools:list" });
  } finally {
    await mcp.shutdown();
  }
});
