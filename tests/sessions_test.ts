/**
 * Session management and userinfo: admins list and end a user's sessions (only when they cover the user), the
 * user lists and ends their own, and an ended session's tokens are refused at once, on every instance.
 */
import assert from "node:assert/strict";
import {
  clientToken,
  DATABASE_ENV,
  DATABASE_URL,
  expectError,
  http,
  permissionIds,
  service,
  startWith,
  test,
  userTokens,
} from "./helpers.ts";
import {
  authorizeOidc,
  Browser,
  currentUserStatus,
  oidcProject,
  refreshStatus,
  signIn,
} from "./oidc_support.ts";

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function sessionsOf(path: string, token: string) {
  const res = await http(path, { headers: bearer(token) });
  assert.equal(res.status, 200);
  return (await res.json()) as {
    data: { id: string; client_id: string; created_at: string; last_used_at: string; ip: string | null }[];
    pagination: { total: number };
  };
}

test("admins list a user's sessions, end one, and sign the user out everywhere", async () => {
  const p = await oidcProject();
  const base = `/api/v1/projects/${p.project.id}/users/${p.userId}/sessions`;
  const browser = new Browser();
  const a = await signIn(browser, p);
  const b = await userTokens(p);
  const list = await sessionsOf(base, p.token);
  assert.equal(list.pagination.total, 2);
  const session = list.data[0];
  assert.deepEqual(Object.keys(session).sort(), [
    "client_id",
    "created_at",
    "id",
    "ip",
    "last_used_at",
    "user_agent",
  ]);
  assert.equal(session.client_id, p.clientId);
  assert.equal(session.ip, "127.0.0.1");

  // One session ends: its tokens are refused on the next request; the other keeps working.
  const victim = list.data.find((s) => s.id !== sessionIdOf(a.access_token))!;
  const del = await http(`${base}/${victim.id}`, { method: "DELETE", headers: bearer(p.token) });
  assert.equal(del.status, 204);
  assert.equal(await currentUserStatus(b.access_token), 401);
  assert.equal((await refreshStatus(p.clientId, b.refresh_token)).error_code, "invalid_refresh_token");
  assert.equal(await currentUserStatus(a.access_token), 200);
  await expectError(
    http(`${base}/${victim.id}`, { method: "DELETE", headers: bearer(p.token) }),
    404,
    "session_not_found",
  );

  // Everywhere: the login sessions and the browser's single sign-on session.
  const all = await http(base, { method: "DELETE", headers: bearer(p.token) });
  assert.equal(all.status, 204);
  assert.equal(await currentUserStatus(a.access_token), 401);
  assert.equal((await sessionsOf(base, p.token)).pagination.total, 0);
  assert.equal((await authorizeOidc(browser, p.secondClientId)).res.status, 200);

  const { db } = await service();
  const types = (await db.sql<{ type: string }[]>`
    select type from audit_events where project_id = ${p.project.id}
      and type in ('session.revoked', 'user.sessions_ended') order by occurred_at`).map((r) => r.type);
  assert.deepEqual(types, ["session.revoked", "user.sessions_ended"]);
});

function sessionIdOf(accessToken: string): string {
  return JSON.parse(atob(accessToken.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sid;
}

test("a caller that does not cover the user may list but not end the user's sessions (403)", async () => {
  const p = await oidcProject();
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "auditor",
    name: "Auditor",
    permission_ids: [ids["audit:read"]],
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: true,
    role_id: role.id,
  });
  const narrow = await p.api.clients.createClient(p.project.id, {
    name: "helpdesk",
    token_endpoint_auth_method: "client_secret_basic" as never,
    permission_ids: [ids["users:read"], ids["users:update"]],
  });
  const token = await clientToken(narrow.id, narrow.client_secret!);
  const tokens = await userTokens(p);
  const base = `/api/v1/projects/${p.project.id}/users/${p.userId}/sessions`;
  const [session] = (await sessionsOf(base, token)).data;
  await expectError(
    http(`${base}/${session.id}`, { method: "DELETE", headers: bearer(token) }),
    403,
    "insufficient_permission",
  );
  await expectError(http(base, { method: "DELETE", headers: bearer(token) }), 403, "insufficient_permission");
  assert.equal(await currentUserStatus(tokens.access_token), 200);

  // Without users:update, 403 from the gate; another project's token, 403; an unknown user, 404.
  const reader = await p.api.clients.createClient(p.project.id, {
    name: "reader",
    token_endpoint_auth_method: "client_secret_basic" as never,
    permission_ids: [ids["users:read"]],
  });
  const readerToken = await clientToken(reader.id, reader.client_secret!);
  await expectError(
    http(base, { method: "DELETE", headers: bearer(readerToken) }),
    403,
    "insufficient_permission",
  );
  const other = await oidcProject();
  await expectError(http(base, { headers: bearer(other.token) }), 403, "insufficient_permission");
  await expectError(
    http(`/api/v1/projects/${p.project.id}/users/nobody/sessions`, { headers: bearer(p.token) }),
    404,
    "user_not_found",
  );
});

