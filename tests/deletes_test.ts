/**
 * Read one, delete safely: single-record reads of resources, roles, users and clients, and their deletion with
 * what goes with each (permissions from roles and clients, sessions, tokens, reuse of email and external id),
 * least privilege, conflicts and the audit trail.
 */
import assert from "node:assert/strict";
import {
  clientToken,
  clientWith,
  expectError,
  http,
  loginProject,
  newProject,
  permissionIds,
  postToken,
  sdk,
  test,
  type TestProject,
  userTokens,
} from "./helpers.ts";

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
const del = (token: string) => ({ method: "DELETE", headers: { authorization: `Bearer ${token}` } });

async function lastEvent(p: TestProject, type: string) {
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=${type}`, bearer(p.token));
  assert.equal(res.status, 200);
  const page = await res.json();
  return page.data[0];
}

test("each record reads by id as the list shows it; unknown and other projects' ids are 404", async () => {
  const p = await newProject();
  const other = await newProject();
  const id = p.project.id;
  const resource = await p.api.resources.createResource(id, {
    name: "Orders",
    code: "orders",
    permissions: [{ name: "Read", code: "read" }],
  });
  const role = await p.api.roles.createRole(id, {
    name: "Clerk",
    code: "clerk",
    permission_ids: [resource.permissions[0].id],
  });
  const user = await p.api.users.createUser(id, {
    display_name: "Ann",
    external_user_id: "ann",
    role_id: role.id,
  });
  const client = await p.api.clients.createClient(id, {
    name: "Batch",
    permission_ids: [resource.permissions[0].id],
  });

  const listed = async (kind: string, rid: string) => {
    const res = await http(`/api/v1/projects/${id}/${kind}?page_size=100`, bearer(p.token));
    return (await res.json()).data.find((r: { id: string }) => r.id === rid);
  };
  assert.deepEqual(
    await p.api.resources.getResource(id, resource.id),
    await listed("resources", resource.id),
  );
  assert.deepEqual(await p.api.roles.getRole(id, role.id), await listed("roles", role.id));
  assert.deepEqual(await p.api.users.getUser(id, user.id, undefined), await listed("users", user.id));
  const read = await p.api.clients.getClient(id, client.id);
  assert.deepEqual(read, await listed("clients", client.id));
  assert.equal("client_secret" in read, false);
  assert.deepEqual(
    (await p.api.users.getUser(id, user.id, true)).permissions,
    ["orders:read"],
  );

  for (
    const [kind, rid, code] of [
      ["resources", resource.id, "resource_not_found"],
      ["roles", role.id, "role_not_found"],
      ["users", user.id, "user_not_found"],
      ["clients", client.id, "client_not_found"],
    ]
  ) {
    // Another project's admin, naming its own project and this project's record.
    await expectError(
      http(`/api/v1/projects/${other.project.id}/${kind}/${rid}`, bearer(other.token)),
      404,
      code,
    );
    await expectError(http(`/api/v1/projects/${id}/${kind}/nope`, bearer(p.token)), 404, code);
    await expectError(http(`/api/v1/projects/${id}/${kind}/nope`, del(p.token)), 404, code);
  }
  // The built-in console client is not one of the clients the API shows.
  await expectError(
    http(`/api/v1/projects/${id}/clients/console-${id}`, bearer(p.token)),
    404,
    "client_not_found",
  );
});

test("reading needs *:read and deleting *:delete, which the project's admin client holds", async () => {
  const p = await newProject();
  const id = p.project.id;
  const role = await p.api.roles.createRole(id, { name: "Empty", code: "empty" });
  const readOnly = await clientWith(p, ["roles:read", "users:read", "clients:read", "resources:read"]);
  assert.equal((await readOnly.api.roles.getRole(id, role.id)).id, role.id);
  for (const kind of ["resources", "roles", "users", "clients"]) {
    await expectError(
      http(`/api/v1/projects/${id}/${kind}/x`, del(readOnly.token)),
      403,
      "insufficient_permission",
    );
  }
  const none = await clientWith(p, ["users:read"]);
  await expectError(
    http(`/api/v1/projects/${id}/roles/${role.id}`, bearer(none.token)),
    403,
    "insufficient_permission",
  );
  await expectError(http(`/api/v1/projects/${id}/roles/${role.id}`, {}), 401, "invalid_authorization_token");
  const codes = Object.keys(await permissionIds(p));
  for (const c of ["resources:delete", "roles:delete", "users:delete", "clients:delete"]) {
    assert.ok(codes.includes(c), c);
  }
});

test("deleting a resource takes its permissions from every role and client, live; defaults are immutable", async () => {
  const p = await loginProject();
  const id = p.project.id;
  const ids = await permissionIds(p);
  const resource = await p.api.resources.createResource(id, {
    name: "Reports",
    code: "reports",
    permissions: [{ name: "Read", code: "read" }, { name: "Export", code: "export" }],
  });
  const [read, exp] = resource.permissions.map((x) => x.id);
  const role = await p.api.roles.createRole(id, {
    name: "Analyst",
    code: "analyst",
    permission_ids: [read, exp],
  });
  await p.api.users.updateUser(id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    role_id: role.id,
  });
  const machine = await p.api.clients.createClient(id, { name: "Exporter", permission_ids: [exp] });
  const machineToken = await clientToken(machine.id, machine.client_secret);
  const user = await userTokens(p);
  const introspect = async (token: string) =>
    await (await http("/api/v1/tokens/introspect", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${btoa(`${p.clientId}:${p.secret}`)}`,
      },
      body: new URLSearchParams({ token }).toString(),
    })).json();
  assert.deepEqual((await introspect(user.access_token)).permissions, ["reports:export", "reports:read"]);

  // A caller that does not cover the resource's permissions may not delete it.
  const partial = await clientWith(p, ["resources:delete", "resources:read"]);
  await expectError(
    http(`/api/v1/projects/${id}/resources/${resource.id}`, del(partial.token)),
    403,
    "insufficient_permission",
  );
  // Default resources are read-only.
  const defaults =
    (await p.api.resources.listResources(id, 1, 100, undefined, undefined, undefined, undefined)).data
      .filter((r) => r.is_default);
  await expectError(
    http(`/api/v1/projects/${id}/resources/${defaults[0].id}`, del(p.token)),
    403,
    "default_resource_immutable",
  );

  const res = await http(`/api/v1/projects/${id}/resources/${resource.id}`, del(p.token));
  assert.equal(res.status, 204);
  assert.equal(await res.text(), "");
  await expectError(p.api.resources.getResource(id, resource.id), 404, "resource_not_found");
  assert.deepEqual((await p.api.roles.getRole(id, role.id)).permission_ids, []);
  assert.deepEqual((await p.api.clients.getClient(id, machine.id)).permission_ids, []);
  // The very next question about the same tokens answers without them.
  assert.deepEqual((await introspect(user.access_token)).permissions, []);
  assert.deepEqual((await introspect(machineToken)).permissions, []);
  // The code is free again.
  await p.api.resources.createResource(id, { name: "Reports", code: "reports" });

  const event = await lastEvent(p, "resource.deleted");
  assert.equal(event.target.id, resource.id);
  assert.equal(event.changes.code.before, "reports");
  assert.equal(event.changes.permissions.before.length, 2);
  assert.ok(ids["resources:delete"]);
});

