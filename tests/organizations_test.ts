/**
 * Organizations (issue 49) through the SDK and raw HTTP: CRUD with search and paging, domains (public ones and
 * those of another organization refused), members and their organization roles, least privilege, roles' scope
 * refused where a project role belongs, objects' organization, the audit trail, and every bad input.
 */
import assert from "node:assert/strict";
import { checkedFetch } from "./schema_check.ts";
import {
  Api,
  baseUrl,
  clientWith,
  expectError,
  http,
  newProject,
  test,
  type TestProject,
} from "./helpers.ts";
import { Configuration, OrganizationsApi } from "../sdk/src/mod.ts";

/** The organizations API of the service with this token. */
async function orgsApi(token: string): Promise<OrganizationsApi> {
  const config = new Configuration({ basePath: await baseUrl(), authorization: token });
  return new OrganizationsApi(config, undefined, checkedFetch);
}

/** Raw JSON to the project's admin API (`path` under `/api/v1/projects/{id}`), with its token or another. */
function call(
  p: TestProject,
  method: string,
  path: string,
  body?: unknown,
  token = p.token,
): Promise<Response> {
  return http(`/api/v1/projects/${p.project.id}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** 400 `invalid_params` naming exactly these fields. */
async function refused(res: Response, fields: string[]): Promise<void> {
  const err = await expectError(res, 400, "invalid_params");
  assert.deepEqual(err.details?.map((d) => d.field).sort(), [...fields].sort(), JSON.stringify(err.details));
}

/** The project's audit events of these types, oldest first. */
async function events(p: TestProject, type: string): Promise<Api.AuditEvent[]> {
  const res = await call(p, "GET", `/audit-events?${new URLSearchParams({ type, limit: "100" })}`);
  assert.equal(res.status, 200);
  return ((await res.json()).data as Api.AuditEvent[]).reverse();
}

/** A custom resource `invoice` (read, refund) and an organization role holding `invoice:refund`. */
async function billing(p: TestProject) {
  const resource = await p.api.resources.createResource(p.project.id, {
    name: "Invoice",
    code: "invoice",
    permissions: [{ name: "Read", code: "read" }, { name: "Refund", code: "refund" }],
  });
  const ids = Object.fromEntries(resource.permissions.map((x) => [x.code, x.id]));
  const viewer = await p.api.roles.createRole(p.project.id, {
    code: "org_viewer",
    name: "Viewer",
    scope: Api.RoleScope.Organization,
    permission_ids: [ids.read],
  });
  const admin = await p.api.roles.createRole(p.project.id, {
    code: "org_admin",
    name: "Admin",
    scope: Api.RoleScope.Organization,
    permission_ids: [ids.read, ids.refund],
  });
  return { resource, ids, viewer, admin };
}

async function newUser(p: TestProject, name: string): Promise<Api.User> {
  return await p.api.users.createUser(p.project.id, {
    display_name: name,
    email: `${name.toLowerCase()}-${crypto.randomUUID().slice(0, 8)}@example.com`,
    password: "correct horse battery",
  });
}

test("organizations: create, read, list with search and paging, update, delete, each with its audit event", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const acme = await api.createOrganization(p.project.id, {
    name: "Acme",
    description: "rockets",
    properties: { tier: "gold" },
    domains: ["Acme.COM", " acme.co.uk "],
  });
  assert.deepEqual(Object.keys(acme).sort(), [
    "created_at",
    "default_role_ids",
    "description",
    "domains",
    "id",
    "join_by_domain",
    "mfa",
    "name",
    "project_id",
    "properties",
    "updated_at",
  ]);
  assert.equal(acme.project_id, p.project.id);
  assert.deepEqual(acme.domains, ["acme.co.uk", "acme.com"], "lower-cased, trimmed, sorted");
  assert.equal(acme.mfa, Api.OrganizationMfa.Inherit);
  assert.deepEqual(acme.properties, { tier: "gold" });
  const bare = await api.createOrganization(p.project.id, { name: "Globex" });
  assert.deepEqual([bare.description, bare.domains, bare.properties], [null, [], {}]);
  await api.createOrganization(p.project.id, { name: "Initech", description: "software for acme" });
  assert.deepEqual(await api.getOrganization(p.project.id, acme.id), acme);

  const names = async (search?: string, page = 1, size = 10) =>
    (await api.listOrganizations(
      p.project.id,
      page,
      size,
      Api.ListOrganizationsSortByEnum.Name,
      Api.ListOrganizationsSortDirEnum.Asc,
      search,
    )).data.map((o) => o.name);
  assert.deepEqual(await names(), ["Acme", "Globex", "Initech"]);
  assert.deepEqual(await names("ACME"), ["Acme", "Initech"], "name and description");
  assert.deepEqual(await names("co.uk"), ["Acme"], "domains");
  assert.deepEqual(await names("%"), [], "% matches itself");
  assert.deepEqual(await names(undefined, 2, 2), ["Initech"]);
  const page = await api.listOrganizations(p.project.id, 5, 2, undefined, undefined, undefined);
  assert.deepEqual([page.data, page.pagination.total], [[], 3], "past the end: empty, with the total");

  // PATCH: omitted fields keep their value, null clears the description, domains and properties replace.
  const renamed = await api.updateOrganization(p.project.id, acme.id, { name: "Acme Corp" });
  assert.deepEqual(
    [renamed.name, renamed.description, renamed.domains, renamed.properties],
    ["Acme Corp", "rockets", ["acme.co.uk", "acme.com"], { tier: "gold" }],
  );
  const changed = await api.updateOrganization(p.project.id, acme.id, {
    description: null,
    domains: ["acme.io"],
    properties: {},
  });
  assert.deepEqual([changed.description, changed.domains, changed.properties], [null, ["acme.io"], {}]);
  // The freed domain may go to another organization now.
  assert.deepEqual(
    (await api.updateOrganization(p.project.id, bare.id, { domains: ["acme.com"] })).domains,
    ["acme.com"],
  );
  const same = await api.updateOrganization(p.project.id, acme.id, {});
  assert.equal(same.updated_at, changed.updated_at, "nothing to change, nothing written");

  await api.deleteOrganization(p.project.id, acme.id);
  await expectError(api.getOrganization(p.project.id, acme.id), 404, "organization_not_found");
  assert.deepEqual(await names(), ["Globex", "Initech"]);

  const trail = await events(p, "organization.*");
  assert.deepEqual(trail.map((e) => e.type), [
    "organization.created",
    "organization.created",
    "organization.created",
    "organization.updated",
    "organization.updated",
    "organization.updated",
    "organization.deleted",
  ]);
  assert.deepEqual(trail[3].changes, { name: { before: "Acme", after: "Acme Corp" } });
  assert.deepEqual(trail[4].changes?.domains, { before: ["acme.co.uk", "acme.com"], after: ["acme.io"] });
  assert.deepEqual(trail[6].target, { type: "organization", id: acme.id });
  assert.deepEqual(trail[6].details, { members_removed: 0, objects_released: 0 });
});

test("organizations refuse every bad input with its code, status and field", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const acme = await api.createOrganization(p.project.id, { name: "Acme", domains: ["acme.com"] });
  const post = (body: unknown) => call(p, "POST", "/organizations", body);
  await refused(await post({}), ["name"]);
  await refused(await post({ name: "  " }), ["name"]);
  await refused(await post({ name: "x".repeat(51) }), ["name"]);
  await refused(await post({ name: "A", description: "d".repeat(201) }), ["description"]);
  await refused(await post({ name: "A", mfa: "always" }), ["mfa"]);
  await refused(await post({ name: "A", properties: [] }), ["properties"]);
  await refused(await post({ name: "A", properties: { "bad key": 1 } }), ["properties.bad key"]);
  await refused(await post({ name: "A", domain: ["a.com"] }), ["domain"]);
  for (
    const bad of [
      "https://acme.org",
      "acme",
      "acme.org:443",
      "ann@acme.org",
      "acme.org/path",
      "10.0.0.1",
      "acme..org",
      "-acme.org",
      "acme.org.",
      "ácme.org",
      "",
    ]
  ) {
    await refused(await post({ name: "A", domains: ["ok.org", bad] }), ["domains.1"]);
  }
  await refused(await post({ name: "A", domains: ["Ok.org", "ok.org"] }), ["domains.1"]);
  await refused(await post({ name: "A", domains: Array.from({ length: 101 }, (_, i) => `d${i}.org`) }), [
    "domains",
  ]);
  // Public mail domains, each named.
  const publics = [
    "gmail.com",
    "Outlook.com",
    "hotmail.com",
    "hotmail.co.uk",
    "yahoo.com",
    "yahoo.co.jp",
    "icloud.com",
    "proton.me",
    "gmx.de",
    "gmx.net",
    "mail.ru",
    "qq.com",
    "163.com",
    "mail.gmail.com",
  ];
  const err = await expectError(
    await post({ name: "A", domains: ["fine.org", ...publics] }),
    400,
    "invalid_params",
  );
  assert.deepEqual(err.details?.map((d) => d.field), publics.map((_, i) => `domains.${i + 1}`));
  assert.match(err.details![0].issue, /public mail domain/);
  // Names that only look like a provider's are a company's own.
  const own = await api.createOrganization(p.project.id, {
    name: "Own",
    domains: ["gmail.example.com", "mail.ibm.com", "gmx-group.com", "outlook.acme.io"],
  });
  assert.equal(own.domains.length, 4);
  // Taken: the name (case-insensitively) and a domain of another organization.
  const taken = await expectError(await post({ name: "ACME" }), 409, "organization_name_already_used");
  assert.deepEqual(taken.details?.map((d) => d.field), ["name"]);
  const held = await expectError(
    await post({ name: "B", domains: ["b.org", "ACME.com"] }),
    409,
    "organization_domain_already_used",
  );
  assert.deepEqual(held.details, [{
    field: "domains.1",
    issue: `organization ${acme.id} of this project has it`,
  }]);
  const b = await api.createOrganization(p.project.id, { name: "B" });
  const patch = (id: string, body: unknown) => call(p, "PATCH", `/organizations/${id}`, body);
  await expectError(await patch(b.id, { name: "acme" }), 409, "organization_name_already_used");
  await expectError(await patch(b.id, { domains: ["acme.com"] }), 409, "organization_domain_already_used");
  await refused(await patch(b.id, { domains: ["gmail.com"] }), ["domains.0"]);
  await refused(await patch(b.id, { name: "" }), ["name"]);
  await refused(await patch(b.id, { scope: "x" }), ["scope"]);
  // Renaming to another case of its own name is no clash.
  assert.equal((await api.updateOrganization(p.project.id, acme.id, { name: "ACME" })).name, "ACME");
  // Two creations of one name at once: one 201, one 409 (the unique index decides the race).
  const race = await Promise.all([post({ name: "Twin" }), post({ name: "twin" })]);
  assert.deepEqual(race.map((r) => r.status).sort(), [201, 409]);
  await Promise.all(race.map((r) => r.body?.cancel()));
  // Unknown organizations, and one of another project through this project's path.
  const other = await newProject();
  const theirs = await (await orgsApi(other.token)).createOrganization(other.project.id, { name: "Theirs" });
  for (const id of ["no-such-organization", theirs.id]) {
    await expectError(await call(p, "GET", `/organizations/${id}`), 404, "organization_not_found");
    await expectError(await patch(id, { name: "x" }), 404, "organization_not_found");
    await expectError(await call(p, "DELETE", `/organizations/${id}`), 404, "organization_not_found");
    await expectError(await call(p, "GET", `/organizations/${id}/members`), 404, "organization_not_found");
  }
  // Another project's token never reaches this project's organizations.
  await expectError(
    await call(p, "GET", `/organizations/${acme.id}`, undefined, other.token),
    403,
    "insufficient_permission",
  );
  await expectError(
    await call(p, "DELETE", `/organizations/${acme.id}`, undefined, other.token),
    403,
    "insufficient_permission",
  );
  assert.equal((await api.getOrganization(p.project.id, acme.id)).id, acme.id);
});

test("members: add, read, list, replace roles, remove; a user in two organizations with different roles", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const { viewer, admin } = await billing(p);
  const acme = await api.createOrganization(p.project.id, { name: "Acme" });
  const globex = await api.createOrganization(p.project.id, { name: "Globex" });
  const alice = await newUser(p, "Alice");
  const bob = await newUser(p, "Bob");

  const added = await api.addOrganizationMember(p.project.id, acme.id, {
    user_id: alice.id,
    role_ids: [admin.id, viewer.id, admin.id],
  });
  assert.deepEqual(Object.keys(added).sort(), [
    "created_at",
    "display_name",
    "email",
    "organization_id",
    "role_ids",
    "updated_at",
    "user_id",
  ]);
  assert.deepEqual(
    [added.organization_id, added.user_id, added.display_name, added.email],
    [acme.id, alice.id, "Alice", alice.email],
  );
  assert.deepEqual(added.role_ids, [admin.id, viewer.id].sort(), "repeats collapse, sorted");
  await api.addOrganizationMember(p.project.id, globex.id, { user_id: alice.id, role_ids: [viewer.id] });
  const bobIn = await api.addOrganizationMember(p.project.id, acme.id, { user_id: bob.id });
  assert.deepEqual(bobIn.role_ids, []);

  assert.deepEqual(await api.getOrganizationMember(p.project.id, acme.id, alice.id), added);
  const list = async (org: string, search?: string, roleId?: string, page = 1, size = 10) =>
    await api.listOrganizationMembers(
      p.project.id,
      org,
      page,
      size,
      Api.ListOrganizationMembersSortByEnum.CreatedAt,
      Api.ListOrganizationMembersSortDirEnum.Asc,
      search,
      roleId,
    );
  assert.deepEqual((await list(acme.id)).data.map((m) => m.user_id), [alice.id, bob.id]);
  assert.deepEqual((await list(acme.id, "BOB")).data.map((m) => m.user_id), [bob.id]);
  assert.deepEqual((await list(acme.id, "alice-")).data.map((m) => m.user_id), [alice.id], "email");
  assert.deepEqual((await list(acme.id, undefined, admin.id)).data.map((m) => m.user_id), [alice.id]);
  const second = await list(acme.id, undefined, undefined, 2, 1);
  assert.deepEqual([second.data.map((m) => m.user_id), second.pagination.total], [[bob.id], 2]);
  assert.deepEqual((await list(globex.id)).data.map((m) => [m.user_id, m.role_ids]), [[alice.id, [
    viewer.id,
  ]]]);

  // One user, two organizations, different roles in each.
  const mine = await api.listUserOrganizations(
    p.project.id,
    alice.id,
    1,
    10,
    Api.ListUserOrganizationsSortByEnum.CreatedAt,
    Api.ListUserOrganizationsSortDirEnum.Asc,
    undefined,
  );
  assert.deepEqual(mine.data.map((o) => [o.organization_id, o.name, o.role_ids]), [
    [acme.id, "Acme", [admin.id, viewer.id].sort()],
    [globex.id, "Globex", [viewer.id]],
  ]);
  const searched = await api.listUserOrganizations(
    p.project.id,
    alice.id,
    1,
    10,
    undefined,
    undefined,
    "glob",
  );
  assert.deepEqual(searched.data.map((o) => o.name), ["Globex"]);

  // Replace one member's roles: the other organization is untouched.
  const replaced = await api.updateOrganizationMember(p.project.id, acme.id, alice.id, {
    role_ids: [viewer.id],
  });
  assert.deepEqual(replaced.role_ids, [viewer.id]);
  assert.deepEqual((await api.getOrganizationMember(p.project.id, globex.id, alice.id)).role_ids, [
    viewer.id,
  ]);
  const unchanged = await api.updateOrganizationMember(p.project.id, acme.id, alice.id, {
    role_ids: [viewer.id],
  });
  assert.equal(unchanged.updated_at, replaced.updated_at, "the same roles: nothing written");
  assert.deepEqual(
    (await api.updateOrganizationMember(p.project.id, acme.id, bob.id, { role_ids: [] })).role_ids,
    [],
  );

  // Remove: the user stays, and stays a member of the other organization.
  await api.removeOrganizationMember(p.project.id, acme.id, alice.id);
  await expectError(api.getOrganizationMember(p.project.id, acme.id, alice.id), 404, "member_not_found");
  assert.equal((await p.api.users.getUser(p.project.id, alice.id, undefined)).id, alice.id);
  const left = await api.listUserOrganizations(
    p.project.id,
    alice.id,
    1,
    10,
    undefined,
    undefined,
    undefined,
  );
  assert.deepEqual(left.data.map((o) => o.organization_id), [globex.id]);
  // Added again, as anew.
  await api.addOrganizationMember(p.project.id, acme.id, { user_id: alice.id, role_ids: [admin.id] });

  // Deleting a user ends their memberships.
  await p.api.users.deleteUser(p.project.id, bob.id);
  assert.deepEqual((await list(acme.id)).data.map((m) => m.user_id), [alice.id]);

  const trail = (await events(p, "organization.*")).filter((e) => e.type.startsWith("organization.member_"));
  assert.deepEqual(trail.map((e) => [e.type, e.details?.user_id]), [
    ["organization.member_added", alice.id],
    ["organization.member_added", alice.id],
    ["organization.member_added", bob.id],
    ["organization.member_updated", alice.id],
    ["organization.member_removed", alice.id],
    ["organization.member_added", alice.id],
  ]);
  assert.deepEqual(trail[0].target, { type: "organization", id: acme.id });
  assert.deepEqual(trail[0].details?.role_ids, [admin.id, viewer.id].sort());
  assert.deepEqual(trail[3].changes, {
    role_ids: { before: [admin.id, viewer.id].sort(), after: [viewer.id] },
  });
  assert.deepEqual(trail[4].details?.role_ids, [viewer.id]);
});

test("members refuse every bad input with its code, status and field", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const { viewer } = await billing(p);
  const projectRole = await p.api.roles.createRole(p.project.id, { code: "staff", name: "Staff" });
  const other = await newProject();
  const { viewer: theirRole } = await billing(other);
  const stranger = await newUser(other, "Stranger");
  const acme = await api.createOrganization(p.project.id, { name: "Acme" });
  const alice = await newUser(p, "Alice");
  const carol = await newUser(p, "Carol");
  const members = `/organizations/${acme.id}/members`;
  const add = (body: unknown) => call(p, "POST", members, body);

  await refused(await add({}), ["user_id"]);
  await refused(await add({ user_id: "" }), ["user_id"]);
  await refused(await add({ user_id: alice.id, role_ids: "x" }), ["role_ids"]);
  await refused(await add({ user_id: alice.id, roles: [] }), ["roles"]);
  await refused(await add({ user_id: alice.id, role_ids: Array.from({ length: 51 }, (_, i) => `r${i}`) }), [
    "role_ids",
  ]);
  // A user of no project, of another project.
  await refused(await add({ user_id: "no-such-user" }), ["user_id"]);
  await refused(await add({ user_id: stranger.id }), ["user_id"]);
  // A project role, another project's role, no role; each named by its place.
  const roles = await expectError(
    await add({ user_id: alice.id, role_ids: [viewer.id, projectRole.id, theirRole.id, "no-such-role"] }),
    400,
    "invalid_params",
  );
  assert.deepEqual(roles.details, [
    { field: "role_ids.1", issue: "is a project role, not an organization role" },
    { field: "role_ids.2", issue: "is not a role of this project" },
    { field: "role_ids.3", issue: "is not a role of this project" },
  ]);
  assert.deepEqual(
    (await api.listOrganizationMembers(
      p.project.id,
      acme.id,
      1,
      10,
      undefined,
      undefined,
      undefined,
      undefined,
    ))
      .pagination.total,
    0,
    "nothing written",
  );
  await api.addOrganizationMember(p.project.id, acme.id, { user_id: alice.id, role_ids: [viewer.id] });
  const twice = await expectError(await add({ user_id: alice.id }), 409, "member_already_exists");
  assert.deepEqual(twice.details?.map((d) => d.field), ["user_id"]);

  // PUT: the same role checks; a body without role_ids; unknown members.
  const put = (userId: string, body: unknown) => call(p, "PUT", `${members}/${userId}`, body);
  await refused(await put(alice.id, {}), ["role_ids"]);
  await refused(await put(alice.id, { role_ids: [viewer.id, projectRole.id] }), ["role_ids.1"]);
  await refused(await put(alice.id, { role_ids: [theirRole.id] }), ["role_ids.0"]);
  for (const userId of [carol.id, "no-such-user", stranger.id]) {
    await expectError(await call(p, "GET", `${members}/${userId}`), 404, "member_not_found");
    await expectError(await put(userId, { role_ids: [] }), 404, "member_not_found");
    await expectError(await call(p, "DELETE", `${members}/${userId}`), 404, "member_not_found");
  }
  // Unknown organizations come first.
  const gone = "/organizations/no-such-organization/members";
  await expectError(await call(p, "POST", gone, { user_id: alice.id }), 404, "organization_not_found");
  await expectError(await call(p, "GET", `${gone}/${alice.id}`), 404, "organization_not_found");
  await expectError(
    await call(p, "PUT", `${gone}/${alice.id}`, { role_ids: [] }),
    404,
    "organization_not_found",
  );
  await expectError(await call(p, "DELETE", `${gone}/${alice.id}`), 404, "organization_not_found");
  // A user's organizations: an unknown user, or another project's.
  for (const userId of ["no-such-user", stranger.id]) {
    await expectError(await call(p, "GET", `/users/${userId}/organizations`), 404, "user_not_found");
  }
  // Another project's token adds nobody here.
  await expectError(
    await call(p, "POST", members, { user_id: carol.id }, other.token),
    403,
    "insufficient_permission",
  );
});

test("least privilege: organizations:* are needed, and giving or taking an organization role needs its permissions", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const { viewer, admin } = await billing(p);
  const acme = await api.createOrganization(p.project.id, { name: "Acme" });
  const alice = await newUser(p, "Alice");
  const bob = await newUser(p, "Bob");

  // Without organizations:*: every operation refused, naming the permission.
  const none = await clientWith(p, []);
  const refusedFor = [
    ["POST", "/organizations", { name: "X" }, "organizations:create"],
    ["GET", "/organizations", undefined, "organizations:read"],
    ["GET", `/organizations/${acme.id}`, undefined, "organizations:read"],
    ["PATCH", `/organizations/${acme.id}`, { name: "Y" }, "organizations:update"],
    ["DELETE", `/organizations/${acme.id}`, undefined, "organizations:delete"],
    ["GET", `/organizations/${acme.id}/members`, undefined, "organizations:read"],
    ["POST", `/organizations/${acme.id}/members`, { user_id: alice.id }, "organizations:update"],
    ["GET", `/organizations/${acme.id}/members/${alice.id}`, undefined, "organizations:read"],
    ["PUT", `/organizations/${acme.id}/members/${alice.id}`, { role_ids: [] }, "organizations:update"],
    ["DELETE", `/organizations/${acme.id}/members/${alice.id}`, undefined, "organizations:update"],
    ["GET", `/users/${alice.id}/organizations`, undefined, "organizations:read"],
  ] as const;
  for (const [method, path, body, permission] of refusedFor) {
    const err = await expectError(
      await call(p, method, path, body, none.token),
      403,
      "insufficient_permission",
    );
    assert.match(err.error_description, new RegExp(permission), `${method} ${path}`);
  }
  // Reading needs organizations:read, not update.
  const reader = await clientWith(p, ["organizations:read"]);
  await expectError(
    await call(p, "POST", `/organizations/${acme.id}/members`, { user_id: alice.id }, reader.token),
    403,
    "insufficient_permission",
  );
  assert.equal(
    (await call(p, "GET", `/organizations/${acme.id}/members`, undefined, reader.token)).status,
    200,
  );

  // organizations:update with invoice:read only: it gives the viewer role, never the admin role.
  const manager = await clientWith(p, ["organizations:update", "organizations:delete", "invoice:read"]);
  const mapi = await orgsApi(manager.token);
  const add = (body: unknown) => call(p, "POST", `/organizations/${acme.id}/members`, body, manager.token);
  const denied = await expectError(
    await add({ user_id: alice.id, role_ids: [viewer.id, admin.id] }),
    403,
    "insufficient_permission",
  );
  assert.deepEqual(denied.details, [{
    field: "role_ids.1",
    issue: "the caller does not hold invoice:refund",
  }]);
  await expectError(api.getOrganizationMember(p.project.id, acme.id, alice.id), 404, "member_not_found");
  await mapi.addOrganizationMember(p.project.id, acme.id, { user_id: alice.id, role_ids: [viewer.id] });
  // Nor may it add the admin role to a member, take it from one, remove one holding it, or delete the
  // organization whose member holds it.
  const put = (userId: string, roleIds: string[]) =>
    call(p, "PUT", `/organizations/${acme.id}/members/${userId}`, { role_ids: roleIds }, manager.token);
  await expectError(await put(alice.id, [viewer.id, admin.id]), 403, "insufficient_permission");
  await api.addOrganizationMember(p.project.id, acme.id, {
    user_id: bob.id,
    role_ids: [admin.id, viewer.id],
  });
  const taking = await expectError(await put(bob.id, [viewer.id]), 403, "insufficient_permission");
  assert.deepEqual(taking.details, [{
    field: "role_ids",
    issue: "holds permissions the caller does not hold",
  }]);
  await expectError(
    await call(p, "DELETE", `/organizations/${acme.id}/members/${bob.id}`, undefined, manager.token),
    403,
    "insufficient_permission",
  );
  await expectError(
    await call(p, "DELETE", `/organizations/${acme.id}`, undefined, manager.token),
    403,
    "insufficient_permission",
  );
  assert.deepEqual((await api.getOrganizationMember(p.project.id, acme.id, bob.id)).role_ids.length, 2);
  // Roles a member keeps need nothing: taking the viewer role from Alice and back is the manager's to do.
  await mapi.updateOrganizationMember(p.project.id, acme.id, alice.id, { role_ids: [] });
  await mapi.updateOrganizationMember(p.project.id, acme.id, alice.id, { role_ids: [viewer.id] });
  // Once Bob holds only what the manager holds, it may remove him and delete the organization.
  await api.updateOrganizationMember(p.project.id, acme.id, bob.id, { role_ids: [viewer.id] });
  await mapi.removeOrganizationMember(p.project.id, acme.id, bob.id);
  await mapi.deleteOrganization(p.project.id, acme.id);

  // An organization's second-factor policy is the project's to set: its admin client, not a mere creator.
  const creator = await clientWith(p, ["organizations:create", "organizations:update"]);
  const mfa = await expectError(
    await call(p, "POST", "/organizations", { name: "Strict", mfa: "required" }, creator.token),
    403,
    "insufficient_permission",
  );
  assert.deepEqual(mfa.details?.map((d) => d.field), ["mfa"]);
  const plain = await (await orgsApi(creator.token)).createOrganization(p.project.id, { name: "Plain" });
  await expectError(
    await call(p, "PATCH", `/organizations/${plain.id}`, { mfa: "optional" }, creator.token),
    403,
    "insufficient_permission",
  );
  assert.equal(
    (await api.updateOrganization(p.project.id, plain.id, { mfa: Api.OrganizationMfa.Required })).mfa,
    Api.OrganizationMfa.Required,
  );
  assert.equal(
    (await (await orgsApi(creator.token)).updateOrganization(p.project.id, plain.id, { name: "Plainer" }))
      .name,
    "Plainer",
    "other fields stay the creator's to change",
  );
});

test("deleting an organization removes its members and leaves its objects to the project", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const { resource, viewer } = await billing(p);
  const acme = await api.createOrganization(p.project.id, { name: "Acme", domains: ["acme.com"] });
  const globex = await api.createOrganization(p.project.id, { name: "Globex" });
  const alice = await newUser(p, "Alice");
  await api.addOrganizationMember(p.project.id, acme.id, { user_id: alice.id, role_ids: [viewer.id] });
  await api.addOrganizationMember(p.project.id, globex.id, { user_id: alice.id, role_ids: [viewer.id] });
  await p.api.objects.createObjects(p.project.id, resource.id, {
    objects: [{ id: "inv-1", organization_id: acme.id }, { id: "inv-2", organization_id: globex.id }],
  });

  await api.deleteOrganization(p.project.id, acme.id);
  const [deleted] = await events(p, "organization.deleted");
  assert.deepEqual(deleted.details, { members_removed: 1, objects_released: 1 });
  assert.deepEqual((deleted.changes as Record<string, unknown>).name, { before: "Acme", after: null });
  assert.equal((await p.api.objects.getObject(p.project.id, resource.id, "inv-1")).organization_id, null);
  assert.equal(
    (await p.api.objects.getObject(p.project.id, resource.id, "inv-2")).organization_id,
    globex.id,
  );
  const left = await api.listUserOrganizations(
    p.project.id,
    alice.id,
    1,
    10,
    undefined,
    undefined,
    undefined,
  );
  assert.deepEqual(left.data.map((o) => o.organization_id), [globex.id]);
  assert.equal((await p.api.users.getUser(p.project.id, alice.id, undefined)).id, alice.id, "the user stays");
  // Its domain is free again.
  const again = await api.createOrganization(p.project.id, { name: "Acme", domains: ["acme.com"] });
  assert.deepEqual(again.domains, ["acme.com"]);
});

test("roles' scope: set at creation, listed, and an organization role refused wherever a project role belongs", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const { viewer } = await billing(p);
  const staff = await p.api.roles.createRole(p.project.id, { code: "staff", name: "Staff" });
  assert.equal(staff.scope, Api.RoleScope.Project, "the default");
  assert.equal(viewer.scope, Api.RoleScope.Organization);
  assert.equal((await p.api.roles.getRole(p.project.id, viewer.id)).scope, Api.RoleScope.Organization);
  const scoped = async (scope?: Api.RoleScope) =>
    (await p.api.roles.listRoles(
      p.project.id,
      1,
      10,
      Api.ListRolesSortByEnum.Code,
      Api.ListRolesSortDirEnum.Asc,
      undefined,
      scope,
    ))
      .data.map((r) => r.code);
  assert.deepEqual(await scoped(Api.RoleScope.Organization), ["org_admin", "org_viewer"]);
  assert.deepEqual(await scoped(Api.RoleScope.Project), ["staff"]);
  assert.deepEqual(await scoped(), ["org_admin", "org_viewer", "staff"]);
  await refused(await call(p, "GET", "/roles?scope=team"), ["scope"]);
  await refused(await call(p, "POST", "/roles", { code: "x", name: "X", scope: "team" }), ["scope"]);
  // The scope never changes.
  await refused(
    await call(p, "PUT", `/roles/${viewer.id}`, { code: viewer.code, name: viewer.name, scope: "project" }),
    ["scope"],
  );
  const renamed = await p.api.roles.updateRole(p.project.id, viewer.id, {
    code: viewer.code,
    name: "Viewer 2",
  });
  assert.equal(renamed.scope, Api.RoleScope.Organization);

  // A user's role.
  await refused(
    await call(p, "POST", "/users", { display_name: "A", external_user_id: "a", role_id: viewer.id }),
    ["role_id"],
  );
  const user = await p.api.users.createUser(p.project.id, {
    display_name: "B",
    external_user_id: "b",
    role_id: staff.id,
  });
  await refused(
    await call(p, "PUT", `/users/${user.id}`, {
      display_name: "B",
      is_active: true,
      external_user_id: "b",
      role_id: viewer.id,
    }),
    ["role_id"],
  );
  assert.equal((await p.api.users.getUser(p.project.id, user.id, undefined)).role_id, staff.id);
  // The project's default role, an identity provider's (refused before any discovery leaves).
  await refused(await call(p, "PUT", "", { name: p.project.name, default_role_id: viewer.id }), [
    "default_role_id",
  ]);
  await refused(
    await call(p, "POST", "/identity-providers", {
      kind: "oidc",
      display_name: "IdP",
      client_id: "rp",
      issuer: "https://idp.example.com",
      default_role_id: viewer.id,
    }),
    ["default_role_id"],
  );
  // A grant on an object.
  const folder = await p.api.resources.createResource(p.project.id, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }],
  });
  await p.api.objects.createObject(p.project.id, folder.id, { id: "f1" });
  await refused(
    await call(p, "POST", "/grants", {
      subject: { type: "user", id: user.id },
      role_id: viewer.id,
      object: { type: "folder", id: "f1" },
    }),
    ["role_id"],
  );
  // Users moved off a deleted role go to a project role only.
  await refused(await call(p, "DELETE", `/roles/${staff.id}?reassign_role_id=${viewer.id}`), [
    "reassign_role_id",
  ]);
  assert.equal((await p.api.roles.getRole(p.project.id, staff.id)).id, staff.id);
  // And a project role is refused as a member's.
  const acme = await api.createOrganization(p.project.id, { name: "Acme" });
  await refused(
    await call(p, "POST", `/organizations/${acme.id}/members`, { user_id: user.id, role_ids: [staff.id] }),
    ["role_ids.0"],
  );
  // Deleting an organization role takes it from the members who held it.
  await api.addOrganizationMember(p.project.id, acme.id, { user_id: user.id, role_ids: [viewer.id] });
  await p.api.roles.deleteRole(p.project.id, viewer.id, undefined);
  assert.deepEqual((await api.getOrganizationMember(p.project.id, acme.id, user.id)).role_ids, []);
});

test("objects' organization_id: set on creation (one or a batch), listed by it, changed, cleared, checked", async () => {
  const p = await newProject();
  const api = await orgsApi(p.token);
  const { resource } = await billing(p);
  const acme = await api.createOrganization(p.project.id, { name: "Acme" });
  const globex = await api.createOrganization(p.project.id, { name: "Globex" });
  const other = await newProject();
  const theirs = await (await orgsApi(other.token)).createOrganization(other.project.id, { name: "Theirs" });
  const objects = `/resources/${resource.id}/objects`;

  const one = await p.api.objects.createObject(p.project.id, resource.id, {
    id: "a",
    organization_id: acme.id,
  });
  assert.equal(one.organization_id, acme.id);
  assert.equal(
    (await p.api.objects.createObject(p.project.id, resource.id, { id: "none" })).organization_id,
    null,
  );
  await p.api.objects.createObjects(p.project.id, resource.id, {
    objects: [{ id: "b", organization_id: globex.id }, { id: "c", parent_id: "b", organization_id: acme.id }],
  });
  const of = async (organizationId?: string) =>
    (await p.api.objects.listObjects(
      p.project.id,
      resource.id,
      1,
      10,
      Api.ListObjectsSortByEnum.Id,
      Api.ListObjectsSortDirEnum.Asc,
      undefined,
      undefined,
      undefined,
      organizationId,
    )).data.map((o) => o.id);
  assert.deepEqual(await of(acme.id), ["a", "c"]);
  assert.deepEqual(await of(globex.id), ["b"]);
  assert.deepEqual(await of(), ["a", "b", "c", "none"]);

  // Unknown organizations, another project's: 400 naming the field (the item's, in a batch); nothing written.
  for (const id of ["no-such-organization", theirs.id]) {
    await refused(await call(p, "POST", objects, { id: "x", organization_id: id }), ["organization_id"]);
    await refused(
      await call(p, "POST", `${objects}/batch`, {
        objects: [{ id: "x1", organization_id: acme.id }, { id: "x2", organization_id: id }],
      }),
      ["objects.1.organization_id"],
    );
    await refused(await call(p, "PUT", `${objects}/a`, { organization_id: id }), ["organization_id"]);
  }
  await refused(await call(p, "POST", objects, { id: "x", organization_id: "" }), ["organization_id"]);
  assert.deepEqual(await of(), ["a", "b", "c", "none"]);

  // Changed, kept when omitted, cleared by null; each change in the object's event.
  const moved = await p.api.objects.updateObject(p.project.id, resource.id, "a", {
    organization_id: globex.id,
  });
  assert.equal(moved.organization_id, globex.id);
  assert.equal(
    (await p.api.objects.updateObject(p.project.id, resource.id, "a", { name: "A" })).organization_id,
    globex.id,
  );
  assert.equal(
    (await p.api.objects.updateObject(p.project.id, resource.id, "a", { organization_id: null }))
      .organization_id,
    null,
  );
  const updates = await events(p, "object.updated");
  assert.deepEqual(updates.map((e) => e.changes?.organization_id), [
    { before: acme.id, after: globex.id },
    undefined,
    { before: globex.id, after: null },
  ]);
});
