/**
 * The AuthZEN searches honour conditions (issue 48): a permission held only under a condition (a role's, a
 * grant's or a grant's role's) is reported only where the condition is true, evaluated per candidate with
 * its stored properties, the request's action properties and context and the database's clock; pages stay
 * whole (keyset tokens to the end, exact totals, ids byte-wise); a condition that cannot be evaluated
 * excludes its candidate, and a changed condition decides the next search.
 */
import assert from "node:assert/strict";
import { ACTIONS, EVALUATION, ok, post, RESOURCES, SUBJECTS } from "./authzen_support.ts";
import { type Api, test } from "./helpers.ts";
import { type Editors, editors, folders } from "./conditions_support.ts";

type Setup = Editors;
const setup = editors;

const BYTES = new TextEncoder();

/** Byte-wise (UTF-8) order, as the searches sort ids. */
function byteOrder(a: string, b: string): number {
  const [x, y] = [BYTES.encode(a), BYTES.encode(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

type Page = {
  results: { id?: string; name?: string }[];
  page: { next_token: string; count: number; total: number };
};

/** Every result of a search, following `next_token` to the end; each page's total must be `total`. */
async function all(s: Setup, path: string, body: Record<string, unknown>, limit: number) {
  const seen: string[] = [];
  const totals = new Set<number>();
  let token = "";
  for (let round = 0; round < 50; round++) {
    const found: Page = await ok(
      await post(path, { ...body, page: { limit, ...(token ? { token } : {}) } }, s.access),
    );
    totals.add(found.page.total);
    assert.equal(found.page.count, found.results.length);
    seen.push(...found.results.map((r) => r.id ?? r.name ?? ""));
    token = found.page.next_token;
    if (token === "") return { seen, totals: [...totals] };
    assert.equal(found.results.length, limit, "a page before the last is full");
  }
  throw new Error("never reached the last page");
}

const resources = (s: Setup, who: string, action: string, extra: Record<string, unknown> = {}, limit = 100) =>
  all(s, RESOURCES, {
    subject: { type: "user", id: who },
    action: { name: action },
    resource: { type: "doc" },
    ...extra,
  }, limit);

test("resource search, a role's condition: every object evaluated with its stored properties, pages to the end, exact totals", async () => {
  const s = await setup();
  // 250 objects, every other one alice's; ids whose byte-wise order differs from a locale's.
  const ids = Array.from({ length: 250 }, (_, i) => `${["a", "B", "_", "Z", "@"][i % 5]}-${i}`);
  const mine = ids.filter((_, i) => i % 2 === 0);
  await s.api.objects.createObjects(s.project.id, s.doc.id, {
    objects: ids.map((id, i) => ({ id, properties: { owner: i % 2 === 0 ? "alice" : "bob", n: i } })),
  });
  const written = await resources(s, "alice", "write");
  assert.deepEqual(written.totals, [125]);
  assert.deepEqual(written.seen, [...mine].sort(byteOrder));
  // Bob, named by his id rather than his external id: subject.id is the request's, so he owns none.
  assert.deepEqual((await resources(s, s.bob.id, "write")).seen, []);
  assert.equal((await resources(s, "bob", "write")).seen.length, 125);
  // Read is held outright: every object, the fast path's total.
  const read = await resources(s, "alice", "read", {}, 100);
  assert.deepEqual(read.totals, [250]);
  assert.deepEqual(read.seen, [...ids].sort(byteOrder));
  // A condition reading the action's properties, the context and the clock, per object.
  await s.api.roles.updateRole(s.project.id, s.editor.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [s.perm.read, s.perm.write, s.perm.delete],
    conditions: [{
      permission_id: s.perm.write,
      expression: 'resource.properties.n < action.properties.below && context.channel == "web" && ' +
        'now > timestamp("2020-01-01T00:00:00Z")',
    }],
  });
  const below = await resources(s, "alice", "write", {
    action: { name: "write", properties: { below: 120 } },
    context: { channel: "web" },
  }, 50);
  assert.deepEqual(below.totals, [120]);
  assert.deepEqual(below.seen, ids.slice(0, 120).sort(byteOrder));
  // Without the context the condition cannot be evaluated: nothing, and no error.
  assert.deepEqual(
    await resources(s, "alice", "write", { action: { name: "write", properties: { below: 120 } } }),
    { seen: [], totals: [0] },
  );
});

test("resource search through conditions over more candidates than one fetch, in pages of the most allowed", async () => {
  const s = await setup();
  const ids = Array.from({ length: 2500 }, (_, i) => `d-${String(i).padStart(4, "0")}`);
  for (let i = 0; i < ids.length; i += 1000) {
    await s.api.objects.createObjects(s.project.id, s.doc.id, {
      objects: ids.slice(i, i + 1000).map((id, j) => ({
        id,
        properties: { owner: (i + j) % 2 ? "bob" : "alice" },
      })),
    });
  }
  const written = await resources(s, "alice", "write", {}, 1000);
  assert.deepEqual(written.totals, [1250]);
  assert.deepEqual(written.seen, ids.filter((_, i) => i % 2 === 0));
});

test("resource search through grants with conditions on a subtree, and an outright grant beside them", async () => {
  const s = await setup();
  const { member } = await folders(s, [
    { id: "late-child", parent_id: "late", properties: { status: "open", hours: 1 } },
    { id: "elsewhere", properties: { status: "open", hours: 1 } },
  ]);
  const carol = await s.api.users.createUser(s.project.id, {
    display_name: "Carol",
    external_user_id: "carol",
  });
  await s.api.grants.createGrant(s.project.id, {
    subject: { type: "user", id: carol.id } as Api.GrantSubject,
    role_id: member.id,
    object: { type: "folder", id: "root" },
    condition: "resource.properties.hours < 18.0",
  });
  const search = (action: string) =>
    all(s, RESOURCES, {
      subject: { type: "user", id: "carol" },
      action: { name: action },
      resource: { type: "folder" },
    }, 2);
  // root has no hours (an error: excluded), late's are too many; the role's condition on write excludes old.
  assert.deepEqual(await search("read"), { seen: ["late-child", "old", "open"], totals: [3] });
  assert.deepEqual(await search("write"), { seen: ["late-child", "open"], totals: [2] });
  // A grant without condition on late: late and its subtree outright for read; write still needs the role's.
  await s.api.grants.createGrant(s.project.id, {
    subject: { type: "user", id: carol.id } as Api.GrantSubject,
    role_id: member.id,
    object: { type: "folder", id: "late" },
  });
  assert.deepEqual(await search("read"), { seen: ["late", "late-child", "old", "open"], totals: [4] });
  assert.deepEqual(await search("write"), { seen: ["late", "late-child", "open"], totals: [3] });
  // The searches agree with the decisions, object by object.
  for (const action of ["read", "write"]) {
    const listed = (await search(action)).seen;
    for (const id of ["root", "open", "old", "late", "late-child", "elsewhere"]) {
      const d = await ok(
        await post(EVALUATION, {
          subject: { type: "user", id: "carol" },
          action: { name: action },
          resource: { type: "folder", id },
        }, s.access),
      );
      assert.equal(d.decision, listed.includes(id), `${action} ${id}`);
    }
  }
});

test("resource search: an outright grant beside a role's condition is included without evaluation", async () => {
  const s = await setup();
  const writer = await s.api.roles.createRole(s.project.id, {
    code: "writer",
    name: "Writer",
    permission_ids: [s.perm.write],
  });
  await s.api.objects.createObjects(s.project.id, s.doc.id, {
    objects: [
      { id: "shared" },
      { id: "shared-1", parent_id: "shared", properties: { owner: "bob" } },
      { id: "mine", properties: { owner: "alice" } },
      { id: "theirs", properties: { owner: "bob" } },
      { id: "nobody" },
    ],
  });
  await s.api.grants.createGrant(s.project.id, {
    subject: { type: "user", id: s.alice.id } as Api.GrantSubject,
    role_id: writer.id,
    object: { type: "doc", id: "shared" },
  });
  // shared and shared-1 through the grant (shared has no owner: no evaluation, no error); mine by the role's.
  assert.deepEqual(await resources(s, "alice", "write", {}, 2), {
    seen: ["mine", "shared", "shared-1"],
    totals: [3],
  });
});

test("subject search: candidates held under a condition evaluated with their stored properties and their answered id", async () => {
  const s = await setup();
  const admin = await s.api.roles.createRole(s.project.id, {
    code: "admin",
    name: "Admin",
    permission_ids: [s.perm.delete, s.perm.write],
  });
  const dave = await s.api.users.createUser(s.project.id, {
    display_name: "Dave",
    email: `dave-${crypto.randomUUID()}@example.com`,
    password: "correct horse battery",
    role_id: s.editor.id,
    properties: { region: "eu" },
  });
  const erin = await s.api.users.createUser(s.project.id, {
    display_name: "Erin",
    external_user_id: "erin",
    role_id: admin.id,
    properties: { region: "mars" },
  });
  // Frank has no region: his condition cannot be evaluated, so he is left out (and the search does not fail).
  await s.api.users.createUser(s.project.id, {
    display_name: "Frank",
    external_user_id: "frank",
    role_id: s.editor.id,
  });
  await s.api.objects.createObjects(s.project.id, s.doc.id, {
    objects: [
      { id: "d-eu", properties: { region: "eu", owner: "bob" } },
      { id: "d-dave", properties: { region: "us", owner: dave.id } },
    ],
  });
  const subjects = (action: string, resource: Record<string, unknown>, limit = 1) =>
    all(s, SUBJECTS, {
      subject: { type: "user" },
      action: { name: action },
      resource: { type: "doc", ...resource },
    }, limit);
  const sorted = (ids: string[], keys: Record<string, string>) =>
    [...ids].sort((a, b) => byteOrder(keys[a], keys[b]));
  const keys = { alice: s.alice.id, bob: s.bob.id, [dave.id]: dave.id, erin: erin.id };
  // Delete on d-eu: the eu editors (alice, dave), and erin outright; the stored region, not a sent one.
  const eu = await subjects("delete", { id: "d-eu", properties: { region: "us" } });
  assert.deepEqual(eu.totals, [3]);
  assert.deepEqual(eu.seen, sorted(["alice", dave.id, "erin"], keys));
  // An object that is not registered: the request's properties.
  const us = await subjects("delete", { id: "new", properties: { region: "us" } }, 10);
  assert.deepEqual(us, { seen: sorted(["bob", "erin"], keys), totals: [2] });
  // subject.id is the id the search answers with: bob's external id, dave's id (he has no external id).
  assert.deepEqual((await subjects("write", { id: "d-eu" })).seen, sorted(["bob", "erin"], keys));
  assert.deepEqual((await subjects("write", { id: "d-dave" })).seen, sorted([dave.id, "erin"], keys));
  // Read is held outright by every editor: the fast path, frank included.
  assert.equal((await subjects("read", { id: "d-eu" }, 100)).totals[0], 4);
  // Clients through a grant with a condition: each evaluated with its own stored properties and its id.
  const [gold, plain] = await Promise.all(
    ["gold", "plain"].map((tier) =>
      s.api.clients.createClient(s.project.id, { name: tier, properties: { tier } })
    ),
  );
  const deleter = await s.api.roles.createRole(s.project.id, {
    code: "deleter",
    name: "Deleter",
    permission_ids: [s.perm.delete],
  });
  for (const c of [gold, plain]) {
    await s.api.grants.createGrant(s.project.id, {
      subject: { type: "client", id: c.id } as Api.GrantSubject,
      role_id: deleter.id,
      object: { type: "doc", id: "d-eu" },
      condition: `subject.properties.tier == "gold" && subject.id == "${gold.id}"`,
    });
  }
  assert.deepEqual(
    await all(s, SUBJECTS, {
      subject: { type: "client" },
      action: { name: "delete" },
      resource: { type: "doc", id: "d-eu" },
    }, 10),
    { seen: [gold.id], totals: [1] },
  );
});

test("action search lists a conditional action only when its condition (or a grant's) is true for the resource", async () => {
  const s = await setup();
  await s.api.objects.createObjects(s.project.id, s.doc.id, {
    objects: [{ id: "d-1", properties: { owner: "bob", region: "eu" } }],
  });
  const actions = (who: string, resource: Record<string, unknown>, context?: Record<string, unknown>) =>
    all(s, ACTIONS, {
      subject: { type: "user", id: who },
      resource: { type: "doc", ...resource },
      ...(context ? { context } : {}),
    }, 1);
  assert.deepEqual(await actions("alice", { id: "d-1" }), { seen: ["delete", "read"], totals: [2] });
  // The stored properties win over the sent ones.
  assert.deepEqual(await actions("bob", { id: "d-1", properties: { region: "us" } }), {
    seen: ["read", "write"],
    totals: [2],
  });
  // Not registered: the sent ones; none sent: both conditions are errors, only read.
  assert.deepEqual(await actions("alice", { id: "new", properties: { owner: "alice", region: "eu" } }), {
    seen: ["delete", "read", "write"],
    totals: [3],
  });
  assert.deepEqual(await actions("alice", { id: "new" }), { seen: ["read"], totals: [1] });
  // A grant on the object, with a condition on the context, lists write for alice there.
  const writer = await s.api.roles.createRole(s.project.id, {
    code: "writer",
    name: "Writer",
    permission_ids: [s.perm.write],
  });
  await s.api.grants.createGrant(s.project.id, {
    subject: { type: "user", id: s.alice.id } as Api.GrantSubject,
    role_id: writer.id,
    object: { type: "doc", id: "d-1" },
    condition: 'context.shift == "day"',
  });
  assert.deepEqual((await actions("alice", { id: "d-1" }, { shift: "day" })).seen, [
    "delete",
    "read",
    "write",
  ]);
  assert.deepEqual((await actions("alice", { id: "d-1" }, { shift: "night" })).seen, ["delete", "read"]);
});

test("a changed condition decides the next search", async () => {
  const s = await setup();
  await s.api.objects.createObjects(s.project.id, s.doc.id, {
    objects: [
      { id: "d-1", properties: { owner: "alice", region: "eu" } },
      { id: "d-2", properties: { owner: "bob", region: "us" } },
    ],
  });
  assert.deepEqual((await resources(s, "alice", "write")).seen, ["d-1"]);
  assert.deepEqual((await resources(s, "alice", "delete")).seen, ["d-1"]);
  await s.api.roles.updateRole(s.project.id, s.editor.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [s.perm.read, s.perm.write, s.perm.delete],
    conditions: [{ permission_id: s.perm.write, expression: "resource.properties.owner != subject.id" }],
  });
  assert.deepEqual((await resources(s, "alice", "write")).seen, ["d-2"]);
  // Delete has no condition any more: held outright, every object.
  assert.deepEqual(await resources(s, "alice", "delete"), { seen: ["d-1", "d-2"], totals: [2] });
  // A changed object's properties too.
  await s.api.objects.updateObject(s.project.id, s.doc.id, "d-1", { properties: { owner: "carol" } });
  assert.deepEqual((await resources(s, "alice", "write")).seen, ["d-1", "d-2"]);
});