test("a role in use is refused 409 unless its users are reassigned to a role the caller may give", async () => {
  const p = await newProject();
  const id = p.project.id;
  const ids = await permissionIds(p);
  const doomed = await p.api.roles.createRole(id, {
    name: "Old",
    code: "old",
    permission_ids: [ids["users:read"]],
  });
  const next = await p.api.roles.createRole(id, {
    name: "New",
    code: "new",
    permission_ids: [ids["roles:read"]],
  });
  const strong = await p.api.roles.createRole(id, {
    name: "Strong",
    code: "strong",
    permission_ids: [ids["clients:create"]],
  });
  const users = await Promise.all(
    [1, 2, 3].map((i) =>
      p.api.users.createUser(id, { display_name: `U${i}`, external_user_id: `u${i}`, role_id: doomed.id })
    ),
  );
  const base = `/api/v1/projects/${id}/roles/${doomed.id}`;
  const inUse = await expectError(http(base, del(p.token)), 409, "role_in_use");
  assert.match(JSON.stringify(inUse.details), /3 users/);
  await expectError(http(`${base}?reassign_role_id=nope`, del(p.token)), 404, "role_not_found");
  await expectError(http(`${base}?reassign_role_id=${doomed.id}`, del(p.token)), 400, "invalid_params");

  // A caller holding the old role's permissions and roles:delete, but not what `strong` grants.
  const caller = await clientWith(p, ["roles:delete", "users:read", "roles:read"]);
  await expectError(
    http(`${base}?reassign_role_id=${strong.id}`, del(caller.token)),
    403,
    "insufficient_permission",
  );
  // Nothing moved.
  assert.equal((await p.api.users.getUser(id, users[0].id, undefined)).role_id, doomed.id);

  const res = await http(`${base}?reassign_role_id=${next.id}`, del(caller.token));
  assert.equal(res.status, 204, await res.text());
  for (const u of users) assert.equal((await p.api.users.getUser(id, u.id, undefined)).role_id, next.id);
  await expectError(p.api.roles.getRole(id, doomed.id), 404, "role_not_found");
  const event = await lastEvent(p, "role.deleted");
  assert.equal(event.target.id, doomed.id);
  assert.deepEqual(event.details, { users_reassigned: 3, reassign_role_id: next.id });

  // A role nobody has goes without reassignment; one above the caller does not.
  await expectError(
    http(`/api/v1/projects/${id}/roles/${strong.id}`, del(caller.token)),
    403,
    "insufficient_permission",
  );
  assert.equal((await http(`/api/v1/projects/${id}/roles/${strong.id}`, del(p.token))).status, 204);
});

