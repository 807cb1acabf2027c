/**
 * The AuthZEN API beyond the certification scenario: reasons, liveness (on one instance and across two),
 * refusals, every bad input, the SDK's access client and the console's effective permissions.
 */
import assert from "node:assert/strict";
import { SYSTEM_PROJECT_ID } from "../openapi/projects.ts";
import { ApiError, createAccessClient, createAdminClient } from "../sdk/src/mod.ts";
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
  RESOURCES,
  scenario,
  SUBJECTS,
  write,
} from "./authzen_support.ts";
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
} from "./helpers.ts";

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
    [{ type: "record", id: "record-1" }, { type: "record", id: "record-2" }],
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
  // Another project's user: AuthZEN answers about the token's project, so the page lists what the user holds
  // through their role (as the admin API reports it) and says where AuthZEN's own answer is shown.
  const f = await fixture();
  const other = await page(`/console/projects/${f.project.id}/users/${f.alice.id}`);
  assert.match(other, /shown in the project(&#39;|')s own console/i);
  assert.ok(other.includes("<li>record:read</li>"), "alice's permissions through her role");
});
