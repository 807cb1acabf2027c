/**
 * Roles on objects: grants (create, list, get, revoke, every bad input and refusal, least privilege), and what
 * they decide in the AuthZEN endpoints (through ancestors, with reasons, expiry on the database's clock), in
 * resource and subject search, the audit trail and the purge of expired grants.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../config.ts";
import { keySettings } from "../service.ts";
import { TokenService } from "../domain/keys/tokens.ts";
import { jobsOf } from "../jobs.ts";
import { EVALUATION, EVALUATIONS, ok, post, RESOURCES, SUBJECTS } from "./authzen_support.ts";
import {
  ADMIN_SECRET,
  Api,
  basic,
  clientWith,
  DATABASE_ENV,
  DATABASE_URL,
  eventually,
  expectError,
  http,
  newProject,
  service,
  test,
  type TestProject,
  type TestService,
} from "./helpers.ts";
import { spawn } from "./processes.ts";

type Tree = TestProject & {
  folder: { id: string };
  perm: Record<string, string>;
  editor: { id: string };
  viewer: { id: string };
  carol: { id: string };
  dave: { id: string };
  access: string;
};

/**
 * Folders: `root` → `team` → `project` → `doc-1`, `doc-2`; `other` beside `root`. Carol and Dave have no role.
 * Roles: editor (folder read, write), viewer (folder read). `access`: a token holding access:*.
 */
/** Waits, polling, until the database's clock is past `instant` (what an expiry is decided by). */
async function pastOnDatabaseClock(sql: TestService["db"]["sql"], instant: string): Promise<void> {
  await eventually(`the database's clock past ${instant}`, async () => {
    const [{ past }] = await sql<{ past: boolean }[]>`select now() > ${instant}::timestamptz as past`;
    return past;
  }, { within: 10_000 });
}

async function tree(): Promise<Tree> {
  const p = await newProject();
  const folder = await p.api.resources.createResource(p.project.id, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
  });
  const perm = Object.fromEntries(folder.permissions.map((x) => [x.code, x.id]));
  const editor = await p.api.roles.createRole(p.project.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [perm.read, perm.write],
  });
  const viewer = await p.api.roles.createRole(p.project.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [perm.read],
  });
  const carol = await p.api.users.createUser(p.project.id, {
    display_name: "Carol",
    external_user_id: "carol",
  });
  const dave = await p.api.users.createUser(p.project.id, {
    display_name: "Dave",
    external_user_id: "dave-ext",
  });
  await p.api.objects.createObjects(p.project.id, folder.id, {
    objects: [
      { id: "root" },
      { id: "team", parent_id: "root" },
      { id: "project", parent_id: "team" },
      { id: "doc-1", parent_id: "project" },
      { id: "doc-2", parent_id: "project" },
      { id: "other" },
    ],
  });
  const access = (await clientWith(p, ["access:evaluate", "access:search"])).token;
  return { ...p, folder, perm, editor, viewer, carol, dave, access };
}

const grantOn = (
  t: Tree,
  subject: { type: "user" | "client"; id: string },
  roleId: string,
  object: string,
  expires_at?: string,
) =>
  t.api.grants.createGrant(t.project.id, {
    subject: subject as Api.GrantSubject,
    role_id: roleId,
    object: { type: "folder", id: object },
    expires_at,
  });

async function setRole(t: Tree, userId: string, roleId: string) {
  await t.api.users.updateUser(t.project.id, userId, {
    display_name: "Dave",
    external_user_id: "dave-ext",
    is_active: true,
    role_id: roleId,
  });
}

async function decide(t: Tree, who: string, action: string, object: string, type = "user") {
  return await ok(
    await post(EVALUATION, {
      subject: { type, id: who },
      action: { name: action },
      resource: { type: "folder", id: object },
    }, t.access),
  );
}

