/**
 * The audit trail: each admin write records exactly one event, in its transaction, with the actor, the request
 * and the diff; refused writes record none; secrets never appear; security facts are events of their own; the
 * trail is read by filters and stable cursors, or exported as NDJSON.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../config.ts";
import { jobsOf } from "../jobs.ts";
import { keySettings } from "../service.ts";
import { TokenService } from "../domain/keys/tokens.ts";
import { spawn } from "./processes.ts";
import {
  ADMIN_SECRET,
  authorizationCode,
  basic,
  clientWith,
  exchangeCode,
  expectError,
  expectOAuthError,
  http,
  isolatedDatabase,
  loginProject,
  newProject,
  openLoginPage,
  permissionIds,
  postToken,
  REDIRECT_URI,
  service,
  submitLogin,
  test,
  type TestProject,
  userTokens,
} from "./helpers.ts";
import { challengeOf, newVerifier } from "./helpers.ts";

type Event = {
  id: string;
  project_id: string;
  occurred_at: string;
  type: string;
  actor: { type: string; id: string | null; token_jti: string | null };
  request: { id: string | null; ip: string | null; user_agent: string | null } | null;
  target: { type: string; id: string | null } | null;
  changes: Record<string, unknown> | null;
  details: Record<string, unknown> | null;
};

async function events(
  p: TestProject,
  query: Record<string, string> = {},
): Promise<{ data: Event[]; next_cursor: string | null }> {
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?${new URLSearchParams(query)}`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json();
}

/** The events recorded while `fn` ran. */
async function during(p: TestProject, fn: () => Promise<unknown>): Promise<Event[]> {
  const before = new Set((await events(p, { limit: "100" })).data.map((e) => e.id));
  await fn();
  return (await events(p, { limit: "100" })).data.filter((e) => !before.has(e.id));
}

const jtiOf = (token: string) =>
  JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).jti;

test("each admin write records exactly one event, with its actor, request and diff", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  let role!: { id: string };
  const created = await during(p, async () => {
    role = await p.api.roles.createRole(p.project.id, { code: "clerk", name: "Clerk" });
  });
  assert.equal(created.length, 1);
  const [e] = created;
  assert.equal(e.type, "role.created");
  assert.deepEqual(e.actor, { type: "client", id: p.clientId, token_jti: jtiOf(p.token) });
  assert.deepEqual(e.target, { type: "role", id: role.id });
  assert.equal(e.request?.ip, "127.0.0.1");
  assert.ok(e.request?.id);
  assert.match(e.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/, "UUIDv7");
  const updated = await during(p, () =>
    p.api.roles.updateRole(p.project.id, role.id, {
      code: "clerk",
      name: "Senior clerk",
      permission_ids: [ids["users:read"]],
    }));
  assert.equal(updated.length, 1);
  assert.equal(updated[0].type, "role.updated");
  assert.deepEqual(updated[0].changes, {
    name: { before: "Clerk", after: "Senior clerk" },
    permission_ids: { before: [], after: [ids["users:read"]] },
  });
  // Activation state is in the type.
  const client = await p.api.clients.createClient(p.project.id, { name: "job" });
  const off = await during(
    p,
    () => p.api.clients.updateClient(p.project.id, client.id, { name: "job", is_active: false }),
  );
  assert.deepEqual(off.map((x) => [x.type, x.changes]), [["client.deactivated", {
    is_active: { before: true, after: false },
  }]]);
  const rotated = await during(p, () => p.api.clients.rotateClientSecret(p.project.id, client.id));
  assert.deepEqual(rotated.map((x) => [x.type, x.changes]), [["client.secret_rotated", {
    client_secret: "changed",
  }]]);
  const user = await p.api.users.createUser(p.project.id, {
    display_name: "U",
    email: "u@example.com",
    password: "first password",
  });
  const pw = await during(p, () =>
    p.api.users.updateUser(p.project.id, user.id, {
      display_name: "U2",
      is_active: true,
      email: "u@example.com",
      password: "second password",
    }));
  assert.deepEqual(pw.map((x) => [x.type, x.changes]), [["user.updated", {
    display_name: { before: "U", after: "U2" },
    password: "changed",
  }]]);
  const project = await during(p, () => p.api.projects.updateProject(p.project.id, { name: "Renamed" }));
  assert.deepEqual(project.map((x) => x.type), ["project.updated"]);
  const resource = await during(
    p,
    () =>
      p.api.resources.createResource(p.project.id, {
        name: "Orders",
        code: "orders",
        permissions: [{ name: "R", code: "read" }],
      }),
  );
  assert.deepEqual(resource.map((x) => x.type), ["resource.created"]);
});

