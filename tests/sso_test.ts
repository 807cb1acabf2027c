/**
 * Single sign-on and logout over raw HTTP: a second client of the project gets a code without the form;
 * prompt, max_age and login_hint; what ends a browser session; logout's redirects and its untrusted hints.
 */
import assert from "node:assert/strict";
import {
  isolatedDatabase,
  loginProject,
  openLoginPage,
  REDIRECT_URI,
  sdk,
  service,
  startWith,
  systemToken,
  test,
} from "./helpers.ts";
import {
  authorizeOidc,
  Browser,
  currentUserStatus,
  LOGOUT_URI,
  oidcProject,
  payloadOf,
  redeem,
  refreshStatus,
  signIn,
} from "./oidc_support.ts";
import { challengeOf, clientWith, expectError, newVerifier } from "./helpers.ts";

test("a second client of the same project gets a code without the form; another project shows it", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const first = await signIn(browser, p);
  const login = browser.jar.get("acs_sso");
  assert.ok(login);

  const { res, verifier } = await authorizeOidc(browser, p.secondClientId);
  assert.equal(res.status, 302);
  const location = new URL(res.headers.get("location")!);
  assert.equal(location.searchParams.get("state"), "st");
  const second = await redeem(p.secondClientId, location, verifier);
  const [a, b] = [payloadOf(first.id_token), payloadOf(second.id_token)];
  assert.equal(b.aud, p.secondClientId);
  assert.equal(b.sub, p.userId);
  assert.equal(b.sid, a.sid, "one browser session");
  assert.equal(b.auth_time, a.auth_time, "no new authentication");
  assert.equal(b.nonce, "n-0S6_WzA2Mj");
  assert.equal(payloadOf(second.access_token).sid !== payloadOf(first.access_token).sid, true);

  // A plain OAuth request (no openid) behaves as before: the form, and no ID token.
  const plain = await openLoginPage({
    client_id: p.secondClientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(newVerifier()),
    code_challenge_method: "S256",
  });
  assert.equal(plain.status, 200);

  // Another project's client does not see this project's session.
  const other = await loginProject();
  const elsewhere = await authorizeOidc(browser, other.clientId);
  assert.equal(elsewhere.res.status, 200);
  assert.match(elsewhere.html, /name="password"/);
});

test("the single sign-on cookie is HttpOnly, SameSite=Lax, for the whole service, and stored hashed", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const { html } = await authorizeOidc(browser, p.clientId);
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const res = await browser.post("/authorize", {
    request_id: field("request_id"),
    csrf: field("csrf"),
    email: p.email,
    password: p.password,
  });
  const line = res.headers.getSetCookie().find((l) => l.startsWith("acs_sso="))!;
  assert.match(line, /; HttpOnly/);
  assert.match(line, /; SameSite=Lax/);
  assert.match(line, /; Path=\//);
  assert.match(line, /; Max-Age=1209600/);
  const value = browser.jar.get("acs_sso")!;
  const { db } = await service();
  const rows = await db.sql`select browser_hash, idle_expires_at, expires_at from sso_sessions
    where project_id = ${p.project.id}`;
  assert.equal(rows.length, 1);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value)));
  assert.deepEqual(new Uint8Array(rows[0].browser_hash), digest);
  const idle = (rows[0].idle_expires_at.getTime() - Date.now()) / 1000;
  assert.ok(idle > 86_300 && idle <= 86_400, String(idle));
});

test("prompt=login shows the form; prompt=none answers login_required without a session", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const none = await authorizeOidc(browser, p.clientId, { prompt: "none" });
  assert.equal(none.res.status, 302);
  const denied = new URL(none.res.headers.get("location")!);
  assert.equal(denied.searchParams.get("error"), "login_required");
  assert.equal(denied.searchParams.get("state"), "st");
  assert.ok(denied.searchParams.get("iss"));

  await signIn(browser, p);
  const silent = await authorizeOidc(browser, p.secondClientId, { prompt: "none" });
  assert.equal(silent.res.status, 302);
  assert.ok(new URL(silent.res.headers.get("location")!).searchParams.get("code"));

  const forced = await authorizeOidc(browser, p.secondClientId, { prompt: "login" });
  assert.equal(forced.res.status, 200);
  assert.match(forced.html, /name="password"/);
});

