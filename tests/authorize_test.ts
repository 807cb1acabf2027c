/** GET/POST /authorize: every error path, the login page's headers, CSRF binding, throttling, the redirect. */
import assert from "node:assert/strict";
import {
  challengeOf,
  exchangeCode,
  expectOAuthError,
  http,
  loginProject,
  newProject,
  newVerifier,
  openLoginPage,
  REDIRECT_URI,
  sdk,
  service,
  submitLogin,
  systemToken,
  test,
} from "./helpers.ts";

async function validQuery(clientId: string, extra: Record<string, string> = {}) {
  return {
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(newVerifier()),
    code_challenge_method: "S256",
    state: "st ate/&=",
    ...extra,
  };
}

test("GET /authorize shows the login page with its security headers", async () => {
  const p = await loginProject();
  const page = await openLoginPage(await validQuery(p.clientId));
  assert.equal(page.status, 200);
  const h = page.headers;
  assert.match(h.get("content-type") ?? "", /^text\/html/);
  assert.match(h.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
  assert.match(h.get("content-security-policy") ?? "", /default-src 'none'/);
  assert.match(h.get("content-security-policy") ?? "", /form-action 'self' http:\/\/127\.0\.0\.1:9/);
  assert.equal(h.get("x-frame-options"), "DENY");
  assert.equal(h.get("referrer-policy"), "no-referrer");
  assert.equal(h.get("cache-control"), "no-store");
  assert.match(
    h.get("set-cookie") ?? "",
    /acs_browser=[A-Za-z0-9_-]{43}; Max-Age=86400; Path=\/authorize; HttpOnly; SameSite=Lax/,
  );
  assert.match(page.html, /<input id="email" name="email" type="email"/);
  assert.match(page.html, /<input id="password" name="password" type="password"/);
  assert.match(page.html, /<label for="email">/);
  assert.match(page.html, new RegExp(p.project.name));
  // The only script is the service's own passkey script, loaded from this origin (no inline script).
  assert.doesNotMatch(
    page.html,
    /<script(?! src="\/passkey\.js" defer><\/script>)|https?:\/\/(?!127\.0\.0\.1)/,
    "no inline script, no third-party asset",
  );
  assert.match(page.requestId, /^[A-Za-z0-9_-]{43}$/);
  assert.match(page.csrf, /^[A-Za-z0-9_-]{43}$/);
});

test("GET /authorize: an untrusted client or redirect URI shows an error page and never redirects", async () => {
  const p = await loginProject();
  const inactive = await p.api.clients.createClient(p.project.id, { name: "off", is_active: false });
  const off = await newProject({ redirect_uris: [REDIRECT_URI] });
  await (await sdk(await systemToken())).projects.updateProject(off.project.id, {
    name: "off",
    is_active: false,
  });
  const cases: Record<string, string>[] = [
    { ...(await validQuery(p.clientId)), client_id: "no-such-client" },
    { ...(await validQuery(p.clientId)), client_id: "" },
    await validQuery(inactive.id),
    await validQuery(off.clientId),
    { ...(await validQuery(p.clientId)), redirect_uri: "http://127.0.0.1:9/other" },
    { ...(await validQuery(p.clientId)), redirect_uri: `${REDIRECT_URI}/` },
    { ...(await validQuery(p.clientId)), redirect_uri: "HTTP://127.0.0.1:9/callback" },
    { ...(await validQuery(p.clientId)), redirect_uri: "" },
  ];
  for (const q of cases) {
    const res = await http(`/authorize?${new URLSearchParams(q)}`, { redirect: "manual" });
    assert.equal(res.status, 400, JSON.stringify(q));
    assert.equal(res.headers.get("location"), null);
    assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
    assert.match(await res.text(), /Sign-in problem/);
  }
  const missing = new URLSearchParams(await validQuery(p.clientId));
  missing.delete("redirect_uri");
  assert.equal((await http(`/authorize?${missing}`, { redirect: "manual" })).status, 400);
});

test("GET /authorize: other errors redirect with error, error_description, state and iss", async () => {
  const p = await loginProject();
  const url = (await service()).url;
  const cases: [Record<string, string>, string][] = [
    [{ response_type: "token" }, "unsupported_response_type"],
    [{ response_type: "" }, "invalid_request"],
    [{ code_challenge_method: "plain" }, "invalid_request"],
    [{ code_challenge_method: "" }, "invalid_request"],
    [{ code_challenge: "" }, "invalid_request"],
    [{ code_challenge: "too-short" }, "invalid_request"],
  ];
  for (const [change, error] of cases) {
    const q = new URLSearchParams({ ...(await validQuery(p.clientId)), ...change });
    for (const [k, v] of Object.entries(change)) if (v === "") q.delete(k);
    const res = await http(`/authorize?${q}`, { redirect: "manual" });
    assert.equal(res.status, 302, JSON.stringify(change));
    const location = new URL(res.headers.get("location")!);
    assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
    assert.equal(location.searchParams.get("error"), error, JSON.stringify(change));
    assert.ok(location.searchParams.get("error_description"));
    assert.equal(location.searchParams.get("state"), "st ate/&=");
    assert.equal(location.searchParams.get("iss"), url);
    assert.equal(location.searchParams.get("code"), null);
  }
  const repeated = `${new URLSearchParams(await validQuery(p.clientId))}&code_challenge_method=S256`;
  const res = await http(`/authorize?${repeated}`, { redirect: "manual" });
  assert.equal(new URL(res.headers.get("location")!).searchParams.get("error"), "invalid_request");
});

test("a successful login redirects (303) with code, state and iss, keeping the redirect URI's own query", async () => {
  const uri = "http://localhost:9/cb?tenant=a%20b&x=1";
  const p = await newProject({ redirect_uris: [uri] });
  await p.api.users.createUser(p.project.id, {
    display_name: "Q",
    email: "q@example.com",
    password: "12345678",
  });
  const page = await openLoginPage({
    ...(await validQuery(p.clientId)),
    redirect_uri: uri,
    state: "a+b c%/é",
  });
  const res = await submitLogin(page, "  Q@Example.com ", "12345678");
  assert.equal(res.status, 303);
  const location = res.headers.get("location")!;
  assert.ok(location.startsWith(`${uri}&code=`), location);
  const parsed = new URL(location);
  assert.equal(parsed.searchParams.get("state"), "a+b c%/é");
  assert.equal(parsed.searchParams.get("iss"), (await service()).url);
  assert.match(parsed.searchParams.get("code")!, /^[A-Za-z0-9_-]{43}$/);
  // Without state, no state comes back.
  const q = await validQuery(p.clientId, { redirect_uri: uri });
  delete (q as Record<string, string>).state;
  const again = await submitLogin(await openLoginPage(q), "q@example.com", "12345678");
  assert.equal(new URL(again.headers.get("location")!).searchParams.has("state"), false);
});

test("a failed login says only 'Invalid email or password': wrong password, unknown email, inactive user, blanks", async () => {
  const p = await loginProject();
  const inactive = await p.api.users.createUser(p.project.id, {
    display_name: "off",
    email: "off@example.com",
    password: "12345678",
    is_active: false,
  });
  assert.equal(inactive.is_active, false);
  for (
    const [email, password] of [
      [p.email, "wrong password"],
      ["nobody@example.com", p.password],
      ["off@example.com", "12345678"],
      ["", p.password],
      [p.email, ""],
    ]
  ) {
    const page = await openLoginPage(await validQuery(p.clientId));
    const res = await submitLogin(page, email, password);
    assert.equal(res.status, 400, email);
    const html = await res.text();
    assert.match(html, /role="alert" id="error">Invalid email or password\./);
    assert.match(html, /name="request_id"/, "the form is shown again");
  }
});

test("the login form's CSRF token is bound to its page and to the browser's cookie", async () => {
  const p = await loginProject();
  const a = await openLoginPage(await validQuery(p.clientId));
  const b = await openLoginPage(await validQuery(p.clientId));
  const refused = async (res: Response) => {
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null);
    assert.match(await res.text(), /expired or was not opened in this browser/);
  };
  await refused(await submitLogin({ ...a, cookie: "" }, p.email, p.password));
  await refused(await submitLogin({ ...a, cookie: b.cookie }, p.email, p.password));
  await refused(await submitLogin({ ...a, csrf: b.csrf }, p.email, p.password));
  await refused(await submitLogin({ ...a, requestId: b.requestId }, p.email, p.password));
  const ok = await submitLogin(a, p.email, p.password);
  assert.equal(ok.status, 303);
  // A page works once.
  await refused(await submitLogin(a, p.email, p.password));
  const plain = await http("/authorize", {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: "x",
  });
  assert.equal(plain.status, 400);
});

