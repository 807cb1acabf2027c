/**
 * Strict bodies: every JSON body of the admin API refuses an unknown field, at any depth, with 400 `invalid_params`
 * naming its path (and the field probably meant), and creates nothing; the OAuth form endpoints keep ignoring
 * unknown parameters (RFC 6749 §3.1) and the AuthZEN bodies keep accepting extensions. Raw HTTP.
 */
import assert from "node:assert/strict";
import { EVALUATION, EVALUATIONS, ok, post } from "./authzen_support.ts";
import {
  basic,
  expectError,
  http,
  newProject,
  permissionIds,
  postToken,
  systemToken,
  test,
  type TestProject,
} from "./helpers.ts";

/** A JSON request to the admin API with the project's token (or another). */
async function send(method: string, path: string, body: unknown, token: string): Promise<Response> {
  return await http(path, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}

/** Asserts a 400 `invalid_params` whose `details` are exactly these (in any order). */
async function refused(res: Response, details: { field: string; issue: string }[]) {
  const err = await expectError(res, 400, "invalid_params");
  const sort = (d: { field: string; issue: string }[]) =>
    [...d].sort((a, b) => a.field.localeCompare(b.field) || a.issue.localeCompare(b.issue));
  assert.deepEqual(sort(err.details ?? []), sort(details));
}

const meant = (field: string) => `unknown field; did you mean \`${field}\`?`;

const inProject = (p: TestProject, area: string) => `/api/v1/projects/${p.project.id}/${area}`;

test("POST /api/v1/projects refuses a misspelt redirect_uris, names the field meant, creates nothing", async () => {
  const token = await systemToken();
  const name = `Shop ${crypto.randomUUID().slice(0, 8)}`;
  await refused(
    await send("POST", "/api/v1/projects", { name, redirect_uri: ["https://shop.example.com/cb"] }, token),
    [{ field: "redirect_uri", issue: meant("redirect_uris") }],
  );
  // camelCase, as a JavaScript client may write it, points at the snake_case field too.
  await refused(
    await send("POST", "/api/v1/projects", { name, redirectUris: ["https://shop.example.com/cb"] }, token),
    [{ field: "redirectUris", issue: meant("redirect_uris") }],
  );
  const list = await http(`/api/v1/projects?search=${encodeURIComponent(name)}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal((await list.json()).pagination.total, 0, "nothing created");
  // Spelt right, it is created with its redirect URIs.
  const created = await send(
    "POST",
    "/api/v1/projects",
    { name, redirect_uris: ["https://shop.example.com/cb"] },
    token,
  );
  assert.equal(created.status, 201);
  assert.deepEqual((await created.json()).redirect_uris, ["https://shop.example.com/cb"]);
});

test("a role sent with permissions instead of permission_ids is refused, naming permission_ids", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  await refused(
    await send("POST", inProject(p, "roles"), {
      code: "support",
      name: "Support",
      permissions: [ids["users:read"]],
    }, p.token),
    [{ field: "permissions", issue: meant("permission_ids") }],
  );
  const roles = await p.api.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined);
  assert.equal(roles.pagination.total, 0, "no empty role was created");
  // On update too, each unknown field with its own suggestion.
  const role = await p.api.roles.createRole(p.project.id, { code: "support", name: "Support" });
  await refused(
    await send("PUT", `${inProject(p, "roles")}/${role.id}`, {
      code: "support",
      name: "Support",
      permissions: [ids["users:read"]],
      descripton: "answers tickets",
    }, p.token),
    [
      { field: "permissions", issue: meant("permission_ids") },
      { field: "descripton", issue: meant("description") },
    ],
  );
  assert.deepEqual((await p.api.roles.getRole(p.project.id, role.id)).permission_ids, []);
});

test("an unknown field in a nested object or array item is refused by its full path", async () => {
  const p = await newProject();
  // An item of an array of objects: a resource's permissions.
  await refused(
    await send("POST", inProject(p, "resources"), {
      name: "Orders",
      code: "orders",
      permissions: [{ name: "Read", code: "read" }, { name: "Refund", code: "refund", descripton: "money" }],
    }, p.token),
    [{ field: "permissions.1.descripton", issue: meant("description") }],
  );
  const resources = await p.api.resources.listResources(
    p.project.id,
    1,
    100,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  assert.ok(!resources.data.some((r) => r.code === "orders"), "no resource created");
  const folders = await p.api.resources.createResource(p.project.id, { name: "Folders", code: "folders" });
  // A batch of objects: nothing of the batch is created.
  await refused(
    await send("POST", `${inProject(p, "resources")}/${folders.id}/objects/batch`, {
      objects: [{ id: "root" }, { id: "child", parnt_id: "root" }],
    }, p.token),
    [{ field: "objects.1.parnt_id", issue: meant("parent_id") }],
  );
  const objects = await http(`${inProject(p, "resources")}/${folders.id}/objects`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal((await objects.json()).pagination.total, 0, "nothing of the batch was created");
  // Nested objects of a grant, and of an identity provider (refused before its issuer is ever fetched).
  await refused(
    await send("POST", inProject(p, "grants"), {
      subject: { type: "user", id: "u1", kind: "person" },
      role_id: "r1",
      object: { type: "folders", id: "root", resource: "folders" },
    }, p.token),
    [
      { field: "subject.kind", issue: "unknown field" },
      { field: "object.resource", issue: "unknown field" },
    ],
  );
  await refused(
    await send("POST", inProject(p, "identity-providers"), {
      kind: "oidc",
      issuer: "https://idp.example.com",
      client_id: "c",
      display_name: "IdP",
      claims: { email: "mail", pictures: "avatar" },
    }, p.token),
    [{ field: "claims.pictures", issue: meant("picture") }],
  );
});

test("an unknown field far from every known one gets no suggestion; many are counted past twenty", async () => {
  const p = await newProject();
  await refused(
    await send("POST", inProject(p, "clients"), { name: "Billing", colour: "red" }, p.token),
    [{ field: "colour", issue: "unknown field" }],
  );
  const junk = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`junk${i}`, i]));
  const err = await expectError(
    await send("POST", inProject(p, "webhooks"), {
      url: "https://hooks.example.com/in",
      event_types: ["*"],
      ...junk,
    }, p.token),
    400,
    "invalid_params",
  );
  assert.equal(err.details?.length, 21);
  assert.deepEqual(err.details?.at(-1), { field: "body", issue: "5 more unknown fields" });
  assert.ok(err.details?.slice(0, 20).every((d) => /^junk\d+$/.test(d.field) && d.issue === "unknown field"));
});

test("the token endpoint (a form) still ignores an unknown parameter (RFC 6749 §3.1)", async () => {
  const p = await newProject();
  const res = await postToken(
    { grant_type: "client_credentials", colour: "red", redirect_uri_typo: "x" },
    { authorization: basic(p.clientId, p.secret) },
  );
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.equal(typeof JSON.parse(text).access_token, "string");
});

test("AuthZEN bodies still accept extensions in subject, resource, action, context and at the top", async () => {
  const p = await newProject();
  const resource = await p.api.resources.createResource(p.project.id, {
    name: "Record",
    code: "record",
    permissions: [{ name: "Read", code: "read" }],
  });
  const role = await p.api.roles.createRole(p.project.id, {
    code: "reader",
    name: "Reader",
    permission_ids: [resource.permissions[0].id],
  });
  await p.api.users.createUser(p.project.id, {
    display_name: "Alice",
    external_user_id: "alice",
    role_id: role.id,
  });
  const question = {
    subject: { type: "user", id: "alice", department: "sales", properties: { level: 3 } },
    action: { name: "read", method: "GET" },
    resource: { type: "record", id: "r-1", owner: "bob" },
    context: { time: "2026-01-01T00:00:00Z", ip: "192.0.2.1" },
    x_extension: { nested: true },
  };
  assert.equal((await ok(await post(EVALUATION, question, p.token))).decision, true);
  const batch = await ok(
    await post(EVALUATIONS, { ...question, evaluations: [{ action: { name: "read", extra: 1 } }] }, p.token),
  );
  assert.deepEqual(batch.evaluations.map((d: { decision: boolean }) => d.decision), [true]);
});

test("the OpenAPI document says additionalProperties: false for the admin API's bodies only", async () => {
  const doc = await (await http("/openapi.json")).json();
  const components = doc.components.schemas as Record<string, Record<string, unknown>>;
  const bodies = new Map<string, string>();
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const op of Object.values(operations) as { requestBody?: { content: Record<string, unknown> } }[]) {
      const json = op.requestBody?.content["application/json"] as { schema: { $ref: string } } | undefined;
      if (json) bodies.set(json.schema.$ref.split("/").at(-1)!, path);
    }
  }
  assert.ok(bodies.size >= 20);
  // A body of several shapes (the import's array or object) is strict in each: its objects, its arrays' items.
  const strictness = (schema: Record<string, unknown>): unknown => {
    if (schema.$ref) return strictness(components[(schema.$ref as string).split("/").at(-1)!]);
    if (schema.anyOf) {
      const each = (schema.anyOf as Record<string, unknown>[]).map(strictness);
      return each.every((s) => s === false) ? false : each;
    }
    if (schema.type === "array") return strictness(schema.items as Record<string, unknown>);
    return schema.additionalProperties;
  };
  for (const [name, path] of bodies) {
    const extensible = path.startsWith("/access/");
    assert.equal(strictness(components[name]), extensible ? undefined : false, `${name} (${path})`);
  }
  // Nested request objects too; answers stay open, so that a later field breaks no client.
  assert.equal(components.PermissionInput.additionalProperties, false);
  assert.equal(components.GrantSubject.additionalProperties, false);
  assert.equal(components.IdentityProviderClaims.additionalProperties, false);
  for (const answer of ["Project", "CreatedProject", "Role", "User", "Grant", "Error", "AuthzenSubject"]) {
    assert.equal(JSON.stringify(components[answer]).includes('"additionalProperties":false'), false, answer);
  }
});