test("max_age shows the form again when the login is older; login_hint pre-fills the email", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const hinted = await authorizeOidc(browser, p.clientId, { login_hint: p.email });
  assert.match(hinted.html, new RegExp(`name="email" type="email"[^>]*value="${p.email}"`));
  await signIn(browser, p);
  await new Promise((r) => setTimeout(r, 1100));
  const young = await authorizeOidc(browser, p.secondClientId, { max_age: "60" });
  assert.equal(young.res.status, 302);
  const old = await authorizeOidc(browser, p.secondClientId, { max_age: "1" });
  assert.equal(old.res.status, 200);
  const zero = await authorizeOidc(browser, p.secondClientId, { max_age: "0" });
  assert.equal(zero.res.status, 200);
  const none = await authorizeOidc(browser, p.secondClientId, { max_age: "1", prompt: "none" });
  assert.equal(new URL(none.res.headers.get("location")!).searchParams.get("error"), "login_required");
});

test("an unsupported prompt or a bad max_age is an invalid_request redirect", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const extras: Record<string, string>[] = [
    { prompt: "consent" },
    { prompt: "select_account" },
    { prompt: "none login" },
    { max_age: "-1" },
    { max_age: "1.5" },
    { max_age: "abc" },
  ];
  for (const extra of extras) {
    const { res } = await authorizeOidc(browser, p.clientId, extra);
    assert.equal(res.status, 302, JSON.stringify(extra));
    const to = new URL(res.headers.get("location")!);
    assert.equal(to.searchParams.get("error"), "invalid_request", JSON.stringify(extra));
    assert.equal(to.searchParams.get("state"), "st");
  }
});

test("deactivating the user, or a new password, ends the browser sessions", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  await signIn(browser, p);
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: true,
    password: "another horse battery",
  });
  assert.equal((await authorizeOidc(browser, p.secondClientId)).res.status, 200);

  await signIn(browser, { ...p, password: "another horse battery" });
  assert.equal((await authorizeOidc(browser, p.secondClientId)).res.status, 302);
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: false,
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: true,
  });
  assert.equal((await authorizeOidc(browser, p.secondClientId)).res.status, 200);
});

test("deactivating the project ends its browser and login sessions; reactivating it revives none", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const tokens = await signIn(browser, p);
  assert.equal((await authorizeOidc(browser, p.secondClientId)).res.status, 302, "signed in");
  const admin = await sdk(await systemToken());
  await admin.projects.updateProject(p.project.id, { name: p.project.name, is_active: false });
  await admin.projects.updateProject(p.project.id, { name: p.project.name, is_active: true });

  const again = await authorizeOidc(browser, p.secondClientId);
  assert.equal(again.res.status, 200, "the form, not a code");
  assert.match(again.html, /name="password"/);
  const none = await authorizeOidc(browser, p.clientId, { prompt: "none" });
  assert.equal(new URL(none.res.headers.get("location")!).searchParams.get("error"), "login_required");
  assert.equal((await refreshStatus(p.clientId, tokens.refresh_token)).error_code, "invalid_refresh_token");
  assert.equal(await currentUserStatus(tokens.access_token), 401);
  const { db } = await service();
  const [open] = await db.sql<{ n: number }[]>`select count(*)::int as n from sso_sessions
    where project_id = ${p.project.id} and ended_at is null`;
  assert.equal(open.n, 0);
});

