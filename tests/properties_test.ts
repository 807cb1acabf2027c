/**
 * Properties (issue 48, attributes): users, clients and objects carry a JSON object of attributes that conditions
 * will read. Set, read, replaced and cleared through the SDK; bad input refused with 400 `invalid_params` naming
 * the field; changed under the record's own permission; shown in the audit event's `changes`.
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { baseUrl, clientWith, expectError, http, newProject, test, type TestProject } from "./helpers.ts";
import { hasChromium, launch, sharedOperator, signIn } from "./console_support.ts";

// The generated SDK types a free-form object's values as strings; the API takes any JSON.
type Props = { [name: string]: string };
const props = (v: Record<string, unknown>) => v as Props;

const OWNED = props({ owner: "user-1", region: "eu", level: 3, tags: ["a", "b"], meta: { "any-key": null } });

async function folders(p: TestProject) {
  return await p.api.resources.createResource(p.project.id, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }],
  });
}

function raw(
  p: TestProject,
  method: string,
  path: string,
  body: unknown,
  token = p.token,
): Promise<Response> {
  return http(`/api/v1/projects/${p.project.id}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function auditChanges(p: TestProject, type: string, targetId: string) {
  const res = await http(
    `/api/v1/projects/${p.project.id}/audit-events?${new URLSearchParams({ type, target_id: targetId })}`,
    { headers: { authorization: `Bearer ${p.token}` } },
  );
  assert.equal(res.status, 200, await res.clone().text());
  const body = await res.json() as { data: { changes: Record<string, unknown> | null }[] };
  return body.data.map((e) => e.changes);
}

test("users: properties are set, read, kept when omitted, replaced whole and cleared", async () => {
  const p = await newProject();
  const api = p.api.users;
  const plain = await api.createUser(p.project.id, { display_name: "Plain", external_user_id: "plain" });
  assert.deepEqual(plain.properties, {});
  const u = await api.createUser(p.project.id, {
    display_name: "Ann",
    external_user_id: "ann",
    properties: OWNED,
  });
  assert.deepEqual(u.properties, OWNED);
  assert.deepEqual((await api.getUser(p.project.id, u.id, undefined)).properties, OWNED);
  const base = { display_name: "Ann", external_user_id: "ann", is_active: true };
  assert.deepEqual(
    (await api.updateUser(p.project.id, u.id, { ...base, display_name: "Ann B" })).properties,
    OWNED,
  );
  const replaced = await api.updateUser(p.project.id, u.id, { ...base, properties: props({ region: "us" }) });
  assert.deepEqual(replaced.properties, { region: "us" });
  const listed = await http(`/api/v1/projects/${p.project.id}/users?search=Ann`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.deepEqual((await listed.json()).data[0].properties, { region: "us" });
  assert.deepEqual((await api.updateUser(p.project.id, u.id, { ...base, properties: {} })).properties, {});
  // The audit event shows the properties' change as any other field's.
  const changes = await auditChanges(p, "user.updated", u.id);
  assert.ok(
    changes.some((c) => isDeepStrictEqual(c?.properties, { before: { region: "us" }, after: {} })),
    JSON.stringify(changes),
  );
});

test("clients: properties are set, read, kept when omitted, replaced whole and cleared", async () => {
  const p = await newProject();
  const api = p.api.clients;
  const c = await api.createClient(p.project.id, { name: "Agent", properties: OWNED });
  assert.deepEqual(c.properties, OWNED);
  assert.deepEqual((await api.getClient(p.project.id, c.id)).properties, OWNED);
  assert.deepEqual((await api.createClient(p.project.id, { name: "Bare" })).properties, {});
  const base = { name: "Agent", is_active: true };
  assert.deepEqual((await api.updateClient(p.project.id, c.id, base)).properties, OWNED);
  const replaced = await api.updateClient(p.project.id, c.id, {
    ...base,
    properties: props({ tier: "gold" }),
  });
  assert.deepEqual(replaced.properties, { tier: "gold" });
  assert.deepEqual((await api.updateClient(p.project.id, c.id, { ...base, properties: {} })).properties, {});
  const changes = await auditChanges(p, "client.updated", c.id);
  assert.ok(
    changes.some((ch) => isDeepStrictEqual(ch?.properties, { before: OWNED, after: { tier: "gold" } })),
    JSON.stringify(changes),
  );
});

test("objects: properties are set (one and in a batch), read, kept when omitted, replaced and cleared", async () => {
  const p = await newProject();
  const f = await folders(p);
  const api = p.api.objects;
  const doc = await api.createObject(p.project.id, f.id, { id: "doc-1", properties: OWNED });
  assert.deepEqual(doc.properties, OWNED);
  const batch = await api.createObjects(p.project.id, f.id, {
    objects: [{ id: "doc-2", properties: props({ owner: "user-2" }) }, { id: "doc-3", parent_id: "doc-2" }],
  });
  assert.deepEqual(batch.data.map((o) => o.properties), [{ owner: "user-2" }, {}]);
  assert.deepEqual((await api.getObject(p.project.id, f.id, "doc-1")).properties, OWNED);
  // A rename or a move keeps them.
  const moved = await api.updateObject(p.project.id, f.id, "doc-1", { name: "One", parent_id: "doc-2" });
  assert.deepEqual(moved.properties, OWNED);
  const replaced = await api.updateObject(p.project.id, f.id, "doc-1", {
    properties: props({ status: "draft" }),
  });
  assert.deepEqual(replaced.properties, { status: "draft" });
  assert.equal(replaced.name, "One");
  const listed = await http(`/api/v1/projects/${p.project.id}/resources/${f.id}/objects?parent_id=doc-2`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.deepEqual(
    (await listed.json()).data.map((o: { id: string; properties: unknown }) => [o.id, o.properties]),
    [["doc-3", {}], ["doc-1", { status: "draft" }]].sort((a, b) => String(b[0]).localeCompare(String(a[0]))),
  );
  assert.deepEqual((await api.updateObject(p.project.id, f.id, "doc-1", { properties: {} })).properties, {});
  const changes = await auditChanges(p, "object.updated", "doc-1");
  assert.ok(
    changes.some((c) => isDeepStrictEqual(c?.properties, { before: OWNED, after: { status: "draft" } })),
    JSON.stringify(changes),
  );
});

/** Each bad `properties` and the `details` field it is refused with. */
const BAD: [string, unknown, string][] = [
  ["an array", ["a"], "properties"],
  ["a string", "owner", "properties"],
  ["null", null, "properties"],
  ["a number", 3, "properties"],
  ["a key starting with a digit", { "1a": 1 }, "properties.1a"],
  ["a key with a dash", { "a-b": 1 }, "properties.a-b"],
  ["an empty key", { "": 1 }, "properties"],
  ["a __proto__ key", JSON.parse('{"__proto__": {"owner": "x"}}'), "properties.__proto__"],
  ["over 4 KB", { big: "x".repeat(4090) }, "properties"],
  ["a NUL character", { a: "x\u0000y" }, "properties"],
];

