/**
 * The review's medium and low findings: the current password for account changes, sessions with an absolute
 * end, deactivation that ends sessions, throttles that never become lockouts, client-authentication throttling,
 * revocation scoped to the token's client, a limit on login pages per address, and a private embedded database.
 */
import assert from "node:assert/strict";
import { openDatabase } from "../db/connection.ts";
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
  openLoginPage,
  postToken,
  REDIRECT_URI,
  sdk,
  service,
  submitLogin,
  test,
  userTokens,
} from "./helpers.ts";
import { challengeOf, newVerifier } from "./helpers.ts";

const refresh = (clientId: string, token: string) =>
  postToken({ grant_type: "refresh_token", client_id: clientId, refresh_token: token });
const me = (token: string) =>
  http("/api/v1/users/current", { headers: { authorization: `Bearer ${token}` } });
const revoke = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  http("/api/v1/tokens/revoke", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
  });
const loginQuery = async (clientId: string) => ({
  client_id: clientId,
  redirect_uri: REDIRECT_URI,
  response_type: "code",
  code_challenge: await challengeOf(newVerifier()),
  code_challenge_method: "S256",
});

test("PUT /users/current: a new password or email needs the current password; wrong ones are throttled", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  const api = (await sdk(t.access_token)).users;
  const missing = await expectError(
    api.updateCurrentUser({ display_name: "x", email: p.email, password: "a stolen token's choice" }),
    400,
    "invalid_params",
  );
  assert.equal(missing.details?.[0].field, "current_password");
  await expectError(
    api.updateCurrentUser({ display_name: "x", email: "thief@example.com" }),
    400,
    "invalid_params",
  );
  const wrong = await expectError(
    api.updateCurrentUser({ display_name: "x", email: "thief@example.com", current_password: "not it" }),
    400,
    "invalid_params",
  );
  assert.deepEqual(wrong.details, [{ field: "current_password", issue: "is wrong" }]);
  // Nothing changed: the old password still logs in, the email is the same.
  assert.equal((await api.getCurrentUser()).email, p.email);
  // Other profile changes need no current password; the same email (any case) is no change.
  assert.equal(
    (await api.updateCurrentUser({ display_name: "Me", email: p.email.toUpperCase() })).display_name,
    "Me",
  );
  // With it, the email changes.
  const moved = await api.updateCurrentUser({
    display_name: "Me",
    email: `moved-${p.email}`,
    current_password: p.password,
  });
  assert.equal(moved.email, `moved-${p.email}`);
  // Wrong current passwords count toward the account's login throttle: 5 free, then 429.
  for (let i = 0; i < 4; i++) {
    await expectError(
      api.updateCurrentUser({ display_name: "Me", email: p.email, current_password: `wrong ${i}` }),
      400,
      "invalid_params",
    );
  }
  const page = await openLoginPage(await loginQuery(p.clientId));
  assert.equal((await submitLogin(page, `moved-${p.email}`, "wrong again")).status, 400);
  const throttled = await expectError(
    api.updateCurrentUser({ display_name: "Me", email: p.email, current_password: p.password }),
    429,
    "too_many_requests",
  );
  assert.ok(Number(throttled.headers.get("retry-after")) >= 1);
});

test("a session ends SESSION_MAX_TTL after the login whatever its refreshes", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  const { db } = await service();
  const [{ sid }] = await db.sql<{ sid: string }[]>`
    select s.id as sid from sessions s join refresh_tokens r on r.session_id = s.id
    where s.user_id = ${p.userId} order by s.created_at desc limit 1`;
  // The session was opened with its absolute end; bring it to 30 s from now.
  await db.sql`update sessions set max_expires_at = now() + interval '30 seconds' where id = ${sid}`;
  const res = await refresh(p.clientId, t.refresh_token);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.ok(body.refresh_token_expires_in <= 30, `refresh token capped: ${body.refresh_token_expires_in}`);
  // Past the end, the session's refresh token has expired.
  await db.sql`update sessions set max_expires_at = now() - interval '1 second' where id = ${sid}`;
  await db
    .sql`update refresh_tokens set expires_at = least(expires_at, now() - interval '1 second') where session_id = ${sid}`;
  await expectOAuthError(
    await refresh(p.clientId, body.refresh_token),
    400,
    "invalid_grant",
    "refresh_token_expired",
  );
});

