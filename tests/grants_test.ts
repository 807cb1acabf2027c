/** The user grants at POST /api/v1/tokens: every error in the contract's order, single use under races, live sessions. */
import assert from "node:assert/strict";
import {
  authorizationCode,
  basic,
  clientToken,
  exchangeCode,
  expectError,
  expectOAuthError,
  http,
  loginProject,
  newProject,
  newVerifier,
  postToken,
  REDIRECT_URI,
  sdk,
  service,
  systemToken,
  test,
  userTokens,
} from "./helpers.ts";
import { createHash } from "node:crypto";

const sha256 = (s: string) => new Uint8Array(createHash("sha256").update(s).digest());
const refresh = (clientId: string, token: string) =>
  postToken({ grant_type: "refresh_token", client_id: clientId, refresh_token: token });
const me = (token: string) =>
  http("/api/v1/users/current", { headers: { authorization: `Bearer ${token}` } });

test("authorization_code: the answer carries access and refresh tokens, with no-store", async () => {
  const p = await loginProject();
  const { code, verifier } = await authorizationCode(p);
  const res = await exchangeCode(p.clientId, code, verifier);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), "no-store");
  const body = await res.json();
  assert.deepEqual(Object.keys(body).sort(), [
    "access_token",
    "expires_in",
    "refresh_token",
    "refresh_token_expires_in",
    "token_type",
  ]);
  assert.equal(body.refresh_token_expires_in, 604_800);
  // `authorization_code` is accepted as the parameter's name too (the specification's name).
  const second = await authorizationCode(p);
  const named = await postToken({
    grant_type: "authorization_code",
    client_id: p.clientId,
    authorization_code: second.code,
    redirect_uri: REDIRECT_URI,
    code_verifier: second.verifier,
  });
  assert.equal(named.status, 200);
  await named.body?.cancel();
});

