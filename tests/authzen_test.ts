/**
 * The AuthZEN Authorization API 1.0 (OpenID Foundation) as its certification scenario
 * (`certification/authorization-api-1_0-scenario.md`) runs it: the scenario's fixture as a project (alice and
 * bob as external users, a `record` resource with read, write and delete) and its Basic Core, Batch Core, Search
 * Core (subject and action, with pages) and Discovery cases as the scenario gives them.
 */
import assert from "node:assert/strict";
import {
  ACTIONS,
  alice,
  bob,
  EVALUATION,
  EVALUATIONS,
  fixture,
  ok,
  post,
  read,
  record1,
  record2,
  RESOURCES,
  scenario,
  SUBJECTS,
  write,
} from "./authzen_support.ts";
import { baseUrl, clientWith, expectError, http, test } from "./helpers.ts";

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
  // 4.3: record-1 is among the records alice may read (she holds record:read project-wide: every record).
  assert.deepEqual(
    await search(RESOURCES, {
      subject: alice,
      action: read,
      resource: { type: "record" },
    }),
    {
      page: { next_token: "", count: 2, total: 2 },
      results: [{ type: "record", id: "record-1" }, { type: "record", id: "record-2" }],
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
  const res = await http("/.well-known/authzen-configuration", {
    headers: { "x-request-id": "discovery #1" },
  });
  assert.equal(res.headers.get("x-request-id"), "discovery #1");
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

test("AuthZEN batches asked at once (which may share a statement) each get their own answers, per project", async () => {
  const f = await scenario();
  const g = await fixture();
  await g.api.users.createUser(g.project.id, {
    display_name: "Carol",
    external_user_id: "carol",
    role_id: g.viewer.id,
  });
  const carol = { type: "user", id: "carol" };
  const subjects = [alice, bob, carol];
  const actions = [read, write];
  const batches = Array.from({ length: 24 }, (_, n) => ({
    resource: record1,
    evaluations: Array.from({ length: 1 + (n % 7) }, (_, i) => ({
      subject: subjects[(n + i) % 3],
      action: actions[(n * 3 + i) % 2],
    })),
  }));
  const answer = async (token: string, body: unknown) =>
    (await ok(await post(EVALUATIONS, body, token))).evaluations.map((
      e: { decision: boolean; context: { reason_admin: { code: string } } },
    ) => [e.decision, e.context.reason_admin.code]);
  const alone = [];
  for (const b of batches) alone.push([await answer(f.token, b), await answer(g.token, b)]);
  const together = await Promise.all(
    batches.map((b) => Promise.all([answer(f.token, b), answer(g.token, b)])),
  );
  assert.deepEqual(together, alone);
  // carol is a user of the second project only.
  assert.deepEqual(
    await answer(f.token, { resource: record1, action: read, evaluations: [{ subject: carol }] }),
    [
      [false, "unknown_subject"],
    ],
  );
  assert.deepEqual(
    await answer(g.token, { resource: record1, action: read, evaluations: [{ subject: carol }] }),
    [
      [true, "role_permission"],
    ],
  );
});
