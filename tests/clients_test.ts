/** Clients through the SDK: create with a secret shown once, update, list, live effect of every change. */
import assert from "node:assert/strict";
import {
  Api,
  basic,
  clientToken,
  clientWith,
  expectError,
  expectOAuthError,
  newProject,
  permissionIds,
  postToken,
  sdk,
  systemToken,
  test,
} from "./helpers.ts";

test("POST .../clients creates a client whose secret is shown once and gets tokens", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const c = await p.api.clients.createClient(p.project.id, {
    name: "billing backend",
    description: "nightly jobs",
    permission_ids: [ids["users:read"]],
  });
  assert.deepEqual(Object.keys(c).sort(), [
    "client_secret",
    "created_at",
    "decision_claims",
    "decision_reasons",
    "delegation",
    "description",
    "device_grant",
    "id",
    "is_active",
    "is_admin",
    "last_used_at",
    "may_act",
    "metadata_url",
    "name",
    "permission_ids",
    "post_logout_redirect_uris",
    "project_id",
    "properties",
    "redirect_uris",
    "third_party",
    "token_endpoint_auth_method",
    "updated_at",
  ]);
  assert.equal(c.is_active, true);
  assert.equal(c.token_endpoint_auth_method, "none");
  assert.deepEqual(c.permission_ids, [ids["users:read"]]);
  assert.equal(c.client_secret.length, 43);
  const token = await clientToken(c.id, c.client_secret);
  const api = await sdk(token);
  assert.equal(
    (await api.users.listUsers(p.project.id, 1, 10, undefined, undefined, undefined, undefined, undefined))
      .pagination.total,
    0,
  );
  await expectError(
    api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
    403,
    "insufficient_permission",
  );
  const listed = await p.api.clients.listClients(
    p.project.id,
    1,
    10,
    undefined,
    undefined,
    "billing",
    undefined,
  );
  assert.equal(listed.data.length, 1);
  assert.equal(
    (listed.data[0] as unknown as Record<string, unknown>).client_secret,
    undefined,
    "never listed",
  );
});

test("clients: limits, unknown permissions, unknown client", async () => {
  const p = await newProject();
  await p.api.clients.createClient(p.project.id, { name: "n".repeat(50), description: "d".repeat(200) });
  await expectError(
    p.api.clients.createClient(p.project.id, { name: "n".repeat(51) }),
    400,
    "invalid_params",
  );
  await expectError(
    p.api.clients.createClient(p.project.id, { name: "x", description: "d".repeat(201) }),
    400,
    "invalid_params",
  );
  await expectError(
    p.api.clients.createClient(p.project.id, { name: "x", permission_ids: ["nope"] }),
    404,
    "some_permissions_not_found",
  );
  await expectError(
    p.api.clients.updateClient(p.project.id, "nope", { name: "x", is_active: true }),
    404,
    "client_not_found",
  );
  await expectError(
    p.api.clients.updateClient(p.project.id, p.clientId, { name: "x" } as Api.UpdateClientRequest),
    400,
    "invalid_params",
  );
});

test("a client deactivated through the API is refused at once, at the gate and at the token endpoint", async () => {
  const p = await newProject();
  const c = await clientWith(p, ["roles:read"]);
  assert.equal(
    (await c.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined)).data
      .length,
    0,
  );
  const off = await p.api.clients.updateClient(p.project.id, c.id, { name: "limited", is_active: false });
  assert.equal(off.is_active, false);
  await expectError(
    c.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
    401,
    "invalid_authorization_token",
  );
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: basic(c.id, c.secret) }),
    401,
    "invalid_client",
    "client_not_active",
  );
  await p.api.clients.updateClient(p.project.id, c.id, { name: "limited", is_active: true });
  // A token issued before the deactivation stays dead; a new one works.
  await expectError(
    c.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
    401,
    "invalid_authorization_token",
  );
  const again = await sdk(await clientToken(c.id, c.secret));
  assert.equal(
    (await again.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined)).data
      .length,
    0,
  );
});

test("rotating a client's secret also ends the access tokens issued before", async () => {
  const p = await newProject();
  const c = await clientWith(p, ["roles:read"]);
  const rotated = await p.api.clients.rotateClientSecret(p.project.id, c.id);
  await expectError(
    c.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
    401,
    "invalid_authorization_token",
  );
  const fresh = await sdk(await clientToken(c.id, rotated.client_secret));
  assert.equal(
    (await fresh.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined)).data
      .length,
    0,
  );
});