test("grants: create, get, list with filters, revoke", async () => {
  const t = await tree();
  const g = await grantOn(t, { type: "user", id: "carol" }, t.editor.id, "team");
  assert.deepEqual(
    { ...g, id: "", created_at: "" },
    {
      id: "",
      project_id: t.project.id,
      subject: { type: "user", id: t.carol.id } as Api.GrantSubject,
      role_id: t.editor.id,
      object: { type: "folder", id: "team", resource_id: t.folder.id },
      expires_at: null,
      is_expired: false,
      condition: null,
      created_at: "",
      created_by: { type: "client", id: t.clientId },
    },
  );
  const client = await clientWith(t, []);
  const until = new Date(Date.now() + 3600_000).toISOString();
  const h = await grantOn(t, { type: "client", id: client.id }, t.viewer.id, "other", until);
  assert.equal(h.expires_at, until);
  assert.deepEqual(await t.api.grants.getGrant(t.project.id, g.id), g);
  const list = (q: Partial<Record<string, string>>) =>
    t.api.grants.listGrants(
      t.project.id,
      undefined,
      undefined,
      undefined,
      undefined,
      q.subject_type as never,
      q.subject_id,
      q.role_id,
      q.object_type,
      q.object_id,
      q.include_expired === "true",
    );
  assert.deepEqual((await list({})).data.map((x) => x.id), [h.id, g.id]);
  assert.deepEqual((await list({ subject_id: t.carol.id })).data.map((x) => x.id), [g.id]);
  assert.deepEqual((await list({ subject_type: "client", subject_id: client.id })).data.map((x) => x.id), [
    h.id,
  ]);
  assert.deepEqual((await list({ role_id: t.viewer.id })).data.map((x) => x.id), [h.id]);
  assert.deepEqual((await list({ subject_type: "user" })).data.map((x) => x.id), [g.id]);
  assert.deepEqual((await list({ object_type: "FOLDER", object_id: "team" })).data.map((x) => x.id), [g.id]);
  await t.api.grants.deleteGrant(t.project.id, g.id);
  await expectError(t.api.grants.getGrant(t.project.id, g.id), 404, "grant_not_found");
  await expectError(t.api.grants.deleteGrant(t.project.id, g.id), 404, "grant_not_found");
  assert.equal((await list({})).pagination.total, 1);
});

