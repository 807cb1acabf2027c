/**
 * Least privilege on the admin API: a caller grants only permissions it holds and acts only on principals
 * whose permissions it holds; the project's admin client holds them all, including those of resources made
 * later. Each refusal is 403 `insufficient_permission` naming the missing codes, and writes nothing.
 */
import assert from "node:assert/strict";
import {
  Api,
  basic,
  clientToken,
  clientWith,
  expectError,
  expectOAuthError,
  http,
  loginProject,
  newProject,
  permissionIds,
  postToken,
  projectPermissions,
  REDIRECT_URI,
  sdk,
  systemToken,
  test,
  userTokens,
} from "./helpers.ts";

const ALL_DEFAULT = [
  "clients:create",
  "clients:delete",
  "clients:read",
  "clients:update",
  "projects:read",
  "projects:update",
  "resources:create",
  "resources:delete",
  "resources:read",
  "resources:update",
  "roles:create",
  "roles:delete",
  "roles:read",
  "roles:update",
  "users:create",
  "users:delete",
  "users:read",
  "users:update",
];

/** Asserts a 403 whose details name exactly these permission codes. */
async function refusedFor(call: Promise<unknown>, codes: string[]) {
  const err = await expectError(call, 403, "insufficient_permission");
  const named = (err.details ?? []).map((d) => /([a-z0-9_-]+:[a-z0-9_-]+)$/i.exec(d.issue)?.[1]).filter(
    Boolean,
  )
    .sort();
  assert.deepEqual(named, [...codes].sort(), JSON.stringify(err));
  return err;
}

test("the takeover is closed: clients:update alone cannot rotate the admin client's secret or change it", async () => {
  const p = await newProject();
  const narrow = await clientWith(p, ["clients:update"]);
  await expectError(
    narrow.api.clients.rotateClientSecret(p.project.id, p.clientId),
    403,
    "insufficient_permission",
  );
  await expectError(
    narrow.api.clients.updateClient(p.project.id, p.clientId, { name: "mine now", is_active: true }),
    403,
    "insufficient_permission",
  );
  // The admin client's secret still works: nothing was rotated.
  assert.ok(await clientToken(p.clientId, p.secret));
  // Even a client holding every default permission is not the admin client, which covers later resources too.
  const strong = await clientWith(p, ALL_DEFAULT);
  await expectError(
    strong.api.clients.rotateClientSecret(p.project.id, p.clientId),
    403,
    "insufficient_permission",
  );
  // A client may rotate its own secret; the admin client its own too.
  const own = await narrow.api.clients.rotateClientSecret(p.project.id, narrow.id);
  assert.ok(await clientToken(narrow.id, own.client_secret));
  const admin = await p.api.clients.rotateClientSecret(p.project.id, p.clientId);
  assert.ok(await clientToken(p.clientId, admin.client_secret));
});

test("a client grants only the permissions it holds, to clients and roles; nothing is written when refused", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const creator = await clientWith(p, ["clients:create", "roles:create", "roles:read"]);
  await refusedFor(
    creator.api.clients.createClient(p.project.id, {
      name: "everything",
      permission_ids: ALL_DEFAULT.map((c) => ids[c]),
    }),
    ALL_DEFAULT.filter((c) => !["clients:create", "roles:create", "roles:read"].includes(c)),
  );
  const before = await p.api.clients.listClients(
    p.project.id,
    1,
    100,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  assert.ok(!before.data.some((c) => c.name === "everything"), "no client was created");
  // What it holds it may grant.
  const ok = await creator.api.clients.createClient(p.project.id, {
    name: "reader",
    permission_ids: [ids["roles:read"]],
  });
  assert.deepEqual(ok.permission_ids, [ids["roles:read"]]);
  // Roles likewise; unknown ids are still 404 first.
  await expectError(
    creator.api.roles.createRole(p.project.id, {
      code: "x",
      name: "x",
      permission_ids: ["nope", ids["users:update"]],
    }),
    404,
    "some_permissions_not_found",
  );
  await refusedFor(
    creator.api.roles.createRole(p.project.id, {
      code: "boss",
      name: "Boss",
      permission_ids: [ids["roles:read"], ids["users:update"]],
    }),
    ["users:update"],
  );
  const roles = await p.api.roles.listRoles(p.project.id, 1, 100, undefined, undefined, "boss", undefined);
  assert.equal(roles.pagination.total, 0, "no role was created");
  assert.ok(
    await creator.api.roles.createRole(p.project.id, {
      code: "r",
      name: "R",
      permission_ids: [ids["roles:read"]],
    }),
  );
});