test("a refused write records nothing; secrets, hashes and tokens never appear in the trail", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const narrow = await clientWith(p, ["roles:create"]);
  const refused = await during(p, async () => {
    await expectError(
      narrow.api.roles.createRole(p.project.id, {
        code: "x",
        name: "x",
        permission_ids: [ids["users:update"]],
      }),
      403,
      "insufficient_permission",
    );
    await expectError(
      p.api.roles.createRole(p.project.id, { code: "bad code!", name: "x" }),
      400,
      "invalid_params",
    );
    await p.api.roles.createRole(p.project.id, { code: "dup", name: "x" });
    await expectError(
      p.api.roles.createRole(p.project.id, { code: "DUP", name: "x" }),
      409,
      "role_code_already_used",
    );
  });
  assert.deepEqual(refused.map((e) => e.type), ["role.created"], "only the write that happened");
  const c = await p.api.clients.createClient(p.project.id, { name: "secretive" });
  const r = await p.api.clients.rotateClientSecret(p.project.id, c.id);
  await p.api.users.createUser(p.project.id, {
    display_name: "S",
    email: "s@example.com",
    password: "hunter2 hunter2",
  });
  const { db } = await service();
  const dump = JSON.stringify(await db.sql`select * from audit_events where project_id = ${p.project.id}`);
  for (
    const secret of [c.client_secret, r.client_secret, p.secret, p.token, "hunter2 hunter2", "$argon2id"]
  ) {
    assert.ok(!dump.includes(secret), `the trail does not hold ${secret.slice(0, 12)}…`);
  }
});

test("logins, replays, reuse and revocations are events of their own", async () => {
  const p = await loginProject();
  const page = async () =>
    await openLoginPage({
      client_id: p.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(newVerifier()),
      code_challenge_method: "S256",
    });
  const logins = await during(p, async () => {
    await (await submitLogin(await page(), p.email, "wrong")).body?.cancel();
    await (await submitLogin(await page(), "nobody@example.com", "wrong")).body?.cancel();
  });
  assert.deepEqual(logins.map((e) => [e.type, e.details?.reason]).sort(), [
    ["login.failed", "unknown_email"],
    ["login.failed", "wrong_password"],
  ]);
  const failed = logins.find((e) => e.details?.reason === "wrong_password")!;
  assert.deepEqual(failed.target, { type: "user", id: p.userId });
  assert.equal(failed.details?.email, p.email);
  const { code, verifier } = await authorizationCode(p);
  const facts = await during(p, async () => {
    const ok = await exchangeCode(p.clientId, code, verifier);
    const tokens = await ok.json();
    await expectOAuthError(
      await exchangeCode(p.clientId, code, verifier),
      400,
      "invalid_grant",
      "auth_code_already_used",
    );
    const t = await userTokens(p);
    const refreshed = await postToken({
      grant_type: "refresh_token",
      client_id: p.clientId,
      refresh_token: t.refresh_token,
    });
    await refreshed.body?.cancel();
    await expectOAuthError(
      await postToken({ grant_type: "refresh_token", client_id: p.clientId, refresh_token: t.refresh_token }),
      400,
      "invalid_grant",
      "refresh_token_already_used",
    );
    const t2 = await userTokens(p);
    const revoke = (token: string) =>
      http("/api/v1/tokens/revoke", {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: basic(p.clientId, p.secret),
        },
        body: new URLSearchParams({ token }).toString(),
      });
    await (await revoke(t2.refresh_token)).body?.cancel();
    await (await revoke(tokens.access_token)).body?.cancel();
  });
  const types = facts.map((e) => e.type).sort();
  for (
    const type of [
      "authorization_code.replayed",
      "login.succeeded",
      "refresh_token.reuse_detected",
      "session.revoked",
      "token.revoked",
    ]
  ) {
    assert.ok(types.includes(type), `${type} in ${types}`);
  }
  const replay = facts.find((e) => e.type === "authorization_code.replayed")!;
  assert.deepEqual(replay.actor, { type: "client", id: p.clientId, token_jti: null });
  assert.equal(replay.target?.type, "session");
});

