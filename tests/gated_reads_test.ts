/**
 * Gated reads whose read rides in the gate's statement (GET a project, GET a project's resources): the same
 * answer as the read made apart, and the same refusals, for a client's token, a user's and the system's.
 */
import assert from "node:assert/strict";
import {
  basic,
  clientToken,
  clientWith,
  expectError,
  http,
  loginProject,
  newProject,
  permissionIds,
  systemToken,
  test,
  type TestProject,
  userTokens,
} from "./helpers.ts";

const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } });

async function getJson(path: string, token: string): Promise<unknown> {
  const res = await http(path, bearer(token));
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

/** Three resources of the project's own, read back one by one (the reads made apart from the gate). */
async function ownResources(p: TestProject) {
  const made = [];
  for (
    const [code, perms] of [["orders", ["read", "ship"]], ["invoices", []], ["Zebra_1", ["view"]]] as const
  ) {
    made.push(
      await p.api.resources.createResource(p.project.id, {
        code,
        name: `The ${code}`,
        description: code === "invoices" ? "50% off_" : undefined,
        permissions: perms.map((c) => ({ code: c, name: `May ${c}` })),
      }),
    );
  }
  return made;
}

test("GET a project answers the project as its update did, for the project's token and the system's", async () => {
  const p = await newProject({ redirect_uris: ["https://app.example/cb"] });
  const updated = await p.api.projects.updateProject(p.project.id, {
    name: "Gated read",
    description: "answered in the gate's statement",
    redirect_uris: ["https://app.example/cb", "https://app.example/other"],
  });
  const path = `/api/v1/projects/${p.project.id}`;
  assert.deepEqual(await getJson(path, p.token), JSON.parse(JSON.stringify(updated)));
  assert.deepEqual(await getJson(path, await systemToken()), JSON.parse(JSON.stringify(updated)));
  const system = await getJson("/api/v1/projects/system", await systemToken()) as { is_system: boolean };
  assert.equal(system.is_system, true);
});

test("a project's resources list answers what the resources' own reads did, in every order, filter and page", async () => {
  const p = await newProject();
  const made = await ownResources(p);
  const base = `/api/v1/projects/${p.project.id}/resources`;
  type Page = { data: { id: string; code: string }[]; pagination: { total: number; page_num: number } };
  const own = await getJson(
    `${base}?is_default=false&sort_by=code&sort_dir=asc&page_size=100`,
    p.token,
  ) as Page;
  const byCode = [...made].sort((a, b) => a.code < b.code ? -1 : 1);
  assert.deepEqual(own.data, JSON.parse(JSON.stringify(byCode)));
  assert.equal(own.pagination.total, 3);
  // Paged: the total comes with the rows; past the last page it is counted apart, and the page is empty.
  const second = await getJson(
    `${base}?is_default=false&sort_by=code&sort_dir=asc&page_size=2&page_num=2`,
    p.token,
  );
  assert.deepEqual((second as Page).data.map((r) => r.code), [byCode[2].code]);
  assert.equal((second as Page).pagination.total, 3);
  const past = await getJson(`${base}?is_default=false&page_size=2&page_num=9`, p.token) as Page;
  assert.deepEqual(past, { data: [], pagination: { page_num: 9, page_size: 2, total: 3 } });
  // A search whose % and _ match themselves, and one that matches a permission's name only.
  const literal = await getJson(`${base}?search=${encodeURIComponent("50% off_")}`, p.token) as Page;
  assert.deepEqual(literal.data.map((r) => r.code), ["invoices"]);
  const byPermission = await getJson(`${base}?search=may%20ship`, p.token) as Page;
  assert.deepEqual(byPermission.data.map((r) => r.code), ["orders"]);
  const none = await getJson(`${base}?search=nothing-like-this`, p.token) as Page;
  assert.deepEqual(none, { data: [], pagination: { page_num: 1, page_size: 10, total: 0 } });
  // The system project's operator reads the same list.
  assert.deepEqual(
    await getJson(`${base}?is_default=false&sort_by=code&sort_dir=asc&page_size=100`, await systemToken()),
    own,
  );
});

test("a gated read refuses as the gate does: another project's token, a missing permission, a bad query", async () => {
  const p = await newProject();
  await ownResources(p);
  const other = await newProject();
  const list = `/api/v1/projects/${p.project.id}/resources`;
  const one = `/api/v1/projects/${p.project.id}`;
  for (const path of [list, one]) {
    const err = await expectError(await http(path, bearer(other.token)), 403, "insufficient_permission");
    assert.doesNotMatch(JSON.stringify(err), /orders|invoices/);
  }
  // A client of the project without resources:read, and without projects:read.
  const ids = await permissionIds(p);
  const limited = await p.api.clients.createClient(p.project.id, {
    name: "no reads",
    permission_ids: [ids["roles:read"]],
  });
  const token = await clientToken(limited.id, limited.client_secret);
  await expectError(await http(list, bearer(token)), 403, "insufficient_permission");
  await expectError(await http(one, bearer(token)), 403, "insufficient_permission");
  // Unknown project: 404 before 403; bad parameters: 400, and a NUL byte reads nothing.
  await expectError(await http("/api/v1/projects/nope/resources", bearer(p.token)), 404, "project_not_found");
  await expectError(await http(`${list}?page_size=0`, bearer(p.token)), 400, "invalid_params");
  await expectError(await http(`${list}?sort_by=secret`, bearer(p.token)), 400, "invalid_params");
  await expectError(
    await http(`/api/v1/projects/${p.project.id}%00`, bearer(p.token)),
    400,
    "invalid_params",
  );
  await expectError(await http(`${list}?search=a%00b`, bearer(p.token)), 400, "invalid_params");
  // Revoked (RFC 7009): the very next read is refused.
  const revoked = await http("/api/v1/tokens/revoke", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: basic(p.clientId, p.secret),
    },
    body: new URLSearchParams({ token: p.token }).toString(),
  });
  assert.equal(revoked.status, 200);
  await revoked.body?.cancel();
  await expectError(await http(list, bearer(p.token)), 401, "invalid_authorization_token");
});