test("repeated failures for one account are throttled with 429 and Retry-After, the counters in the database", async () => {
  const p = await loginProject();
  for (let i = 0; i < 5; i++) {
    const res = await submitLogin(
      await openLoginPage(await validQuery(p.clientId)),
      p.email.toUpperCase(),
      "wrong",
    );
    assert.equal(res.status, 400);
    await res.body?.cancel();
  }
  // Even the right password waits now.
  const res = await submitLogin(await openLoginPage(await validQuery(p.clientId)), p.email, p.password);
  assert.equal(res.status, 429);
  assert.ok(Number(res.headers.get("retry-after")) >= 1);
  assert.match(await res.text(), /Too many failed attempts/);
  const { db } = await service();
  const [row] = await db.sql<
    { failures: number }[]
  >`select failures from login_failures where key = ${`account:${p.project.id}:${p.email}`}`;
  assert.equal(row.failures, 5, "an attempt answered 429 is not counted");
  // After the delay passes (moved back in the database rather than waited for), the right password works
  // and clears the count.
  await db
    .sql`update login_failures set last_failed_at = now() - interval '1 hour' where key = ${`account:${p.project.id}:${p.email}`}`;
  const ok = await submitLogin(await openLoginPage(await validQuery(p.clientId)), p.email, p.password);
  assert.equal(ok.status, 303);
  assert.equal(
    (await db.sql`select 1 from login_failures where key = ${`account:${p.project.id}:${p.email}`}`).length,
    0,
  );
});

