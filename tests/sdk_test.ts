/**
 * The SDK's hand-written part: createAdminClient gets, caches and renews client-credentials tokens and hands out
 * the generated API classes; every failed call throws ApiError with the service's status, code and details.
 */
import assert from "node:assert/strict";
import { ApiError, type ApiErrorCode, createAdminClient } from "../sdk/src/mod.ts";
import { ERRORS } from "../domain/shared/errors.ts";
import { ADMIN_SECRET, baseUrl, newProject, test } from "./helpers.ts";

/** A fetch that counts the token requests it sends. */
function counting() {
  let tokenRequests = 0;
  return {
    fetch: (url: string, init?: RequestInit) => {
      if (url.endsWith("/api/v1/tokens")) tokenRequests++;
      return fetch(url, init);
    },
    tokenRequests: () => tokenRequests,
  };
}

async function failure(call: Promise<unknown>): Promise<ApiError> {
  const err = await call.then(() => undefined, (e) => e);
  assert.ok(err instanceof ApiError, `expected an ApiError, got ${err}`);
  return err;
}

test("createAdminClient creates a project and manages it, with one cached token for every call", async () => {
  const counter = counting();
  const admin = createAdminClient({
    baseUrl: `${await baseUrl()}/`,
    clientId: "system-admin",
    clientSecret: ADMIN_SECRET,
    fetch: counter.fetch,
  });
  const created = await admin.projects.createProject({ name: "sdk helper" });
  const shop = createAdminClient({
    baseUrl: await baseUrl(),
    clientId: created.admin_client.client_id,
    clientSecret: created.admin_client.client_secret,
    fetch: counter.fetch,
  });
  const orders = await shop.resources.createResource(created.id, {
    name: "Orders",
    code: "orders",
    permissions: [{ name: "Read", code: "read" }],
  });
  const role = await shop.roles.createRole(created.id, {
    code: "clerk",
    name: "Clerk",
    permission_ids: [orders.permissions[0].id],
  });
  await shop.users.createUser(created.id, { display_name: "Ada", external_user_id: "ada", role_id: role.id });
  assert.deepEqual((await shop.users.getExternalUser(created.id, "ada", true)).permissions, ["orders:read"]);
  const job = await shop.clients.createClient(created.id, { name: "job" });
  assert.equal(typeof job.client_secret, "string");
  assert.equal((await shop.projects.getProject(created.id)).name, "sdk helper");
  assert.equal(counter.tokenRequests(), 2, "one token per client, reused by every call");
  const introspected = await shop.tokens.introspectToken({ token: await shop.accessToken() });
  assert.equal(introspected.active, true);
  assert.equal(introspected.aud, created.id);
  assert.deepEqual(await shop.service.getHealth(), { status: "ok" });
});

test("every failed call throws ApiError with status, the typed code, description and details", async () => {
  const p = await newProject();
  const shop = createAdminClient({ baseUrl: await baseUrl(), clientId: p.clientId, clientSecret: p.secret });
  const invalid = await failure(
    shop.roles.createRole(p.project.id, { code: "no spaces", name: "x".repeat(51) }),
  );
  assert.equal(invalid.status, 400);
  const code: ApiErrorCode = invalid.code;
  assert.equal(invalid.error, "invalid_params");
  assert.equal(code, "invalid_params");
  assert.deepEqual(invalid.details?.map((d) => d.field).sort(), ["code", "name"]);
  assert.match(invalid.message, /^400 invalid_params: /);
  assert.equal(invalid.name, "ApiError");
  await shop.roles.createRole(p.project.id, { code: "clerk", name: "Clerk" });
  const taken = await failure(shop.roles.createRole(p.project.id, { code: "Clerk", name: "Clerk" }));
  assert.deepEqual([taken.status, taken.error], [409, "role_code_already_used"]);
  assert.equal(taken.error_description, ERRORS.role_code_already_used.message);
  const other = await failure(shop.projects.getProject("no-such-project"));
  assert.deepEqual([other.status, other.error], [404, "project_not_found"]);
  const wrong = createAdminClient({ baseUrl: await baseUrl(), clientId: p.clientId, clientSecret: "wrong" });
  const refused = await failure(wrong.projects.getProject(p.project.id));
  // The token endpoint's error: the RFC 6749 §5.2 code in `error`, the service's in `error_code` and `code`.
  assert.deepEqual([refused.status, refused.error, refused.error_code, refused.code], [
    401,
    "invalid_client",
    "invalid_client_credentials",
    "invalid_client_credentials",
  ]);
  assert.match(refused.message, /^401 invalid_client \(invalid_client_credentials\): /);
  assert.match(refused.headers.get("www-authenticate") ?? "", /^Basic/);
  // An admin API error has no error_code: `code` is its `error`.
  assert.deepEqual([taken.code, taken.error_code], ["role_code_already_used", undefined]);
});

