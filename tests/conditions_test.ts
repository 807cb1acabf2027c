/**
 * Conditions (issue 48): CEL on a role's permissions and on grants, checked when written (every bad input),
 * decided with reasons (allowed, `condition_false`, `condition_error`) from stored and sent properties, the
 * context and the database's clock, in one evaluation, a batch and a grant's tree; never reported as held
 * outright (the gate, least privilege, introspection); changed and seen on the next request on another
 * instance; a client that wants no reasons.
 */
import assert from "node:assert/strict";
import { EVALUATION, EVALUATIONS, ok, post } from "./authzen_support.ts";
import { type Editors, editors, folders, OWNER } from "./conditions_support.ts";
import {
  Api,
  basic,
  clientWith,
  DATABASE_ENV,
  DATABASE_URL,
  expectError,
  http,
  newProject,
  permissionIds,
  REDIRECT_URI,
  service,
  startWith,
  test,
  userTokens,
} from "./helpers.ts";

type Setup = Editors;

/** The editors (tests/conditions_support.ts), and `d-1`, a registered document owned by bob, in eu. */
async function setup(): Promise<Setup> {
  const s = await editors();
  await s.api.objects.createObjects(s.project.id, s.doc.id, {
    objects: [{ id: "d-1", properties: { owner: "bob", region: "eu" } }],
  });
  return s;
}

// deno-lint-ignore no-explicit-any
const reason = (d: any) => d.context?.reason_admin;

async function decide(
  s: Setup,
  who: string,
  action: string,
  resource: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  token = s.access,
) {
  return await ok(
    await post(EVALUATION, {
      subject: { type: "user", id: who },
      action: { name: action },
      resource: { type: "doc", ...resource },
      ...extra,
    }, token),
  );
}

test("a role's condition: allowed when true, condition_false and condition_error deny, each with its reason", async () => {
  const s = await setup();
  assert.deepEqual(s.editor.conditions, [
    ...[
      { permission_id: s.perm.write, expression: OWNER },
      {
        permission_id: s.perm.delete,
        expression: "resource.properties.region == subject.properties.region",
      },
    ].sort((a, b) => a.permission_id < b.permission_id ? -1 : 1),
  ]);
  // An object that is not registered: the request's resource.properties.
  const mine = await decide(s, "alice", "write", { id: "new-1", properties: { owner: "alice" } });
  assert.equal(mine.decision, true);
  assert.deepEqual(reason(mine), {
    code: "role_permission",
    role_id: s.editor.id,
    permission_id: s.perm.write,
    conditional: true,
  });
  const theirs = await decide(s, "alice", "write", { id: "new-1", properties: { owner: "bob" } });
  assert.equal(theirs.decision, false);
  assert.deepEqual(reason(theirs), {
    code: "condition_false",
    role_id: s.editor.id,
    permission_id: s.perm.write,
  });
  // A missing property is an evaluation error: it denies, and says why.
  const none = await decide(s, "alice", "write", { id: "new-1" });
  assert.equal(none.decision, false);
  assert.equal(reason(none).code, "condition_error");
  assert.equal(reason(none).role_id, s.editor.id);
  assert.equal(reason(none).permission_id, s.perm.write);
  assert.match(reason(none).message, /owner/);
  // A type mismatch too; whatever is sent, the answer is a decision.
  for (const owner of [1, null, [], { a: 1 }, true]) {
    const odd = await decide(s, "alice", "write", { id: "new-1", properties: { owner } });
    assert.equal(odd.decision, false, JSON.stringify(owner));
  }
  // Read is held outright: no condition, no properties needed.
  assert.deepEqual(reason(await decide(s, "alice", "read", { id: "new-1" })), {
    code: "role_permission",
    role_id: s.editor.id,
  });
});