test("an address with 100 failures in 10 minutes is throttled, whatever the account", async () => {
  const p = await loginProject();
  const { db } = await service();
  const key = "address:127.0.0.1";
  const [before] = await db
    .sql`select failures, window_started_at, last_failed_at from login_failures where key = ${key}`;
  await db.sql`insert into login_failures (key, failures) values (${key}, 100)
    on conflict (key) do update set failures = 100, window_started_at = now()`;
  try {
    const res = await submitLogin(await openLoginPage(await validQuery(p.clientId)), p.email, p.password);
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get("retry-after")) > 500);
    await res.body?.cancel();
  } finally {
    if (before) {
      await db
        .sql`update login_failures set failures = ${before.failures}, window_started_at = ${before.window_started_at},
        last_failed_at = ${before.last_failed_at} where key = ${key}`;
    } else await db.sql`delete from login_failures where key = ${key}`;
  }
});

test("a user deactivated between login and code exchange gets no tokens", async () => {
  const p = await loginProject();
  const { authorizationCode } = await import("./helpers.ts");
  const { code, verifier } = await authorizationCode(p);
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "x",
    is_active: false,
    email: p.email,
  });
  await expectOAuthError(
    await exchangeCode(p.clientId, code, verifier),
    400,
    "invalid_grant",
    "invalid_authorization_code",
  );
});

test("parallel guesses are counted before the password is checked: at most 5 get through", async () => {
  const p = await loginProject();
  const page = await openLoginPage(await validQuery(p.clientId));
  const results = await Promise.all(
    Array.from({ length: 30 }, () => submitLogin(page, p.email, "wrong guess")),
  );
  const statuses = results.map((r) => r.status);
  await Promise.all(results.map((r) => r.body?.cancel()));
  assert.equal(statuses.filter((s) => s === 400).length, 5, statuses.join(","));
  assert.equal(statuses.filter((s) => s === 429).length, 25);
});

test("the login page's form-action allows an IPv6 loopback redirect by scheme, which browsers can parse", async () => {
  const uri = "http://[::1]:9/cb";
  const p = await newProject({ redirect_uris: [uri] });
  const page = await openLoginPage(await validQuery(p.clientId, { redirect_uri: uri }));
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-security-policy") ?? "", /form-action 'self' http:;/);
});

test("POST /authorize refuses a body over 16 KiB with a page, before reading it", async () => {
  const res = await http("/authorize", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `email=${"x".repeat(20_000)}`,
  });
  assert.equal(res.status, 413);
  assert.match(await res.text(), /too large/);
});

test("GET /authorize: an over-long state is refused and not echoed; a NUL byte gets the error page", async () => {
  const p = await loginProject();
  const res = await http(
    `/authorize?${new URLSearchParams(await validQuery(p.clientId, { state: "s".repeat(1025) }))}`,
    {
      redirect: "manual",
    },
  );
  const location = new URL(res.headers.get("location")!);
  assert.equal(location.searchParams.get("error"), "invalid_request");
  assert.equal(location.searchParams.has("state"), false);
  const nul = await http(
    `/authorize?${new URLSearchParams(await validQuery(p.clientId, { state: "a\u0000b" }))}`,
    {
      redirect: "manual",
    },
  );
  assert.equal(nul.status, 400);
  assert.match(nul.headers.get("content-type") ?? "", /^text\/html/);
  await nul.body?.cancel();
});

test("a redirect URI removed from the project after the page was opened gets no code", async () => {
  const p = await loginProject();
  const page = await openLoginPage(await validQuery(p.clientId));
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    redirect_uris: ["https://elsewhere.example/cb"],
  });
  const res = await submitLogin(page, p.email, p.password);
  assert.equal(res.status, 400);
  assert.equal(res.headers.get("location"), null);
  assert.match(await res.text(), /no longer registered/);
});

test("expired login pages, codes and revocations are purged", async () => {
  const p = await loginProject();
  const page = await openLoginPage(await validQuery(p.clientId));
  const { db } = await service();
  await db
    .sql`update authorization_requests set expires_at = now() - interval '2 hours' where id = ${page.requestId}`;
  const { purgeExpired } = await import("../db/system/maintenance.ts");
  assert.ok(await purgeExpired(db.sql) >= 1);
  assert.equal((await db.sql`select 1 from authorization_requests where id = ${page.requestId}`).length, 0);
});