test("a user lists and ends their own sessions; a client token has no user", async () => {
  const p = await oidcProject();
  const one = await userTokens(p);
  const two = await userTokens(p);
  const mine = await sessionsOf("/api/v1/users/current/sessions", one.access_token);
  assert.equal(mine.pagination.total, 2);
  const del = await http(`/api/v1/users/current/sessions/${sessionIdOf(two.access_token)}`, {
    method: "DELETE",
    headers: bearer(one.access_token),
  });
  assert.equal(del.status, 204);
  assert.equal(await currentUserStatus(two.access_token), 401);
  assert.equal(await currentUserStatus(one.access_token), 200);

  // Another user's session is not found for this user.
  const other = await oidcProject();
  const theirs = await userTokens(other);
  await expectError(
    http(`/api/v1/users/current/sessions/${sessionIdOf(theirs.access_token)}`, {
      method: "DELETE",
      headers: bearer(one.access_token),
    }),
    404,
    "session_not_found",
  );
  await expectError(
    http("/api/v1/users/current/sessions", { headers: bearer(p.token) }),
    404,
    "user_not_found",
  );
});

test("userinfo: GET and POST with the scopes' claims; 401 invalid_token otherwise, live", async () => {
  const p = await oidcProject();
  const tokens = await signIn(new Browser(), p, { scope: "openid email" });
  for (const method of ["GET", "POST"]) {
    const res = await http("/userinfo", { method, headers: bearer(tokens.access_token) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.deepEqual(await res.json(), { sub: p.userId, email: p.email, email_verified: false });
  }
  const none = await http("/userinfo");
  assert.equal(none.status, 401);
  assert.equal(none.headers.get("www-authenticate"), 'Bearer error="invalid_token"');
  await none.body?.cancel();
  const bad = await http("/userinfo", { headers: bearer("not.a.token") });
  assert.equal(bad.status, 401);
  assert.match(bad.headers.get("www-authenticate")!, /^Bearer error="invalid_token"/);
  assert.equal((await bad.json()).error, "invalid_token");
  const client = await http("/userinfo", { headers: bearer(p.token) });
  assert.equal(client.status, 401);
  await client.body?.cancel();

  // A login without openid: plain OAuth, no ID token, and no userinfo.
  const plain = await userTokens(p);
  assert.equal((plain as Record<string, unknown>).id_token, undefined);
  const scoped = await http("/userinfo", { headers: bearer(plain.access_token) });
  assert.equal(scoped.status, 403);
  assert.match(scoped.headers.get("www-authenticate")!, /error="insufficient_scope"/);
  await scoped.body?.cancel();

  // Live: a deactivated user gets 401 at once.
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: false,
  });
  const gone = await http("/userinfo", { headers: bearer(tokens.access_token) });
  assert.equal(gone.status, 401);
  assert.match(gone.headers.get("www-authenticate")!, /^Bearer error="invalid_token"/);
  await gone.body?.cancel();
});

test("tokens of an ended session are refused at once by every instance", async () => {
  const shared = await service();
  // A second instance on the same PostgreSQL database, with the same issuer; the embedded database has one.
  const second = DATABASE_URL ? await startWith({ ...DATABASE_ENV, PUBLIC_URL: shared.url }) : null;
  try {
    const p = await oidcProject();
    const tokens = await signIn(new Browser(), p);
    const urls = [shared.url, second?.url ?? shared.url];
    for (const url of urls) {
      const res = await fetch(`${url}/userinfo`, { headers: bearer(tokens.access_token) });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    const del = await fetch(
      `${urls[0]}/api/v1/projects/${p.project.id}/users/${p.userId}/sessions/${
        sessionIdOf(tokens.access_token)
      }`,
      { method: "DELETE", headers: bearer(p.token) },
    );
    assert.equal(del.status, 204);
    for (const url of urls) {
      for (const path of ["/userinfo", "/api/v1/users/current"]) {
        const res = await fetch(`${url}${path}`, { headers: bearer(tokens.access_token) });
        assert.equal(res.status, 401, `${url}${path}`);
        await res.body?.cancel();
      }
    }
  } finally {
    await second?.close();
  }
});