test("createAdminClient renews a token the service stopped accepting, once, and shares one token request", async () => {
  const p = await newProject();
  const counter = counting();
  const limited = await p.api.clients.createClient(p.project.id, { name: "limited" });
  const client = createAdminClient({
    baseUrl: await baseUrl(),
    clientId: limited.id,
    clientSecret: limited.client_secret,
    fetch: counter.fetch,
  });
  // Ten calls at once share one token request.
  const refusals = await Promise.all(
    Array.from(
      { length: 10 },
      () => failure(client.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined)),
    ),
  );
  assert.ok(refusals.every((e) => e.status === 403 && e.error === "insufficient_permission"));
  assert.equal(counter.tokenRequests(), 1);
  // Deactivation ends the client's earlier tokens for good; reactivated, it gets a new one on the next call.
  await p.api.clients.updateClient(p.project.id, limited.id, { name: "limited", is_active: false });
  await p.api.clients.updateClient(p.project.id, limited.id, { name: "limited", is_active: true });
  const again = await failure(
    client.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
  );
  assert.equal(again.status, 403, "the renewed token reached the permission check");
  assert.equal(counter.tokenRequests(), 2);
  // Deactivated for good: the renewal itself fails, with the token endpoint's error.
  await p.api.clients.updateClient(p.project.id, limited.id, { name: "limited", is_active: false });
  const off = await failure(
    client.roles.listRoles(p.project.id, 1, 10, undefined, undefined, undefined, undefined),
  );
  assert.deepEqual([off.status, off.error, off.code], [401, "invalid_client", "client_not_active"]);
});

test("ApiError.fromResponse reads the error body, and names an answer without one system_error", async () => {
  const shaped = await ApiError.fromResponse(
    Response.json({ error: "too_many_requests", error_description: "wait" }, {
      status: 429,
      headers: { "retry-after": "3" },
    }),
  );
  assert.deepEqual([shaped.status, shaped.error, shaped.error_description], [
    429,
    "too_many_requests",
    "wait",
  ]);
  assert.equal(shaped.headers.get("retry-after"), "3");
  assert.equal(shaped.details, undefined);
  const proxy = await ApiError.fromResponse(
    new Response("<h1>Bad Gateway</h1>", { status: 502, headers: { "content-type": "text/html" } }),
  );
  assert.deepEqual([proxy.status, proxy.error], [502, "system_error"]);
  assert.match(proxy.error_description, /HTTP 502 \(text\/html\)/);
  const thrown = await ApiError.from(
    Response.json({ error: "not_found", error_description: "x" }, { status: 404 }),
  );
  assert.ok(thrown instanceof ApiError && thrown.error === "not_found");
  const other = new TypeError("network");
  assert.equal(await ApiError.from(other), other);
});

test("the typed objects and grants clients: batches, every page, moves, grants with a Date, errors as ApiError", async () => {
  const p = await newProject();
  const admin = createAdminClient({ baseUrl: await baseUrl(), clientId: p.clientId, clientSecret: p.secret });
  const folder = await admin.resources.createResource(p.project.id, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }],
  });
  const role = await admin.roles.createRole(p.project.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [folder.permissions[0].id],
  });
  const user = await admin.users.createUser(p.project.id, { display_name: "C", external_user_id: "c" });
  const { objects, grants } = admin.project(p.project.id);
  const created = await objects.createMany(folder.id, [
    { id: "a/b", parent_id: "root" },
    { id: "root", name: "Root" },
    ...Array.from({ length: 148 }, (_, i) => ({ id: `leaf-${i}`, parent_id: "a/b" })),
  ]);
  assert.equal(created.length, 150);
  assert.equal((await objects.get(folder.id, "a/b")).depth, 2);
  const every: string[] = [];
  for await (const o of objects.all(folder.id, { sort_by: "id", sort_dir: "asc" })) every.push(o.id);
  assert.equal(every.length, 150);
  assert.equal(new Set(every).size, 150);
  assert.deepEqual((await objects.list(folder.id, { top_level: true })).data.map((o) => o.id), ["root"]);
  assert.equal((await objects.update(folder.id, "a/b", { parent_id: null })).depth, 1);
  const until = new Date(Date.now() + 3_600_000);
  const grant = await grants.create({
    subject: { type: "user", id: user.id },
    role_id: role.id,
    object: { type: "folder", id: "a/b" },
    expires_at: until,
  });
  assert.equal(grant.expires_at, until.toISOString());
  assert.deepEqual((await grants.list({ subject_id: user.id })).data.map((g) => g.id), [grant.id]);
  const found = await admin.access.searchResources({
    subject: { type: "user", id: "c" },
    action: { name: "read" },
    resource: { type: "folder" },
  });
  assert.equal(found.page.total, 149);
  await grants.delete(grant.id);
  assert.equal((await failure(grants.get(grant.id))).code, "grant_not_found");
  assert.equal((await failure(objects.delete(folder.id, "a/b"))).code, "object_has_children");
  await objects.delete(folder.id, "a/b", { cascade: true });
  assert.equal((await failure(objects.get(folder.id, "leaf-1"))).code, "object_not_found");
});
