/**
 * The request log: one line per request with its id, method, route pattern, status, duration and the
 * authenticated caller; never a token, secret, password or code. LOG_LEVEL decides what is written (debug adds
 * each database statement's text and duration, never its parameters); LOG_FORMAT=pretty writes short lines.
 */
import assert from "node:assert/strict";
import {
  ADMIN_SECRET,
  basic,
  challengeOf,
  DATABASE_ENV,
  DATABASE_URL,
  newVerifier,
  REDIRECT_URI,
  startWith,
  test,
} from "./helpers.ts";

type Line = Record<string, unknown>;

/** A service of its own whose log this test reads. */
async function loggedService(env: Record<string, string>) {
  let text = "";
  const dir = DATABASE_URL ? undefined : await Deno.makeTempDir({ prefix: "acs-log-" });
  const svc = await startWith({ ...(dir ? { DATA_DIR: dir } : DATABASE_ENV), ...env }, {
    write: (lines) => text += lines,
  });
  return {
    url: svc.url,
    /** Closes the service (which writes what the log gathered) and returns its log. */
    finish: async () => {
      await svc.close();
      if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
      return text;
    },
  };
}

const form = (body: Record<string, string>, headers: Record<string, string> = {}) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
  body: new URLSearchParams(body).toString(),
});

async function json(res: Response) {
  const body = await res.json();
  return { status: res.status, body };
}