test("deactivating a client or a project ends its sessions: reactivation revives no refresh token", async () => {
  const p = await loginProject();
  const spa = await p.api.clients.createClient(p.project.id, { name: "spa" });
  const login = async () => {
    const { code, verifier } = await authorizationCode({
      clientId: spa.id,
      email: p.email,
      password: p.password,
    });
    const res = await exchangeCode(spa.id, code, verifier);
    assert.equal(res.status, 200);
    return await res.json();
  };
  const a = await login();
  await p.api.clients.updateClient(p.project.id, spa.id, { name: "spa", is_active: false });
  await p.api.clients.updateClient(p.project.id, spa.id, { name: "spa", is_active: true });
  await expectOAuthError(
    await refresh(spa.id, a.refresh_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
  await expectError(await me(a.access_token), 401, "invalid_authorization_token");
  const b = await login();
  const system = await sdk(await clientToken("system-admin", (await import("./helpers.ts")).ADMIN_SECRET));
  const name = p.project.name;
  await system.projects.updateProject(p.project.id, { name, is_active: false });
  await system.projects.updateProject(p.project.id, { name, is_active: true });
  await expectOAuthError(
    await refresh(spa.id, b.refresh_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
  // New logins work as before.
  assert.ok((await login()).access_token);
});

test("throttling never becomes a lockout: attempts answered 429 neither count nor extend the delay", async () => {
  const p = await loginProject();
  const { db } = await service();
  const key = `account:${p.project.id}:${p.email}`;
  // Ten failures in a row, the last just now: the next attempt must wait 2^(10-5) = 32 seconds.
  await db.sql`insert into login_failures (key, failures, window_started_at, last_failed_at)
    values (${key}, 10, now(), now())`;
  for (let i = 0; i < 5; i++) {
    const res = await submitLogin(await openLoginPage(await loginQuery(p.clientId)), p.email, "guess");
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get("retry-after")) <= 32);
    await res.body?.cancel();
  }
  const [row] = await db.sql<{ failures: number }[]>`select failures from login_failures where key = ${key}`;
  assert.equal(row.failures, 10, "the refused attempts were not counted");
  // Once the delay has passed (moved back in the database), the owner signs in.
  await db.sql`update login_failures set last_failed_at = now() - interval '33 seconds' where key = ${key}`;
  const ok = await submitLogin(await openLoginPage(await loginQuery(p.clientId)), p.email, p.password);
  assert.equal(ok.status, 303);
});

test("failed client secrets are throttled per client id and address; other clients are not blocked", async () => {
  const p = await newProject();
  const victim = await p.api.clients.createClient(p.project.id, { name: "backend" });
  const form = { grant_type: "client_credentials" };
  for (let i = 0; i < 10; i++) {
    await expectOAuthError(
      await postToken(form, { authorization: basic(victim.id, `wrong-${i}`) }),
      401,
      "invalid_client",
      "invalid_client_credentials",
    );
  }
  const blocked = await expectOAuthError(
    await postToken(form, { authorization: basic(victim.id, "wrong-again") }),
    429,
    "temporarily_unavailable",
    "too_many_requests",
  );
  assert.ok(Number(blocked.headers.get("retry-after")) >= 1);
  // Introspection and revocation count against the same key.
  const introspected = await http("/api/v1/tokens/introspect", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: basic(victim.id, victim.client_secret),
    },
    body: "token=x",
  });
  assert.equal(introspected.status, 429);
  await introspected.body?.cancel();
  // Another client from the same address is not affected.
  assert.ok(await clientToken(p.clientId, p.secret));
  // After the delay the right secret works again and clears the count.
  const { db } = await service();
  await db
    .sql`update login_failures set last_failed_at = now() - interval '1 hour', window_started_at = now() - interval '2 hours'
    where key like ${`client:${victim.id}:%`}`;
  assert.ok(await clientToken(victim.id, victim.client_secret));
  assert.equal(
    (await db.sql`select 1 from login_failures where key like ${`client:${victim.id}:%`}`).length,
    0,
  );
});

test("revocation acts only on the requesting client's tokens; an inactive client revokes nothing", async () => {
  const p = await loginProject();
  const t = await userTokens(p); // issued to the admin client
  const other = await p.api.clients.createClient(p.project.id, { name: "other" });
  const byOther = { authorization: basic(other.id, other.client_secret) };
  assert.equal((await revoke({ token: t.refresh_token }, byOther)).status, 200);
  assert.equal((await revoke({ token: t.access_token }, byOther)).status, 200);
  assert.equal((await revoke({ token: t.refresh_token, client_id: other.id })).status, 200);
  assert.equal((await me(t.access_token)).status, 200, "the access token is still valid");
  const next = await refresh(p.clientId, t.refresh_token);
  assert.equal(next.status, 200, "the refresh token was still valid");
  const fresh = await next.json();
  // The token's own client revokes it.
  assert.equal(
    (await revoke({ token: fresh.refresh_token }, { authorization: basic(p.clientId, p.secret) })).status,
    200,
  );
  await expectOAuthError(
    await refresh(p.clientId, fresh.refresh_token),
    400,
    "invalid_grant",
    "invalid_refresh_token",
  );
  // An inactive client is answered 200 and changes nothing.
  await p.api.clients.updateClient(p.project.id, other.id, { name: "other", is_active: false });
  assert.equal((await revoke({ token: "anything" }, byOther)).status, 200);
});

test("GET /authorize opens a limited number of login pages per address (429 page with Retry-After)", async () => {
  const p = await loginProject();
  const { db } = await service();
  const key = "authorize:127.0.0.1";
  await db.sql`insert into login_failures (key, failures, window_started_at, last_failed_at)
    values (${key}, 600, now(), now())
    on conflict (key) do update set failures = 600, window_started_at = now()`;
  try {
    const page = await openLoginPage(await loginQuery(p.clientId));
    assert.equal(page.status, 429);
    assert.ok(Number(page.headers.get("retry-after")) > 500);
    assert.match(page.html, /Too many sign-in pages/);
    assert.equal(page.requestId, "", "no login request was stored");
  } finally {
    await db.sql`delete from login_failures where key = ${key}`;
  }
  assert.equal((await openLoginPage(await loginQuery(p.clientId))).status, 200);
});

test("the embedded database's directory is its owner's alone: directories 0700, files 0600", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-perm-" });
  await Deno.chmod(dir, 0o755);
  const db = await openDatabase({ dataDir: dir, poolSize: 1 });
  try {
    const loose: string[] = [];
    const walk = async (path: string) => {
      const mode = (await Deno.stat(path)).mode! & 0o777;
      const info = await Deno.lstat(path);
      if (info.isDirectory) {
        if (mode !== 0o700) loose.push(`${path} ${mode.toString(8)}`);
        for await (const e of Deno.readDir(path)) await walk(`${path}/${e.name}`);
      } else if (info.isFile && mode !== 0o600) loose.push(`${path} ${mode.toString(8)}`);
    };
    await walk(dir);
    assert.deepEqual(loose, []);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