test("roles:update touches a role's permissions only when it holds them all: a role above it is out of reach", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "ops",
    name: "Ops",
    permission_ids: [ids["users:update"], ids["roles:read"]],
  });
  const editor = await clientWith(p, ["roles:update", "roles:read"]);
  await refusedFor(
    editor.api.roles.updateRole(p.project.id, role.id, {
      code: "ops",
      name: "Ops",
      permission_ids: [ids["users:update"], ids["roles:read"], ids["clients:create"]],
    }),
    [],
  );
  // Stripping it (then acting on its users) is refused as well, without naming what it holds.
  for (const kept of [[ids["roles:read"]], [], [ids["users:update"], ids["roles:read"]]]) {
    await refusedFor(
      editor.api.roles.updateRole(p.project.id, role.id, { code: "ops", name: "Ops", permission_ids: kept }),
      [],
    );
  }
  assert.deepEqual(
    (await p.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, "ops", undefined)).data[0]
      .permission_ids
      .sort(),
    [ids["users:update"], ids["roles:read"]].sort(),
    "nothing was written",
  );
  // Renaming grants and takes nothing.
  const renamed = await editor.api.roles.updateRole(p.project.id, role.id, {
    code: "ops",
    name: "Operations",
  });
  assert.equal(renamed.name, "Operations");
  // A role within the caller's permissions it may reshape freely, but grants only what it holds.
  const low = await p.api.roles.createRole(p.project.id, { code: "low", name: "Low" });
  await refusedFor(
    editor.api.roles.updateRole(p.project.id, low.id, {
      code: "low",
      name: "Low",
      permission_ids: [ids["roles:read"], ids["clients:create"]],
    }),
    ["clients:create"],
  );
  const mine = await p.api.roles.createRole(p.project.id, {
    code: "mine",
    name: "Mine",
    permission_ids: [ids["roles:read"]],
  });
  const emptied = await editor.api.roles.updateRole(p.project.id, mine.id, {
    code: "mine",
    name: "Mine",
    permission_ids: [],
  });
  assert.deepEqual(emptied.permission_ids, []);
});

test("resources: a new code or permission list needs the resource's permissions; renaming a grant is a grant", async () => {
  const p = await newProject();
  const billing = await p.api.resources.createResource(p.project.id, {
    name: "Billing",
    code: "billing",
    permissions: [{ name: "Read", code: "read" }],
  });
  const reports = await p.api.resources.createResource(p.project.id, {
    name: "Reports",
    code: "reports",
    permissions: [{ name: "Read", code: "read" }],
  });
  const ids = await permissionIds(p);
  const editor = await p.api.clients.createClient(p.project.id, {
    name: "editor",
    permission_ids: [ids["resources:update"], ids["reports:read"]],
  });
  const api = await sdk(await clientToken(editor.id, editor.client_secret));
  // Moving billing aside (so that reports could be renamed to billing:read) is refused.
  await refusedFor(
    api.resources.updateResource(p.project.id, billing.id, { name: "Billing", code: "billing-old" }),
    [],
  );
  await refusedFor(
    api.resources.updateResource(p.project.id, billing.id, {
      name: "Billing",
      code: "billing",
      permissions: [],
    }),
    [],
  );
  // Its display name is free; its own resource it may reshape.
  assert.equal(
    (await api.resources.updateResource(p.project.id, billing.id, { name: "Invoices", code: "billing" }))
      .name,
    "Invoices",
  );
  const renamed = await api.resources.updateResource(p.project.id, reports.id, {
    name: "Reports",
    code: "reporting",
  });
  assert.equal(renamed.code, "reporting");
});

test("a user's token cannot change its own password or email through the admin API", async () => {
  const p = await loginProject();
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "self-admin",
    name: "Self admin",
    permission_ids: [ids["users:update"], ids["users:read"]],
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    role_id: role.id,
  });
  const api = await sdk((await userTokens(p)).access_token);
  const base = { display_name: "Login User", is_active: true, email: p.email };
  for (const change of [{ password: "taken over!" }, { email: "thief@example.com" }]) {
    const err = await expectError(
      api.users.updateUser(p.project.id, p.userId, { ...base, ...change }),
      403,
      "insufficient_permission",
    );
    assert.match(err.error_description, /users\/current/);
  }
  assert.equal(
    (await api.users.updateUser(p.project.id, p.userId, { ...base, display_name: "Me" })).display_name,
    "Me",
  );
});

