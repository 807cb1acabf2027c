/**
 * The AuthZEN Todo 1.1 interop scenario (issue 48 item 7), configured through the admin API only and decided
 * as the interop harness decides it.
 *
 * `fixtures/authzen/todo-1.1-decisions.json` is a byte-for-byte copy of
 * `interop/authzen-todo-backend/test/decisions-authorization-api-1_0-02.json` in github.com/openid/authzen at
 * commit e287920eed842b227e38531c1735b712337ca44d (blob fb73e456fe5a3b6c4f27345c8aa37bc71768dcf6; its content
 * last changed in 8b9ea0bd4ff0abea6fcec428fee70d4cbc81ca55 as `decisions-1.1-preview.json`). The harness
 * (`interop/authzen-todo-backend/test/runner.ts`, same commit) POSTs each `evaluation` item's request to
 * `/access/v1/evaluation` and compares `data.decision || false` with `expected`, and each `evaluations` item's
 * to `/access/v1/evaluations` and compares `JSON.stringify(expected) === JSON.stringify(data.evaluations)`:
 * exactly `[{"decision":true},…]`, which is why the PEP's client has `decision_reasons` false. This file does
 * the same, with the harness's `Authorization` header (the raw key it is given, here `Bearer <token>`).
 *
 * The scenario's policy (docs/authzen.md § The Todo 1.1 interop scenario): everyone reads users and todos;
 * admins and editors create todos; the evil genius updates any todo and the admin deletes any; an editor
 * updates and deletes only their own (`resource.properties.ownerID`, an email, is theirs); viewers never update
 * nor delete. A user has one role, so Rick (admin and evil genius) has one role holding everything outright.
 */
import assert from "node:assert/strict";
import decisions from "./fixtures/authzen/todo-1.1-decisions.json" with { type: "json" };
import { EVALUATION, EVALUATIONS, ok, post } from "./authzen_support.ts";
import { basic, http, newProject, permissionIds, service, test, type TestProject } from "./helpers.ts";

/** The editors' condition on can_update_todo and can_delete_todo. */
export const OWNER = "resource.properties.ownerID == subject.properties.email";

/** The scenario's users: their PIDs (the subjects' ids), emails and roles. */
const PEOPLE = [
  [
    "Rick Sanchez",
    "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    "rick@the-citadel.com",
    "admin_evil_genius",
  ],
  [
    "Morty Smith",
    "CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    "morty@the-citadel.com",
    "editor",
  ],
  [
    "Summer Smith",
    "CiRmZDI2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    "summer@the-smiths.com",
    "editor",
  ],
  [
    "Beth Smith",
    "CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    "beth@the-smiths.com",
    "viewer",
  ],
  [
    "Jerry Smith",
    "CiRmZDQ2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
    "jerry@the-smiths.com",
    "viewer",
  ],
] as const;

type Todo = TestProject & {
  roles: Record<string, string>;
  perm: Record<string, string>;
  /** The PEP client's id and secret: access:evaluate, decision_reasons false. */
  pep: { id: string; secret: string };
};

/** The scenario as a project, through the admin API (the SDK). */
async function todoProject(): Promise<Todo> {
  const p = await newProject();
  const id = p.project.id;
  const user = await p.api.resources.createResource(id, {
    name: "User",
    code: "user",
    permissions: [{ name: "Read a user", code: "can_read_user" }],
  });
  const todo = await p.api.resources.createResource(id, {
    name: "Todo",
    code: "todo",
    permissions: [
      { name: "Read todos", code: "can_read_todos" },
      { name: "Create a todo", code: "can_create_todo" },
      { name: "Update a todo", code: "can_update_todo" },
      { name: "Delete a todo", code: "can_delete_todo" },
    ],
  });
  const perm = Object.fromEntries([...user.permissions, ...todo.permissions].map((x) => [x.code, x.id]));
  const viewer = await p.api.roles.createRole(id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [perm.can_read_user, perm.can_read_todos],
  });
  const editor = await p.api.roles.createRole(id, {
    code: "editor",
    name: "Editor",
    permission_ids: [
      perm.can_read_user,
      perm.can_read_todos,
      perm.can_create_todo,
      perm.can_update_todo,
      perm.can_delete_todo,
    ],
    conditions: [
      { permission_id: perm.can_update_todo, expression: OWNER },
      { permission_id: perm.can_delete_todo, expression: OWNER },
    ],
  });
  const admin = await p.api.roles.createRole(id, {
    code: "admin_evil_genius",
    name: "Admin and evil genius",
    permission_ids: Object.values(perm),
  });
  const roles: Record<string, string> = { viewer: viewer.id, editor: editor.id, admin_evil_genius: admin.id };
  for (const [name, pid, email, role] of PEOPLE) {
    await p.api.users.createUser(id, {
      display_name: name,
      external_user_id: pid,
      role_id: roles[role],
      properties: { email },
    });
  }
  const client = await p.api.clients.createClient(id, {
    name: "Todo PEP",
    permission_ids: [(await permissionIds(p))["access:evaluate"]],
    decision_reasons: false,
  });
  return { ...p, roles, perm, pep: { id: client.id, secret: client.client_secret } };
}