test("logout ends the browser session and the sessions it created, then redirects to a registered URI", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const one = await signIn(browser, p);
  const { res, verifier } = await authorizeOidc(browser, p.secondClientId);
  const two = await redeem(p.secondClientId, new URL(res.headers.get("location")!), verifier);

  const path = `/logout?${new URLSearchParams({
    client_id: p.clientId,
    post_logout_redirect_uri: LOGOUT_URI,
    state: "s1",
  })}`;
  // Without an ID token of this browser's session, the user confirms first; asking ends nothing.
  const asked = await browser.get(path);
  assert.equal(asked.status, 200);
  await asked.body?.cancel();
  assert.equal(await currentUserStatus(two.access_token), 200);
  const out = await browser.confirmLogout(path);
  assert.equal(out.status, 303);
  assert.equal(out.headers.get("location"), `${LOGOUT_URI}?state=s1`);
  assert.equal((await refreshStatus(p.clientId, one.refresh_token)).error_code, "invalid_refresh_token");
  assert.equal(
    (await refreshStatus(p.secondClientId, two.refresh_token)).error_code,
    "invalid_refresh_token",
  );
  assert.equal(await currentUserStatus(two.access_token), 401);
  const again = await authorizeOidc(browser, p.secondClientId, { prompt: "none" });
  assert.equal(new URL(again.res.headers.get("location")!).searchParams.get("error"), "login_required");

  const { db } = await service();
  const events = await db.sql<{ type: string; details: { sessions_revoked: number } }[]>`
    select type, details from audit_events where project_id = ${p.project.id} and type = 'sso_session.ended'`;
  assert.equal(events.length, 1);
  assert.equal(events[0].details.sessions_revoked, 2);
});

test("logout without a registered URI shows a page and never redirects", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  await signIn(browser, p);
  const unregistered = await browser.confirmLogout(
    `/logout?${new URLSearchParams({
      client_id: p.clientId,
      post_logout_redirect_uri: "https://evil.example/",
    })}`,
  );
  assert.equal(unregistered.status, 400);
  assert.equal(unregistered.headers.get("location"), null);
  assert.match(await unregistered.text(), /not registered/);
  assert.equal(unregistered.headers.get("x-frame-options"), "DENY");

  await signIn(browser, p);
  const plain = await browser.confirmLogout("/logout");
  assert.equal(plain.status, 200);
  assert.match(await plain.text(), /You are signed out\./);
  assert.equal((await authorizeOidc(browser, p.clientId)).res.status, 200);
});

test("an id_token_hint that is forged, of another project or expired ends the session but never redirects", async () => {
  const p = await oidcProject();
  const other = await oidcProject();
  const otherTokens = await signIn(new Browser(), other);
  const browser = new Browser();
  const mine = await signIn(browser, p);
  const [h, , s] = mine.id_token.split(".");
  const forgedBody = btoa(JSON.stringify({ ...payloadOf(mine.id_token), sub: "someone" }))
    .replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const hints = {
    forged: `${h}.${forgedBody}.${s}`,
    "other project": otherTokens.id_token,
    "access token": mine.access_token,
  };
  for (const [what, hint] of Object.entries(hints)) {
    const tokens = await signIn(browser, p, { prompt: "login" });
    // A hint that proves nothing is no hint: the user confirms.
    const out = await browser.confirmLogout(
      `/logout?${new URLSearchParams({
        id_token_hint: hint,
        client_id: p.clientId,
        post_logout_redirect_uri: LOGOUT_URI,
        state: "x",
      })}`,
    );
    assert.equal(out.status, 400, what);
    assert.equal(out.headers.get("location"), null, what);
    await out.body?.cancel();
    assert.equal((await refreshStatus(p.clientId, tokens.refresh_token)).status, 400, what);
    assert.equal((await authorizeOidc(browser, p.clientId)).res.status, 200, what);
  }
  // The other project's session was not touched.
  assert.equal((await refreshStatus(other.clientId, otherTokens.refresh_token)).status, 200);

  // An expired ID token, from a service whose tokens live one second. The project and its user are set up
  // first by a service with the usual lifetime: an admin token of one second may expire between its grant
  // and its use on a slow machine.
  const iso = await isolatedDatabase();
  const setup = await startWith(iso.env);
  let created: CreatedProject;
  try {
    created = (await oidcProjectOn(setup.url, "expiring")).created;
    await addUserOn(setup.url, created);
  } finally {
    await setup.close();
  }
  const svc = await startWith({ ...iso.env, ACCESS_TOKEN_TTL: "1" });
  try {
    const base = svc.url;
    // The expiry check itself is the service's; a token of this service one second old is refused as a hint.
    const expired = await expiredHint(base, created);
    const out = await fetch(`${base}/logout?${new URLSearchParams({ id_token_hint: expired })}`, {
      redirect: "manual",
    });
    assert.equal(out.status, 400);
    assert.match(await out.text(), /expired/);
  } finally {
    await svc.close();
    await iso.drop();
  }
});