test("users: a role is given only when the caller holds its permissions; users above the caller are out of reach", async () => {
  const p = await loginProject();
  const ids = await permissionIds(p);
  const boss = await p.api.roles.createRole(p.project.id, {
    code: "boss",
    name: "Boss",
    permission_ids: [ids["users:update"], ids["clients:update"]],
  });
  const plain = await p.api.roles.createRole(p.project.id, {
    code: "plain",
    name: "Plain",
    permission_ids: [ids["users:read"]],
  });
  const hr = await clientWith(p, ["users:create", "users:update", "users:read"]);
  await refusedFor(
    hr.api.users.createUser(p.project.id, { display_name: "B", external_user_id: "b-1", role_id: boss.id }),
    ["clients:update"],
  );
  const listed = await p.api.users.listUsers(
    p.project.id,
    1,
    100,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  assert.ok(!listed.data.some((u) => u.external_user_id === "b-1"), "no user was created");
  await expectError(
    hr.api.users.createUser(p.project.id, {
      display_name: "B",
      external_user_id: "b-2",
      role_id: "no-such-role",
    }),
    404,
    "role_not_found",
  );
  const low = await hr.api.users.createUser(p.project.id, {
    display_name: "Low",
    external_user_id: "low-1",
    role_id: plain.id,
  });
  await refusedFor(
    hr.api.users.updateUser(p.project.id, low.id, {
      display_name: "Low",
      is_active: true,
      external_user_id: "low-1",
      role_id: boss.id,
    }),
    ["clients:update"],
  );
  // The login user gets the boss role from the admin client; hr may no longer change what decides who they are.
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    role_id: boss.id,
  });
  const base = { display_name: "Login User", is_active: true, email: p.email };
  for (
    const change of [
      { password: "taken over!" },
      { email: "attacker@example.com" },
      { is_active: false },
      { role_id: null },
      { external_user_id: "crm-evil" },
    ]
  ) {
    await refusedFor(hr.api.users.updateUser(p.project.id, p.userId, { ...base, ...change }), []);
  }
  // The user still logs in with the old password, and still holds the role.
  const t = await userTokens(p);
  assert.deepEqual(
    (await (await sdk(t.access_token)).users.getCurrentUser()).permissions,
    ["clients:update", "users:update"],
  );
  // The display name and avatar are not what decides access: they change freely.
  const renamed = await hr.api.users.updateUser(p.project.id, p.userId, { ...base, display_name: "Renamed" });
  assert.equal(renamed.display_name, "Renamed");
  // A user's token acts with the role's permissions and is held to the same rule.
  const boss2 = await p.api.users.createUser(p.project.id, {
    display_name: "Other boss",
    external_user_id: "boss-2",
    role_id: boss.id,
  });
  const userApi = await sdk(t.access_token);
  const deactivated = await userApi.users.updateUser(p.project.id, boss2.id, {
    display_name: "Other boss",
    is_active: false,
    external_user_id: "boss-2",
  });
  assert.equal(deactivated.is_active, false, "the same permissions are covered");
});

test("the admin client covers permissions of resources created later", async () => {
  const p = await newProject();
  const orders = await p.api.resources.createResource(p.project.id, {
    name: "Orders",
    code: "orders",
    permissions: [{ name: "Read", code: "read" }, { name: "Refund", code: "refund" }],
  });
  const role = await p.api.roles.createRole(p.project.id, {
    code: "clerk",
    name: "Clerk",
    permission_ids: orders.permissions.map((x) => x.id),
  });
  assert.equal(role.permission_ids.length, 2);
  const job = await p.api.clients.createClient(p.project.id, {
    name: "job",
    permission_ids: [orders.permissions[0].id],
  });
  assert.equal(job.permission_ids.length, 1);
  // A client that holds every default permission does not hold orders:refund, so it cannot grant it.
  const strong = await clientWith(p, ALL_DEFAULT);
  await refusedFor(
    strong.api.roles.createRole(p.project.id, {
      code: "r2",
      name: "R2",
      permission_ids: [orders.permissions[1].id],
    }),
    ["orders:refund"],
  );
});

test("redirect URIs change only by a caller that covers the whole project; projects:update alone renames", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const editor = await clientWith(p, ["projects:update", "projects:read"]);
  await expectError(
    editor.api.projects.updateProject(p.project.id, {
      name: "Renamed",
      redirect_uris: ["https://attacker.example/callback"],
    }),
    403,
    "insufficient_permission",
  );
  let project = await p.api.projects.getProject(p.project.id);
  assert.deepEqual(project.redirect_uris, [REDIRECT_URI], "nothing was written");
  assert.notEqual(project.name, "Renamed");
  project = await editor.api.projects.updateProject(p.project.id, { name: "Renamed", description: "d" });
  assert.equal(project.name, "Renamed");
  // Sending the same list back changes nothing, so it is allowed.
  project = await editor.api.projects.updateProject(p.project.id, {
    name: "Again",
    redirect_uris: [REDIRECT_URI],
  });
  assert.equal(project.name, "Again");
  // The admin client and the system project's admin client may.
  project = await p.api.projects.updateProject(p.project.id, {
    name: "Again",
    redirect_uris: [REDIRECT_URI, "https://app.example/cb"],
  });
  assert.equal(project.redirect_uris.length, 2);
  const system = await sdk(await clientToken("system-admin", (await import("./helpers.ts")).ADMIN_SECRET));
  project = await system.projects.updateProject(p.project.id, {
    name: "Again",
    redirect_uris: [REDIRECT_URI],
  });
  assert.deepEqual(project.redirect_uris, [REDIRECT_URI]);
});