test("stored properties win: a registered object's and the subject's; the request's never override them", async () => {
  const s = await setup();
  // d-1 is bob's: alice claiming it in the request changes nothing.
  const claimed = await decide(s, "alice", "write", { id: "d-1", properties: { owner: "alice" } });
  assert.equal(claimed.decision, false);
  assert.equal(reason(claimed).code, "condition_false");
  assert.equal(
    (await decide(s, "bob", "write", { id: "d-1", properties: { owner: "alice" } })).decision,
    true,
  );
  // Delete: the subject's stored region (alice: eu) against d-1's (eu); bob (us) sending region eu is still us.
  assert.equal((await decide(s, "alice", "delete", { id: "d-1" })).decision, true);
  const spoofed = await decide(s, "bob", "delete", { id: "d-1" }, {
    subject: { type: "user", id: "bob", properties: { region: "eu" } },
  });
  assert.equal(spoofed.decision, false);
  assert.equal(reason(spoofed).code, "condition_false");
  // A changed stored property decides the next request.
  await s.api.objects.updateObject(s.project.id, s.doc.id, "d-1", {
    properties: { owner: "alice", region: "us" },
  });
  assert.equal((await decide(s, "alice", "write", { id: "d-1" })).decision, true);
  assert.equal((await decide(s, "alice", "delete", { id: "d-1" })).decision, false);
  assert.equal((await decide(s, "bob", "delete", { id: "d-1" })).decision, true);
});

test("what a request sends is read up to 4 KB: larger, its conditions deny (a search refuses)", async () => {
  const s = await setup();
  const big = { owners: Array.from({ length: 600 }, (_, i) => `user-${i}`) };
  const denied = await decide(s, "alice", "write", { id: "n-1", properties: { owner: "alice" } }, {
    context: big,
  });
  assert.equal(denied.decision, false);
  assert.equal(reason(denied).code, "condition_error");
  assert.match(reason(denied).message, /context is larger than the 4096 bytes/);
  // An outright permission reads nothing: the size changes nothing there.
  assert.equal((await decide(s, "alice", "read", { id: "n-1" }, { context: big })).decision, true);
  const search = await post("/access/v1/search/resource", {
    subject: { type: "user", id: "alice" },
    action: { name: "write" },
    resource: { type: "doc" },
    context: big,
  }, s.access);
  const refused = await search.json();
  assert.equal(search.status, 400, JSON.stringify(refused));
  assert.equal(refused.details[0].field, "/context");
  // So is an unregistered object's id, which conditions read as resource.id.
  const longId = await decide(s, "alice", "write", { id: "n".repeat(4097), properties: { owner: "alice" } });
  assert.equal(longId.decision, false);
  assert.match(reason(longId).message, /resource.id is larger than the 4096 bytes/);
  assert.equal(
    (await decide(s, "alice", "write", { id: "n".repeat(4096), properties: { owner: "alice" } })).decision,
    true,
  );
});

test("context, action properties and the database's clock", async () => {
  const s = await setup();
  const approve = await s.api.resources.createResource(s.project.id, {
    name: "Refund",
    code: "refund",
    permissions: [{ name: "Approve", code: "approve" }, { name: "Read", code: "read" }],
  });
  const [a, r] = [approve.permissions[0].id, approve.permissions[1].id];
  await s.api.roles.updateRole(s.project.id, s.editor.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [...s.editor.permission_ids, a, r],
    conditions: [
      { permission_id: a, expression: 'action.properties.amount < 500.0 && context.channel == "web"' },
      { permission_id: r, expression: 'now > timestamp("2020-01-01T00:00:00Z") && now.getFullYear() < 3000' },
    ],
  });
  const ask = (action: Record<string, unknown>, context?: Record<string, unknown>) =>
    post(EVALUATION, {
      subject: { type: "user", id: "alice" },
      action,
      resource: { type: "refund", id: "r-1" },
      ...(context ? { context } : {}),
    }, s.access).then(ok);
  assert.equal(
    (await ask({ name: "approve", properties: { amount: 120 } }, { channel: "web" })).decision,
    true,
  );
  assert.equal(
    (await ask({ name: "approve", properties: { amount: 900 } }, { channel: "web" })).decision,
    false,
  );
  assert.equal(
    (await ask({ name: "approve", properties: { amount: 120 } }, { channel: "phone" })).decision,
    false,
  );
  const noContext = await ask({ name: "approve", properties: { amount: 120 } });
  assert.equal(reason(noContext).code, "condition_error");
  assert.equal((await ask({ name: "read" })).decision, true);
  // The other conditions stay as they were (the update named them all): write still needs ownership.
  const role = await s.api.roles.getRole(s.project.id, s.editor.id);
  assert.deepEqual(role.conditions.map((c) => c.permission_id).sort(), [a, r].sort());
  assert.equal((await decide(s, "alice", "write", { id: "x", properties: { owner: "bob" } })).decision, true);
});