type CreatedProject = { id: string; admin_client: { client_id: string; client_secret: string } };

/** On a service of the test's own (raw HTTP): a project with the redirect and post-logout URIs, and the system token. */
async function oidcProjectOn(
  base: string,
  name: string,
): Promise<{ created: CreatedProject; bearer: Record<string, string> }> {
  const system = await fetch(`${base}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: `Basic ${btoa("system-admin:test-bootstrap-secret-that-is-long-enough-0001")}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  }).then((r) => r.json());
  const bearer = { authorization: `Bearer ${system.access_token}`, "content-type": "application/json" };
  const created = await fetch(`${base}/api/v1/projects`, {
    method: "POST",
    headers: bearer,
    body: JSON.stringify({ name, redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: [LOGOUT_URI] }),
  }).then((r) => r.json());
  assert.ok(created.id, JSON.stringify(created));
  return { created, bearer };
}

/** Signs the project's user in (raw HTTP, no jar needed) and waits until the ID token expired. */
async function expiredHint(base: string, created: CreatedProject): Promise<string> {
  const idToken = await signInOn(base, created);
  await new Promise((r) => setTimeout(r, 2100));
  return idToken;
}

/** Creates a user in the project of another service and signs them in there (raw HTTP): their ID token. */
async function idTokenOn(base: string, created: CreatedProject): Promise<string> {
  await addUserOn(base, created);
  return await signInOn(base, created);
}

/** The project's user e@example.com, created with its admin client's token. */
async function addUserOn(base: string, created: CreatedProject): Promise<void> {
  const admin = await fetch(`${base}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: `Basic ${
        btoa(`${created.admin_client.client_id}:${created.admin_client.client_secret}`)
      }`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  }).then((r) => r.json());
  const user = await fetch(`${base}/api/v1/projects/${created.id}/users`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin.access_token}`, "content-type": "application/json" },
    body: JSON.stringify({ display_name: "E", email: "e@example.com", password: "correct horse battery" }),
  }).then((r) => r.json());
  assert.ok(user.id, JSON.stringify(user));
}

/** Signs e@example.com in to the project through the login page and returns the ID token. */
async function signInOn(base: string, created: CreatedProject): Promise<string> {
  const verifier = newVerifier();
  const page = await fetch(
    `${base}/authorize?${new URLSearchParams({
      client_id: created.admin_client.client_id,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      scope: "openid",
    })}`,
  );
  const html = await page.text();
  const cookie = page.headers.getSetCookie().map((l) => l.split(";")[0]).join("; ");
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const login = await fetch(`${base}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      request_id: field("request_id"),
      csrf: field("csrf"),
      email: "e@example.com",
      password: "correct horse battery",
    }),
  });
  const code = new URL(login.headers.get("location")!).searchParams.get("code")!;
  const tokens = await fetch(`${base}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: created.admin_client.client_id,
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    }),
  }).then((r) => r.json());
  assert.ok(tokens.id_token, JSON.stringify(tokens));
  return tokens.id_token;
}