test("GET …/audit-events filters by type, prefix, actor, target and time; cursors are stable and bound to their query", async () => {
  const p = await newProject();
  const roles = [];
  for (let i = 0; i < 5; i++) {
    roles.push(await p.api.roles.createRole(p.project.id, { code: `r${i}`, name: `R${i}` }));
  }
  await p.api.roles.updateRole(p.project.id, roles[0].id, { code: "r0", name: "renamed" });
  await p.api.clients.createClient(p.project.id, { name: "c" });
  assert.deepEqual((await events(p, { type: "role.updated" })).data.map((e) => e.target?.id), [roles[0].id]);
  const prefix = (await events(p, { type: "role.*" })).data;
  assert.equal(prefix.length, 6);
  assert.ok(prefix.every((e) => e.type.startsWith("role.")));
  assert.equal((await events(p, { target_id: roles[2].id })).data.length, 1);
  assert.ok((await events(p, { actor_id: p.clientId })).data.length >= 7);
  // Newest first; since and until bound the window.
  const all = (await events(p, { type: "role.*" })).data;
  assert.deepEqual(all.map((e) => e.occurred_at), [...all.map((e) => e.occurred_at)].sort().reverse());
  const middle = all[3].occurred_at;
  assert.ok((await events(p, { type: "role.*", since: middle })).data.every((e) => e.occurred_at >= middle));
  assert.ok((await events(p, { type: "role.*", until: middle })).data.every((e) => e.occurred_at < middle));
  // Pages by cursor, unchanged when new events arrive meanwhile.
  const first = await events(p, { type: "role.*", limit: "2" });
  assert.equal(first.data.length, 2);
  await p.api.roles.createRole(p.project.id, { code: "late", name: "Late" });
  const second = await events(p, { type: "role.*", limit: "2", cursor: first.next_cursor! });
  assert.deepEqual(second.data.map((e) => e.id), all.slice(2, 4).map((e) => e.id));
  let rest = await events(p, { type: "role.*", limit: "2", cursor: second.next_cursor! });
  const seen = [...first.data, ...second.data, ...rest.data];
  while (rest.next_cursor) {
    rest = await events(p, { type: "role.*", limit: "2", cursor: rest.next_cursor });
    seen.push(...rest.data);
  }
  assert.deepEqual(seen.map((e) => e.id), all.map((e) => e.id), "every event once, none of the newer one");
  // A cursor works only with its project and filters.
  const other = await newProject();
  const bad = (project: TestProject, q: Record<string, string>) =>
    http(`/api/v1/projects/${project.project.id}/audit-events?${new URLSearchParams(q)}`, {
      headers: { authorization: `Bearer ${project.token}` },
    });
  await expectError(await bad(other, { type: "role.*", cursor: first.next_cursor! }), 400, "invalid_params");
  await expectError(await bad(p, { type: "client.*", cursor: first.next_cursor! }), 400, "invalid_params");
  for (
    const q of [{ cursor: "garbage" }, { type: "nope.created" }, { type: "role" }, { limit: "101" }, {
      since: "yesterday",
    }] as Record<string, string>[]
  ) {
    const err = await expectError(await bad(p, q), 400, "invalid_params");
    assert.ok(err.details?.length, JSON.stringify(q));
  }
  // The permission is audit:read.
  const reader = await clientWith(p, ["roles:read"]);
  await expectError(await bad({ ...p, token: reader.token }, {}), 403, "insufficient_permission");
});

