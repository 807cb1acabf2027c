/** The projects API: create with default resources and an admin client, list, get, update, secret rotation. */
import assert from "node:assert/strict";
import {
  Api,
  basic,
  clientToken,
  clientWith,
  expectError,
  expectOAuthError,
  http,
  newProject,
  postToken,
  sdk,
  service,
  systemToken,
  test,
} from "./helpers.ts";

const Sort = Api.ListProjectsSortByEnum;
const Dir = Api.ListProjectsSortDirEnum;

test("POST /api/v1/projects creates a project with its admin client, shown once", async () => {
  const admin = await sdk(await systemToken());
  const created = await admin.projects.createProject({
    name: "Shop",
    description: "the shop",
    redirect_uris: [
      "https://shop.example.com/callback?x=1",
      "http://localhost:3000/cb",
      "http://[::1]:8080/cb",
    ],
  });
  assert.deepEqual(Object.keys(created).sort(), [
    "admin_client",
    "branding",
    "client_metadata_documents",
    "created_at",
    "default_role_id",
    "description",
    "id",
    "is_active",
    "is_system",
    "mfa",
    "name",
    "post_logout_redirect_uris",
    "redirect_uris",
    "require_verified_email",
    "signup",
    "updated_at",
  ]);
  assert.equal(created.name, "Shop");
  assert.equal(created.is_active, true);
  assert.equal(created.is_system, false);
  assert.deepEqual(created.redirect_uris, [
    "https://shop.example.com/callback?x=1",
    "http://localhost:3000/cb",
    "http://[::1]:8080/cb",
  ]);
  assert.match(created.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  assert.equal(created.admin_client.client_secret.length, 43, "256 bits in base64url");
  const token = await clientToken(created.admin_client.client_id, created.admin_client.client_secret);
  const own = await sdk(token);
  const read = await own.projects.getProject(created.id);
  assert.equal(read.id, created.id);
  assert.equal(
    (read as unknown as Record<string, unknown>).admin_client,
    undefined,
    "the secret is never shown again",
  );
});

test("a new project has the default resources, and its admin client holds every default permission", async () => {
  const p = await newProject();
  const { db } = await service();
  const rows = await db.sql<{ code: string; is_default: boolean; permissions: string[] }[]>`
    select r.code, r.is_default, array(select pe.code from permissions pe where pe.resource_id = r.id order by pe.code)
      as permissions
    from resources r where r.project_id = ${p.project.id} order by r.code`;
  assert.deepEqual(rows.map((r) => [r.code, r.is_default, r.permissions]), [
    ["access", true, ["evaluate", "search"]],
    ["audit", true, ["read"]],
    ["clients", true, ["create", "delete", "read", "update"]],
    ["grants", true, ["create", "delete", "read"]],
    ["identity_providers", true, ["create", "delete", "read", "update"]],
    ["objects", true, ["create", "delete", "read", "update"]],
    ["organizations", true, ["create", "delete", "read", "update"]],
    ["projects", true, ["read", "update"]],
    ["resources", true, ["create", "delete", "read", "update"]],
    ["roles", true, ["create", "delete", "read", "update"]],
    ["scim", true, ["read", "write"]],
    ["users", true, ["create", "delete", "export_secrets", "read", "update"]],
    ["webhooks", true, ["create", "delete", "read", "update"]],
  ]);
  const [{ granted }] = await db.sql<{ granted: number }[]>`
    select count(*)::int as granted from client_permissions where client_id = ${p.clientId}`;
  assert.equal(granted, 43);
  const [{ system }] = await db.sql<{ system: string[] }[]>`
    select array(select pe.code from permissions pe join resources r on r.id = pe.resource_id
      where r.project_id = 'system' and r.code = 'projects' order by pe.code) as system`;
  assert.deepEqual(system, ["create", "read", "update"]);
});

test("POST /api/v1/projects validates every field with invalid_params and details", async () => {
  const admin = await sdk(await systemToken());
  const bad: [Record<string, unknown>, string][] = [
    [{}, "name"],
    [{ name: "" }, "name"],
    [{ name: "   " }, "name"],
    [{ name: "x".repeat(51) }, "name"],
    [{ name: 5 }, "name"],
    [{ name: "ok", description: "d".repeat(201) }, "description"],
    [{ name: "ok", redirect_uris: ["http://example.com/cb"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://example.com/cb#frag"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["/relative"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://user:pw@example.com/cb"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["javascript:alert(1)"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: [" https://a.example/cb"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://a.example/cb\t"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://a.example/c\nb"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["http://0x7f.1/x"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://A.example/cb"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://a.example"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://a.example/cb?state=fixed"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://a.example/cb?code=1"] }, "redirect_uris.0"],
    [{ name: "ok", redirect_uris: ["https://a.example/cb", "https://a.example/cb"] }, "redirect_uris"],
    [{ name: "ok", redirect_uris: "https://a.example/cb" }, "redirect_uris"],
    [{ name: "ok", is_active: "yes" }, "is_active"],
  ];
  for (const [body, field] of bad) {
    const err = await expectError(
      admin.projects.createProject(body as unknown as Api.CreateProjectRequest),
      400,
      "invalid_params",
    );
    assert.ok(
      err.details?.some((d) => d.field === field),
      `${JSON.stringify(body)} → ${JSON.stringify(err.details)}`,
    );
  }
  // Limits are exact: 50 and 200 characters are accepted.
  const ok = await admin.projects.createProject({ name: "n".repeat(50), description: "d".repeat(200) });
  assert.equal(ok.name.length, 50);
});

test("GET /api/v1/projects pages without overlap, sorts, searches literally and filters by is_active", async () => {
  const admin = await sdk(await systemToken());
  const tag = crypto.randomUUID().slice(0, 8);
  const names = ["b", "a", "c", "e", "d"].map((n) => `${tag} ${n}`);
  for (const name of names) await admin.projects.createProject({ name, is_active: !name.endsWith("e") });
  const list = (
    page: number,
    size: number,
    sort?: Api.ListProjectsSortByEnum,
    dir?: Api.ListProjectsSortDirEnum,
  ) => admin.projects.listProjects(page, size, sort, dir, tag, undefined);
  const p1 = await list(1, 2, Sort.Name, Dir.Asc);
  const p2 = await list(2, 2, Sort.Name, Dir.Asc);
  const p3 = await list(3, 2, Sort.Name, Dir.Asc);
  assert.deepEqual([...p1.data, ...p2.data, ...p3.data].map((p) => p.name), [...names].sort());
  assert.deepEqual(p1.pagination, { page_num: 1, page_size: 2, total: 5 });
  assert.deepEqual((await list(4, 2)).data, []);
  const byDefault = await admin.projects.listProjects(
    undefined,
    undefined,
    undefined,
    undefined,
    tag,
    undefined,
  );
  assert.equal(byDefault.pagination.page_size, 10);
  assert.deepEqual(byDefault.data.map((p) => p.name), [...names].reverse(), "default: newest first");
  const inactive = await admin.projects.listProjects(undefined, undefined, undefined, undefined, tag, false);
  assert.deepEqual(inactive.data.map((p) => p.name), [`${tag} e`]);
  // % and _ are literal in search.
  await admin.projects.createProject({ name: `${tag}_100%` });
  const literal = await admin.projects.listProjects(
    undefined,
    undefined,
    undefined,
    undefined,
    `${tag}_100%`,
    undefined,
  );
  assert.deepEqual(literal.data.map((p) => p.name), [`${tag}_100%`]);
  const none = await admin.projects.listProjects(
    undefined,
    undefined,
    undefined,
    undefined,
    `${tag}%`,
    undefined,
  );
  assert.deepEqual(none.data, []);
  assert.equal(none.pagination.total, 0);
});

test("GET /api/v1/projects refuses bad paging and sorting with invalid_params", async () => {
  const token = await systemToken();
  for (
    const q of [
      "page_num=0",
      "page_num=abc",
      "page_size=0",
      "page_size=101",
      "page_size=1.5",
      "sort_by=secret_hash",
      "sort_dir=up",
      "is_active=yes",
    ]
  ) {
    await expectError(
      await http(`/api/v1/projects?${q}`, { headers: { authorization: `Bearer ${token}` } }),
      400,
      "invalid_params",
    );
  }
  const max = await http("/api/v1/projects?page_size=100", { headers: { authorization: `Bearer ${token}` } });
  assert.equal(max.status, 200);
});

test("PUT /api/v1/projects/{project_id} keeps omitted fields and clears null ones", async () => {
  const p = await newProject({ description: "first", redirect_uris: ["https://a.example/cb"] });
  const kept = await p.api.projects.updateProject(p.project.id, { name: "second" });
  assert.equal(kept.name, "second");
  assert.equal(kept.description, "first");
  assert.deepEqual(kept.redirect_uris, ["https://a.example/cb"]);
  assert.ok(kept.updated_at >= p.project.updated_at);
  const cleared = await p.api.projects.updateProject(p.project.id, {
    name: "third",
    description: null,
    redirect_uris: [],
  });
  assert.equal(cleared.description, null);
  assert.deepEqual(cleared.redirect_uris, []);
  const emptied = await p.api.projects.updateProject(p.project.id, { name: "third", description: "x" });
  assert.equal(
    (await p.api.projects.updateProject(p.project.id, { name: "third", description: "" })).description,
    null,
  );
  assert.equal(emptied.description, "x");
  await expectError(p.api.projects.updateProject(p.project.id, { name: "" }), 400, "invalid_params");
});

test("default_role_id: one of the project's roles, changed only by a caller covering the whole project; a deleted role leaves none", async () => {
  const p = await newProject();
  const other = await newProject();
  assert.equal(p.project.default_role_id, null, "a new project has none");
  const role = await p.api.roles.createRole(p.project.id, {
    code: "member",
    name: "Member",
    permission_ids: [],
  });
  const foreign = await other.api.roles.createRole(other.project.id, {
    code: "x",
    name: "X",
    permission_ids: [],
  });
  for (const id of [foreign.id, "no-such-role"]) {
    const err = await expectError(
      p.api.projects.updateProject(p.project.id, { name: p.project.name, default_role_id: id }),
      400,
      "invalid_params",
    );
    assert.equal(err.details?.[0].field, "default_role_id");
  }
  // A caller with projects:update that does not hold every permission of the project: it may rename the
  // project, not decide what anyone who signs up may do.
  const limited = await clientWith(p, ["projects:read", "projects:update"]);
  const refused = await expectError(
    limited.api.projects.updateProject(p.project.id, { name: p.project.name, default_role_id: role.id }),
    403,
    "insufficient_permission",
  );
  assert.match(refused.error_description, /role given at sign-up/);
  assert.equal((await p.api.projects.getProject(p.project.id)).default_role_id, null, "nothing written");
  const set = await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    default_role_id: role.id,
  });
  assert.equal(set.default_role_id, role.id);
  // Omitted keeps it, also for the limited caller (an unchanged value needs no coverage); null clears it.
  assert.equal(
    (await limited.api.projects.updateProject(p.project.id, { name: "Renamed" })).default_role_id,
    role.id,
  );
  const cleared = await p.api.projects.updateProject(p.project.id, {
    name: "Renamed",
    default_role_id: null,
  });
  assert.equal(cleared.default_role_id, null);
  await p.api.projects.updateProject(p.project.id, { name: "Renamed", default_role_id: role.id });
  await p.api.roles.deleteRole(p.project.id, role.id, undefined);
  assert.equal((await p.api.projects.getProject(p.project.id)).default_role_id, null, "the role is gone");
});

test("PUT /api/v1/projects/{project_id}: only a system token changes is_active; the system project stays active", async () => {
  const p = await newProject();
  const err = await expectError(
    p.api.projects.updateProject(p.project.id, { name: p.project.name, is_active: false }),
    403,
    "insufficient_permission",
  );
  assert.match(err.error_description, /system-project token/);
  // Sending the unchanged value is fine.
  assert.equal(
    (await p.api.projects.updateProject(p.project.id, { name: "n", is_active: true })).is_active,
    true,
  );
  const admin = await sdk(await systemToken());
  const system = await admin.projects.getProject("system");
  assert.equal(system.is_system, true);
  const refused = await expectError(
    admin.projects.updateProject("system", { name: system.name, is_active: false }),
    400,
    "invalid_params",
  );
  assert.equal(refused.details?.[0].field, "is_active");
});

test("POST .../clients/{client_id}/secret rotates the secret: the old one stops working at once", async () => {
  const p = await newProject();
  const rotated = await p.api.clients.rotateClientSecret(p.project.id, p.clientId);
  assert.equal(rotated.id, p.clientId);
  assert.equal(rotated.project_id, p.project.id);
  assert.equal(rotated.permission_ids.length, 43);
  assert.notEqual(rotated.client_secret, p.secret);
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: basic(p.clientId, p.secret) }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  // The rotation also ended the client's own earlier token; a new one works.
  await expectError(p.api.projects.getProject(p.project.id), 401, "invalid_authorization_token");
  const fresh = await sdk(await clientToken(p.clientId, rotated.client_secret));
  await expectError(
    fresh.clients.rotateClientSecret(p.project.id, "no-such-client"),
    404,
    "client_not_found",
  );
  const { db } = await service();
  const [row] = await db.sql<
    { secret_hash: Uint8Array }[]
  >`select secret_hash from clients where id = ${p.clientId}`;
  assert.equal(row.secret_hash.length, 32, "only a SHA-256 hash is stored");
  assert.ok(!new TextDecoder().decode(row.secret_hash).includes(rotated.client_secret));
});
