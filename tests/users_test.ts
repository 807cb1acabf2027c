/** Users through the SDK: both modes, every rule of §4.9/§4.10, limits, uniqueness, lookup, list, races. */
import assert from "node:assert/strict";
import { Api, expectError, http, newProject, permissionIds, service, test } from "./helpers.ts";

test("POST .../users creates a fully managed user; the password is stored only as an argon2id hash", async () => {
  const p = await newProject();
  const u = await p.api.users.createUser(p.project.id, {
    display_name: "Ada",
    email: "  Ada@Example.COM ",
    password: "correct horse",
    avatar_url: "https://img.example.com/ada.png",
  });
  assert.deepEqual(Object.keys(u).sort(), [
    "avatar_url",
    "created_at",
    "display_name",
    "email",
    "email_verified",
    "external_user_id",
    "family_name",
    "given_name",
    "id",
    "is_active",
    "password_scheme",
    "pending_email",
    "project_id",
    "properties",
    "role_id",
    "updated_at",
  ]);
  assert.deepEqual(u.properties, {});
  assert.equal(u.password_scheme, "argon2id", "the service's own scheme; never the hash");
  assert.equal(u.email, "ada@example.com");
  assert.equal(u.is_active, true);
  assert.equal(u.external_user_id, null);
  const { db } = await service();
  const [row] = await db.sql<{ password_hash: string }[]>`select password_hash from users where id = ${u.id}`;
  assert.match(row.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  assert.ok(!row.password_hash.includes("correct horse"));
});

test("POST .../users creates an external-id user, with a role of the project", async () => {
  const p = await newProject();
  const role = await p.api.roles.createRole(p.project.id, { code: "member", name: "Member" });
  const u = await p.api.users.createUser(p.project.id, {
    display_name: "Ext",
    external_user_id: "crm-42",
    role_id: role.id,
    is_active: false,
  });
  assert.equal(u.external_user_id, "crm-42");
  assert.equal(u.email, null);
  assert.equal(u.role_id, role.id);
  assert.equal(u.is_active, false);
});

test("POST .../users: the mode rules and every limit, exactly", async () => {
  const p = await newProject();
  const long = (n: number) => "x".repeat(n);
  const email100 = `${"e".repeat(88)}@example.com`;
  assert.equal(email100.length, 100);
  await p.api.users.createUser(p.project.id, { display_name: long(50), external_user_id: long(100) });
  await p.api.users.createUser(p.project.id, { display_name: "e", email: email100, password: "12345678" });
  const bad: [Record<string, unknown>, string][] = [
    [{ display_name: "x" }, "external_user_id"],
    [{ display_name: "x", email: "a@example.com" }, "password"],
    [{ display_name: "x", email: "a@example.com", password: "1234567" }, "password"],
    [{ display_name: long(51), external_user_id: "a" }, "display_name"],
    [{ display_name: "", external_user_id: "a" }, "display_name"],
    [{ display_name: "x", external_user_id: long(101) }, "external_user_id"],
    [{ display_name: "x", email: `e${email100}`, password: "12345678" }, "email"],
    [{ display_name: "x", email: "not-an-email", password: "12345678" }, "email"],
    [{ display_name: "x", external_user_id: "b", avatar_url: "not a url" }, "avatar_url"],
    [{ display_name: "x", external_user_id: "b", avatar_url: "javascript:alert(1)" }, "avatar_url"],
    [{ display_name: "x", external_user_id: "b", is_active: "yes" }, "is_active"],
  ];
  for (const [body, field] of bad) {
    const err = await expectError(
      p.api.users.createUser(p.project.id, body as unknown as Api.CreateUserRequest),
      400,
      "invalid_params",
    );
    assert.ok(
      err.details?.some((d) => d.field === field),
      `${JSON.stringify(body)} → ${JSON.stringify(err.details)}`,
    );
  }
  const other = await newProject();
  const foreignRole = await other.api.roles.createRole(other.project.id, { code: "r", name: "r" });
  await expectError(
    p.api.users.createUser(p.project.id, {
      display_name: "x",
      external_user_id: "c",
      role_id: foreignRole.id,
    }),
    404,
    "role_not_found",
  );
  await expectError(
    p.api.users.createUser(p.project.id, { display_name: "x", external_user_id: "c", role_id: "nope" }),
    404,
    "role_not_found",
  );
});

test("users: emails unique per project case-insensitively, external ids exactly; races give one 201", async () => {
  const p = await newProject();
  await p.api.users.createUser(p.project.id, {
    display_name: "a",
    email: "dup@example.com",
    password: "12345678",
  });
  await expectError(
    p.api.users.createUser(p.project.id, {
      display_name: "b",
      email: "DUP@example.com",
      password: "12345678",
    }),
    409,
    "user_email_already_used",
  );
  await p.api.users.createUser(p.project.id, { display_name: "a", external_user_id: "ext-1" });
  await expectError(
    p.api.users.createUser(p.project.id, { display_name: "b", external_user_id: "ext-1" }),
    409,
    "user_external_id_already_used",
  );
  assert.equal(
    (await p.api.users.createUser(p.project.id, { display_name: "c", external_user_id: "EXT-1" }))
      .external_user_id,
    "EXT-1",
  );
  const other = await newProject();
  await other.api.users.createUser(other.project.id, {
    display_name: "a",
    email: "dup@example.com",
    password: "12345678",
  });
  for (
    const [body, code] of [
      [{ display_name: "r", email: "race@example.com", password: "12345678" }, "user_email_already_used"],
      [{ display_name: "r", external_user_id: "race" }, "user_external_id_already_used"],
    ] as const
  ) {
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => p.api.users.createUser(p.project.id, body)),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results.filter((r) => r.status === "rejected")) {
      await expectError(Promise.reject((r as PromiseRejectedResult).reason), 409, code);
    }
  }
});