test("authorization_code: every error, in the contract's order", async () => {
  const p = await loginProject();
  const other = await loginProject();
  const { code, verifier } = await authorizationCode(p);
  const form = {
    grant_type: "authorization_code",
    client_id: p.clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  };
  // A public client naming no client: 400 (RFC 6749 §5.2 asks for 401 only when the client used HTTP auth).
  await expectOAuthError(
    await postToken({ ...form, client_id: "no-such-client" }),
    400,
    "invalid_client",
    "invalid_client",
  );
  await expectOAuthError(
    await postToken({ ...form, client_id: other.clientId }),
    400,
    "invalid_grant",
    "invalid_authorization_code",
  );
  await expectOAuthError(
    await postToken({ ...form, code: "not-a-code" }),
    400,
    "invalid_grant",
    "invalid_authorization_code",
  );
  await expectOAuthError(
    await postToken({ ...form, redirect_uri: `${REDIRECT_URI}/x` }),
    400,
    "invalid_grant",
    "different_authorize_redirect_uri",
  );
  await expectOAuthError(
    await postToken({ ...form, code_verifier: newVerifier() }),
    400,
    "invalid_grant",
    "invalid_code_verifier",
  );
  await expectOAuthError(
    await postToken({ ...form, code_verifier: "short" }),
    400,
    "invalid_grant",
    "invalid_code_verifier",
  );
  await expectOAuthError(
    await postToken(form, { authorization: basic(p.clientId, "wrong") }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  // A wrong verifier does not spend the code: the right one still works, once.
  assert.equal((await postToken(form)).status, 200);
  await expectOAuthError(await postToken(form), 400, "invalid_grant", "auth_code_already_used");
  // Used comes after the redirect URI check.
  await expectOAuthError(
    await postToken({ ...form, redirect_uri: `${REDIRECT_URI}/x` }),
    400,
    "invalid_grant",
    "different_authorize_redirect_uri",
  );
  // Expired: the code's expiry is moved into the past rather than waited for (AUTH_CODE_TTL is 60 s).
  const late = await authorizationCode(p);
  const { db } = await service();
  await db.sql`update authorization_codes set expires_at = now() - interval '1 second' where code_hash = ${
    sha256(late.code)
  }`;
  await expectOAuthError(
    await exchangeCode(p.clientId, late.code, newVerifier()),
    400,
    "invalid_grant",
    "auth_code_expired",
  );
});

test("authorization_code: an inactive client or project gets no tokens", async () => {
  const p = await loginProject();
  const browser = await p.api.clients.createClient(p.project.id, { name: "spa" });
  const flow = { clientId: browser.id, email: p.email, password: p.password };
  const first = await authorizationCode(flow);
  await p.api.clients.updateClient(p.project.id, browser.id, { name: "spa", is_active: false });
  await expectOAuthError(
    await exchangeCode(browser.id, first.code, first.verifier),
    400,
    "invalid_client",
    "client_not_active",
  );
  await p.api.clients.updateClient(p.project.id, browser.id, { name: "spa", is_active: true });
  const second = await authorizationCode(flow);
  const admin = await sdk(await systemToken());
  await admin.projects.updateProject(p.project.id, { name: "x", is_active: false });
  await expectOAuthError(
    await exchangeCode(browser.id, second.code, second.verifier),
    400,
    "invalid_client",
    "project_not_active",
  );
  await admin.projects.updateProject(p.project.id, { name: "x", is_active: true });
});

test("a replayed code is refused and revokes the tokens issued from it", async () => {
  const p = await loginProject();
  const { code, verifier } = await authorizationCode(p);
  const first = await (await exchangeCode(p.clientId, code, verifier)).json();
  assert.equal((await me(first.access_token)).status, 200);
  await expectOAuthError(
    await exchangeCode(p.clientId, code, verifier),
    400,
    "invalid_grant",
    "auth_code_already_used",
  );
  await expectError(await me(first.access_token), 401, "invalid_authorization_token");
  await expectOAuthError(
    await refresh(p.clientId, first.refresh_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
});

test("20 concurrent redemptions of one code: exactly one succeeds", async () => {
  const p = await loginProject();
  const { code, verifier } = await authorizationCode(p);
  const results = await Promise.all(
    Array.from({ length: 20 }, () => exchangeCode(p.clientId, code, verifier)),
  );
  const statuses = results.map((r) => r.status);
  assert.equal(statuses.filter((s) => s === 200).length, 1, statuses.join(","));
  for (const r of results.filter((r) => r.status !== 200)) {
    await expectOAuthError(r, 400, "invalid_grant", "auth_code_already_used");
  }
  await Promise.all(results.filter((r) => r.status === 200).map((r) => r.body?.cancel()));
});

test("refresh_token: every refresh rotates; a spent token answers refresh_token_already_used and ends the session", async () => {
  const p = await loginProject();
  const t1 = await userTokens(p);
  const t2 = await (await refresh(p.clientId, t1.refresh_token)).json();
  assert.ok(t2.access_token && t2.refresh_token && t2.refresh_token !== t1.refresh_token);
  assert.equal((await me(t2.access_token)).status, 200);
  await expectOAuthError(
    await refresh(p.clientId, t1.refresh_token),
    400,
    "invalid_grant",
    "refresh_token_already_used",
  );
  // The reuse ended the whole session: the newest tokens stop working too.
  await expectError(await me(t2.access_token), 401, "invalid_authorization_token");
  await expectOAuthError(
    await refresh(p.clientId, t2.refresh_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
});

test("refresh_token: every error, in the contract's order", async () => {
  const p = await loginProject();
  const other = await newProject();
  const t = await userTokens(p);
  await expectOAuthError(
    await refresh("no-such-client", t.refresh_token),
    400,
    "invalid_client",
    "invalid_client",
  );
  await expectOAuthError(
    await refresh(other.clientId, t.refresh_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
  await expectOAuthError(
    await refresh(p.clientId, "not-a-refresh-token"),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
  await expectOAuthError(
    await refresh(p.clientId, t.access_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
  const { db } = await service();
  await db.sql`update refresh_tokens set expires_at = now() - interval '1 second' where token_hash = ${
    sha256(t.refresh_token)
  }`;
  await expectOAuthError(
    await refresh(p.clientId, t.refresh_token),
    400,
    "invalid_grant",
    "refresh_token_expired",
  );
  // A deactivated user, client or project gets no new tokens.
  const u = await userTokens(p);
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "x",
    is_active: false,
    email: p.email,
  });
  await expectOAuthError(
    await refresh(p.clientId, u.refresh_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "x",
    is_active: true,
    email: p.email,
  });
  const spa = await p.api.clients.createClient(p.project.id, { name: "spa" });
  const v = await userTokens({ clientId: spa.id, email: p.email, password: p.password });
  await p.api.clients.updateClient(p.project.id, spa.id, { name: "spa", is_active: false });
  await expectOAuthError(await refresh(spa.id, v.refresh_token), 400, "invalid_client", "client_not_active");
  await p.api.clients.updateClient(p.project.id, spa.id, { name: "spa", is_active: true });
  const admin = await sdk(await systemToken());
  await admin.projects.updateProject(p.project.id, { name: "x", is_active: false });
  await expectOAuthError(await refresh(spa.id, v.refresh_token), 400, "invalid_client", "project_not_active");
  await admin.projects.updateProject(p.project.id, { name: "x", is_active: true });
});

test("20 concurrent refreshes of one refresh token: exactly one succeeds", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  const results = await Promise.all(Array.from({ length: 20 }, () => refresh(p.clientId, t.refresh_token)));
  const statuses = results.map((r) => r.status);
  assert.equal(statuses.filter((s) => s === 200).length, 1, statuses.join(","));
  for (const r of results.filter((r) => r.status !== 200)) {
    await expectOAuthError(r, 400, "invalid_grant", "refresh_token_already_used");
  }
  await Promise.all(results.filter((r) => r.status === 200).map((r) => r.body?.cancel()));
});

test("sessions are live: a deactivated user, a new password or a revoked session ends the user's tokens at once", async () => {
  const p = await loginProject();
  const a = await userTokens(p);
  assert.equal((await me(a.access_token)).status, 200);
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "x",
    is_active: false,
    email: p.email,
  });
  await expectError(await me(a.access_token), 401, "invalid_authorization_token");
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "x",
    is_active: true,
    email: p.email,
  });
  await expectError(await me(a.access_token), 401, "invalid_authorization_token");
  const b = await userTokens(p);
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "x",
    is_active: true,
    email: p.email,
    password: "a new password",
  });
  await expectError(await me(b.access_token), 401, "invalid_authorization_token");
  const c = await userTokens({ ...p, password: "a new password" });
  const revoked = await http("/api/v1/tokens/revoke", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: c.refresh_token, client_id: p.clientId }).toString(),
  });
  assert.equal(revoked.status, 200);
  await revoked.body?.cancel();
  await expectError(await me(c.access_token), 401, "invalid_authorization_token");
});