test("grants: bad input and unknown things, with their codes", async () => {
  const t = await tree();
  const base = {
    subject: { type: "user", id: t.carol.id } as Api.GrantSubject,
    role_id: t.viewer.id,
    object: { type: "folder", id: "team" },
  };
  const send = (body: unknown) =>
    http(`/api/v1/projects/${t.project.id}/grants`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const nf = await expectError(
    await send({ ...base, object: { type: "nothing", id: "team" } }),
    404,
    "resource_not_found",
  );
  assert.equal(nf.details![0].field, "object.type");
  await expectError(await send({ ...base, object: { type: "folder", id: "nope" } }), 404, "object_not_found");
  await expectError(await send({ ...base, role_id: "no-such-role" }), 404, "role_not_found");
  const past = await expectError(
    await send({ ...base, expires_at: "2020-01-01T00:00:00Z" }),
    400,
    "invalid_params",
  );
  assert.deepEqual(past.details, [{
    field: "expires_at",
    issue: "not in the future (by the service's clock)",
  }]);
  for (
    const body of [
      { ...base, expires_at: "tomorrow" },
      { ...base, subject: { type: "group", id: "x" } },
      { ...base, subject: { type: "user" } },
      { ...base, object: { type: "folder", id: "bad id" } },
      { subject: base.subject, object: base.object },
      {},
    ]
  ) await expectError(await send(body), 400, "invalid_params");
  const unknown = await expectError(
    await send({ ...base, subject: { type: "user", id: "nobody" } }),
    400,
    "invalid_params",
  );
  assert.equal(unknown.details![0].field, "subject.id");
  // A subject of another project.
  const q = await newProject();
  const stranger = await q.api.users.createUser(q.project.id, { display_name: "S", external_user_id: "s" });
  await expectError(
    await send({ ...base, subject: { type: "user", id: stranger.id } }),
    400,
    "invalid_params",
  );
  await expectError(
    await send({ ...base, subject: { type: "client", id: q.clientId } }),
    400,
    "invalid_params",
  );
  // Another project's role.
  const theirs = await q.api.roles.createRole(q.project.id, { code: "r", name: "R" });
  await expectError(await send({ ...base, role_id: theirs.id }), 404, "role_not_found");
  // A user named by external id is stored by id.
  const g = await (await send({ ...base, subject: { type: "user", id: "carol" } })).json();
  assert.deepEqual(g.subject, { type: "user", id: t.carol.id });
});

test("grants: least privilege, and each operation needs its permission", async () => {
  const t = await tree();
  // Holds grants:* and folder:read only: may give the viewer role, not the editor (folder:write).
  const narrow = await clientWith(t, ["grants:create", "grants:read", "grants:delete", "folder:read"]);
  const refused = await expectError(
    narrow.api.grants.createGrant(t.project.id, {
      subject: { type: "user", id: t.carol.id } as Api.GrantSubject,
      role_id: t.editor.id,
      object: { type: "folder", id: "team" },
    }),
    403,
    "insufficient_permission",
  );
  assert.deepEqual(refused.details, [{ field: "role_id", issue: "the caller does not hold folder:write" }]);
  const viewerGrant = await narrow.api.grants.createGrant(t.project.id, {
    subject: { type: "user", id: t.carol.id } as Api.GrantSubject,
    role_id: t.viewer.id,
    object: { type: "folder", id: "team" },
  });
  assert.deepEqual(viewerGrant.created_by, { type: "client", id: narrow.id });
  // It may revoke what it could give, not a grant of the editor role.
  const editorGrant = await grantOn(t, { type: "user", id: t.dave.id }, t.editor.id, "team");
  await expectError(
    narrow.api.grants.deleteGrant(t.project.id, editorGrant.id),
    403,
    "insufficient_permission",
  );
  await narrow.api.grants.deleteGrant(t.project.id, viewerGrant.id);
  // Without the permissions.
  const none = await clientWith(t, ["folder:read", "folder:write"]);
  await expectError(
    none.api.grants.createGrant(t.project.id, {
      subject: { type: "user", id: t.carol.id } as Api.GrantSubject,
      role_id: t.viewer.id,
      object: { type: "folder", id: "team" },
    }),
    403,
    "insufficient_permission",
  );
  await expectError(
    none.api.grants.listGrants(
      t.project.id,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ),
    403,
    "insufficient_permission",
  );
  await expectError(none.api.grants.getGrant(t.project.id, editorGrant.id), 403, "insufficient_permission");
  await expectError(
    none.api.grants.deleteGrant(t.project.id, editorGrant.id),
    403,
    "insufficient_permission",
  );
  // Another project's token.
  const q = await newProject();
  await expectError(q.api.grants.getGrant(t.project.id, editorGrant.id), 403, "insufficient_permission");
});

test("decisions through grants: the object or an ancestor, the role's permissions of that resource, reasons", async () => {
  const t = await tree();
  assert.deepEqual(await decide(t, "carol", "read", "doc-1"), {
    decision: false,
    context: { reason_admin: { code: "no_permission" } },
  });
  const g = await grantOn(t, { type: "user", id: "carol" }, t.viewer.id, "team");
  // Three levels under the grant's object.
  assert.deepEqual(await decide(t, "carol", "read", "doc-1"), {
    decision: true,
    context: { reason_admin: { code: "object_grant", grant_id: g.id, object_id: "team" } },
  });
  assert.equal((await decide(t, "carol", "read", "team")).decision, true);
  assert.equal((await decide(t, "carol", "read", "root")).decision, false, "not above the grant");
  assert.equal((await decide(t, "carol", "read", "other")).decision, false);
  assert.equal((await decide(t, "carol", "read", "unregistered")).decision, false);
  assert.equal((await decide(t, "carol", "write", "doc-1")).decision, false, "the viewer role has no write");
  assert.equal((await decide(t, "dave-ext", "read", "doc-1")).decision, false, "another user's grant");
  // The nearest grant names the decision; a client's grant decides for that client only.
  const near = await grantOn(t, { type: "user", id: t.carol.id }, t.editor.id, "project");
  assert.deepEqual((await decide(t, "carol", "write", "doc-2")).context.reason_admin, {
    code: "object_grant",
    grant_id: near.id,
    object_id: "project",
  });
  const client = await clientWith(t, []);
  await grantOn(t, { type: "client", id: client.id }, t.editor.id, "root");
  assert.equal((await decide(t, client.id, "write", "doc-1", "client")).decision, true);
  // A project-wide permission decides first (the role's reason), whatever the grants.
  await setRole(t, t.dave.id, t.viewer.id);
  assert.deepEqual((await decide(t, "dave-ext", "read", "doc-1")).context.reason_admin, {
    code: "role_permission",
    role_id: t.viewer.id,
  });
  // Revoked: the next decision.
  await t.api.grants.deleteGrant(t.project.id, near.id);
  assert.equal((await decide(t, "carol", "write", "doc-2")).decision, false);
  // A batch decides through grants too, in one snapshot.
  const many = await ok(
    await post(EVALUATIONS, {
      subject: { type: "user", id: "carol" },
      action: { name: "read" },
      evaluations: [{ resource: { type: "folder", id: "doc-1" } }, {
        resource: { type: "folder", id: "other" },
      }],
    }, t.access),
  );
  assert.deepEqual(many.evaluations.map((e: { decision: boolean }) => e.decision), [true, false]);
  assert.equal(many.evaluations[0].context.reason_admin.code, "object_grant");
  // A moved object takes what its ancestors' grants give along.
  await t.api.objects.updateObject(t.project.id, t.folder.id, "other", { parent_id: "team" });
  assert.equal((await decide(t, "carol", "read", "other")).decision, true);
  // A deleted object takes its grants with it.
  await t.api.objects.deleteObject(t.project.id, t.folder.id, "team", true);
  await expectError(t.api.grants.getGrant(t.project.id, g.id), 404, "grant_not_found");
});

test("decisions through grants: an expired grant decides nothing, by the database's clock (grant_expired)", async () => {
  const t = await tree();
  const { db } = await service();
  const [{ soon }] = await db.sql<{ soon: string }[]>`
    select to_char((now() + interval '1500 milliseconds') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      as soon`;
  const g = await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "project", soon);
  assert.equal((await decide(t, "carol", "read", "doc-1")).decision, true);
  await pastOnDatabaseClock(db.sql, soon);
  assert.deepEqual(await decide(t, "carol", "read", "doc-1"), {
    decision: false,
    context: { reason_admin: { code: "grant_expired", grant_id: g.id, object_id: "project" } },
  });
  const list = (include?: boolean) =>
    t.api.grants.listGrants(
      t.project.id,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      include,
    );
  assert.equal((await list()).pagination.total, 0);
  const expired = (await list(true)).data;
  assert.deepEqual(expired.map((x) => [x.id, x.is_expired]), [[g.id, true]]);
  // Not in searches.
  const found = await ok(
    await post(RESOURCES, {
      subject: { type: "user", id: "carol" },
      action: { name: "read" },
      resource: { type: "folder" },
    }, t.access),
  );
  assert.deepEqual(found.results, []);
});