test('PUT .../users/{id}: §4.10 rules — identity required, empty password keeps, null or "" removes', async () => {
  const p = await newProject();
  const { db } = await service();
  const hashOf = async (id: string) =>
    (await db.sql<{ h: string }[]>`select password_hash as h from users where id = ${id}`)[0].h;
  const u = await p.api.users.createUser(p.project.id, {
    display_name: "Bob",
    email: "bob@example.com",
    password: "first-password",
    external_user_id: "crm-1",
    avatar_url: "https://img.example.com/b.png",
  });
  const hash = await hashOf(u.id);
  // Rule 1: external_user_id is required when email is not provided.
  const err = await expectError(
    p.api.users.updateUser(p.project.id, u.id, { display_name: "Bob", is_active: true }),
    400,
    "invalid_params",
  );
  assert.equal(err.details?.[0].field, "external_user_id");
  await expectError(
    p.api.users.updateUser(p.project.id, u.id, { display_name: "Bob", is_active: true, email: null }),
    400,
    "invalid_params",
  );
  // is_active is required.
  await expectError(
    p.api.users.updateUser(
      p.project.id,
      u.id,
      { display_name: "Bob", email: "bob@example.com" } as Api.UpdateUserRequest,
    ),
    400,
    "invalid_params",
  );
  // Rule 2: empty or omitted password keeps it; a short one is refused.
  let v = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "Bobby",
    is_active: true,
    email: "bob@example.com",
    password: "",
  });
  assert.equal(await hashOf(u.id), hash);
  assert.equal(v.display_name, "Bobby");
  assert.equal(v.external_user_id, "crm-1", "omitted keeps");
  assert.equal(v.avatar_url, "https://img.example.com/b.png", "omitted keeps");
  await expectError(
    p.api.users.updateUser(p.project.id, u.id, {
      display_name: "B",
      is_active: true,
      email: "bob@example.com",
      password: "short",
    }),
    400,
    "invalid_params",
  );
  v = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "B",
    is_active: true,
    email: "bob@example.com",
    password: "second-password",
  });
  assert.notEqual(await hashOf(u.id), hash);
  // Rule 3: "" or null removes avatar_url, external_user_id and email.
  v = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "B",
    is_active: true,
    email: "bob@example.com",
    avatar_url: "",
    external_user_id: null,
  });
  assert.equal(v.avatar_url, null);
  assert.equal(v.external_user_id, null);
  v = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "B",
    is_active: true,
    email: "",
    external_user_id: "crm-2",
  });
  assert.equal(v.email, null);
  assert.equal(v.external_user_id, "crm-2");
  // Limits and errors of update.
  await expectError(
    p.api.users.updateUser(p.project.id, "nope", {
      display_name: "x",
      is_active: true,
      external_user_id: "z",
    }),
    404,
    "user_not_found",
  );
  await expectError(
    p.api.users.updateUser(p.project.id, u.id, {
      display_name: "x",
      is_active: true,
      external_user_id: "z",
      role_id: "nope",
    }),
    404,
    "role_not_found",
  );
  await p.api.users.createUser(p.project.id, {
    display_name: "c",
    email: "taken@example.com",
    password: "12345678",
  });
  await expectError(
    p.api.users.updateUser(p.project.id, u.id, {
      display_name: "x",
      is_active: true,
      email: "Taken@example.com",
    }),
    409,
    "user_email_already_used",
  );
});