test("revocation: an access token alone; unknown tokens and other projects' tokens answer 200 and change nothing", async () => {
  const p = await loginProject();
  const other = await newProject();
  const t = await userTokens(p);
  const revoke = (form: Record<string, string>, headers: Record<string, string> = {}) =>
    http("/api/v1/tokens/revoke", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(form).toString(),
    });
  // Another project's client cannot revoke it, but is not told so.
  assert.equal(
    (await revoke({ token: t.access_token }, { authorization: basic(other.clientId, other.secret) })).status,
    200,
  );
  assert.equal((await me(t.access_token)).status, 200);
  assert.equal(
    (await revoke({ token: "garbage" }, { authorization: basic(p.clientId, p.secret) })).status,
    200,
  );
  await expectOAuthError(
    await revoke({ token: t.access_token }, { authorization: basic(p.clientId, "wrong") }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  await expectOAuthError(await revoke({ token: t.access_token }), 400, "invalid_request", "invalid_params");
  await expectOAuthError(
    await revoke({ token: t.access_token, client_id: "nope" }),
    400,
    "invalid_client",
    "invalid_client",
  );
  // Revoking the access token ends that token only; the session refreshes on.
  assert.equal(
    (await revoke({ token: t.access_token }, { authorization: basic(p.clientId, p.secret) })).status,
    200,
  );
  await expectError(await me(t.access_token), 401, "invalid_authorization_token");
  assert.equal((await refresh(p.clientId, t.refresh_token)).status, 200);
  // A client-credentials token is revoked the same way.
  const machine = await clientToken(p.clientId, p.secret);
  await revoke({ token: machine }, { authorization: basic(p.clientId, p.secret) });
  await expectError(
    await http(`/api/v1/projects/${p.project.id}`, { headers: { authorization: `Bearer ${machine}` } }),
    401,
    "invalid_authorization_token",
  );
});

test("introspection: live state and permissions for the token's project only", async () => {
  const p = await loginProject();
  const other = await newProject();
  const t = await userTokens(p);
  const introspect = async (token: string, auth = basic(p.clientId, p.secret)) =>
    await (await http("/api/v1/tokens/introspect", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: auth },
      body: new URLSearchParams({ token }).toString(),
    })).json();
  const active = await introspect(t.access_token);
  assert.equal(active.active, true);
  assert.equal(active.token_type, "access_token");
  assert.equal(active.aud, p.project.id);
  const refreshInfo = await introspect(t.refresh_token);
  assert.equal(refreshInfo.active, true);
  assert.equal(refreshInfo.token_type, "refresh_token");
  assert.deepEqual(await introspect(t.access_token, basic(other.clientId, other.secret)), { active: false });
  assert.deepEqual(await introspect("garbage"), { active: false });
  const machine = await introspect(await clientToken(p.clientId, p.secret));
  assert.equal(machine.active, true);
  assert.equal(machine.sub, p.clientId);
  assert.equal(machine.permissions.length, 43);
  assert.ok(machine.permissions.includes("users:create"));
  const unauth = await http("/api/v1/tokens/introspect", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: t.access_token }).toString(),
  });
  await expectOAuthError(unauth, 401, "invalid_client", "invalid_client_credentials");
});