test("resource search through grants: each grant's object and descendants, paged, never cut", async () => {
  const t = await tree();
  const search = async (who: string, page?: { limit?: number; token?: string }) =>
    await ok(
      await post(RESOURCES, {
        subject: { type: "user", id: who },
        action: { name: "read" },
        resource: { type: "folder" },
        ...(page ? { page } : {}),
      }, t.access),
    );
  assert.deepEqual((await search("carol")).results, []);
  await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "project");
  await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "doc-1"); // overlaps the one above
  await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "other");
  const all = await search("carol");
  assert.deepEqual(all.results.map((r: { id: string }) => r.id), ["doc-1", "doc-2", "other", "project"]);
  assert.deepEqual(all.page, { next_token: "", count: 4, total: 4 });
  // Pages of 3 then 1, bound to the query.
  const first = await search("carol", { limit: 3 });
  assert.deepEqual(first.results.map((r: { id: string }) => r.id), ["doc-1", "doc-2", "other"]);
  assert.equal(first.page.total, 4);
  assert.notEqual(first.page.next_token, "");
  const second = await search("carol", { limit: 3, token: first.page.next_token });
  assert.deepEqual(second.results.map((r: { id: string }) => r.id), ["project"]);
  assert.equal(second.page.next_token, "");
  // Write: the viewer role gives none.
  const writes = await ok(
    await post(RESOURCES, {
      subject: { type: "user", id: "carol" },
      action: { name: "write" },
      resource: { type: "folder" },
    }, t.access),
  );
  assert.deepEqual(writes.results, []);
  // Project-wide: every registered object.
  await setRole(t, t.dave.id, t.viewer.id);
  assert.equal((await search(t.dave.id)).page.total, 6);
  // Totals follow moves and deletes (kept with the objects, not counted at each search).
  await t.api.objects.updateObject(t.project.id, t.folder.id, "other", { parent_id: "doc-2" });
  let now = await search("carol");
  assert.deepEqual(now.results.map((r: { id: string }) => r.id), ["doc-1", "doc-2", "other", "project"]);
  assert.equal(now.page.total, 4);
  await t.api.objects.updateObject(t.project.id, t.folder.id, "doc-2", { parent_id: "root" });
  await t.api.objects.createObjects(t.project.id, t.folder.id, {
    objects: [{ id: "n1", parent_id: "other" }],
  });
  now = await search("carol");
  assert.deepEqual(now.results.map((r: { id: string }) => r.id), ["doc-1", "n1", "other", "project"]);
  assert.equal(now.page.total, 4);
  await t.api.objects.deleteObject(t.project.id, t.folder.id, "doc-2", true);
  now = await search("carol");
  assert.deepEqual(now.results.map((r: { id: string }) => r.id), ["doc-1", "project"]);
  assert.equal(now.page.total, 2);
  assert.equal((await search(t.dave.id)).page.total, 4);
});