test("bad properties are refused with 400 invalid_params naming the field, on every record", async () => {
  const p = await newProject();
  const f = await folders(p);
  const user = await p.api.users.createUser(p.project.id, { display_name: "U", external_user_id: "u" });
  const client = await p.api.clients.createClient(p.project.id, { name: "C" });
  await p.api.objects.createObject(p.project.id, f.id, { id: "o" });
  const writes: [string, string, Record<string, unknown>][] = [
    ["POST", "/users", { display_name: "V", external_user_id: "v" }],
    ["PUT", `/users/${user.id}`, { display_name: "U", external_user_id: "u", is_active: true }],
    ["POST", "/clients", { name: "D" }],
    ["PUT", `/clients/${client.id}`, { name: "C", is_active: true }],
    ["POST", `/resources/${f.id}/objects`, { id: "p" }],
    ["POST", `/resources/${f.id}/objects/batch`, { objects: [{ id: "q" }] }],
    ["PUT", `/resources/${f.id}/objects/o`, {}],
  ];
  for (const [method, path, body] of writes) {
    for (const [what, value, field] of BAD) {
      const batch = path.endsWith("/batch");
      const sent = batch ? { objects: [{ ...(body.objects as object[])[0], properties: value }] } : {
        ...body,
        properties: value,
      };
      const err = await expectError(await raw(p, method, path, sent), 400, "invalid_params");
      const fields = (err.details ?? []).map((d) => d.field);
      assert.deepEqual(fields, [batch ? `objects.0.${field}` : field], `${method} ${path}: ${what}`);
    }
  }
  // Exactly 4096 bytes of JSON text is accepted; the limit counts bytes, not characters.
  const atLimit = { big: "x".repeat(4096 - '{"big":""}'.length) };
  assert.equal((await raw(p, "PUT", `/resources/${f.id}/objects/o`, { properties: atLimit })).status, 200);
  const wide = { big: "é".repeat(2045) };
  const err = await expectError(
    await raw(p, "PUT", `/resources/${f.id}/objects/o`, { properties: wide }),
    400,
    "invalid_params",
  );
  assert.match(err.details![0].issue, /at most 4096 bytes/);
  // Nothing refused was stored.
  assert.deepEqual((await p.api.users.getUser(p.project.id, user.id, undefined)).properties, {});
  assert.deepEqual((await p.api.clients.getClient(p.project.id, client.id)).properties, {});
});