test("a project's admin client can be neither deactivated nor stripped of its permissions", async () => {
  const p = await newProject();
  const [admin] =
    (await p.api.clients.listClients(p.project.id, 1, 10, undefined, undefined, undefined, undefined)).data;
  assert.equal(admin.id, p.clientId);
  assert.equal(admin.is_admin, true);
  const off = await expectError(
    p.api.clients.updateClient(p.project.id, p.clientId, { name: "Admin client", is_active: false }),
    400,
    "invalid_params",
  );
  assert.equal(off.details?.[0].field, "is_active");
  await expectError(
    p.api.clients.updateClient(p.project.id, p.clientId, {
      name: "Admin client",
      is_active: true,
      permission_ids: [],
    }),
    400,
    "invalid_params",
  );
  const renamed = await p.api.clients.updateClient(p.project.id, p.clientId, {
    name: "Ops",
    is_active: true,
  });
  assert.equal(renamed.name, "Ops");
  assert.equal(renamed.permission_ids.length, 43);
  const other = await p.api.clients.createClient(p.project.id, { name: "not admin", is_active: false });
  assert.equal(other.is_admin, false);
  assert.equal(other.is_active, false, "is_active is accepted on create");
});

test("a client's permissions changed through the API apply on its very next request", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const c = await clientWith(p, ["roles:read"]);
  await expectError(
    c.api.roles.createRole(p.project.id, { code: "x", name: "x" }),
    403,
    "insufficient_permission",
  );
  await p.api.clients.updateClient(p.project.id, c.id, {
    name: "limited",
    is_active: true,
    permission_ids: [ids["roles:create"]],
  });
  assert.equal((await c.api.roles.createRole(p.project.id, { code: "x", name: "x" })).code, "x");
  await expectError(
    c.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
    403,
    "insufficient_permission",
  );
  // Omitted permission_ids keep them.
  const kept = await p.api.clients.updateClient(p.project.id, c.id, { name: "renamed", is_active: true });
  assert.deepEqual(kept.permission_ids, [ids["roles:create"]]);
  assert.equal(kept.name, "renamed");
});

test("a permission deleted from its resource is taken from every client that held it at once", async () => {
  const p = await newProject();
  const r = await p.api.resources.createResource(p.project.id, {
    name: "Docs",
    code: "docs",
    permissions: [{ name: "Read", code: "read" }],
  });
  const c = await p.api.clients.createClient(p.project.id, {
    name: "reader",
    permission_ids: [r.permissions[0].id],
  });
  await p.api.resources.updateResource(p.project.id, r.id, { name: "Docs", code: "docs", permissions: [] });
  const [after] =
    (await p.api.clients.listClients(p.project.id, 1, 10, undefined, undefined, "reader", undefined)).data;
  assert.equal(after.id, c.id);
  assert.deepEqual(after.permission_ids, []);
});

test("the system admin client can be neither deactivated nor stripped of its permissions", async () => {
  const admin = await sdk(await systemToken());
  const off = await expectError(
    admin.clients.updateClient("system", "system-admin", { name: "Admin client", is_active: false }),
    400,
    "invalid_params",
  );
  assert.equal(off.details?.[0].field, "is_active");
  await expectError(
    admin.clients.updateClient("system", "system-admin", {
      name: "Admin client",
      is_active: true,
      permission_ids: [],
    }),
    400,
    "invalid_params",
  );
  assert.ok(await systemToken());
});

test("GET .../clients pages, sorts, searches by name and filters by is_active", async () => {
  const p = await newProject();
  for (const name of ["beta", "alpha", "gamma_1"]) {
    const c = await p.api.clients.createClient(p.project.id, { name });
    if (name === "beta") await p.api.clients.updateClient(p.project.id, c.id, { name, is_active: false });
  }
  const byName = await p.api.clients.listClients(
    p.project.id,
    1,
    10,
    Api.ListClientsSortByEnum.Name,
    Api.ListClientsSortDirEnum.Asc,
    undefined,
    undefined,
  );
  assert.deepEqual(byName.data.map((c) => c.name), ["Admin client", "alpha", "beta", "gamma_1"]);
  const inactive = await p.api.clients.listClients(
    p.project.id,
    1,
    10,
    undefined,
    undefined,
    undefined,
    false,
  );
  assert.deepEqual(inactive.data.map((c) => c.name), ["beta"]);
  const literal = await p.api.clients.listClients(
    p.project.id,
    1,
    10,
    undefined,
    undefined,
    "A_1",
    undefined,
  );
  assert.deepEqual(literal.data.map((c) => c.name), ["gamma_1"]);
  const byActive = await p.api.clients.listClients(
    p.project.id,
    1,
    2,
    Api.ListClientsSortByEnum.IsActive,
    Api.ListClientsSortDirEnum.Asc,
    undefined,
    undefined,
  );
  assert.equal(byActive.data[0].name, "beta");
  assert.equal(byActive.pagination.total, 4);
});
