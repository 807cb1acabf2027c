/**
 * The AuthZEN Authorization API 1.0 (OpenID Foundation) as the certification scenario
 * (`certification/authorization-api-1_0-scenario.md`) runs it: its fixture as a project (alice and bob as
 * external users, a `record` resource with read, write and delete), the Basic Core, Batch Core, Search Core
 * (subject and action) and Discovery cases as the scenario gives them; then reasons, refusals, liveness and
 * every bad input.
 */
import assert from "node:assert/strict";
import {
  ActionSearchResponse,
  AuthzenConfiguration,
  Decision,
  EntitySearchResponse,
  EvaluationsResponse,
} from "../openapi/authzen.ts";
import { ApiError, createAccessClient, createAdminClient } from "../sdk/src/mod.ts";
import { SYSTEM_PROJECT_ID } from "../openapi/projects.ts";
import { consoleSignIn } from "./console_support.ts";
import {
  baseUrl,
  basic,
  clientWith,
  DATABASE_ENV,
  DATABASE_URL,
  expectError,
  http,
  newProject,
  projectPermissions,
  sdk,
  startWith,
  systemToken,
  test,
  type TestProject,
} from "./helpers.ts";

type Fixture = TestProject & {
  ids: Record<string, string>;
  editor: { id: string };
  viewer: { id: string };
  alice: { id: string };
  bob: { id: string };
};

/**
 * The scenario's fixture (§ "Required Fixture"): alice edits records (read, write, delete), bob views them
 * (read), so that rules 1–4 hold: alice reads and writes record-1, bob reads it and may not write it.
 */
async function fixture(): Promise<Fixture> {
  const p = await newProject();
  const record = await p.api.resources.createResource(p.project.id, {
    name: "Record",
    code: "record",
    permissions: [
      { name: "Read", code: "read" },
      { name: "Write", code: "write" },
      { name: "Delete", code: "delete" },
    ],
  });
  const ids = Object.fromEntries(record.permissions.map((x) => [x.code, x.id]));
  const editor = await p.api.roles.createRole(p.project.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [ids.read, ids.write, ids.delete],
  });
  const viewer = await p.api.roles.createRole(p.project.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [ids.read],
  });
  const alice = await p.api.users.createUser(p.project.id, {
    display_name: "Alice",
    external_user_id: "alice",
    role_id: editor.id,
  });
  const bob = await p.api.users.createUser(p.project.id, {
    display_name: "Bob",
    external_user_id: "bob",
    role_id: viewer.id,
  });
  return { ...p, ids, editor, viewer, alice, bob };
}

let shared: Promise<Fixture> | undefined;
const scenario = () => shared ??= fixture();