test("PUT .../users/{id} sets and removes the role, and deactivates", async () => {
  const p = await newProject();
  const role = await p.api.roles.createRole(p.project.id, { code: "r", name: "R" });
  const u = await p.api.users.createUser(p.project.id, { display_name: "x", external_user_id: "x1" });
  let v = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "x",
    is_active: false,
    external_user_id: "x1",
    role_id: role.id,
  });
  assert.equal(v.role_id, role.id);
  assert.equal(v.is_active, false);
  v = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "x",
    is_active: true,
    external_user_id: "x1",
  });
  assert.equal(v.role_id, role.id, "omitted keeps the role");
  v = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "x",
    is_active: true,
    external_user_id: "x1",
    role_id: null,
  });
  assert.equal(v.role_id, null);
});

test("GET .../users/external/{id} with include_permissions reflects role changes at once", async () => {
  const p = await newProject();
  const r = await p.api.resources.createResource(p.project.id, {
    name: "Orders",
    code: "orders",
    permissions: [{ name: "Read", code: "read" }, { name: "Refund", code: "refund" }],
  });
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "clerk",
    name: "Clerk",
    permission_ids: [ids["orders:refund"], ids["orders:read"], ids["users:read"]],
  });
  await p.api.users.createUser(p.project.id, {
    display_name: "Ext",
    external_user_id: "crm/7 ü",
    role_id: role.id,
  });
  const plain = await p.api.users.getExternalUser(p.project.id, "crm/7 ü", undefined);
  assert.equal(plain.external_user_id, "crm/7 ü");
  assert.equal("permissions" in plain, false);
  const full = await p.api.users.getExternalUser(p.project.id, "crm/7 ü", true);
  assert.deepEqual(full.permissions, ["orders:read", "orders:refund", "users:read"]);
  await p.api.roles.updateRole(p.project.id, role.id, {
    code: "clerk",
    name: "Clerk",
    permission_ids: [ids["orders:read"]],
  });
  assert.deepEqual((await p.api.users.getExternalUser(p.project.id, "crm/7 ü", true)).permissions, [
    "orders:read",
  ]);
  await p.api.resources.updateResource(p.project.id, r.id, {
    name: "Orders",
    code: "orders",
    permissions: [],
  });
  assert.deepEqual((await p.api.users.getExternalUser(p.project.id, "crm/7 ü", true)).permissions, []);
  const noRole = await p.api.users.createUser(p.project.id, { display_name: "n", external_user_id: "none" });
  assert.deepEqual(
    (await p.api.users.getExternalUser(p.project.id, noRole.external_user_id!, true)).permissions,
    [],
  );
  await expectError(p.api.users.getExternalUser(p.project.id, "CRM/7 ü", undefined), 404, "user_not_found");
  const other = await newProject();
  await expectError(
    other.api.users.getExternalUser(other.project.id, "crm/7 ü", true),
    404,
    "user_not_found",
  );
});

test("GET .../users filters by is_active and role_id, searches name and email, sorts and pages", async () => {
  const p = await newProject();
  const role = await p.api.roles.createRole(p.project.id, { code: "r", name: "R" });
  await p.api.users.createUser(p.project.id, {
    display_name: "Carol",
    email: "carol@example.com",
    password: "12345678",
    role_id: role.id,
  });
  await p.api.users.createUser(p.project.id, {
    display_name: "alice",
    email: "zed@example.com",
    password: "12345678",
  });
  await p.api.users.createUser(p.project.id, {
    display_name: "Bob",
    external_user_id: "b",
    is_active: false,
    role_id: role.id,
  });
  const list = (
    q: {
      sort?: Api.ListUsersSortByEnum;
      dir?: Api.ListUsersSortDirEnum;
      search?: string;
      active?: boolean;
      role?: string;
      size?: number;
      page?: number;
    },
  ) =>
    p.api.users.listUsers(p.project.id, q.page ?? 1, q.size ?? 10, q.sort, q.dir, q.search, q.active, q.role)
      .then((r) => r);
  assert.deepEqual((await list({ active: false })).data.map((u) => u.display_name), ["Bob"]);
  assert.deepEqual(
    (await list({
      role: role.id,
      sort: Api.ListUsersSortByEnum.DisplayName,
      dir: Api.ListUsersSortDirEnum.Asc,
    })).data.map((u) => u.display_name),
    ["Bob", "Carol"],
  );
  assert.deepEqual((await list({ search: "ZED" })).data.map((u) => u.display_name), ["alice"]);
  assert.deepEqual((await list({ search: "caro" })).data.map((u) => u.display_name), ["Carol"]);
  const byEmail = await list({ sort: Api.ListUsersSortByEnum.Email, dir: Api.ListUsersSortDirEnum.Asc });
  assert.deepEqual(byEmail.data.map((u) => u.email), ["carol@example.com", "zed@example.com", null]);
  const first = await list({ size: 2, page: 1 });
  const second = await list({ size: 2, page: 2 });
  assert.equal(first.pagination.total, 3);
  assert.equal(new Set([...first.data, ...second.data].map((u) => u.id)).size, 3);
  await expectError(
    p.api.users.listUsers(
      p.project.id,
      1,
      10,
      "password_hash" as Api.ListUsersSortByEnum,
      undefined,
      undefined,
      undefined,
      undefined,
    ),
    400,
    "invalid_params",
  );
});