test("a user's token reads through its role, and loses the read with the role's permission", async () => {
  const p = await loginProject();
  await ownResources(p);
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "reader",
    name: "Reader",
    permission_ids: [ids["resources:read"], ids["projects:read"]],
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: true,
    role_id: role.id,
  });
  const token = (await userTokens(p)).access_token;
  const list = `/api/v1/projects/${p.project.id}/resources?is_default=false&sort_by=code&sort_dir=asc`;
  const asAdmin = await getJson(list, p.token);
  assert.deepEqual(await getJson(list, token), asAdmin);
  assert.deepEqual(
    await getJson(`/api/v1/projects/${p.project.id}`, token),
    await getJson(
      `/api/v1/projects/${p.project.id}`,
      p.token,
    ),
  );
  await p.api.roles.updateRole(p.project.id, role.id, {
    code: "reader",
    name: "Reader",
    permission_ids: [ids["projects:read"]],
  });
  await expectError(await http(list, bearer(token)), 403, "insufficient_permission");
});

test("a project's roles list answers what the roles' own writes did, searched, sorted and paged", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const made = [];
  for (const code of ["clerk", "auditor", "boss_50%"]) {
    made.push(
      await p.api.roles.createRole(p.project.id, {
        code: code.replace("%", ""),
        name: `The ${code}`,
        description: code === "boss_50%" ? "50% of it" : undefined,
        permission_ids: code === "clerk" ? [ids["roles:read"], ids["users:read"]] : [],
      }),
    );
  }
  const base = `/api/v1/projects/${p.project.id}/roles`;
  type Page = { data: { code: string }[]; pagination: { total: number } };
  const all = await getJson(`${base}?sort_by=code&sort_dir=asc&page_size=100`, p.token) as Page;
  assert.deepEqual(all.data, JSON.parse(JSON.stringify([...made].sort((a, b) => a.code < b.code ? -1 : 1))));
  assert.equal(all.pagination.total, 3);
  const literal = await getJson(`${base}?search=${encodeURIComponent("50%")}`, p.token) as Page;
  assert.deepEqual(literal.data.map((r) => r.code), ["boss_50"]);
  const page2 = await getJson(`${base}?sort_by=name&sort_dir=desc&page_size=2&page_num=2`, p.token) as Page;
  assert.deepEqual(page2.data.map((r) => r.code), ["auditor"]);
  assert.equal(page2.pagination.total, 3);
  await expectError(await http(base, bearer((await newProject()).token)), 403, "insufficient_permission");
});