test("an id_token_hint signed by a key revoked since proves nothing: the browser is signed out, not sent back", async () => {
  // Revoking a signing key acts on the whole service: a service of its own.
  const iso = await isolatedDatabase();
  const svc = await startWith(iso.env);
  try {
    const base = svc.url;
    const { created, bearer } = await oidcProjectOn(base, "revoked hint");
    const hint = await idTokenOn(base, created);
    const logout = () =>
      fetch(
        `${base}/logout?${new URLSearchParams({
          id_token_hint: hint,
          post_logout_redirect_uri: LOGOUT_URI,
          state: "s",
        })}`,
        { redirect: "manual" },
      );
    // While its key signs, the hint is trusted: the browser goes back to the application.
    const trusted = await logout();
    assert.equal(trusted.status, 303);
    assert.equal(trusted.headers.get("location"), `${LOGOUT_URI}?state=s`);
    await trusted.body?.cancel();

    const kid = JSON.parse(atob(hint.split(".")[0].replace(/-/g, "+").replace(/_/g, "/"))).kid;
    const revoked = await fetch(`${base}/api/v1/keys/${kid}/revoke`, { method: "POST", headers: bearer });
    assert.equal(revoked.status, 200, await revoked.clone().text());
    await revoked.body?.cancel();

    const refused = await logout();
    assert.equal(refused.status, 400);
    assert.equal(refused.headers.get("location"), null);
    assert.match(await refused.text(), /could not be verified/);
  } finally {
    await svc.close();
    await iso.drop();
  }
});

test("post_logout_redirect_uris follow the redirect URI rules and change only by a caller covering the project", async () => {
  const p = await oidcProject();
  for (
    const uri of ["http://example.com/out", "https://app.example/out#f", "https://app.example/out?state=1"]
  ) {
    await expectError(
      p.api.projects.updateProject(p.project.id, { name: p.project.name, post_logout_redirect_uris: [uri] }),
      400,
      "invalid_params",
    );
  }
  const editor = await clientWith(p, ["projects:update", "projects:read"]);
  await expectError(
    editor.api.projects.updateProject(p.project.id, {
      name: "Renamed",
      post_logout_redirect_uris: ["https://attacker.example/out"],
    }),
    403,
    "insufficient_permission",
  );
  const same = await editor.api.projects.updateProject(p.project.id, {
    name: "Renamed",
    post_logout_redirect_uris: [LOGOUT_URI],
  });
  assert.deepEqual(same.post_logout_redirect_uris, [LOGOUT_URI]);
  const changed = await p.api.projects.updateProject(p.project.id, {
    name: "Renamed",
    post_logout_redirect_uris: [LOGOUT_URI, "https://app.example/out"],
  });
  assert.equal(changed.post_logout_redirect_uris.length, 2);
});

test("a link to /logout from anywhere only asks: the sign-out needs this browser's confirmation token", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const tokens = await signIn(browser, p);
  // What another site can make the browser do: follow a link, or post a form without the token.
  for (const asked of [await browser.get("/logout"), await browser.post("/logout", {})]) {
    assert.equal(asked.status, 200);
    const html = await asked.text();
    assert.match(html, /Sign out\?/);
    assert.match(asked.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
  }
  // A token of another browser, or a made-up one, asks again.
  const other = new Browser();
  await signIn(other, p, { prompt: "login" });
  const otherPage = await (await other.get("/logout")).text();
  const otherToken = /name="confirmation" value="([^"]+)"/.exec(otherPage)![1];
  for (const confirmation of [otherToken, "x".repeat(43)]) {
    const res = await browser.post("/logout", { confirmation });
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /Sign out\?/);
    assert.match(html, /This sign-out page was for another sign-in/);
  }
  // A project this browser is not signed in to has nothing to confirm, and nothing of this one ends.
  const elsewhere = await oidcProject();
  const nothing = await browser.get(`/logout?${new URLSearchParams({ client_id: elsewhere.clientId })}`);
  assert.equal(nothing.status, 200);
  assert.match(await nothing.text(), /there was no session to end/);
  assert.equal(await currentUserStatus(tokens.access_token), 200, "nothing was ended");
  const silent = await authorizeOidc(browser, p.secondClientId, { prompt: "none" });
  assert.ok(new URL(silent.res.headers.get("location")!).searchParams.get("code"), "still signed in");

  // The user's own confirmation signs out.
  const done = await browser.confirmLogout("/logout");
  assert.equal(done.status, 200);
  assert.match(await done.text(), /You are signed out\./);
  assert.equal(await currentUserStatus(tokens.access_token), 401);
});