test("deleting a user ends their sessions and tokens at once and frees their email and external id", async () => {
  const p = await loginProject();
  const id = p.project.id;
  await p.api.users.updateUser(id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    external_user_id: "ext-1",
  });
  const tokens = await userTokens(p);
  const me = await http("/api/v1/users/current", bearer(tokens.access_token));
  assert.equal(me.status, 200);
  await me.body?.cancel();

  // A caller that does not cover the user (who holds users:read through a role) may not delete them.
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(id, {
    name: "R",
    code: "r",
    permission_ids: [ids["users:read"]],
  });
  await p.api.users.updateUser(id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    external_user_id: "ext-1",
    role_id: role.id,
  });
  const weak = await clientWith(p, ["users:delete"]);
  await expectError(
    http(`/api/v1/projects/${id}/users/${p.userId}`, del(weak.token)),
    403,
    "insufficient_permission",
  );

  const res = await http(`/api/v1/projects/${id}/users/${p.userId}`, del(p.token));
  assert.equal(res.status, 204);
  await expectError(
    http("/api/v1/users/current", bearer(tokens.access_token)),
    401,
    "invalid_authorization_token",
  );
  const refresh = await postToken({
    grant_type: "refresh_token",
    client_id: p.clientId,
    refresh_token: tokens.refresh_token,
  });
  assert.equal(refresh.status, 400);
  await refresh.body?.cancel();
  await expectError(p.api.users.getUser(id, p.userId, undefined), 404, "user_not_found");

  const again = await p.api.users.createUser(id, {
    display_name: "Returning",
    email: p.email,
    password: "another password 1",
    external_user_id: "ext-1",
  });
  assert.notEqual(again.id, p.userId);
  const event = await lastEvent(p, "user.deleted");
  assert.equal(event.target.id, p.userId);
  assert.equal(event.changes.email.before, p.email);
  assert.equal(JSON.stringify(event).includes("password_hash"), false);
});

test("a user cannot delete their own account through the admin API", async () => {
  const p = await loginProject();
  const id = p.project.id;
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(id, {
    name: "Admin",
    code: "adm",
    permission_ids: [ids["users:delete"]],
  });
  await p.api.users.updateUser(id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    role_id: role.id,
  });
  const tokens = await userTokens(p);
  await expectError(
    http(`/api/v1/projects/${id}/users/${p.userId}`, del(tokens.access_token)),
    403,
    "insufficient_permission",
  );
});

test("deleting a client refuses its tokens at once; the admin and console clients cannot be deleted", async () => {
  const p = await newProject();
  const id = p.project.id;
  const machine = await clientWith(p, ["roles:read"]);
  assert.equal((await http(`/api/v1/projects/${id}/roles`, bearer(machine.token))).status, 200);
  const weak = await clientWith(p, ["clients:delete"]);
  await expectError(
    http(`/api/v1/projects/${id}/clients/${machine.id}`, del(weak.token)),
    403,
    "insufficient_permission",
  );
  assert.equal((await http(`/api/v1/projects/${id}/clients/${machine.id}`, del(p.token))).status, 204);
  await expectError(
    http(`/api/v1/projects/${id}/roles`, bearer(machine.token)),
    401,
    "invalid_authorization_token",
  );
  const again = await postToken({ grant_type: "client_credentials" }, {
    authorization: `Basic ${btoa(`${machine.id}:${machine.secret}`)}`,
  });
  assert.ok(again.status === 400 || again.status === 401, String(again.status));
  await again.body?.cancel();
  await expectError(p.api.clients.getClient(id, machine.id), 404, "client_not_found");

  await expectError(
    http(`/api/v1/projects/${id}/clients/${p.clientId}`, del(p.token)),
    403,
    "client_not_deletable",
  );
  await expectError(
    http(`/api/v1/projects/${id}/clients/console-${id}`, del(p.token)),
    403,
    "client_not_deletable",
  );
  const system = await sdk(p.token);
  assert.equal((await system.clients.getClient(id, p.clientId)).is_admin, true);
  const event = await lastEvent(p, "client.deleted");
  assert.equal(event.target.id, machine.id);
  assert.equal(JSON.stringify(event).includes("secret"), false);
});