test("user grants refuse a client_secret in the body; a refused exchange does not spend the code", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  // RFC 6749 §5.2: an unsupported authentication method (client_secret_post) is invalid_client.
  const err = await expectOAuthError(
    await postToken({
      grant_type: "refresh_token",
      client_id: p.clientId,
      refresh_token: t.refresh_token,
      client_secret: "x",
    }),
    401,
    "invalid_client",
    "invalid_params",
  );
  assert.equal(err.details?.[0].field, "client_secret");
  assert.equal((await refresh(p.clientId, t.refresh_token)).status, 200, "the refused request spent nothing");
  const spa = await p.api.clients.createClient(p.project.id, { name: "spa" });
  const { code, verifier } = await authorizationCode({
    clientId: spa.id,
    email: p.email,
    password: p.password,
  });
  await p.api.clients.updateClient(p.project.id, spa.id, { name: "spa", is_active: false });
  await expectOAuthError(
    await exchangeCode(spa.id, code, verifier),
    400,
    "invalid_client",
    "client_not_active",
  );
  await p.api.clients.updateClient(p.project.id, spa.id, { name: "spa", is_active: true });
  assert.equal((await exchangeCode(spa.id, code, verifier)).status, 200);
});

test("introspection: the type hint orders the lookup but never hides a token; unknown hints are ignored", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  const introspect = async (token: string, hint: string) =>
    await (await http("/api/v1/tokens/introspect", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: basic(p.clientId, p.secret),
      },
      body: new URLSearchParams({ token, token_type_hint: hint }).toString(),
    })).json();
  assert.equal((await introspect(t.access_token, "refresh_token")).token_type, "access_token");
  assert.equal((await introspect(t.refresh_token, "access_token")).token_type, "refresh_token");
  assert.equal((await introspect(t.access_token, "something_else")).active, true);
});