test("subject search includes the subjects allowed through grants on the object or its ancestors", async () => {
  const t = await tree();
  await setRole(t, t.dave.id, t.viewer.id);
  await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "team");
  const who = async (object: string) =>
    (await ok(
      await post(SUBJECTS, {
        subject: { type: "user" },
        action: { name: "read" },
        resource: { type: "folder", id: object },
      }, t.access),
    )).results.map((r: { id: string }) => r.id).sort();
  assert.deepEqual(await who("doc-1"), ["carol", "dave-ext"]);
  assert.deepEqual(await who("other"), ["dave-ext"]);
  assert.deepEqual(await who("root"), ["dave-ext"]);
});

test("grants: audit events and webhooks' types; the purge removes expired grants with grant.expired", async () => {
  const t = await tree();
  const { db } = await service();
  const g = await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "team");
  await t.api.grants.deleteGrant(t.project.id, g.id);
  const h = await grantOn(
    t,
    { type: "user", id: t.carol.id },
    t.viewer.id,
    "doc-1",
    new Date(Date.now() + 60_000).toISOString(),
  );
  // Aged in the database: expired 2 days ago.
  await db.sql`update object_grants set expires_at = now() - interval '2 days' where id = ${h.id}`;
  const run = async (days: string) => {
    const config = loadConfig({ GRANT_RETENTION_DAYS: days, DATA_DIR: "unused" });
    const tokens = new TokenService(db.sql, config.publicUrl, config.accessTokenTtl, null);
    const job = jobsOf(db.sql, keySettings(config), config, tokens, "postgres").find((j) =>
      j.name === "grant-retention"
    )!;
    await job.run(new AbortController().signal);
  };
  await run("3");
  assert.equal(
    (await t.api.grants.getGrant(t.project.id, h.id)).is_expired,
    true,
    "kept within the retention",
  );
  await run("1");
  await expectError(t.api.grants.getGrant(t.project.id, h.id), 404, "grant_not_found");
  const res = await http(`/api/v1/projects/${t.project.id}/audit-events?type=grant.*&limit=10`, {
    headers: { authorization: `Bearer ${t.token}` },
  });
  const events = (await res.json()).data as {
    type: string;
    target: unknown;
    actor: { type: string };
    details: Record<string, unknown>;
  }[];
  assert.deepEqual(events.map((e) => e.type).reverse(), [
    "grant.created",
    "grant.deleted",
    "grant.created",
    "grant.expired",
  ]);
  assert.deepEqual(events[0].target, { type: "grant", id: h.id });
  assert.equal(events[0].actor.type, "system");
  assert.deepEqual(events[0].details.subject, { type: "user", id: t.carol.id });
  assert.equal(events[0].details.object_id, "doc-1");
  assert.deepEqual(events[2].details, {
    subject: { type: "user", id: t.carol.id } as Api.GrantSubject,
    role_id: t.viewer.id,
    resource_id: t.folder.id,
    object_id: "team",
    expires_at: null,
    condition: null,
  });
  // Webhooks subscribe to these types like any other.
  const hook = await http(`/api/v1/projects/${t.project.id}/webhooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      url: "https://example.com/hook",
      event_types: ["grant.created", "grant.deleted", "grant.expired"],
    }),
  });
  assert.equal(hook.status, 201, await hook.clone().text());
  await hook.body?.cancel();
});

test("a grant, a revocation, a move and an expiry decide the next request on another instance", async () => {
  const t = await tree();
  const { db } = await service();
  // A second process on the same PostgreSQL database; its own token (the issuer is its own address).
  const other = await spawn({
    ...DATABASE_ENV,
    DATABASE_URL: DATABASE_URL!,
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
  });
  try {
    const pdp = await clientWith(t, ["access:evaluate"]);
    const res = await fetch(`${other.url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: basic(pdp.id, pdp.secret),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    const token = (await res.json()).access_token;
    const there = async (object: string) => {
      const r = await fetch(`${other.url}/access/v1/evaluation`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          subject: { type: "user", id: "carol" },
          action: { name: "read" },
          resource: { type: "folder", id: object },
        }),
      });
      assert.equal(r.status, 200);
      return (await r.json()).context.reason_admin.code as string;
    };
    assert.equal(await there("doc-1"), "no_permission");
    const g = await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "team");
    assert.equal(await there("doc-1"), "object_grant");
    assert.equal(await there("other"), "no_permission");
    await t.api.objects.updateObject(t.project.id, t.folder.id, "other", { parent_id: "project" });
    assert.equal(await there("other"), "object_grant");
    await t.api.grants.deleteGrant(t.project.id, g.id);
    assert.equal(await there("doc-1"), "no_permission");
    const [{ soon }] = await db.sql<{ soon: string }[]>`
      select to_char((now() + interval '1500 milliseconds') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        as soon`;
    await grantOn(t, { type: "user", id: t.carol.id }, t.viewer.id, "root", soon);
    assert.equal(await there("doc-2"), "object_grant");
    await pastOnDatabaseClock(db.sql, soon);
    assert.equal(await there("doc-2"), "grant_expired");
  } finally {
    await other.stop();
  }
}, { ignore: !DATABASE_URL });

