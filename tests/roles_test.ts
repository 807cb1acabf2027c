/** Roles through the SDK: create, update, list, permission checks, limits, races. */
import assert from "node:assert/strict";
import { Api, expectError, newProject, permissionIds, test } from "./helpers.ts";

test("POST .../roles creates a role with permissions of the project", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "support_agent-1",
    name: "Support agent",
    description: "answers tickets",
    permission_ids: [ids["users:read"], ids["users:update"], ids["users:read"]],
  });
  assert.deepEqual(Object.keys(role).sort(), [
    "code",
    "conditions",
    "created_at",
    "description",
    "id",
    "name",
    "permission_ids",
    "project_id",
    "scope",
    "updated_at",
  ]);
  assert.deepEqual(
    [...role.permission_ids].sort(),
    [ids["users:read"], ids["users:update"]].sort(),
    "repeats collapse",
  );
  const bare = await p.api.roles.createRole(p.project.id, { code: "bare", name: "Bare" });
  assert.deepEqual(bare.permission_ids, []);
  assert.equal(bare.description, null);
});

test("roles refuse permission ids that are not permissions of the project, naming them", async () => {
  const p = await newProject();
  const other = await newProject();
  const mine = await permissionIds(p);
  const theirs = await permissionIds(other);
  const err = await expectError(
    p.api.roles.createRole(p.project.id, {
      code: "r",
      name: "R",
      permission_ids: [mine["roles:read"], theirs["roles:read"], "nope"],
    }),
    404,
    "some_permissions_not_found",
  );
  assert.match(err.error_description, new RegExp(theirs["roles:read"]));
  assert.deepEqual(
    err.details?.map((d) => d.issue).sort(),
    [`no permission ${theirs["roles:read"]} in this project`, "no permission nope in this project"].sort(),
  );
  assert.equal(
    (await p.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined)).pagination
      .total,
    0,
  );
  const role = await p.api.roles.createRole(p.project.id, { code: "r", name: "R" });
  await expectError(
    p.api.roles.updateRole(p.project.id, role.id, { code: "r", name: "R", permission_ids: ["nope"] }),
    404,
    "some_permissions_not_found",
  );
});

test("role codes: characters, limits and uniqueness on create and update", async () => {
  const p = await newProject();
  await p.api.roles.createRole(p.project.id, {
    code: "c".repeat(50),
    name: "n".repeat(50),
    description: "d".repeat(200),
  });
  for (
    const body of [
      { code: "c".repeat(51), name: "x" },
      { code: "x", name: "n".repeat(51) },
      { code: "x", name: "x", description: "d".repeat(201) },
      { code: "with space", name: "x" },
      { code: "", name: "x" },
      { code: "x", name: "" },
    ]
  ) {
    await expectError(p.api.roles.createRole(p.project.id, body), 400, "invalid_params");
  }
  const admin = await p.api.roles.createRole(p.project.id, { code: "admin", name: "Admin" });
  await expectError(
    p.api.roles.createRole(p.project.id, { code: "ADMIN", name: "again" }),
    409,
    "role_code_already_used",
  );
  const editor = await p.api.roles.createRole(p.project.id, { code: "editor", name: "Editor" });
  await expectError(
    p.api.roles.updateRole(p.project.id, editor.id, { code: "Admin", name: "x" }),
    409,
    "role_code_already_used",
  );
  await expectError(
    p.api.roles.updateRole(p.project.id, editor.id, { code: "bad code", name: "x" }),
    400,
    "invalid_params",
  );
  await expectError(
    p.api.roles.updateRole(p.project.id, "no-such-role", { code: "z", name: "z" }),
    404,
    "role_not_found",
  );
  const other = await newProject();
  await expectError(
    other.api.roles.updateRole(other.project.id, admin.id, { code: "z", name: "z" }),
    404,
    "role_not_found",
  );
  const results = await Promise.allSettled(
    Array.from({ length: 5 }, () => p.api.roles.createRole(p.project.id, { code: "race", name: "race" })),
  );
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
  for (const r of results.filter((r) => r.status === "rejected")) {
    await expectError(Promise.reject((r as PromiseRejectedResult).reason), 409, "role_code_already_used");
  }
});

test("PUT .../roles/{id} replaces given permission_ids and keeps omitted ones", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "r",
    name: "R",
    permission_ids: [ids["roles:read"]],
  });
  const renamed = await p.api.roles.updateRole(p.project.id, role.id, {
    code: "r2",
    name: "R2",
    description: "d",
  });
  assert.deepEqual(renamed.permission_ids, [ids["roles:read"]]);
  assert.equal(renamed.code, "r2");
  const replaced = await p.api.roles.updateRole(p.project.id, role.id, {
    code: "r2",
    name: "R2",
    permission_ids: [ids["users:read"], ids["clients:read"]],
  });
  assert.deepEqual([...replaced.permission_ids].sort(), [ids["users:read"], ids["clients:read"]].sort());
  assert.equal(replaced.description, "d");
  const cleared = await p.api.roles.updateRole(p.project.id, role.id, {
    code: "r2",
    name: "R2",
    description: null,
    permission_ids: [],
  });
  assert.deepEqual(cleared.permission_ids, []);
  assert.equal(cleared.description, null);
});

test("GET .../roles pages without overlap, sorts and searches code, name and description", async () => {
  const p = await newProject();
  for (
    const [code, name, description] of [["b", "Bee", "x"], ["a", "Ant", "y"], ["c", "Cat", "has 50%_off"], [
      "d",
      "Dog",
      null,
    ]]
  ) {
    await p.api.roles.createRole(p.project.id, { code: code!, name: name!, description });
  }
  const page = (n: number) =>
    p.api.roles.listRoles(
      p.project.id,
      n,
      3,
      Api.ListRolesSortByEnum.Name,
      Api.ListRolesSortDirEnum.Desc,
      undefined,
      undefined,
    );
  const [one, two] = [await page(1), await page(2)];
  assert.deepEqual([...one.data, ...two.data].map((r) => r.code), ["d", "c", "b", "a"]);
  assert.equal(one.pagination.total, 4);
  const search = async (q: string) =>
    (await p.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, q, undefined)).data.map((r) =>
      r.code
    )
      .sort();
  assert.deepEqual(await search("ANT"), ["a"]);
  assert.deepEqual(await search("B"), ["b"]);
  assert.deepEqual(await search("50%_"), ["c"]);
  assert.deepEqual(await search("%"), ["c"]);
  assert.deepEqual(await search("zzz"), []);
});
