/**
 * Least privilege, the finer points: on updates an unknown id is 404 before any 403 about the target; an
 * operator of the system project is defined by the admin API's permissions, so a custom resource added to
 * the system project demotes nobody; refusals to touch what the caller may not read name no codes.
 */
import assert from "node:assert/strict";
import {
  clientToken,
  clientWith,
  expectError,
  newProject,
  permissionIds,
  projectPermissions,
  REDIRECT_URI,
  sdk,
  systemToken,
  test,
} from "./helpers.ts";

test("updates check what exists (404) before who may touch it (403): clients, roles, users", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  // Targets that hold users:read, which the narrow callers below do not.
  const target = await p.api.clients.createClient(p.project.id, {
    name: "holds users:read",
    permission_ids: [ids["users:read"]],
  });
  const role = await p.api.roles.createRole(p.project.id, {
    code: "reader",
    name: "Reader",
    permission_ids: [ids["users:read"]],
  });
  const user = await p.api.users.createUser(p.project.id, {
    display_name: "Above",
    external_user_id: "above-1",
    role_id: role.id,
  });

  const clientsOnly = await clientWith(p, ["clients:update"]);
  await expectError(
    clientsOnly.api.clients.updateClient(p.project.id, target.id, {
      name: "x",
      is_active: true,
      permission_ids: ["no-such-permission"],
    }),
    404,
    "some_permissions_not_found",
  );
  // With ids that exist, the target is out of reach.
  await expectError(
    clientsOnly.api.clients.updateClient(p.project.id, target.id, {
      name: "x",
      is_active: true,
      permission_ids: [],
    }),
    403,
    "insufficient_permission",
  );

  const rolesOnly = await clientWith(p, ["roles:update"]);
  await expectError(
    rolesOnly.api.roles.updateRole(p.project.id, role.id, {
      code: role.code,
      name: role.name,
      permission_ids: ["no-such-permission"],
    }),
    404,
    "some_permissions_not_found",
  );
  await expectError(
    rolesOnly.api.roles.updateRole(p.project.id, role.id, {
      code: role.code,
      name: role.name,
      permission_ids: [],
    }),
    403,
    "insufficient_permission",
  );

  const usersOnly = await clientWith(p, ["users:update"]);
  await expectError(
    usersOnly.api.users.updateUser(p.project.id, user.id, {
      display_name: "Above",
      external_user_id: "above-1",
      is_active: true,
      role_id: "no-such-role",
    }),
    404,
    "role_not_found",
  );
  await expectError(
    usersOnly.api.users.updateUser(p.project.id, user.id, {
      display_name: "Above",
      external_user_id: "above-1",
      is_active: true,
      role_id: null,
    }),
    403,
    "insufficient_permission",
  );
  // Nothing was written by any refusal.
  const clients = await p.api.clients.listClients(
    p.project.id,
    1,
    100,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  assert.deepEqual(clients.data.find((c) => c.id === target.id)?.permission_ids, [ids["users:read"]]);
  const roles = await p.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined);
  assert.deepEqual(roles.data.find((r) => r.id === role.id)?.permission_ids, [ids["users:read"]]);
});

test("a custom resource in the system project demotes no operator", async () => {
  const p = await newProject();
  const system = await sdk(await systemToken());
  const { resources: data } = await projectPermissions(system, "system");
  // An operator: a system client holding every permission of the system project's default resources.
  const defaults = data.filter((r) => r.is_default).flatMap((r) => r.permissions.map((x) => x.id));
  const operator = await system.clients.createClient("system", {
    name: "operator",
    permission_ids: defaults,
  });
  const ops = await sdk(await clientToken(operator.id, operator.client_secret));
  // Somebody adds a resource of their own to the system project; the operator does not hold its permission.
  await system.resources.createResource("system", {
    code: `custom-${crypto.randomUUID().slice(0, 8)}`,
    name: "Custom",
    permissions: [{ code: "use", name: "Use" }],
  });
  const updated = await ops.projects.updateProject(p.project.id, { name: p.project.name, is_active: false });
  assert.equal(updated.is_active, false, "the operator still activates and deactivates projects");
  const role = await ops.roles.createRole(p.project.id, { code: "from-ops", name: "From ops" });
  assert.equal(role.project_id, p.project.id, "and still administers every project");
});

test("a refused redirect URI change names no permission codes", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const editor = await clientWith(p, ["projects:update"]);
  const err = await expectError(
    editor.api.projects.updateProject(p.project.id, { name: "x", redirect_uris: ["https://app.example/cb"] }),
    403,
    "insufficient_permission",
  );
  const said = JSON.stringify(err);
  assert.doesNotMatch(said, /[a-z]+:(read|create|update)/, said);
  assert.deepEqual(err.details?.map((d) => d.field), ["redirect_uris"]);
});
