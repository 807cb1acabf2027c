/** The bearer-token gate: 401, then 404, then 403; cross-project refusal; live effect of every change. */
import assert from "node:assert/strict";
import { generateKeyPair, importJWK, SignJWT } from "jose";
import {
  baseUrl,
  clientToken,
  expectError,
  http,
  newProject,
  sdk,
  service,
  systemToken,
  test,
} from "./helpers.ts";

const UNKNOWN = "00000000-0000-7000-8000-000000000000";

async function forged(
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  const now = Math.floor(Date.now() / 1000);
  return await new SignJWT({ client_id: claims.sub, ...claims })
    .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt", kid: "forged", ...header })
    .setIssuer(await baseUrl())
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .setJti(crypto.randomUUID())
    .sign(privateKey);
}

function withBearer(token: string, scheme = "Bearer"): RequestInit {
  return { headers: { authorization: `${scheme} ${token}` } };
}

test("the gate answers 401 invalid_authorization_token with WWW-Authenticate for missing or bad tokens", async () => {
  const p = await newProject();
  const path = `/api/v1/projects/${p.project.id}`;
  const missing = await expectError(await http(path), 401, "invalid_authorization_token");
  // RFC 9728 §5.1: the challenge names this service's protected resource metadata, which names the service.
  const base = await baseUrl();
  const metadataUrl = `${base}/.well-known/oauth-protected-resource`;
  assert.equal(
    missing.headers.get("www-authenticate"),
    `Bearer realm="access-control", resource_metadata="${metadataUrl}"`,
  );
  const metadata = await (await fetch(metadataUrl)).json();
  assert.equal(metadata.resource, base);
  assert.deepEqual(metadata.authorization_servers, [base]);
  assert.deepEqual(metadata.bearer_methods_supported, ["header"]);
  const [, payload, signature] = p.token.split(".");
  const tampered = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
  // Signed with our key but altered afterwards: the signature no longer matches.
  tampered.aud = "system";
  const tamperedToken = [
    p.token.split(".")[0],
    btoa(JSON.stringify(tampered)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_"),
    signature,
  ].join(".");
  const noneToken = `${btoa(JSON.stringify({ alg: "none", typ: "at+jwt" })).replace(/=+$/, "")}.${payload}.`;
  const bad = [
    withBearer("not-a-jwt"),
    withBearer(tamperedToken),
    withBearer(noneToken),
    withBearer(await forged({ sub: p.clientId, aud: p.project.id })),
    withBearer(p.token, "Basic"),
    { headers: { authorization: p.token } },
    { headers: { authorization: "Bearer" } },
  ];
  for (const init of bad) {
    const err = await expectError(await http(path, init), 401, "invalid_authorization_token");
    assert.match(
      err.headers.get("www-authenticate") ?? "",
      /^Bearer realm="access-control", error="invalid_token", error_description="[^"\\]+", resource_metadata="[^"]+"$/,
    );
  }
  // The scheme is case-insensitive (RFC 7235 §2.1); the token is accepted only in the header.
  assert.equal((await http(path, withBearer(p.token, "bearer"))).status, 200);
  await expectError(await http(`${path}?access_token=${p.token}`), 401, "invalid_authorization_token");
});

/** Signs claims with the service's own current key: only the claims decide whether the gate accepts it. */
async function signedByService(
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
  lifetime: [number, number] = [0, 600],
): Promise<string> {
  const { db } = await service();
  const [key] = await db.sql<{ kid: string; private_jwk: Record<string, string> }[]>`
    select kid, private_jwk from signing_keys where retired_at is null order by created_at desc limit 1`;
  const now = Math.floor(Date.now() / 1000);
  return await new SignJWT(claims)
    .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt", kid: key.kid, ...header })
    .setIssuedAt(now + lifetime[0]).setExpirationTime(now + lifetime[1]).setJti(crypto.randomUUID())
    .sign(await importJWK(key.private_jwk, "EdDSA"));
}

test("the gate accepts only our access tokens: type, issuer, audience, subject and lifetime all count", async () => {
  const p = await newProject();
  const path = `/api/v1/projects/${p.project.id}`;
  const iss = await baseUrl();
  const good = { iss, sub: p.clientId, aud: p.project.id, client_id: p.clientId };
  // The control: a token built this way is accepted.
  assert.equal((await http(path, withBearer(await signedByService(good)))).status, 200);
  const refused: [string, Promise<string>][] = [
    ["expired", signedByService(good, {}, [-1000, -100])],
    ["typ JWT", signedByService(good, { typ: "JWT" })],
    ["no typ", signedByService(good, { typ: undefined })],
    ["another issuer", signedByService({ ...good, iss: "https://evil.example" })],
    ["no issuer", signedByService({ ...good, iss: undefined })],
    ["audience as an array", signedByService({ ...good, aud: [p.project.id] })],
    ["no client_id", signedByService({ ...good, client_id: undefined })],
    ["subject other than the client", signedByService({ ...good, sub: "someone-else" })],
    ["a user session it cannot check yet", signedByService({ ...good, sid: "s1" })],
    ["another project's client", signedByService({ ...good, aud: "system" })],
  ];
  for (const [name, token] of refused) {
    const res = await http(path, withBearer(await token));
    assert.equal(res.status, 401, name);
    assert.equal((await res.json()).error, "invalid_authorization_token", name);
  }
});

test("the gate checks in the order 401, 404, 403", async () => {
  const p = await newProject();
  const other = await newProject();
  // A bad token and an unknown project: 401 first.
  await expectError(
    await http(`/api/v1/projects/${UNKNOWN}`, withBearer("garbage")),
    401,
    "invalid_authorization_token",
  );
  // A valid token and an unknown project: 404, even though the token could never act there.
  await expectError(p.api.projects.getProject(UNKNOWN), 404, "project_not_found");
  await expectError(p.api.clients.rotateClientSecret(UNKNOWN, p.clientId), 404, "project_not_found");
  // A valid token on another existing project: 403.
  await expectError(p.api.projects.getProject(other.project.id), 403, "insufficient_permission");
  await expectError(
    p.api.clients.rotateClientSecret(other.project.id, other.clientId),
    403,
    "insufficient_permission",
  );
});

test("tokens of one project never act on another, nor on the system project's operations", async () => {
  const a = await newProject();
  const b = await newProject();
  await expectError(
    a.api.projects.updateProject(b.project.id, { name: "taken over" }),
    403,
    "insufficient_permission",
  );
  await expectError(a.api.projects.createProject({ name: "nested" }), 403, "insufficient_permission");
  await expectError(
    a.api.projects.listProjects(undefined, undefined, undefined, undefined, undefined, undefined),
    403,
    "insufficient_permission",
  );
  await expectError(
    a.api.clients.rotateClientSecret(b.project.id, b.clientId),
    403,
    "insufficient_permission",
  );
  // Its own project's client id under another project's path is not found there.
  await expectError(a.api.clients.rotateClientSecret(a.project.id, b.clientId), 404, "client_not_found");
  assert.equal((await b.api.projects.getProject(b.project.id)).name, b.project.name);
});

test("the system admin client administers any project, down to its admin client; other projects' tokens do not", async () => {
  const p = await newProject();
  const admin = await sdk(await systemToken());
  assert.equal((await admin.projects.getProject(p.project.id)).id, p.project.id);
  assert.equal((await admin.projects.updateProject(p.project.id, { name: "renamed" })).name, "renamed");
  const rotated = await admin.clients.rotateClientSecret(p.project.id, p.clientId);
  assert.ok(await clientToken(p.clientId, rotated.client_secret));
  const other = await newProject();
  await expectError(
    other.api.clients.rotateClientSecret(p.project.id, p.clientId),
    403,
    "insufficient_permission",
  );
});

test("a deactivated project's tokens are refused on the very next request", async () => {
  const p = await newProject();
  const admin = await sdk(await systemToken());
  await admin.projects.updateProject(p.project.id, { name: p.project.name, is_active: false });
  await expectError(p.api.projects.getProject(p.project.id), 401, "invalid_authorization_token");
  await admin.projects.updateProject(p.project.id, { name: p.project.name, is_active: true });
  // Reactivation does not revive the tokens issued before the deactivation; new ones work.
  await expectError(p.api.projects.getProject(p.project.id), 401, "invalid_authorization_token");
  const fresh = await sdk(await clientToken(p.clientId, p.secret));
  assert.equal((await fresh.projects.getProject(p.project.id)).is_active, true);
});

test("a revoked access token (by jti) is refused on the very next request", async () => {
  const p = await newProject();
  const { db } = await service();
  const jti = JSON.parse(atob(p.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).jti;
  await db.sql`insert into revoked_access_tokens (jti, project_id, expires_at)
    values (${jti}, ${p.project.id}, now() + interval '1 hour')`;
  await expectError(p.api.projects.getProject(p.project.id), 401, "invalid_authorization_token");
});