test("the users, clients and projects lists answer what their writes did, filtered and paged", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, { code: "staff", name: "Staff" });
  const users = [];
  for (
    const [name, email] of [["Ann", "ann@example.com"], ["Bob_%", "bob@example.com"], ["Cid", null]] as const
  ) {
    users.push(
      await p.api.users.createUser(p.project.id, {
        display_name: name,
        ...(email ? { email, password: "correct horse battery" } : { external_user_id: `ext-${name}` }),
        ...(name === "Cid" ? { role_id: role.id } : {}),
      }),
    );
  }
  const base = `/api/v1/projects/${p.project.id}`;
  type Page = { data: { id: string }[]; pagination: { total: number } };
  const byName =
    (await getJson(`${base}/users?sort_by=display_name&sort_dir=asc&page_size=100`, p.token)) as Page;
  assert.deepEqual(
    byName.data,
    JSON.parse(JSON.stringify([...users].sort((a, b) => a.display_name < b.display_name ? -1 : 1))),
  );
  const literal = await getJson(`${base}/users?search=${encodeURIComponent("_%")}`, p.token) as Page;
  assert.deepEqual(literal.data.map((u) => u.id), [users[1].id]);
  const withRole = await getJson(`${base}/users?role_id=${role.id}`, p.token) as Page;
  assert.deepEqual(withRole.data.map((u) => u.id), [users[2].id]);

  const client = await p.api.clients.createClient(p.project.id, {
    name: "Reporting",
    permission_ids: [ids["roles:read"]],
  });
  const { client_secret: _, ...shown } = client;
  const clients = await getJson(`${base}/clients?search=report`, p.token) as Page;
  assert.deepEqual(clients.data, [JSON.parse(JSON.stringify(shown))]);
  const inactive = await getJson(`${base}/clients?is_active=false`, p.token) as Page;
  assert.deepEqual(inactive, { data: [], pagination: { page_num: 1, page_size: 10, total: 0 } });

  const system = await systemToken();
  const found = await getJson(
    `/api/v1/projects?search=${encodeURIComponent(p.project.name)}`,
    system,
  ) as Page;
  assert.deepEqual(found.data, [await getJson(base, p.token)]);
  await expectError(await http("/api/v1/projects", bearer(p.token)), 403, "insufficient_permission");
  await expectError(
    await http(`${base}/users`, bearer((await newProject()).token)),
    403,
    "insufficient_permission",
  );
});

test("gated requests sent together are each answered as they are alone", async () => {
  // The gates asked for in one turn share a statement (db/batch.ts): tokens of two projects, of a client
  // with one permission and of a user with none, reads of records and pages, allowed and refused.
  const [a, b, u] = await Promise.all([newProject(), newProject(), loginProject()]);
  const reader = await clientWith(a, ["resources:read"]);
  const user = (await userTokens(u)).access_token;
  const requests: [string, string][] = [
    [`/api/v1/projects/${a.project.id}`, a.token],
    [`/api/v1/projects/${b.project.id}`, b.token],
    [`/api/v1/projects/${b.project.id}`, a.token],
    [`/api/v1/projects/${a.project.id}/resources?page_size=3`, reader.token],
    [`/api/v1/projects/${a.project.id}/resources?page_size=2&page_num=2&sort_dir=desc`, a.token],
    [`/api/v1/projects/${b.project.id}/resources?search=role&is_default=true`, b.token],
    [`/api/v1/projects/${a.project.id}`, reader.token],
    [`/api/v1/projects/${a.project.id}/roles`, reader.token],
    [`/api/v1/projects/${u.project.id}`, user],
    [`/api/v1/projects/${u.project.id}/users`, u.token],
    [`/api/v1/projects/${a.project.id}/clients?page_size=1`, a.token],
  ];
  const answer = async ([path, token]: [string, string]) => {
    const res = await http(path, bearer(token));
    return { status: res.status, body: await res.json() };
  };
  const alone = [];
  for (const r of requests) alone.push(await answer(r));
  assert.deepEqual(alone.map((x) => x.status), [200, 200, 403, 200, 200, 200, 403, 403, 403, 200, 200]);
  const sent = Array.from({ length: 6 }, () => requests).flat();
  const together = await Promise.all(sent.map(answer));
  for (const [i, got] of together.entries()) assert.deepEqual(got, alone[i % requests.length], sent[i][0]);
  // The very next requests after the reader's deactivation are refused, together as alone.
  await a.api.clients.updateClient(a.project.id, reader.id, { name: "limited", is_active: false });
  const after = await Promise.all(
    Array.from({ length: 8 }, () => answer([`/api/v1/projects/${a.project.id}/resources`, reader.token])),
  );
  for (const res of after) assert.equal(res.status, 401);
});
