/** Objects of a resource: CRUD, batches (all or nothing), the hierarchy's rules, every bad input and refusal. */
import assert from "node:assert/strict";
import { Api, clientWith, expectError, http, newProject, test, type TestProject } from "./helpers.ts";

async function folders(p: TestProject) {
  return await p.api.resources.createResource(p.project.id, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
  });
}

function raw(p: TestProject, path: string, init: RequestInit = {}, token = p.token): Promise<Response> {
  return http(`/api/v1/projects/${p.project.id}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers },
  });
}

test("objects: create, get, list (children, top level, search, sort), rename, move, delete", async () => {
  const p = await newProject();
  const f = await folders(p);
  const api = p.api.objects;
  const root = await api.createObject(p.project.id, f.id, { id: "root", name: "Root" });
  assert.deepEqual(
    { ...root, created_at: "", updated_at: "" },
    {
      id: "root",
      project_id: p.project.id,
      resource_id: f.id,
      name: "Root",
      parent_id: null,
      depth: 1,
      properties: {},
      organization_id: null,
      created_at: "",
      updated_at: "",
    },
  );
  const a = await api.createObject(p.project.id, f.id, { id: "team/a@x.org:1", parent_id: "root" });
  assert.equal(a.name, null);
  assert.equal(a.depth, 2);
  await api.createObject(p.project.id, f.id, { id: "b", name: "Bee", parent_id: "team/a@x.org:1" });
  // An id with a slash, percent-encoded in the path.
  assert.equal((await api.getObject(p.project.id, f.id, "team/a@x.org:1")).parent_id, "root");
  const children = await api.listObjects(
    p.project.id,
    f.id,
    1,
    10,
    Api.ListObjectsSortByEnum.Id,
    Api.ListObjectsSortDirEnum.Asc,
    undefined,
    "root",
    undefined,
    undefined,
  );
  assert.deepEqual(children.data.map((o) => o.id), ["team/a@x.org:1"]);
  const top = await api.listObjects(
    p.project.id,
    f.id,
    1,
    10,
    undefined,
    undefined,
    undefined,
    undefined,
    true,
    undefined,
  );
  assert.deepEqual(top.data.map((o) => o.id), ["root"]);
  const all = await api.listObjects(
    p.project.id,
    f.id,
    1,
    2,
    Api.ListObjectsSortByEnum.Id,
    Api.ListObjectsSortDirEnum.Desc,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  assert.deepEqual(all.data.map((o) => o.id), ["team/a@x.org:1", "root"]);
  assert.equal(all.pagination.total, 3);
  const found = await api.listObjects(
    p.project.id,
    f.id,
    1,
    10,
    undefined,
    undefined,
    "bee",
    undefined,
    undefined,
    undefined,
  );
  assert.deepEqual(found.data.map((o) => o.id), ["b"]);
  // Rename keeps the parent; a move takes the subtree along and sets its depths.
  const renamed = await api.updateObject(p.project.id, f.id, "b", { name: "B" });
  assert.equal(renamed.parent_id, "team/a@x.org:1");
  assert.equal(renamed.depth, 3);
  const moved = await api.updateObject(p.project.id, f.id, "team/a@x.org:1", { parent_id: null });
  assert.equal(moved.depth, 1);
  assert.equal((await api.getObject(p.project.id, f.id, "b")).depth, 2);
  assert.equal((await api.updateObject(p.project.id, f.id, "root", { parent_id: "b" })).depth, 3);
  // An object with children is kept unless cascade=true.
  await expectError(
    api.deleteObject(p.project.id, f.id, "team/a@x.org:1", undefined),
    409,
    "object_has_children",
  );
  await api.deleteObject(p.project.id, f.id, "root", undefined);
  await api.deleteObject(p.project.id, f.id, "team/a@x.org:1", true);
  assert.equal(
    (await api.listObjects(
      p.project.id,
      f.id,
      1,
      10,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ))
      .pagination.total,
    0,
  );
  await expectError(api.getObject(p.project.id, f.id, "b"), 404, "object_not_found");
});

test("objects: a batch of 1000 with parents in any order; all or nothing", async () => {
  const p = await newProject();
  const f = await folders(p);
  // Children before their parents, ten trees of a hundred leaves.
  const objects = [];
  for (let t = 0; t < 10; t++) {
    for (let l = 0; l < 99; l++) objects.push({ id: `t${t}-leaf${l}`, parent_id: `t${t}` });
    objects.push({ id: `t${t}`, name: `Tree ${t}` });
  }
  assert.equal(objects.length, 1000);
  const created = await p.api.objects.createObjects(p.project.id, f.id, { objects });
  assert.deepEqual(created.data.map((o) => o.id), objects.map((o) => o.id));
  assert.equal(created.data[0].depth, 2);
  assert.equal(created.data[99].depth, 1);
  // One existing id refuses the whole batch.
  const res = await expectError(
    p.api.objects.createObjects(p.project.id, f.id, { objects: [{ id: "new-1" }, { id: "t3" }] }),
    409,
    "object_already_exists",
  );
  assert.deepEqual(res.details, [{ field: "objects.1.id", issue: "an object t3 exists in this resource" }]);
  await expectError(p.api.objects.getObject(p.project.id, f.id, "new-1"), 404, "object_not_found");
  // More than 1000, none, a repeated id, a cycle within the batch, an unknown parent.
  const many = Array.from({ length: 1001 }, (_, i) => ({ id: `x${i}` }));
  await expectError(
    raw(p, `/resources/${f.id}/objects/batch`, { method: "POST", body: JSON.stringify({ objects: many }) }),
    400,
    "invalid_params",
  );
  await expectError(
    raw(p, `/resources/${f.id}/objects/batch`, { method: "POST", body: JSON.stringify({ objects: [] }) }),
    400,
    "invalid_params",
  );
  const twice = await expectError(
    p.api.objects.createObjects(p.project.id, f.id, { objects: [{ id: "d" }, { id: "d" }] }),
    400,
    "invalid_params",
  );
  assert.deepEqual(twice.details, [{ field: "objects.1.id", issue: "repeats objects.0.id" }]);
  const cycle = await expectError(
    p.api.objects.createObjects(p.project.id, f.id, {
      objects: [{ id: "c1", parent_id: "c2" }, { id: "c2", parent_id: "c1" }],
    }),
    400,
    "invalid_params",
  );
  assert.match(cycle.details![0].issue, /cycle/);
  const orphan = await expectError(
    p.api.objects.createObjects(p.project.id, f.id, {
      objects: [{ id: "o1" }, { id: "o2", parent_id: "nowhere" }],
    }),
    400,
    "invalid_params",
  );
  assert.deepEqual(orphan.details, [{
    field: "objects.1.parent_id",
    issue: "no object of this resource has this id",
  }]);
  assert.equal(
    (await p.api.objects.listObjects(
      p.project.id,
      f.id,
      1,
      1,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ))
      .pagination.total,
    1000,
  );
});

test("objects: depth at most 32, no cycles on a move, a parent of the same resource only", async () => {
  const p = await newProject();
  const f = await folders(p);
  const other = await p.api.resources.createResource(p.project.id, { name: "Doc", code: "doc" });
  await p.api.objects.createObject(p.project.id, other.id, { id: "elsewhere" });
  const chain = Array.from(
    { length: 32 },
    (_, i) => ({ id: `l${i + 1}`, parent_id: i === 0 ? null : `l${i}` }),
  );
  await p.api.objects.createObjects(p.project.id, f.id, { objects: chain });
  const deep = await expectError(
    p.api.objects.createObject(p.project.id, f.id, { id: "l33", parent_id: "l32" }),
    400,
    "invalid_params",
  );
  assert.deepEqual(deep.details, [{ field: "parent_id", issue: "deeper than 32 levels" }]);
  // A batch of 33 levels at once.
  const long = Array.from(
    { length: 33 },
    (_, i) => ({ id: `m${i + 1}`, parent_id: i === 0 ? null : `m${i}` }),
  );
  await expectError(
    p.api.objects.createObjects(p.project.id, f.id, { objects: long }),
    400,
    "invalid_params",
  );
  // A move under its own descendant, or itself; a move that would take the subtree past 32 levels.
  await expectError(
    p.api.objects.updateObject(p.project.id, f.id, "l2", { parent_id: "l5" }),
    400,
    "invalid_params",
  );
  await expectError(
    p.api.objects.updateObject(p.project.id, f.id, "l2", { parent_id: "l2" }),
    400,
    "invalid_params",
  );
  await p.api.objects.createObject(p.project.id, f.id, { id: "side" });
  await p.api.objects.createObject(p.project.id, f.id, { id: "side2", parent_id: "side" });
  const tooDeep = await expectError(
    p.api.objects.updateObject(p.project.id, f.id, "l1", { parent_id: "side2" }),
    400,
    "invalid_params",
  );
  assert.match(tooDeep.details![0].issue, /34 levels/);
  // A parent of another resource.
  const foreign = await expectError(
    p.api.objects.createObject(p.project.id, f.id, { id: "x", parent_id: "elsewhere" }),
    400,
    "invalid_params",
  );
  assert.equal(foreign.details![0].field, "parent_id");
  await expectError(
    p.api.objects.updateObject(p.project.id, f.id, "side2", { parent_id: "elsewhere" }),
    400,
    "invalid_params",
  );
  // The hierarchy is unchanged by the refusals.
  assert.equal((await p.api.objects.getObject(p.project.id, f.id, "l32")).depth, 32);
  assert.equal((await p.api.objects.getObject(p.project.id, f.id, "l2")).parent_id, "l1");
});

test("objects: bad input, unknown resource or object, default resources, another project's resource", async () => {
  const p = await newProject();
  const f = await folders(p);
  const post = (body: unknown, resource = f.id) =>
    raw(p, `/resources/${resource}/objects`, { method: "POST", body: JSON.stringify(body) });
  for (
    const body of [
      {},
      { id: "" },
      { id: "has space" },
      { id: "a".repeat(201) },
      { id: "ok", name: "n".repeat(101) },
      { id: "ok", parent_id: "bad id" },
      { id: 5 },
    ]
  ) {
    await expectError(await post(body), 400, "invalid_params");
  }
  await expectError(
    raw(p, `/resources/${f.id}/objects`, { method: "POST", body: "{" }),
    400,
    "invalid_params",
  );
  await p.api.objects.createObject(p.project.id, f.id, { id: "a".repeat(200), name: "n".repeat(100) });
  await p.api.objects.createObject(p.project.id, f.id, { id: "one" });
  await expectError(
    p.api.objects.createObject(p.project.id, f.id, { id: "one" }),
    409,
    "object_already_exists",
  );
  await expectError(await post({ id: "x" }, "no-such-resource"), 404, "resource_not_found");
  await expectError(
    p.api.objects.getObject(p.project.id, "no-such-resource", "one"),
    404,
    "resource_not_found",
  );
  await expectError(
    p.api.objects.listObjects(
      p.project.id,
      "no-such-resource",
      1,
      10,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ),
    404,
    "resource_not_found",
  );
  await expectError(p.api.objects.getObject(p.project.id, f.id, "two"), 404, "object_not_found");
  await expectError(
    p.api.objects.updateObject(p.project.id, f.id, "two", { name: "x" }),
    404,
    "object_not_found",
  );
  await expectError(
    p.api.objects.deleteObject(p.project.id, f.id, "two", undefined),
    404,
    "object_not_found",
  );
  await expectError(
    raw(p, `/resources/${f.id}/objects/one?cascade=maybe`, { method: "DELETE" }),
    400,
    "invalid_params",
  );
  await expectError(raw(p, `/resources/${f.id}/objects?sort_by=depth`), 400, "invalid_params");
  // The default resources have no objects.
  const users =
    (await p.api.resources.listResources(p.project.id, 1, 100, undefined, undefined, "users", undefined))
      .data.find((r) => r.code === "users")!;
  await expectError(post({ id: "u" }, users.id), 403, "default_resource_immutable");
  // Another project's resource is not found from this one (its token is refused on the other's path).
  const q = await newProject();
  const theirs = await folders(q);
  await q.api.objects.createObject(q.project.id, theirs.id, { id: "secret" });
  await expectError(await post({ id: "x" }, theirs.id), 404, "resource_not_found");
  await expectError(p.api.objects.getObject(p.project.id, theirs.id, "secret"), 404, "resource_not_found");
  await expectError(
    p.api.objects.getObject(q.project.id, theirs.id, "secret"),
    403,
    "insufficient_permission",
  );
});

test("objects: each operation needs its permission (403 insufficient_permission)", async () => {
  const p = await newProject();
  const f = await folders(p);
  await p.api.objects.createObject(p.project.id, f.id, { id: "one" });
  const none = await clientWith(p, ["resources:read"]);
  const o = none.api.objects;
  await expectError(o.createObject(p.project.id, f.id, { id: "x" }), 403, "insufficient_permission");
  await expectError(
    o.createObjects(p.project.id, f.id, { objects: [{ id: "x" }] }),
    403,
    "insufficient_permission",
  );
  await expectError(
    o.listObjects(
      p.project.id,
      f.id,
      1,
      10,
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
  await expectError(o.getObject(p.project.id, f.id, "one"), 403, "insufficient_permission");
  await expectError(o.updateObject(p.project.id, f.id, "one", { name: "x" }), 403, "insufficient_permission");
  await expectError(o.deleteObject(p.project.id, f.id, "one", undefined), 403, "insufficient_permission");
  const res = await http(`/api/v1/projects/${p.project.id}/resources/${f.id}/objects`);
  assert.equal(res.status, 401);
  await res.body?.cancel();
  // With the permission, the same client may.
  const reader = await clientWith(p, ["objects:read"]);
  assert.equal((await reader.api.objects.getObject(p.project.id, f.id, "one")).id, "one");
});

test("objects: each change is an audit event", async () => {
  const p = await newProject();
  const f = await folders(p);
  await p.api.objects.createObjects(p.project.id, f.id, {
    objects: [{ id: "a" }, { id: "b", parent_id: "a" }],
  });
  await p.api.objects.createObject(p.project.id, f.id, { id: "c" });
  await p.api.objects.updateObject(p.project.id, f.id, "b", { parent_id: "c" });
  await p.api.objects.deleteObject(p.project.id, f.id, "c", true);
  const res = await raw(p, "/audit-events?type=object.*&limit=10");
  const events = (await res.json()).data as {
    type: string;
    target: unknown;
    details: unknown;
    changes: unknown;
  }[];
  assert.deepEqual(events.map((e) => e.type).reverse(), [
    "object.created",
    "object.created",
    "object.updated",
    "object.deleted",
  ]);
  assert.deepEqual(events[3].details, { resource_id: f.id, count: 2 });
  assert.deepEqual(events[1].changes, { parent_id: { before: "a", after: "c" } });
  assert.deepEqual(events[0].details, { resource_id: f.id, objects_deleted: 2, grants_deleted: 0 });
});

test("objects: deleting the resource deletes its objects and their grants; deleting a user deletes theirs", async () => {
  const p = await newProject();
  const f = await folders(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "r",
    name: "R",
    permission_ids: [f.permissions[0].id],
  });
  const u = await p.api.users.createUser(p.project.id, { display_name: "U", external_user_id: "u" });
  const v = await p.api.users.createUser(p.project.id, { display_name: "V", external_user_id: "v" });
  await p.api.objects.createObjects(p.project.id, f.id, {
    objects: [{ id: "a" }, { id: "b", parent_id: "a" }, { id: "c", parent_id: "b" }],
  });
  const grant = (userId: string, object: string) =>
    p.api.grants.createGrant(p.project.id, {
      subject: { type: Api.GrantSubject.TypeEnum.User, id: userId },
      role_id: role.id,
      object: { type: "folder", id: object },
    });
  const kept = await grant(u.id, "b");
  const gone = await grant(v.id, "c");
  await p.api.users.deleteUser(p.project.id, v.id);
  await expectError(p.api.grants.getGrant(p.project.id, gone.id), 404, "grant_not_found");
  assert.equal((await p.api.grants.getGrant(p.project.id, kept.id)).id, kept.id);
  await p.api.resources.deleteResource(p.project.id, f.id);
  await expectError(p.api.grants.getGrant(p.project.id, kept.id), 404, "grant_not_found");
  await expectError(p.api.objects.getObject(p.project.id, f.id, "a"), 404, "resource_not_found");
});