test("Accept: application/x-ndjson streams every matching event, one per line", async () => {
  const p = await newProject();
  const { db } = await service();
  // Thousands of events, written straight into the trail to keep the test short.
  await db.sql`
    insert into audit_events (project_id, id, occurred_at, type, actor_type, actor_id)
    select ${p.project.id}, gen_random_uuid()::text, now() - make_interval(secs => g), 'role.updated', 'client', ${p.clientId}
    from generate_series(1, 3000) g`;
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=role.updated`, {
    headers: { authorization: `Bearer ${p.token}`, accept: "application/x-ndjson" },
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /application\/x-ndjson/);
  // Streamed: no length known in advance, and the body arrives in many pieces (read in batches of 500).
  assert.equal(res.headers.get("content-length"), null);
  let chunks = 0;
  let lines = 0;
  let previous = "9999";
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body!) {
    chunks++;
    buffer += decoder.decode(chunk, { stream: true });
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    for (const line of parts) {
      const e = JSON.parse(line) as Event;
      assert.equal(e.type, "role.updated");
      assert.ok(e.occurred_at <= previous, "newest first");
      previous = e.occurred_at;
      lines++;
    }
  }
  assert.equal(buffer, "");
  assert.equal(lines, 3000);
  assert.ok(chunks > 1, `streamed in ${chunks} chunks`);
});

test("GET …/audit-events refuses an unknown parameter (a misspelt filter) instead of ignoring it", async () => {
  const p = await newProject();
  const err = await expectError(
    await http(`/api/v1/projects/${p.project.id}/audit-events?actor=${p.clientId}&type=role.*`, {
      headers: { authorization: `Bearer ${p.token}` },
    }),
    400,
    "invalid_params",
  );
  assert.deepEqual(err.details, [{
    field: "actor",
    issue: "is not a parameter of the audit trail (type, actor_id, target_id, since, until, limit, cursor)",
  }]);
  // The NDJSON export is refused the same way, before it starts.
  await expectError(
    await http(`/api/v1/projects/${p.project.id}/audit-events?target=x`, {
      headers: { authorization: `Bearer ${p.token}`, accept: "application/x-ndjson" },
    }),
    400,
    "invalid_params",
  );
});

test("a sign-in refused for too many failures is a login.throttled event, once a minute per account", async () => {
  const p = await loginProject();
  const attempt = async (password: string) => {
    const page = await openLoginPage({
      client_id: p.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(newVerifier()),
      code_challenge_method: "S256",
    });
    const res = await submitLogin(page, p.email, password);
    await res.body?.cancel();
    return res.status;
  };
  for (let i = 0; i < 5; i++) assert.equal(await attempt("wrong"), 400);
  const throttled = await during(p, async () => {
    assert.equal(await attempt(p.password), 429);
    assert.equal(await attempt(p.password), 429);
  });
  assert.deepEqual(throttled.map((e) => e.type), ["login.throttled"]);
  assert.equal(throttled[0].details?.email, p.email);
  assert.equal(throttled[0].request?.ip, "127.0.0.1");
});

test("the retention job deletes events older than AUDIT_RETENTION_DAYS and keeps the rest", async () => {
  const p = await newProject();
  const { db } = await service();
  await p.api.roles.createRole(p.project.id, { code: "kept", name: "Kept" });
  // Aged in the database: events 31 and 400 days old, beside the fresh ones.
  await db.sql`
    insert into audit_events (project_id, id, occurred_at, type, actor_type, actor_id)
    select ${p.project.id}, gen_random_uuid()::text, now() - make_interval(days => d), 'role.updated', 'client',
           ${p.clientId}
    from unnest(array[31, 400]) d`;
  const before = (await events(p, { limit: "100" })).data;
  assert.equal(before.filter((e) => e.type === "role.updated").length, 2);
  const config = loadConfig({ AUDIT_RETENTION_DAYS: "30", DATA_DIR: "unused" });
  const tokens = new TokenService(db.sql, config.publicUrl, config.accessTokenTtl, null);
  const job = jobsOf(db.sql, keySettings(config), config, tokens, "postgres")
    .find((j) => j.name === "audit-retention")!;
  await job.run(new AbortController().signal);
  const after = (await events(p, { limit: "100" })).data;
  assert.equal(after.filter((e) => e.type === "role.updated").length, 0, "both old events are gone");
  assert.deepEqual(
    after.map((e) => e.id),
    before.filter((e) => e.type !== "role.updated").map((e) => e.id),
    "the recent ones are kept",
  );
});

test("SIGKILL during a burst of writes leaves no change without its event, and no event without its change", async () => {
  const db = await isolatedDatabase();
  const env = { ...db.env, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET };
  let proc = await spawn(env);
  const bearer = async (id: string, secret: string) =>
    (await (await fetch(`${proc.url}/api/v1/tokens`, {
      method: "POST",
      headers: { authorization: basic(id, secret), "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials",
    })).json()).access_token as string;
  try {
    const project = await (await fetch(`${proc.url}/api/v1/projects`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await bearer("system-admin", ADMIN_SECRET)}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: "burst" }),
    })).json();
    const { client_id, client_secret } = project.admin_client;
    const token = await bearer(client_id, client_secret);
    // Eight writers create roles until the process dies under them.
    const created: string[] = [];
    let killed = false;
    const writer = async (w: number) => {
      for (let i = 0; !killed; i++) {
        try {
          const res = await fetch(`${proc.url}/api/v1/projects/${project.id}/roles`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ code: `w${w}-${i}`, name: `Role ${w}-${i}` }),
          });
          if (res.status === 201) created.push((await res.json()).id);
          else await res.body?.cancel();
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    while (created.length < 40) await new Promise((r) => setTimeout(r, 5));
    proc.child.kill("SIGKILL");
    killed = true;
    assert.equal((await proc.exited).signal, "SIGKILL");
    await Promise.all(writers);
    proc = await spawn(env);
    const again = await bearer(client_id, client_secret);
    const get = async (path: string) => {
      const res = await fetch(`${proc.url}/api/v1/projects/${project.id}${path}`, {
        headers: { authorization: `Bearer ${again}` },
      });
      assert.equal(res.status, 200);
      return await res.json();
    };
    const roles = new Set<string>();
    for (let page = 1;; page++) {
      const body = await get(`/roles?page=${page}&page_size=100`);
      for (const r of body.data) roles.add(r.id);
      if (page * 100 >= body.pagination.total) break;
    }
    const targets = new Set<string>();
    let cursor = "";
    do {
      const body = await get(`/audit-events?type=role.created&limit=100${cursor && `&cursor=${cursor}`}`);
      for (const e of body.data) targets.add(e.target.id);
      cursor = body.next_cursor ?? "";
    } while (cursor);
    assert.ok(created.every((id) => roles.has(id)), "every acknowledged write is there");
    assert.deepEqual([...roles].sort(), [...targets].sort(), "each role has its event, each event its role");
  } finally {
    await proc.stop();
    await db.drop();
  }
});

test("a failed sign-in of an unknown account keeps nothing that was typed, nor does its throttling", async () => {
  const p = await loginProject();
  const typed = `Tr0ub4dor-${crypto.randomUUID()}@example.com`;
  const attempt = async (email: string) => {
    const page = await openLoginPage({
      client_id: p.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(newVerifier()),
      code_challenge_method: "S256",
    });
    const res = await submitLogin(page, email, "whatever it is");
    await res.body?.cancel();
    return res.status;
  };
  const failed = await during(p, async () => assert.equal(await attempt(typed), 400));
  assert.deepEqual(failed.map((e) => [e.type, e.details]), [
    ["login.failed", { client_id: p.clientId, reason: "unknown_email" }],
  ]);
  assert.deepEqual([failed[0].actor.id, failed[0].target], [null, { type: "user", id: null }]);
  // Throttled after five failures: the event says an unknown account, once a minute, and no more.
  for (let i = 0; i < 4; i++) assert.equal(await attempt(typed), 400);
  const throttled = await during(p, async () => {
    assert.equal(await attempt(typed), 429);
    assert.equal(await attempt(typed), 429);
  });
  assert.deepEqual(throttled.map((e) => [e.type, e.details]), [
    ["login.throttled", { account: "unknown", client_id: p.clientId }],
  ]);
  const { db } = await service();
  const trail = JSON.stringify(await db.sql`select * from audit_events where project_id = ${p.project.id}`);
  assert.ok(!trail.toLowerCase().includes(typed.toLowerCase()), "the typed value is nowhere in the trail");
});

test("failed client secrets are client_auth.failed events, at most one per client and minute", async () => {
  const p = await newProject();
  const victim = await p.api.clients.createClient(p.project.id, { name: "victim" });
  const wrongSecret = `wrong-${crypto.randomUUID()}`;
  const form = (path: string, body: string) =>
    http(path, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: basic(victim.id, wrongSecret),
      },
      body,
    });
  const facts = await during(p, async () => {
    await (await form("/api/v1/tokens/introspect", "token=x")).body?.cancel();
    await (await form("/api/v1/tokens", "grant_type=client_credentials")).body?.cancel();
    await (await form("/api/v1/tokens/revoke", "token=x")).body?.cancel();
  });
  assert.equal(facts.length, 1, JSON.stringify(facts));
  const [event] = facts;
  assert.equal(event.type, "client_auth.failed");
  assert.deepEqual(event.details, { client_id: victim.id, endpoint: "introspect", reason: "wrong_secret" });
  assert.deepEqual(event.actor, { type: "client", id: victim.id, token_jti: null });
  assert.deepEqual(event.target, { type: "client", id: victim.id });
  assert.equal(event.request?.ip, "127.0.0.1");
  const { db } = await service();
  const trail = JSON.stringify(await db.sql`select * from audit_events where project_id = ${p.project.id}`);
  assert.ok(!trail.includes(wrongSecret), "the secret tried is nowhere in the trail");
  // A minute later (moved back rather than waited for), the next failure is an event again.
  await db
    .sql`update audit_events set occurred_at = occurred_at - interval '2 minutes' where id = ${event.id}`;
  const later = await during(p, async () => {
    await (await form("/api/v1/tokens", "grant_type=client_credentials")).body?.cancel();
  });
  assert.deepEqual(later.map((e) => [e.type, e.details?.endpoint]), [["client_auth.failed", "token"]]);
});