test("a batch answers each item by its own object: grants through ancestors, expired ones, project-wide, repeats, cuts", async () => {
  const t = await tree();
  const carol = { type: "user" as const, id: t.carol.id };
  const live = await grantOn(t, carol, t.viewer.id, "team");
  const old = await grantOn(t, carol, t.editor.id, "other");
  const { db } = await service();
  await db.sql`update object_grants set expires_at = now() - interval '1 minute' where id = ${old.id}`;
  const items = [
    { action: { name: "read" }, resource: { type: "folder", id: "doc-1" } }, // team → project → doc-1
    { action: { name: "read" }, resource: { type: "folder", id: "other" } }, // only the expired grant
    { action: { name: "write" }, resource: { type: "folder", id: "doc-1" } }, // the viewer role cannot write
    { action: { name: "read" }, resource: { type: "folder", id: "root" } }, // above the grant
    { action: { name: "read" }, resource: { type: "folder", id: "doc-1" } }, // a repeat
    { action: { name: "fly" }, resource: { type: "folder", id: "doc-1" } }, // no such action
    { action: { name: "read" }, resource: { type: "folder", id: "nowhere" } }, // no such object
    {
      subject: { type: "user", id: "dave-ext" },
      action: { name: "read" },
      resource: { type: "folder", id: "x" },
    },
  ];
  const ask = async (semantic?: string) =>
    (await ok(
      await post(EVALUATIONS, {
        subject: { type: "user", id: "carol" },
        evaluations: items,
        ...(semantic ? { options: { evaluations_semantic: semantic } } : {}),
      }, t.access),
    )).evaluations as { decision: boolean; context: { reason_admin: Record<string, unknown> } }[];
  const all = await ask();
  assert.deepEqual(all.map((e) => e.decision), [true, false, false, false, true, false, false, false]);
  assert.deepEqual(all.map((e) => e.context.reason_admin.code), [
    "object_grant",
    "grant_expired",
    "no_permission",
    "no_permission",
    "object_grant",
    "unknown_action",
    "no_permission",
    "no_permission",
  ]);
  assert.deepEqual(all[0].context.reason_admin, {
    code: "object_grant",
    grant_id: live.id,
    object_id: "team",
  });
  assert.deepEqual(all[1].context.reason_admin, {
    code: "grant_expired",
    grant_id: old.id,
    object_id: "other",
  });
  // The same answers one by one.
  for (const [i, item] of items.entries()) {
    const one = await ok(
      await post(EVALUATION, { subject: { type: "user", id: "carol" }, ...item }, t.access),
    );
    assert.deepEqual(one, all[i], `item ${i}`);
  }
  // Cut after the first deny, and after the first permit.
  assert.equal((await ask("deny_on_first_deny")).length, 2);
  await setRole(t, t.dave.id, t.viewer.id);
  const firstPermit = await ask("permit_on_first_permit");
  assert.equal(firstPermit.length, 1);
  assert.equal(firstPermit[0].context.reason_admin.code, "object_grant");
  // Dave's role now reads every folder project-wide: the last item turns, with the role's reason.
  const after = await ask();
  assert.deepEqual(after.at(-1)!.context.reason_admin, { code: "role_permission", role_id: t.viewer.id });
});