test("token_endpoint_auth_method client_secret_basic: every grant of that client needs its Basic credentials", async () => {
  const p = await loginProject();
  const confidential = await p.api.clients.createClient(p.project.id, {
    name: "web backend",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });
  assert.equal(confidential.token_endpoint_auth_method, "client_secret_basic");
  const { authorizationCode, exchangeCode } = await import("./helpers.ts");
  const first = await authorizationCode({ clientId: confidential.id, email: p.email, password: p.password });
  const refused = await expectOAuthError(
    await exchangeCode(confidential.id, first.code, first.verifier),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  assert.match(refused.headers.get("www-authenticate") ?? "", /^Basic /);
  const form = {
    grant_type: "authorization_code",
    client_id: confidential.id,
    code: first.code,
    redirect_uri: REDIRECT_URI,
    code_verifier: first.verifier,
  };
  const auth = { authorization: basic(confidential.id, confidential.client_secret) };
  const ok = await postToken(form, auth);
  assert.equal(ok.status, 200, "the refused attempt did not spend the code");
  const tokens = await ok.json();
  const refreshForm = {
    grant_type: "refresh_token",
    client_id: confidential.id,
    refresh_token: tokens.refresh_token,
  };
  await expectOAuthError(await postToken(refreshForm), 401, "invalid_client", "invalid_client_credentials");
  const refreshed = await postToken(refreshForm, auth);
  assert.equal(refreshed.status, 200);
  const fresh = await refreshed.json();
  // Revocation by client_id alone is refused for it too.
  const revoke = (headers: Record<string, string>, extra: Record<string, string> = {}) =>
    http("/api/v1/tokens/revoke", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams({ token: fresh.refresh_token, ...extra }).toString(),
    });
  await expectOAuthError(
    await revoke({}, { client_id: confidential.id }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  assert.equal((await revoke(auth)).status, 200);
  // Back to a public client: client_id alone works again.
  const updated = await p.api.clients.updateClient(p.project.id, confidential.id, {
    name: "web backend",
    is_active: true,
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.None,
  });
  assert.equal(updated.token_endpoint_auth_method, "none");
  const second = await authorizationCode({ clientId: confidential.id, email: p.email, password: p.password });
  assert.equal((await exchangeCode(confidential.id, second.code, second.verifier)).status, 200);
  await expectError(
    p.api.clients.createClient(p.project.id, {
      name: "x",
      token_endpoint_auth_method: "private_key_jwt" as Api.TokenEndpointAuthMethod,
    }),
    400,
    "invalid_params",
  );
});

test("activating or deactivating a project needs an operator of the system project, not projects:update alone", async () => {
  const p = await newProject();
  const system = await sdk(await systemToken());
  const { ids } = await projectPermissions(system, "system");
  const narrow = await system.clients.createClient("system", {
    name: "project editor",
    permission_ids: [ids["projects:update"], ids["projects:read"]],
  });
  const api = await sdk(await clientToken(narrow.id, narrow.client_secret));
  await expectError(
    api.projects.updateProject(p.project.id, { name: p.project.name, is_active: false }),
    403,
    "insufficient_permission",
  );
  assert.equal((await p.api.projects.getProject(p.project.id)).is_active, true);
  assert.equal(
    (await api.projects.updateProject(p.project.id, { name: "Renamed by ops" })).name,
    "Renamed by ops",
  );
  // An operator (a system client holding every system permission) may.
  const operator = await system.clients.createClient("system", {
    name: "operator",
    permission_ids: Object.values(ids),
  });
  const ops = await sdk(await clientToken(operator.id, operator.client_secret));
  assert.equal(
    (await ops.projects.updateProject(p.project.id, { name: "x", is_active: false })).is_active,
    false,
  );
});

test("operators of the system project administer every project; other system callers do not", async () => {
  const p = await newProject();
  const admin = await sdk(await systemToken());
  // The system admin client covers every project.
  const role = await admin.roles.createRole(p.project.id, { code: "from-ops", name: "From ops" });
  assert.equal(role.project_id, p.project.id);
  const { ids } = await projectPermissions(admin, "system");
  const narrow = await admin.clients.createClient("system", {
    name: "roles only",
    permission_ids: [ids["roles:create"]],
  });
  const api = await sdk(await clientToken(narrow.id, narrow.client_secret));
  await expectError(
    api.roles.createRole(p.project.id, { code: "nope", name: "Nope" }),
    403,
    "insufficient_permission",
  );
});