test("grants with conditions: the grant's and its role's, on the object's tree with its stored properties", async () => {
  const s = await setup();
  const { write, member } = await folders(s);
  const carol = await s.api.users.createUser(s.project.id, {
    display_name: "Carol",
    external_user_id: "carol",
  });
  const grant = await s.api.grants.createGrant(s.project.id, {
    subject: { type: "user", id: carol.id } as Api.GrantSubject,
    role_id: member.id,
    object: { type: "folder", id: "root" },
    condition: "resource.properties.hours < 18.0",
  });
  assert.equal(grant.condition, "resource.properties.hours < 18.0");
  const ask = (action: string, id: string) =>
    post(EVALUATION, {
      subject: { type: "user", id: "carol" },
      action: { name: action },
      resource: { type: "folder", id },
    }, s.access).then(ok);
  assert.deepEqual(reason(await ask("write", "open")), {
    code: "object_grant",
    grant_id: grant.id,
    object_id: "root",
    permission_id: write,
    conditional: true,
  });
  // The role's condition holds on grants of it too.
  assert.deepEqual(reason(await ask("write", "old")), {
    code: "condition_false",
    grant_id: grant.id,
    object_id: "root",
    permission_id: write,
  });
  assert.equal((await ask("read", "late")).decision, false);
  assert.equal(reason(await ask("read", "late")).code, "condition_false");
  // The root itself has no hours: an error, denied.
  assert.equal(reason(await ask("read", "root")).code, "condition_error");
  // A second grant without condition on the same tree allows outright.
  const plain = await s.api.grants.createGrant(s.project.id, {
    subject: { type: "user", id: carol.id } as Api.GrantSubject,
    role_id: member.id,
    object: { type: "folder", id: "late" },
  });
  assert.deepEqual(reason(await ask("read", "late")), {
    code: "object_grant",
    grant_id: plain.id,
    object_id: "late",
  });
  // A batch decides each item by its own object, in one snapshot.
  const batch = await ok(
    await post(EVALUATIONS, {
      subject: { type: "user", id: "carol" },
      action: { name: "write" },
      evaluations: ["open", "old", "late", "root", "open"].map((id) => ({
        resource: { type: "folder", id },
      })),
    }, s.access),
  );
  // (late: the grant there has no condition of its own, and late is not archived.)
  assert.deepEqual(batch.evaluations.map(reason).map((r: { code: string }) => r.code), [
    "object_grant",
    "condition_false",
    "object_grant",
    "condition_error",
    "object_grant",
  ]);
  assert.equal(batch.evaluations[2].context.reason_admin.grant_id, plain.id);
});