test("least privilege: who may read but not update a record cannot set its properties; who may update can", async () => {
  const p = await newProject();
  const f = await folders(p);
  const user = await p.api.users.createUser(p.project.id, { display_name: "U", external_user_id: "u" });
  const client = await p.api.clients.createClient(p.project.id, { name: "C" });
  await p.api.objects.createObject(p.project.id, f.id, { id: "o" });
  const cases: [string, string, Record<string, unknown>][] = [
    ["users", `/users/${user.id}`, { display_name: "U", external_user_id: "u", is_active: true }],
    ["clients", `/clients/${client.id}`, { name: "C", is_active: true }],
    ["objects", `/resources/${f.id}/objects/o`, {}],
  ];
  for (const [area, path, body] of cases) {
    const reader = await clientWith(p, [`${area}:read`]);
    const writer = await clientWith(p, [`${area}:read`, `${area}:update`]);
    const sent = { ...body, properties: { owner: "mallory" } };
    await expectError(await raw(p, "PUT", path, sent, reader.token), 403, "insufficient_permission");
    const res = await raw(p, "PUT", path, { ...body, properties: { owner: "bob" } }, writer.token);
    assert.equal(res.status, 200, `${area}: ${await res.clone().text()}`);
    assert.deepEqual((await res.json()).properties, { owner: "bob" });
  }
});

test(
  "console: properties are shown and edited as JSON on the object, user and client pages; bad JSON is a 400 on the form",
  async () => {
    const url = await baseUrl();
    const operator = await sharedOperator();
    const p = await newProject();
    const f = await folders(p);
    await p.api.objects.createObject(p.project.id, f.id, {
      id: "doc-1",
      properties: props({ owner: "ann" }),
    });
    const user = await p.api.users.createUser(p.project.id, { display_name: "Ann", external_user_id: "ann" });
    const client = await p.api.clients.createClient(p.project.id, { name: "Agent" });
    const browser = await launch();
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      ctx.setDefaultTimeout(15_000);
      const page = await ctx.newPage();
      await page.goto(`${url}/console`);
      await page.getByRole("button", { name: "Continue to sign-in" }).click();
      await signIn(page, operator.email, operator.password);
      await page.waitForURL(/\/console\/projects/);

      // The object: its properties shown, bad JSON and a bad key refused next to the field, then saved.
      await page.goto(`${url}/console/projects/${p.project.id}/resources/${f.id}/objects?at=doc-1`);
      const box = page.getByLabel(/^Properties/);
      assert.deepEqual(JSON.parse(await box.inputValue()), { owner: "ann" });
      await box.fill("{owner: ann");
      let answer = page.waitForResponse((r) => r.url().endsWith("/objects/properties"));
      await page.getByRole("button", { name: "Save properties" }).click();
      assert.equal((await answer).status(), 400);
      assert.match((await page.locator("#f-properties-error").textContent())!, /not valid JSON/);
      assert.equal(await page.getByLabel(/^Properties/).inputValue(), "{owner: ann");
      await page.getByLabel(/^Properties/).fill('{"1a": 1}');
      answer = page.waitForResponse((r) => r.url().endsWith("/objects/properties"));
      await page.getByRole("button", { name: "Save properties" }).click();
      assert.equal((await answer).status(), 400);
      assert.match((await page.locator("#f-properties-error").textContent())!, /properties\.1a/);
      await page.getByLabel(/^Properties/).fill('{"owner": "bob", "status": "draft"}');
      await page.getByRole("button", { name: "Save properties" }).click();
      assert.equal(await page.getByRole("status").textContent(), "The object's properties were saved.");
      assert.deepEqual((await p.api.objects.getObject(p.project.id, f.id, "doc-1")).properties, {
        owner: "bob",
        status: "draft",
      });

      // The user and the client: the same textarea in their forms.
      await page.goto(`${url}/console/projects/${p.project.id}/users/${user.id}`);
      await page.getByLabel(/^Properties/).fill("[1, 2");
      await page.getByRole("button", { name: "Save user" }).click();
      assert.match((await page.locator("#f-properties-error").textContent())!, /not valid JSON/);
      await page.getByLabel(/^Properties/).fill('{"region": "eu"}');
      await page.getByRole("button", { name: "Save user" }).click();
      await page.waitForURL(/\/users\?done=1/);
      assert.deepEqual((await p.api.users.getUser(p.project.id, user.id, undefined)).properties, {
        region: "eu",
      });
      // The name in parts, and the password's scheme in words (never the hash).
      await page.goto(`${url}/console/projects/${p.project.id}/users/${user.id}`);
      const scheme = (await page.locator("#password-scheme").textContent())!;
      assert.equal(scheme, "none");
      await page.getByLabel("Given name").fill("Ann");
      await page.getByLabel("Family name").fill("Lee");
      await page.getByRole("button", { name: "Save user" }).click();
      await page.waitForURL(/\/users\?done=1/);
      const named = await p.api.users.getUser(p.project.id, user.id, undefined);
      assert.deepEqual([named.given_name, named.family_name], ["Ann", "Lee"]);
      await page.goto(`${url}/console/projects/${p.project.id}/clients/${client.id}`);
      await page.getByLabel(/^Properties/).fill('["not", "an object"]');
      await page.getByRole("button", { name: "Save client" }).click();
      assert.ok(await page.locator("#f-properties-error").isVisible());
      await page.getByLabel(/^Properties/).fill('{"tier": "gold"}');
      await page.getByRole("button", { name: "Save client" }).click();
      await page.waitForURL(/done=1/);
      assert.deepEqual((await p.api.clients.getClient(p.project.id, client.id)).properties, { tier: "gold" });
      await ctx.close();
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);