async function tokenOf(clientId: string, secret: string): Promise<string> {
  const res = await http("/api/v1/tokens", {
    method: "POST",
    headers: { authorization: basic(clientId, secret), "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.access_token;
}

/** As the harness asks: `Authorization` is the key it is given, the body the table's request as it is. */
async function harness(endpoint: "evaluation" | "evaluations", request: unknown, key: string) {
  const res = await http(`/access/v1/${endpoint}`, {
    method: "POST",
    headers: { Authorization: key, "Content-Type": "application/json" },
    body: JSON.stringify(request),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return { text, data: JSON.parse(text) };
}

test("Todo 1.1: every decision of the interop table, as the harness compares them", async () => {
  assert.equal(decisions.evaluation.length, 40);
  assert.equal(decisions.evaluations.length, 3);
  const s = await todoProject();
  const key = `Bearer ${await tokenOf(s.pep.id, s.pep.secret)}`;
  const failed: string[] = [];
  for (const { request, expected } of decisions.evaluation) {
    const { text, data } = await harness("evaluation", request, key);
    // The harness: `data.decision || false`, compared as JSON. A bare decision, as the client asked.
    if (JSON.stringify(expected) !== JSON.stringify(data.decision || false)) {
      failed.push(`evaluation ${JSON.stringify(request)}: expected ${expected}, got ${text}`);
    }
    assert.equal(text, `{"decision":${data.decision}}`);
  }
  for (const { request, expected } of decisions.evaluations) {
    const { text, data } = await harness("evaluations", request, key);
    if (JSON.stringify(expected) !== JSON.stringify(data.evaluations)) {
      failed.push(
        `evaluations ${JSON.stringify(request)}: expected ${JSON.stringify(expected)}, got ${text}`,
      );
    }
  }
  assert.deepEqual(failed, []);
});

test("Todo 1.1 with reasons: an editor on someone else's todo is condition_false, naming role and permission", async () => {
  const s = await todoProject();
  await s.api.clients.updateClient(s.project.id, s.pep.id, {
    name: "Todo PEP",
    is_active: true,
    decision_reasons: true,
  });
  const token = await tokenOf(s.pep.id, s.pep.secret);
  const morty = { type: "user", id: PEOPLE[1][1] };
  const theirs = await ok(
    await post(EVALUATION, {
      subject: morty,
      action: { name: "can_update_todo" },
      resource: {
        type: "todo",
        id: "7240d0db-8ff0-41ec-98b2-34a096273b92",
        properties: { ownerID: "rick@the-citadel.com" },
      },
    }, token),
  );
  assert.deepEqual(theirs, {
    decision: false,
    context: {
      reason_admin: {
        code: "condition_false",
        role_id: s.roles.editor,
        permission_id: s.perm.can_update_todo,
      },
    },
  });
  // The same question in a batch, with his own todo and one with no owner: each item its own reason.
  const batch = await ok(
    await post(EVALUATIONS, {
      subject: morty,
      action: { name: "can_delete_todo" },
      evaluations: [
        { resource: { type: "todo", id: "t-1", properties: { ownerID: "rick@the-citadel.com" } } },
        { resource: { type: "todo", id: "t-2", properties: { ownerID: "morty@the-citadel.com" } } },
        { resource: { type: "todo", id: "t-3" } },
        { action: { name: "can_read_todos" }, resource: { type: "todo", id: "t-3" } },
      ],
    }, token),
  );
  const reasons = batch.evaluations.map((d: { context: { reason_admin: unknown } }) =>
    d.context.reason_admin
  );
  assert.deepEqual(reasons.slice(0, 2), [
    { code: "condition_false", role_id: s.roles.editor, permission_id: s.perm.can_delete_todo },
    {
      code: "role_permission",
      role_id: s.roles.editor,
      permission_id: s.perm.can_delete_todo,
      conditional: true,
    },
  ]);
  assert.equal(reasons[2].code, "condition_error");
  assert.match(reasons[2].message, /ownerID/);
  assert.deepEqual(reasons[3], { code: "role_permission", role_id: s.roles.editor });
  // Rick's role holds everything outright: no condition, no conditional.
  const rick = await ok(
    await post(EVALUATION, {
      subject: { type: "user", id: PEOPLE[0][1] },
      action: { name: "can_delete_todo" },
      resource: { type: "todo", id: "t-1", properties: { ownerID: "morty@the-citadel.com" } },
    }, token),
  );
  assert.deepEqual(rick.context.reason_admin, {
    code: "role_permission",
    role_id: s.roles.admin_evil_genius,
  });
});

/** Set (to anything): the harness itself runs too, built from npm; its output must be 43 PASS lines. */
const HARNESS = Deno.env.get("AUTHZEN_TODO_HARNESS");

async function run(cmd: string, args: string[], opts: Deno.CommandOptions = {}): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", ...opts }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.ok(out.success, `${cmd} ${args.join(" ")}: ${text}${new TextDecoder().decode(out.stderr)}`);
  return text;
}

test(
  "Todo 1.1: the interop harness itself (runner.ts, unmodified, on Node) passes every case",
  async () => {
    const s = await todoProject();
    const key = `Bearer ${await tokenOf(s.pep.id, s.pep.secret)}`;
    const dir = await Deno.makeTempDir({ prefix: "authzen-todo-harness-" });
    try {
      // As upstream builds it (`yarn build`, then `node build/test/runner.js`): the runner and its table side by
      // side, compiled to CommonJS with the options of interop/authzen-todo-backend/tsconfig.json (`--noCheck`:
      // its type-only import of the 1_0-01 table, which is not copied, is elided either way).
      await Deno.mkdir(`${dir}/test`);
      const here = new URL("./fixtures/authzen/", import.meta.url);
      await Deno.copyFile(new URL("runner.ts", here), `${dir}/test/runner.ts`);
      await Deno.copyFile(
        new URL("todo-1.1-decisions.json", here),
        `${dir}/test/decisions-authorization-api-1_0-02.json`,
      );
      await Deno.writeTextFile(`${dir}/package.json`, '{"private":true}');
      await run("npm", [
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "cli-color@2.0.4",
        "typescript@5.9.3",
        "@types/node@20",
      ], { cwd: dir });
      await run("node", [
        "node_modules/typescript/bin/tsc",
        ...["--target", "esnext", "--module", "CommonJS", "--moduleResolution", "node", "--esModuleInterop"],
        ...["--resolveJsonModule", "--skipLibCheck", "--noCheck", "--outDir", "build", "test/runner.ts"],
      ], { cwd: dir });
      // Upstream's tsconfig includes test/**/*.json, so the table lands beside the compiled runner.
      await Deno.copyFile(
        `${dir}/test/decisions-authorization-api-1_0-02.json`,
        `${dir}/build/decisions-authorization-api-1_0-02.json`,
      );
      const out = await run(
        "node",
        ["build/runner.js", (await service()).url, "authorization-api-1_0-02", "console"],
        { cwd: dir, env: { AUTHZEN_PDP_API_KEY: key, NO_COLOR: "1" } },
      );
      // deno-lint-ignore no-control-regex
      const lines = out.replace(/\x1b\[[0-9;]*m/g, "").trim().split("\n");
      assert.equal(lines.length, 43, out);
      assert.deepEqual(lines.filter((l) => !l.startsWith("PASS ")), [], out);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
  { ignore: !HARNESS },
);