async function post(
  path: string,
  body: unknown,
  token: string | undefined,
  headers: Record<string, string> = {},
): Promise<Response> {
  return await http(path, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Each endpoint's answer as its route publishes it. */
const ANSWERS: Record<string, { safeParse(v: unknown): { success: boolean; error?: unknown } }> = {
  "/access/v1/evaluation": Decision,
  "/access/v1/evaluations": EvaluationsResponse,
  "/access/v1/search/subject": EntitySearchResponse,
  "/access/v1/search/resource": EntitySearchResponse,
  "/access/v1/search/action": ActionSearchResponse,
  "/.well-known/authzen-configuration": AuthzenConfiguration,
};

/** A 200 JSON answer, checked against its route's response schema. */
// deno-lint-ignore no-explicit-any
async function ok(res: Response): Promise<any> {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text);
  const schema = ANSWERS[new URL(res.url).pathname];
  assert.ok(schema, res.url);
  const parsed = schema.safeParse(body);
  assert.ok(parsed.success, `${res.url}: ${text}: ${parsed.error}`);
  return body;
}

const EVALUATION = "/access/v1/evaluation";
const EVALUATIONS = "/access/v1/evaluations";
const SUBJECTS = "/access/v1/search/subject";
const RESOURCES = "/access/v1/search/resource";
const ACTIONS = "/access/v1/search/action";

const alice = { type: "user", id: "alice" };
const bob = { type: "user", id: "bob" };
const record1 = { type: "record", id: "record-1" };
const record2 = { type: "record", id: "record-2" };
const read = { name: "read" };
const write = { name: "write" };

test("AuthZEN Basic Core: the fixture's decisions, context, properties and unknown fields", async () => {
  const f = await scenario();
  const decide = async (body: unknown) => (await ok(await post(EVALUATION, body, f.token))).decision;
  // 2.2.1 to 2.2.3, 2.2.8, 2.2.9
  assert.equal(
    await decide({ subject: alice, action: read, resource: record1 }),
    true,
  );
  assert.equal(
    await decide({ subject: bob, action: write, resource: record1 }),
    false,
  );
  assert.equal(
    await decide({ subject: bob, action: read, resource: record1 }),
    true,
  );
  assert.equal(
    await decide({ subject: alice, action: write, resource: record1 }),
    true,
  );
  assert.equal(
    await decide({
      subject: alice,
      action: read,
      resource: record1,
      context: { time: "2025-06-27T18:03-07:00", ip: "192.168.1.1" },
    }),
    true,
  );
  assert.equal(
    await decide({
      subject: {
        ...alice,
        properties: { department: "Sales", role: "manager" },
      },
      action: { name: "read", properties: { method: "GET" } },
      resource: { ...record1, properties: { status: "active", owner: "bob" } },
    }),
    true,
  );
  assert.equal(
    await decide({
      subject: alice,
      action: read,
      resource: record1,
      foo: "bar",
      futureField: { nested: true },
    }),
    true,
  );
  // 2.3: a boolean decision, a context object. 2.6: the same answer each time.
  const body = await ok(
    await post(
      EVALUATION,
      { subject: alice, action: read, resource: record1 },
      f.token,
    ),
  );
  assert.equal(typeof body.decision, "boolean");
  assert.equal(typeof body.context, "object");
  for (let i = 0; i < 3; i++) {
    assert.equal(
      await decide({ subject: bob, action: write, resource: record1 }),
      false,
    );
  }
});

test("AuthZEN Basic Core: X-Request-ID is echoed as sent, and given when absent", async () => {
  const f = await scenario();
  const q = { subject: alice, action: read, resource: record1 };
  for (
    const id of ["bfe9eb29-ab87-4ca3-be83-a1d5d8305716", "trace 42: a/b=c"]
  ) {
    const res = await post(EVALUATION, q, f.token, { "x-request-id": id });
    await ok(res);
    assert.equal(res.headers.get("x-request-id"), id);
  }
  const res = await post(EVALUATION, q, f.token);
  await ok(res);
  assert.ok(res.headers.get("x-request-id"));
  const refused = await post(EVALUATION, q, undefined, {
    "x-request-id": "no token",
  });
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  assert.equal(refused.headers.get("x-request-id"), "no token");
});

test("AuthZEN Batch Core: defaults, order, context inheritance, an incomplete item, no evaluations", async () => {
  const f = await scenario();
  const batch = async (body: unknown) => await ok(await post(EVALUATIONS, body, f.token));
  const decisions = (b: { evaluations: { decision: boolean }[] }) => b.evaluations.map((e) => e.decision);
  // 3.2.1
  const one = await batch({
    subject: alice,
    action: read,
    evaluations: [{ resource: record1 }, { resource: record2 }],
  });
  assert.equal(one.evaluations.length, 2);
  assert.equal(one.decision, undefined);
  for (const e of one.evaluations) assert.equal(typeof e.decision, "boolean");
  // 3.2.2
  assert.deepEqual(
    decisions(
      await batch({
        subject: bob,
        resource: record1,
        evaluations: [{ action: read }, { action: write }],
      }),
    ),
    [true, false],
  );
  // 3.2.5
  assert.deepEqual(
    decisions(
      await batch({
        evaluations: [
          { subject: alice, action: read, resource: record1 },
          { subject: bob, action: write, resource: record1 },
        ],
      }),
    ),
    [true, false],
  );
  // 3.2.6
  const inherited = await batch({
    subject: alice,
    action: read,
    context: { time: "2025-06-27T18:03-07:00" },
    evaluations: [
      { resource: record1 },
      {
        resource: record2,
        context: { time: "2025-06-27T19:00-07:00", source: "batch-override" },
      },
    ],
  });
  assert.equal(inherited.evaluations.length, 2);
  // 3.4.1: the incomplete item is false with a reason, the other decided.
  const partial = await batch({
    subject: alice,
    action: read,
    options: { evaluations_semantic: "execute_all" },
    evaluations: [{ resource: record1 }, {}],
  });
  assert.deepEqual(decisions(partial), [true, false]);
  assert.deepEqual(partial.evaluations[1].context.reason_admin, {
    code: "invalid_request",
    missing: ["/evaluations/1/resource"],
  });
  // 3.4.2, 3.4.3: without evaluations, or with none, one decision.
  assert.deepEqual(
    Object.keys(
      await batch({ subject: alice, action: read, resource: record1 }),
    ).sort(),
    ["context", "decision"],
  );
  assert.equal(
    (await batch({ subject: alice, action: read, resource: record1 })).decision,
    true,
  );
  assert.equal(
    (await batch({
      subject: alice,
      action: read,
      resource: record1,
      evaluations: [],
    })).decision,
    true,
  );
});

test("AuthZEN batches: the semantics stop at the first deny or permit; 1000 items are decided in order", async () => {
  const f = await scenario();
  const items = [{ subject: alice }, { subject: bob }, { subject: alice }];
  const run = async (semantic?: string) =>
    (await ok(
      await post(EVALUATIONS, {
        action: write,
        resource: record1,
        ...(semantic ? { options: { evaluations_semantic: semantic } } : {}),
        evaluations: items,
      }, f.token),
    )).evaluations.map((e: { decision: boolean }) => e.decision);
  assert.deepEqual(await run(), [true, false, true]);
  assert.deepEqual(await run("execute_all"), [true, false, true]);
  assert.deepEqual(await run("deny_on_first_deny"), [true, false]);
  assert.deepEqual(await run("permit_on_first_permit"), [true]);
  const many = Array.from(
    { length: 1000 },
    (_, i) => ({ subject: i % 2 === 0 ? alice : bob }),
  );
  const big = await ok(
    await post(EVALUATIONS, {
      action: write,
      resource: record1,
      evaluations: many,
    }, f.token),
  );
  assert.equal(big.evaluations.length, 1000);
  assert.ok(
    big.evaluations.every((e: { decision: boolean }, i: number) => e.decision === (i % 2 === 0)),
  );
  const tooMany = await expectError(
    await post(
      EVALUATIONS,
      {
        action: write,
        resource: record1,
        evaluations: [...many, { subject: bob }],
      },
      f.token,
    ),
    400,
    "invalid_params",
  );
  assert.equal(tooMany.details?.[0].field, "/evaluations");
});

test("AuthZEN Search Core: subject and action search, ids ignored, context accepted, unknowns empty", async () => {
  const f = await scenario();
  const search = async (path: string, body: unknown) => await ok(await post(path, body, f.token));
  const ids = (b: { results: { id: string }[] }) => b.results.map((r) => r.id).sort();
  // 4.2.1 to 4.2.3
  const base = { subject: { type: "user" }, action: read, resource: record1 };
  assert.deepEqual(ids(await search(SUBJECTS, base)), ["alice", "bob"]);
  assert.deepEqual(
    ids(await search(SUBJECTS, { ...base, context: { ip: "192.168.1.1" } })),
    [
      "alice",
      "bob",
    ],
  );
  assert.deepEqual(ids(await search(SUBJECTS, { ...base, subject: alice })), [
    "alice",
    "bob",
  ]);
  const writers = await search(SUBJECTS, { ...base, action: write });
  assert.deepEqual(writers.results, [{ type: "user", id: "alice" }]);
  assert.deepEqual(writers.page, { next_token: "", count: 1, total: 1 });
  // 4.4.1, 4.4.2
  const names = (b: { results: { name: string }[] }) => b.results.map((r) => r.name);
  assert.deepEqual(
    names(await search(ACTIONS, { subject: alice, resource: record1 })),
    [
      "delete",
      "read",
      "write",
    ],
  );
  assert.deepEqual(
    names(
      await search(ACTIONS, {
        subject: bob,
        resource: record1,
        context: { a: 1 },
      }),
    ),
    [
      "read",
    ],
  );
  // 4.3: resource search is an empty page until a resource's objects exist.
  assert.deepEqual(
    await search(RESOURCES, {
      subject: alice,
      action: read,
      resource: { type: "record" },
    }),
    {
      page: { next_token: "", count: 0, total: 0 },
      results: [],
    },
  );
  // 4.6: unknown ids and types give empty results.
  assert.deepEqual(
    (await search(ACTIONS, {
      subject: { type: "user", id: "nonexistent-user" },
      resource: record1,
    }))
      .results,
    [],
  );
  assert.deepEqual(
    (await search(SUBJECTS, { ...base, subject: { type: "spaceship" } }))
      .results,
    [],
  );
  assert.deepEqual(
    (await search(SUBJECTS, {
      ...base,
      resource: { type: "nothing", id: "x" },
    })).results,
    [],
  );
  assert.deepEqual(
    (await search(SUBJECTS, { ...base, action: { name: "fly" } })).results,
    [],
  );
  // Strings no id or code can hold (a NUL byte, an unpaired surrogate) name nothing.
  assert.deepEqual(
    (await search(SUBJECTS, { ...base, resource: { type: "rec\u0000ord", id: "x" } })).results,
    [],
  );
  assert.deepEqual((await search(SUBJECTS, { ...base, action: { name: "re\ud800ad" } })).results, []);
  assert.deepEqual(
    (await search(ACTIONS, { subject: { type: "user", id: "al\u0000ice" }, resource: record1 })).results,
    [],
  );
  // Clients are subjects too: the project's admin client holds no `record` permission, this one does.
  const c = await clientWith(f, ["record:read"]);
  assert.deepEqual(
    (await search(SUBJECTS, { ...base, subject: { type: "client" } })).results,
    [
      { type: "client", id: c.id },
    ],
  );
  assert.deepEqual(
    names(
      await search(ACTIONS, {
        subject: { type: "client", id: c.id },
        resource: record1,
      }),
    ),
    [
      "read",
    ],
  );
});

test("AuthZEN search pages: limit, next_token to the end, total, and a token bound to its query", async () => {
  const f = await fixture();
  for (let i = 0; i < 5; i++) {
    await f.api.users.createUser(f.project.id, {
      display_name: `U${i}`,
      email: `u${i}-${crypto.randomUUID()}@example.com`,
      password: "correct horse battery",
      role_id: f.viewer.id,
    });
  }
  const query = { subject: { type: "user" }, action: read, resource: record1 };
  const seen: string[] = [];
  let token: string | undefined;
  for (let round = 0; round < 10; round++) {
    const body = await ok(
      await post(SUBJECTS, {
        ...query,
        page: { limit: 3, ...(token ? { token } : {}) },
      }, f.token),
    );
    assert.equal(body.page.total, 7);
    assert.equal(body.page.count, body.results.length);
    seen.push(...body.results.map((r: { id: string }) => r.id));
    token = body.page.next_token;
    if (token === "") break;
    assert.equal(body.results.length, 3);
  }
  assert.equal(token, "");
  assert.equal(seen.length, 7);
  assert.equal(new Set(seen).size, 7);
  assert.ok(seen.includes("alice") && seen.includes("bob"));
  // Users without an external id are named by their id.
  const first = await ok(
    await post(SUBJECTS, { ...query, page: { limit: 3 } }, f.token),
  );
  const next = first.page.next_token;
  assert.ok(next);
  for (
    const changed of [
      { ...query, action: write, page: { limit: 3, token: next } },
      { ...query, page: { limit: 4, token: next } },
      { ...query, context: { x: 1 }, page: { limit: 3, token: next } },
    ]
  ) {
    const e = await expectError(
      await post(SUBJECTS, changed, f.token),
      400,
      "invalid_params",
    );
    assert.equal(e.details?.[0].field, "/page/token");
  }
  // A token forged with the right hash but a key no id can hold (a NUL byte) is refused as well.
  const [hash] = [JSON.parse(atob(next.replace(/-/g, "+").replace(/_/g, "/"))).q];
  const forged = btoa(JSON.stringify({ k: "a\u0000b", q: hash }));
  for (const bad of ["garbage!", "eyJrIjoxfQ", btoa("{}"), forged]) {
    const e = await expectError(
      await post(SUBJECTS, { ...query, page: { token: bad } }, f.token),
      400,
      "invalid_params",
    );
    assert.equal(e.details?.[0].field, "/page/token");
  }
  for (const limit of [0, 1001, 1.5, "3"]) {
    const e = await expectError(
      await post(SUBJECTS, { ...query, page: { limit } }, f.token),
      400,
      "invalid_params",
    );
    assert.equal(e.details?.[0].field, "/page/limit");
  }
});

test("AuthZEN Discovery: the metadata names PUBLIC_URL and every endpoint", async () => {
  const res = await http("/.well-known/authzen-configuration");
  const body = await ok(res);
  const base = body.policy_decision_point;
  // The address the metadata was fetched from (the test service's PUBLIC_URL), without query or fragment.
  assert.equal(base, await baseUrl());
  assert.match(base, /^https?:\/\/[^?#]+[^/]$/);
  assert.deepEqual(body, {
    policy_decision_point: base,
    access_evaluation_endpoint: `${base}/access/v1/evaluation`,
    access_evaluations_endpoint: `${base}/access/v1/evaluations`,
    search_subject_endpoint: `${base}/access/v1/search/subject`,
    search_resource_endpoint: `${base}/access/v1/search/resource`,
    search_action_endpoint: `${base}/access/v1/search/action`,
  });
});

test("AuthZEN reasons: each decision says what decided it", async () => {
  const f = await fixture();
  const reason = async (
    subject: unknown,
    action: unknown,
    resource: unknown,
  ) => {
    const body = await ok(
      await post(EVALUATION, { subject, action, resource }, f.token),
    );
    return { decision: body.decision, ...body.context.reason_admin };
  };
  assert.deepEqual(await reason(alice, read, record1), {
    decision: true,
    code: "role_permission",
    role_id: f.editor.id,
  });
  // By the user's own id as well as by its external id; codes are case-insensitive.
  assert.deepEqual(
    await reason({ type: "user", id: f.bob.id }, { name: "READ" }, {
      type: "Record",
      id: "x",
    }),
    {
      decision: true,
      code: "role_permission",
      role_id: f.viewer.id,
    },
  );
  assert.deepEqual(await reason(bob, write, record1), {
    decision: false,
    code: "no_permission",
    role_id: f.viewer.id,
  });
  assert.deepEqual(await reason({ type: "user", id: "carol" }, read, record1), {
    decision: false,
    code: "unknown_subject",
  });
  assert.deepEqual(
    await reason({ type: "group", id: "alice" }, read, record1),
    {
      decision: false,
      code: "unknown_subject",
    },
  );
  assert.deepEqual(await reason(alice, read, { type: "invoice", id: "1" }), {
    decision: false,
    code: "unknown_resource_type",
  });
  assert.deepEqual(await reason(alice, { name: "archive" }, record1), {
    decision: false,
    code: "unknown_action",
  });
  assert.deepEqual(
    await reason({ type: "user", id: "a\u0000b" }, read, record1),
    {
      decision: false,
      code: "unknown_subject",
    },
  );
  assert.deepEqual(
    await reason(alice, read, { type: "rec\ud800ord", id: "1" }),
    {
      decision: false,
      code: "unknown_resource_type",
    },
  );
  const c = await clientWith(f, ["record:read"]);
  assert.deepEqual(await reason({ type: "client", id: c.id }, read, record1), {
    decision: true,
    code: "client_permission",
    client_id: c.id,
  });
  assert.deepEqual(await reason({ type: "client", id: c.id }, write, record1), {
    decision: false,
    code: "no_permission",
  });
  const roleless = await f.api.users.createUser(f.project.id, {
    display_name: "N",
    external_user_id: "nobody",
  });
  assert.deepEqual(
    await reason(
      { type: "user", id: roleless.external_user_id },
      read,
      record1,
    ),
    {
      decision: false,
      code: "no_permission",
    },
  );
  await f.api.users.updateUser(f.project.id, f.alice.id, {
    display_name: "Alice",
    external_user_id: "alice",
    role_id: f.editor.id,
    is_active: false,
  });
  assert.deepEqual(await reason(alice, read, record1), {
    decision: false,
    code: "subject_inactive",
  });
  // Another project's users are unknown here, whatever its token may do there.
  const other = await fixture();
  assert.deepEqual(
    await reason({ type: "user", id: other.alice.id }, read, record1),
    {
      decision: false,
      code: "unknown_subject",
    },
  );
});

test("AuthZEN is live: a role's change decides the next request", async () => {
  const f = await fixture();
  const q = { subject: bob, action: write, resource: record1 };
  assert.equal((await ok(await post(EVALUATION, q, f.token))).decision, false);
  await f.api.roles.updateRole(f.project.id, f.viewer.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [f.ids.read, f.ids.write],
  });
  assert.equal((await ok(await post(EVALUATION, q, f.token))).decision, true);
  assert.deepEqual(
    (await ok(
      await post(SUBJECTS, {
        subject: { type: "user" },
        action: write,
        resource: record1,
      }, f.token),
    ))
      .results.map((r: { id: string }) => r.id).sort(),
    ["alice", "bob"],
  );
  await f.api.roles.updateRole(f.project.id, f.viewer.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [],
  });
  const batch = await ok(
    await post(EVALUATIONS, {
      ...q,
      evaluations: [{ action: read }, { action: write }],
    }, f.token),
  );
  assert.deepEqual(
    batch.evaluations.map((e: { decision: boolean }) => e.decision),
    [false, false],
  );
});

test("AuthZEN refusals: no token 401 with a Bearer challenge, a missing permission 403, another project's token", async () => {
  const f = await scenario();
  const q = { subject: alice, action: read, resource: record1 };
  const searchQ = {
    subject: { type: "user" },
    action: read,
    resource: record1,
  };
  for (
    const [path, body] of [
      [EVALUATION, q],
      [EVALUATIONS, q],
      [SUBJECTS, searchQ],
      [ACTIONS, q],
      [
        RESOURCES,
        q,
      ],
    ]
  ) {
    const missing = await expectError(
      await post(path as string, body, undefined),
      401,
      "invalid_authorization_token",
    );
    assert.match(missing.headers.get("www-authenticate") ?? "", /^Bearer/);
    await expectError(
      await post(path as string, body, "bad.token.here"),
      401,
      "invalid_authorization_token",
    );
  }
  const evaluator = await clientWith(f, ["access:evaluate"]);
  const searcher = await clientWith(f, ["access:search"]);
  const none = await clientWith(f, []);
  for (const path of [EVALUATION, EVALUATIONS]) {
    await ok(await post(path, q, evaluator.token));
    const e = await expectError(
      await post(path, q, searcher.token),
      403,
      "insufficient_permission",
    );
    assert.match(e.error_description, /access:evaluate/);
  }
  await ok(await post(ACTIONS, q, evaluator.token));
  await expectError(
    await post(ACTIONS, q, none.token),
    403,
    "insufficient_permission",
  );
  for (const [path, body] of [[SUBJECTS, searchQ], [RESOURCES, q]] as const) {
    await ok(await post(path, body, searcher.token));
    const e = await expectError(
      await post(path, body, evaluator.token),
      403,
      "insufficient_permission",
    );
    assert.match(e.error_description, /access:search/);
  }
  // Another project's admin token asks about its own project: this project's users are not found there.
  const other = await newProject();
  const foreign = await ok(await post(EVALUATION, q, other.token));
  assert.deepEqual(foreign, {
    decision: false,
    context: { reason_admin: { code: "unknown_subject" } },
  });
  assert.deepEqual(
    (await ok(await post(SUBJECTS, searchQ, other.token))).results,
    [],
  );
  assert.deepEqual((await ok(await post(ACTIONS, q, other.token))).results, []);
});

test("AuthZEN bad input: 400 invalid_params with JSON pointers, never 500", async () => {
  const f = await scenario();
  const full = { subject: alice, action: read, resource: record1 };
  const cases: [string, unknown, string][] = [
    // 2.4.1, 2.4.2, 2.4.6
    [EVALUATION, { action: read, resource: record1 }, "/subject"],
    [EVALUATION, { subject: alice, resource: record1 }, "/action"],
    [EVALUATION, { subject: alice, action: read }, "/resource"],
    [EVALUATION, { ...full, subject: { id: "alice" } }, "/subject/type"],
    [EVALUATION, { ...full, subject: { type: "user" } }, "/subject/id"],
    [EVALUATION, { ...full, action: {} }, "/action/name"],
    [EVALUATION, { ...full, resource: { id: "record-1" } }, "/resource/type"],
    [EVALUATION, { ...full, resource: { type: "record" } }, "/resource/id"],
    [EVALUATION, { ...full, subject: "alice" }, "/subject"],
    [EVALUATION, { ...full, action: { name: 123 } }, "/action/name"],
    [
      EVALUATION,
      { ...full, subject: { ...alice, properties: [1] } },
      "/subject/properties",
    ],
    [EVALUATION, { ...full, context: "now" }, "/context"],
    [EVALUATION, [full], ""],
    [EVALUATION, null, ""],
    [EVALUATIONS, { action: read, resource: record1 }, "/subject"],
    [EVALUATIONS, { ...full, evaluations: {} }, "/evaluations"],
    [
      EVALUATIONS,
      { ...full, evaluations: [{ subject: { id: 5 } }] },
      "/evaluations/0/subject/id",
    ],
    [
      EVALUATIONS,
      { ...full, options: { evaluations_semantic: "all" } },
      "/options/evaluations_semantic",
    ],
    // 4.7.1, 4.7.2
    [SUBJECTS, { subject: { type: "user" }, resource: record1 }, "/action"],
    [RESOURCES, { action: read, resource: { type: "record" } }, "/subject"],
    [ACTIONS, { subject: alice }, "/resource"],
    [SUBJECTS, {
      subject: { type: "user" },
      action: read,
      resource: { type: "record" },
    }, "/resource/id"],
    [RESOURCES, {
      subject: { type: "user" },
      action: read,
      resource: { type: "record" },
    }, "/subject/id"],
    [ACTIONS, { subject: { type: "user" }, resource: record1 }, "/subject/id"],
  ];
  for (const [path, body, field] of cases) {
    const e = await expectError(
      await post(path, body, f.token),
      400,
      "invalid_params",
    );
    assert.ok(
      e.details?.some((d) => d.field === field),
      `${path} ${JSON.stringify(body)}: ${JSON.stringify(e)}`,
    );
  }
  // Nesting deep enough to exhaust a recursive walk (the page token hashes the whole query) is refused.
  const deep = "[".repeat(100_000) + "]".repeat(100_000);
  const deepQuery =
    `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"record","id":"1"},` +
    `"context":{"a":${deep}}}`;
  for (const path of [EVALUATION, EVALUATIONS, SUBJECTS, RESOURCES, ACTIONS]) {
    const e = await expectError(await post(path, deepQuery, f.token), 400, "invalid_params");
    assert.equal(e.details?.[0].field, "", path);
  }
  // 2.4.3 to 2.4.5: another media type, malformed JSON, an empty body.
  for (const path of [EVALUATION, EVALUATIONS, SUBJECTS, RESOURCES, ACTIONS]) {
    const auth = { authorization: `Bearer ${f.token}` };
    await expectError(
      await http(path, {
        method: "POST",
        headers: { ...auth, "content-type": "text/plain" },
        body: JSON.stringify(full),
      }),
      400,
      "invalid_params",
    );
    const malformed = await expectError(
      await post(path, '{"subject": ', f.token),
      400,
      "invalid_params",
    );
    assert.equal(malformed.details?.[0].field, "");
    await expectError(await post(path, "", f.token), 400, "invalid_params");
    await expectError(
      await http(path, { method: "POST", headers: auth }),
      400,
      "invalid_params",
    );
  }
});

test("the SDK's access client: evaluate, evaluateMany, the searches and every page of one", async () => {
  const f = await scenario();
  const admin = createAdminClient({
    baseUrl: await baseUrl(),
    clientId: f.clientId,
    clientSecret: f.secret,
  });
  const access = admin.access;
  assert.deepEqual(
    await access.evaluate({ subject: alice, action: read, resource: record1 }),
    {
      decision: true,
      context: {
        reason_admin: { code: "role_permission", role_id: f.editor.id },
      },
    },
  );
  const many = await access.evaluateMany({
    resource: record1,
    action: write,
    evaluations: [{ subject: alice }, { subject: bob }],
    options: { evaluations_semantic: "execute_all" },
  });
  assert.deepEqual(many.map((d) => d.decision), [true, false]);
  assert.deepEqual(
    (await access.evaluateMany({
      subject: bob,
      action: read,
      resource: record1,
      evaluations: [],
    })).map((d) => d.decision),
    [true],
  );
  const page = await access.searchSubjects({
    subject: { type: "user" },
    action: read,
    resource: record1,
  });
  assert.deepEqual(page.results.map((r) => r.id).sort(), ["alice", "bob"]);
  const everyone: string[] = [];
  for await (
    const s of access.all(access.searchSubjects, {
      subject: { type: "user" },
      action: read,
      resource: record1,
      page: { limit: 1 },
    })
  ) everyone.push(s.id);
  assert.deepEqual(everyone.sort(), ["alice", "bob"]);
  assert.deepEqual(
    (await access.searchActions({ subject: bob, resource: record1 })).results,
    [{ name: "read" }],
  );
  assert.deepEqual(
    (await access.searchResources({
      subject: bob,
      action: read,
      resource: { type: "record" },
    })).results,
    [],
  );
  // A token without access:search: an ApiError with the service's code.
  const evaluator = await clientWith(f, ["access:evaluate"]);
  const limited = createAccessClient({
    baseUrl: await baseUrl(),
    token: evaluator.token,
  });
  assert.equal(
    (await limited.evaluate({ subject: bob, action: write, resource: record1 }))
      .decision,
    false,
  );
  const refused = await limited.searchSubjects({
    subject: { type: "user" },
    action: read,
    resource: record1,
  })
    .catch((e) => e);
  assert.ok(refused instanceof ApiError);
  assert.equal(refused.status, 403);
  assert.equal(refused.error, "insufficient_permission");
});

test(
  "AuthZEN is live across instances: a role changed through one decides the next request on another",
  async () => {
    const f = await fixture();
    const other = await startWith(DATABASE_ENV);
    try {
      // A token of the other instance (its issuer is its own address).
      const res = await fetch(`${other.url}/api/v1/tokens`, {
        method: "POST",
        headers: {
          authorization: basic(f.clientId, f.secret),
          "content-type": "application/x-www-form-urlencoded",
        },
        body: "grant_type=client_credentials",
      });
      const token = (await res.json()).access_token as string;
      const ask = async () => {
        const r = await fetch(`${other.url}${EVALUATION}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ subject: bob, action: write, resource: record1 }),
        });
        return (await ok(r)).decision;
      };
      assert.equal(await ask(), false);
      await f.api.roles.updateRole(f.project.id, f.viewer.id, {
        code: "viewer",
        name: "Viewer",
        permission_ids: [f.ids.read, f.ids.write],
      });
      assert.equal(await ask(), true);
      await f.api.users.updateUser(f.project.id, f.bob.id, {
        display_name: "Bob",
        external_user_id: "bob",
        role_id: f.viewer.id,
        is_active: false,
      });
      assert.equal(await ask(), false);
    } finally {
      await other.close();
    }
  },
  { ignore: !DATABASE_URL },
);

test("the console's user page lists the user's effective permissions through action search", async () => {
  // An operator: a system-project user whose role holds every system permission.
  const admin = await sdk(await systemToken());
  const { ids } = await projectPermissions(admin, SYSTEM_PROJECT_ID);
  const tag = crypto.randomUUID().slice(0, 8);
  const role = await admin.roles.createRole(SYSTEM_PROJECT_ID, {
    code: `operator_${tag}`,
    name: `Operator ${tag}`,
    permission_ids: Object.values(ids),
  });
  const email = `operator-${tag}@example.com`;
  const password = "operator password 3";
  const operator = await admin.users.createUser(SYSTEM_PROJECT_ID, {
    display_name: "Operator",
    email,
    password,
    role_id: role.id,
  });
  const idle = await admin.users.createUser(SYSTEM_PROJECT_ID, {
    display_name: "Idle",
    external_user_id: `idle-${tag}`,
  });
  const cookie = await consoleSignIn(await baseUrl(), email, password);
  const page = async (path: string) => {
    const res = await http(path, { headers: { cookie } });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    return text;
  };
  const own = await page(`/console/projects/${SYSTEM_PROJECT_ID}/users/${operator.id}`);
  assert.match(own, /<h2 id="effective-heading">Effective permissions<\/h2>/);
  for (const code of ["access:evaluate", "access:search", "projects:create", "users:read"]) {
    assert.ok(own.includes(`<li>${code}</li>`), code);
  }
  assert.match(
    await page(`/console/projects/${SYSTEM_PROJECT_ID}/users/${idle.id}`),
    /None: the user may do nothing/,
  );
  // Another project's user: AuthZEN answers about the token's project, so the page says where to look.
  const f = await fixture();
  const other = await page(`/console/projects/${f.project.id}/users/${f.alice.id}`);
  assert.match(other, /Shown in the project(&#39;|')s own console/);
  assert.ok(!other.includes("<li>record:read</li>"));
});