test("a batch settles each item with its own properties and context; the semantics cut after conditions too", async () => {
  const s = await setup();
  const items = [
    { resource: { type: "doc", id: "n-1", properties: { owner: "alice" } } },
    { resource: { type: "doc", id: "n-1", properties: { owner: "bob" } } },
    { resource: { type: "doc", id: "d-1", properties: { owner: "alice" } } },
    { resource: { type: "doc", id: "n-2" } },
    { action: { name: "read" }, resource: { type: "doc", id: "n-2" } },
  ];
  const all = await ok(
    await post(EVALUATIONS, {
      subject: { type: "user", id: "alice" },
      action: { name: "write" },
      evaluations: items,
    }, s.access),
  );
  assert.deepEqual(all.evaluations.map((d: { decision: boolean }) => d.decision), [
    true,
    false,
    false,
    false,
    true,
  ]);
  assert.deepEqual(all.evaluations.map(reason).map((r: { code: string }) => r.code), [
    "role_permission",
    "condition_false",
    "condition_false",
    "condition_error",
    "role_permission",
  ]);
  const cut = await ok(
    await post(EVALUATIONS, {
      subject: { type: "user", id: "alice" },
      action: { name: "write" },
      evaluations: items,
      options: { evaluations_semantic: "deny_on_first_deny" },
    }, s.access),
  );
  assert.equal(cut.evaluations.length, 2);
});

test("bad conditions are refused when written, naming the field and the position", async () => {
  const s = await setup();
  const path = `/api/v1/projects/${s.project.id}/roles`;
  const role = (conditions: unknown, permission_ids = [s.perm.write]) => ({
    code: `r-${crypto.randomUUID().slice(0, 8)}`,
    name: "R",
    permission_ids,
    conditions,
  });
  const cases: [unknown, string, RegExp][] = [
    [[{ permission_id: s.perm.write, expression: "subject.id ==" }], "conditions.0.expression", /column 14/],
    [
      [{ permission_id: s.perm.write, expression: "user.id == 1" }],
      "conditions.0.expression",
      /Unknown variable/,
    ],
    [
      [{ permission_id: s.perm.write, expression: 'readFile("/etc/passwd")' }],
      "conditions.0.expression",
      /overload/,
    ],
    [[{ permission_id: s.perm.write, expression: "subject.email == 1" }], "conditions.0.expression", /email/],
    [[{ permission_id: s.perm.write, expression: "1 + 1" }], "conditions.0.expression", /boolean/],
    [[{ permission_id: s.perm.write, expression: '1 + "a" == 2' }], "conditions.0.expression", /overload/],
    [[{ permission_id: s.perm.write, expression: "   " }], "conditions.0.expression", /empty/],
    [
      [{ permission_id: s.perm.write, expression: 'subject.id == "a\u0000"' }],
      "conditions.0.expression",
      /NUL/,
    ],
    [
      [{ permission_id: s.perm.write, expression: "[1].all(x, [2].exists(y, y == x))" }],
      "conditions.0.expression",
      /cost/,
    ],
    [
      [{ permission_id: s.perm.write, expression: 'subject.id.matches("(a+)+$")' }],
      "conditions.0.expression",
      /cost/,
    ],
    [
      [{ permission_id: s.perm.write, expression: "subject.id.matches(subject.id)" }],
      "conditions.0.expression",
      /literal/,
    ],
    [
      [{ permission_id: s.perm.write, expression: `${Array(120).fill("true").join(" && ")}` }],
      "conditions.0.expression",
      /./,
    ],
    [
      [{ permission_id: s.perm.write, expression: `"${"a".repeat(1000)}" == subject.id` }],
      "conditions.0.expression",
      /1000/,
    ],
    [
      [{ permission_id: s.perm.read, expression: "true" }],
      "conditions.0.permission_id",
      /role's permissions/,
    ],
    [
      [{ permission_id: s.perm.write, expression: "true" }, {
        permission_id: s.perm.write,
        expression: "false",
      }],
      "conditions.1.permission_id",
      /already/,
    ],
    [[{ permission_id: s.perm.write }], "conditions.0.expression", /./],
    [[{ permission_id: s.perm.write, expression: "true", extra: 1 }], "conditions.0.extra", /./],
    ["true", "conditions", /./],
  ];
  for (const [conditions, field, issue] of cases) {
    const err = await expectError(
      http(path, {
        method: "POST",
        headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
        body: JSON.stringify(role(conditions)),
      }),
      400,
      "invalid_params",
    );
    const detail = err.details?.find((d) => d.field === field);
    assert.ok(detail, `${JSON.stringify(conditions)}: ${JSON.stringify(err.details)}`);
    assert.match(detail.issue, issue, JSON.stringify(conditions));
  }
  // A grant's condition likewise.
  const grantWith = (condition: string) =>
    expectError(
      http(`/api/v1/projects/${s.project.id}/grants`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
        body: JSON.stringify({
          subject: { type: "user", id: s.alice.id },
          role_id: s.editor.id,
          object: { type: "doc", id: "d-1" },
          condition,
        }),
      }),
      400,
      "invalid_params",
    );
  const grantErr = await grantWith("resource.owner == subject.id");
  assert.equal(grantErr.details?.[0].field, "condition");
  assert.match(grantErr.details![0].issue, /owner.*column 10/);
  // An empty condition is no condition: refused, never stored as one that always denies.
  const empty = await grantWith("");
  assert.equal(empty.details?.[0].field, "condition");
  assert.match(empty.details![0].issue, /empty/);
  // Nothing was written.
  const [{ n }] = await (await service()).db.sql<{ n: number }[]>`
    select (select count(*) from object_grants where project_id = ${s.project.id})::int
         + (select count(*) from roles where project_id = ${s.project.id} and code <> 'editor')::int as n`;
  assert.equal(n, 0);
});