test("deactivating a user or setting a new password ends the user's sessions at once", async () => {
  const p = await newProject();
  const { db } = await service();
  const u = await p.api.users.createUser(p.project.id, {
    display_name: "S",
    email: "s@example.com",
    password: "12345678",
  });
  // Sessions come from the browser login; here two are opened directly in the database.
  const open = async () => {
    const id = crypto.randomUUID();
    await db.sql`insert into sessions (project_id, id, user_id, client_id, expires_at)
      values (${p.project.id}, ${id}, ${u.id}, ${p.clientId}, now() + interval '1 day')`;
    return id;
  };
  const live = async (id: string) =>
    (await db.sql<
      { revoked: boolean }[]
    >`select revoked_at is not null as revoked from sessions where id = ${id}`)[0].revoked === false;
  const first = await open();
  await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "S2",
    is_active: true,
    email: "s@example.com",
  });
  assert.ok(await live(first), "a profile change keeps sessions");
  await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "S2",
    is_active: false,
    email: "s@example.com",
  });
  assert.ok(!(await live(first)), "deactivation ends them");
  const second = await open();
  await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "S2",
    is_active: true,
    email: "s@example.com",
    password: "another-password",
  });
  assert.ok(!(await live(second)), "a new password ends them");
});

test("GET .../users/external/{id}: an impossible id is not found, include_permissions takes 1 and 0", async () => {
  const p = await newProject();
  await p.api.users.createUser(p.project.id, { display_name: "x", external_user_id: "e1" });
  const headers = { authorization: `Bearer ${p.token}` };
  const base = `/api/v1/projects/${p.project.id}/users/external`;
  await expectError(await http(`${base}/${"x".repeat(101)}`, { headers }), 404, "user_not_found");
  // A NUL byte is refused at the edge, before any statement (tests/isolation_test.ts).
  await expectError(await http(`${base}/a%00b`, { headers }), 400, "invalid_params");
  const one = await (await http(`${base}/e1?include_permissions=1`, { headers })).json();
  assert.deepEqual(one.permissions, []);
  const zero = await (await http(`${base}/e1?include_permissions=0`, { headers })).json();
  assert.equal("permissions" in zero, false);
  await expectError(await http(`${base}/e1?include_permissions=yes`, { headers }), 400, "invalid_params");
  await expectError(
    p.api.users.createUser(p.project.id, { display_name: "x", external_user_id: "   " }),
    400,
    "invalid_params",
  );
});

test("a user's name in parts: given_name and family_name are set, kept when omitted and cleared by null or empty", async () => {
  const p = await newProject();
  const u = await p.api.users.createUser(p.project.id, {
    display_name: "Ada Lovelace",
    external_user_id: "ada",
    given_name: " Ada ",
    family_name: "Lovelace",
  });
  assert.equal(u.given_name, "Ada", "trimmed");
  assert.equal(u.family_name, "Lovelace");
  assert.equal(u.password_scheme, null, "no password");
  const kept = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "Ada L.",
    is_active: true,
    external_user_id: "ada",
  });
  assert.deepEqual([kept.given_name, kept.family_name], ["Ada", "Lovelace"]);
  const cleared = await p.api.users.updateUser(p.project.id, u.id, {
    display_name: "Ada L.",
    is_active: true,
    external_user_id: "ada",
    given_name: null,
    family_name: "",
  });
  assert.deepEqual([cleared.given_name, cleared.family_name], [null, null]);
  await expectError(
    p.api.users.updateUser(p.project.id, u.id, {
      display_name: "Ada",
      is_active: true,
      external_user_id: "ada",
      given_name: "x".repeat(101),
    }),
    400,
    "invalid_params",
  );
});