test("the request log has one line per request with its route pattern and caller, and no secret", async () => {
  const svc = await loggedService({ LOG_LEVEL: "info" });
  const url = svc.url;
  const secrets: string[] = [ADMIN_SECRET];
  let text = "";
  try {
    const requests: { method: string; route: string; status: number; id?: string }[] = [];
    const call = async (
      method: string,
      route: string,
      path: string,
      init: RequestInit = {},
    ): Promise<Response> => {
      const res = await fetch(`${url}${path}`, { method, redirect: "manual", ...init });
      requests.push({ method, route, status: res.status, id: res.headers.get("x-request-id") ?? undefined });
      return res;
    };

    // A token, and a project with a user who logs in.
    const system = await json(
      await call(
        "POST",
        "/api/v1/tokens",
        "/api/v1/tokens",
        form({ grant_type: "client_credentials" }, {
          authorization: basic("system-admin", ADMIN_SECRET),
          "x-request-id": "script-1.token",
        }),
      ),
    );
    assert.equal(system.status, 200);
    const bearer = (token: string) => ({
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
    });
    secrets.push(system.body.access_token);
    const created = await json(
      await call("POST", "/api/v1/projects", "/api/v1/projects", {
        headers: bearer(system.body.access_token),
        body: JSON.stringify({ name: "logged", redirect_uris: [REDIRECT_URI] }),
      }),
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const projectId: string = created.body.id;
    const clientId: string = created.body.admin_client.client_id;
    secrets.push(created.body.admin_client.client_secret);
    const admin = await json(
      await call(
        "POST",
        "/api/v1/tokens",
        "/api/v1/tokens",
        form({ grant_type: "client_credentials" }, {
          authorization: basic(clientId, created.body.admin_client.client_secret),
        }),
      ),
    );
    secrets.push(admin.body.access_token);
    const password = "a password nobody logs";
    secrets.push(password);
    const user = await json(
      await call("POST", "/api/v1/projects/:project_id/users", `/api/v1/projects/${projectId}/users`, {
        headers: bearer(admin.body.access_token),
        body: JSON.stringify({ display_name: "Logged", email: "logged@example.com", password }),
      }),
    );
    assert.equal(user.status, 201, JSON.stringify(user.body));

    // A failed login, then one that succeeds, and the code's exchange.
    const verifier = newVerifier();
    secrets.push(verifier);
    const authorize = `/authorize?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      state: "state-in-the-query-string",
    })}`;
    const page = await call("GET", "/authorize", authorize);
    const html = await page.text();
    const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
    const login = (pw: string) =>
      call(
        "POST",
        "/authorize",
        "/authorize",
        form({
          request_id: field("request_id"),
          csrf: field("csrf"),
          email: "logged@example.com",
          password: pw,
        }, {
          cookie,
        }),
      );
    secrets.push("the-wrong-password-1", field("csrf"));
    const failed = await login("the-wrong-password-1");
    assert.equal(failed.status, 400);
    await failed.body?.cancel();
    const signedIn = await login(password);
    assert.equal(signedIn.status, 303, await signedIn.text());
    const code = new URL(signedIn.headers.get("location")!).searchParams.get("code")!;
    secrets.push(code);
    const tokens = await json(
      await call(
        "POST",
        "/api/v1/tokens",
        "/api/v1/tokens",
        form({
          grant_type: "authorization_code",
          client_id: clientId,
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        }),
      ),
    );
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    secrets.push(tokens.body.access_token, tokens.body.refresh_token);

    // A 401 with a made-up token, a gated read (with a query), the user's own read, and no route at all.
    const madeUp = `made-up-token-${crypto.randomUUID()}`;
    secrets.push(madeUp, "needle-in-the-query");
    const refused = await call(
      "GET",
      "/api/v1/projects/:project_id/users",
      `/api/v1/projects/${projectId}/users`,
      {
        headers: bearer(madeUp),
      },
    );
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
    const read = await call(
      "GET",
      "/api/v1/projects/:project_id/users",
      `/api/v1/projects/${projectId}/users?search=needle-in-the-query`,
      { headers: { ...bearer(admin.body.access_token), "x-request-id": "not a sane id" } },
    );
    assert.equal(read.status, 200);
    await read.body?.cancel();
    const me = await call("GET", "/api/v1/users/current", "/api/v1/users/current", {
      headers: bearer(tokens.body.access_token),
    });
    assert.equal(me.status, 200);
    await me.body?.cancel();
    const nowhere = await call("GET", "/api/*", "/api/v1/nowhere");
    assert.equal(nowhere.status, 404);
    await nowhere.body?.cancel();

    text = await svc.finish();
    const lines = text.trim().split("\n").map((l) => JSON.parse(l) as Line);
    const logged = lines.filter((l) => l.msg === "request");
    assert.equal(logged.length, requests.length, text);
    for (const [i, r] of requests.entries()) {
      const l = logged[i];
      assert.equal(l.level, "info");
      assert.match(String(l.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(l.method, r.method);
      assert.equal(l.route, r.route, JSON.stringify(l));
      assert.equal(l.status, r.status, JSON.stringify(l));
      assert.equal(l.request_id, r.id, "the id the answer carried");
      assert.equal(typeof l.duration_ms, "number");
    }
    assert.equal(logged[0].request_id, "script-1.token", "a sane X-Request-ID is kept");
    assert.deepEqual(
      [logged[0].project, logged[0].client, logged[0].user],
      ["system", "system-admin", undefined],
      "the token endpoint names the client it authenticated",
    );
    const at = (route: string, status: number) =>
      logged.filter((l) => l.route === route && l.status === status);
    assert.deepEqual(
      at("/api/v1/projects/:project_id/users", 401).map((l) => [l.project, l.client, l.user]),
      [[undefined, undefined, undefined]],
      "an unauthenticated caller is nobody",
    );
    const gated = at("/api/v1/projects/:project_id/users", 200)[0];
    assert.deepEqual([gated.project, gated.client, gated.user], [projectId, clientId, undefined]);
    assert.match(String(gated.request_id), /^[0-9a-f-]{36}$/, "an insane X-Request-ID is replaced");
    const own = at("/api/v1/users/current", 200)[0];
    assert.deepEqual([own.project, own.client, own.user], [projectId, clientId, user.body.id]);
    assert.equal(at("/authorize", 400).length, 1, "the failed login");
    for (const secret of secrets) {
      assert.ok(secret && !text.includes(secret), `the log holds a secret: ${secret}`);
    }
    assert.doesNotMatch(text, /state-in-the-query-string|\?/, "no query string");
    assert.doesNotMatch(text, new RegExp(projectId + "/"), "no raw path");
  } finally {
    if (!text) await svc.finish().catch(() => {});
  }
});

test("LOG_LEVEL=debug adds each statement's text and duration, never its parameters; warn has no request lines", async () => {
  const marker = `needle-${crypto.randomUUID()}`;
  const debug = await loggedService({ LOG_LEVEL: "debug" });
  const res = await fetch(
    `${debug.url}/api/v1/tokens`,
    form({ grant_type: "client_credentials" }, {
      authorization: basic(marker, "not-the-secret-of-anything-at-all"),
    }),
  );
  assert.equal(res.status, 401);
  await res.body?.cancel();
  const text = await debug.finish();
  const lines = text.trim().split("\n").map((l) => JSON.parse(l) as Line);
  const statements = lines.filter((l) => l.msg === "statement");
  assert.ok(statements.length > 0, text);
  for (const s of statements) {
    assert.equal(s.level, "debug");
    assert.equal(typeof s.duration_ms, "number");
    assert.equal(typeof s.statement, "string");
  }
  assert.ok(statements.some((s) => /from clients/.test(String(s.statement))), "the client's lookup");
  assert.doesNotMatch(text, new RegExp(marker), "no parameter");
  assert.doesNotMatch(text, /not-the-secret-of-anything/);
  assert.equal(lines.filter((l) => l.msg === "request").length, 1);

  const quiet = await loggedService({ LOG_LEVEL: "warn" });
  const again = await fetch(`${quiet.url}/healthz`);
  await again.body?.cancel();
  assert.doesNotMatch(await quiet.finish(), /"request"|"statement"/);
});

test("LOG_FORMAT=pretty writes one readable line per request", async () => {
  const svc = await loggedService({ LOG_LEVEL: "info", LOG_FORMAT: "pretty" });
  const res = await fetch(`${svc.url}/healthz`, { headers: { "x-request-id": "pretty-1" } });
  await res.body?.cancel();
  const text = await svc.finish();
  assert.match(text, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}GET \/healthz 200 [\d.]+ms id=pretty-1$/m, text);
});

test("the request log's line of an unregistered redirect URI's page carries its reason, not the URI", async () => {
  const svc = await loggedService({ LOG_LEVEL: "info" });
  let text = "";
  try {
    const system = await json(
      await fetch(
        `${svc.url}/api/v1/tokens`,
        form({ grant_type: "client_credentials" }, { authorization: basic("system-admin", ADMIN_SECRET) }),
      ),
    );
    const created = await json(
      await fetch(`${svc.url}/api/v1/projects`, {
        method: "POST",
        headers: { authorization: `Bearer ${system.body.access_token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "logged", redirect_uris: [REDIRECT_URI] }),
      }),
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const clientId: string = created.body.admin_client.client_id;
    const get = async (path: string, id: string) => {
      const res = await fetch(`${svc.url}${path}`, { redirect: "manual", headers: { "x-request-id": id } });
      await res.body?.cancel();
      return res.status;
    };
    const authorize = async (redirectUri: string) =>
      `/authorize?${new URLSearchParams({
        client_id: clientId,
        redirect_uri: redirectUri,
        response_type: "code",
        code_challenge: await challengeOf(newVerifier()),
        code_challenge_method: "S256",
      })}`;
    assert.equal(await get(await authorize("https://needle.example/cb"), "bad-redirect"), 400);
    assert.equal(await get(await authorize(REDIRECT_URI), "good-redirect"), 200);
    const logout = `/logout?${new URLSearchParams({
      client_id: clientId,
      post_logout_redirect_uri: "https://needle.example/out",
    })}`;
    assert.equal(await get(logout, "bad-logout"), 400);

    text = await svc.finish();
    const lines = text.trim().split("\n").map((l) => JSON.parse(l) as Line);
    const line = (id: string) => lines.find((l) => l.msg === "request" && l.request_id === id)!;
    assert.deepEqual(
      [line("bad-redirect").route, line("bad-redirect").status, line("bad-redirect").reason],
      ["/authorize", 400, "redirect_uri_not_registered"],
    );
    assert.equal(line("good-redirect").reason, undefined);
    assert.deepEqual(
      [line("bad-logout").route, line("bad-logout").status, line("bad-logout").reason],
      ["/logout", 400, "post_logout_redirect_uri_not_registered"],
    );
    assert.doesNotMatch(text, /needle/, "the received URI stays out of the log");
  } finally {
    if (!text) await svc.finish().catch(() => {});
  }
});