test("conditional permissions are never held outright: the gate, least privilege, introspection", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "reader",
    name: "Reader",
    permission_ids: [ids["users:read"], ids["roles:read"], ids["roles:update"]],
    conditions: [{ permission_id: ids["users:read"], expression: 'context.ticket != ""' }],
  });
  const email = `c-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery";
  await p.api.users.createUser(p.project.id, { display_name: "C", email, password, role_id: role.id });
  const tokens = await userTokens({ clientId: p.clientId, email, password });
  const as = (path: string) =>
    http(`/api/v1/projects/${p.project.id}${path}`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
  // The gate: users:read is held only under a condition, so the admin API refuses it; roles:read is held.
  await expectError(as("/users"), 403, "insufficient_permission");
  assert.equal((await as("/roles")).status, 200);
  // Least privilege: holding users:read only under a condition does not cover giving it.
  const give = await http(`/api/v1/projects/${p.project.id}/roles`, {
    method: "POST",
    headers: { authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json" },
    body: JSON.stringify({ code: "x", name: "X", permission_ids: [ids["roles:read"]] }),
  });
  await give.body?.cancel();
  const changeOwn = await http(`/api/v1/projects/${p.project.id}/roles/${role.id}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json" },
    body: JSON.stringify({ code: "reader", name: "Reader", conditions: [] }),
  });
  const refused = await changeOwn.json();
  assert.equal(changeOwn.status, 403, JSON.stringify(refused));
  assert.equal(refused.error, "insufficient_permission");
  // Introspection: users:read is listed apart, as conditional.
  const introspector = await p.api.clients.createClient(p.project.id, {
    name: "RS",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });
  const res = await http("/api/v1/tokens/introspect", {
    method: "POST",
    headers: {
      authorization: basic(introspector.id, introspector.client_secret),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ token: tokens.access_token }).toString(),
  });
  const body = await res.json();
  assert.equal(body.active, true, JSON.stringify(body));
  assert.ok(!body.permissions.includes("users:read"), JSON.stringify(body));
  assert.ok(body.permissions.includes("roles:read"));
  assert.deepEqual(body.conditional_permissions, ["users:read"]);
});

test("changing a role's conditions needs covering the role, as changing its permissions does", async () => {
  const s = await setup();
  const limited = await clientWith(s, ["roles:update", "roles:read"]);
  await expectError(
    http(`/api/v1/projects/${s.project.id}/roles/${s.editor.id}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${limited.token}`, "content-type": "application/json" },
      body: JSON.stringify({ code: "editor", name: "Editor", conditions: [] }),
    }),
    403,
    "insufficient_permission",
  );
  assert.equal((await s.api.roles.getRole(s.project.id, s.editor.id)).conditions.length, 2);
});

test("a client with decision_reasons false gets bare decisions, single and batch", async () => {
  const s = await setup();
  const pep = await s.api.clients.createClient(s.project.id, {
    name: "PEP",
    permission_ids: [(await permissionIds(s))["access:evaluate"]],
    decision_reasons: false,
  });
  assert.equal(pep.decision_reasons, false);
  const token = (await (await http("/api/v1/tokens", {
    method: "POST",
    headers: {
      authorization: basic(pep.id, pep.client_secret),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  })).json()).access_token;
  const one = await post(EVALUATION, {
    subject: { type: "user", id: "alice" },
    action: { name: "write" },
    resource: { type: "doc", id: "n", properties: { owner: "alice" } },
  }, token);
  assert.equal(await one.text(), '{"decision":true}');
  const many = await post(EVALUATIONS, {
    subject: { type: "user", id: "alice" },
    action: { name: "write" },
    evaluations: [
      { resource: { type: "doc", id: "n", properties: { owner: "alice" } } },
      { resource: { type: "doc", id: "n", properties: { owner: "bob" } } },
      { resource: { type: "nothing", id: "n" } },
    ],
  }, token);
  assert.equal(
    await many.text(),
    '{"evaluations":[{"decision":true},{"decision":false},{"decision":false}]}',
  );
  // Turned back on, the next request has them.
  await s.api.clients.updateClient(s.project.id, pep.id, {
    name: "PEP",
    is_active: true,
    decision_reasons: true,
  });
  assert.equal(
    reason(
      await ok(
        await post(EVALUATION, {
          subject: { type: "user", id: "alice" },
          action: { name: "read" },
          resource: { type: "doc", id: "n" },
        }, token),
      ),
    ).code,
    "role_permission",
  );
});

test(
  "live across instances: a condition changed through one decides the next request on another",
  async () => {
    const s = await setup();
    const other = await startWith(DATABASE_ENV);
    try {
      // A token of the other instance (its issuer is its own URL).
      const pep = await clientWith(s, ["access:evaluate"]);
      const token = (await (await fetch(`${other.url}/api/v1/tokens`, {
        method: "POST",
        headers: {
          authorization: basic(pep.id, pep.secret),
          "content-type": "application/x-www-form-urlencoded",
        },
        body: "grant_type=client_credentials",
      })).json()).access_token;
      const ask = () =>
        fetch(`${other.url}${EVALUATION}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({
            subject: { type: "user", id: "alice" },
            action: { name: "write" },
            resource: { type: "doc", id: "n", properties: { owner: "bob", editors: ["alice"] } },
          }),
        }).then((r) => r.json());
      const first = await ask();
      assert.equal(first.decision, false, JSON.stringify(first));
      await s.api.roles.updateRole(s.project.id, s.editor.id, {
        code: "editor",
        name: "Editor",
        conditions: [{
          permission_id: s.perm.write,
          expression: `${OWNER} || subject.id in resource.properties.editors`,
        }],
      });
      assert.equal((await ask()).decision, true);
      await s.api.roles.updateRole(s.project.id, s.editor.id, {
        code: "editor",
        name: "Editor",
        conditions: [],
      });
      assert.deepEqual(reason(await ask()), { code: "role_permission", role_id: s.editor.id });
    } finally {
      await other.close();
    }
  },
  { ignore: !DATABASE_URL },
);
