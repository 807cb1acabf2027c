/**
 * SCIM 2.0 Groups (issue 50) over organizations, driven with Entra ID's and Okta's documented requests: create,
 * filter by displayName without members, member additions and removals (Entra's value list and its
 * `members[value eq "…"]` path), Okta's replacement of the members and its rename, PUT, DELETE; default roles
 * given to members added, least privilege, the audit trail, bad input.
 */
import assert from "node:assert/strict";
import { Api, clientWith, http, permissionIds, test } from "./helpers.ts";
import {
  address,
  expectJson,
  expectScimError,
  GROUP,
  patch,
  scim,
  type ScimProject,
  scimProject,
  USER,
} from "./scim_support.ts";

async function user(p: ScimProject, name: string): Promise<{ id: string; displayName: string }> {
  const res = await scim(p, "POST", "/Users", {
    schemas: [USER],
    userName: address(name),
    displayName: name,
    active: true,
  });
  return await expectJson(res, 201) as { id: string; displayName: string };
}

const memberIds = (g: Record<string, unknown>) =>
  ((g.members ?? []) as { value: string }[]).map((m) => m.value).sort();

test("SCIM Groups: Entra ID's create, filter, member add and removals, rename and delete", async () => {
  const p = await scimProject();
  const [ann, bob] = [await user(p, "Ann"), await user(p, "Bob")];
  const externalId = crypto.randomUUID();
  // Microsoft's tutorial: a group with an extension schema Entra ID adds.
  const res = await scim(p, "POST", "/Groups", {
    schemas: [GROUP, "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
    externalId,
    displayName: "Sales",
    meta: { resourceType: "Group" },
  });
  const group = await expectJson(res, 201);
  assert.equal(res.headers.get("location"), (group.meta as { location: string }).location);
  assert.deepEqual([group.displayName, group.externalId, group.members], ["Sales", externalId, []]);
  const org = await http(`/api/v1/projects/${p.project.id}/organizations/${group.id}`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal((await org.json()).name, "Sales", "the group is an organization");

  // Entra's lookup: by displayName, without members.
  const filter = encodeURIComponent('displayName eq "sales"');
  const found = await expectJson(
    await scim(p, "GET", `/Groups?excludedAttributes=members&filter=${filter}`),
    200,
  );
  assert.equal(found.totalResults, 1);
  const [listed] = found.Resources as Record<string, unknown>[];
  assert.equal(listed.members, undefined);
  assert.equal(listed.id, group.id);

  // Entra's member addition: a value list.
  const added = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({
        name: "addMember",
        op: "Add",
        path: "members",
        value: [{ $ref: null, value: ann.id }, { value: bob.id }],
      }),
    ),
    200,
  );
  assert.deepEqual(memberIds(added), [ann.id, bob.id].sort());
  const annMember = (added.members as Record<string, string>[]).find((m) => m.value === ann.id)!;
  assert.equal(annMember.display, "Ann");
  assert.equal(annMember.type, "User");
  assert.ok(annMember.$ref.endsWith(`/Users/${ann.id}`));
  // Adding a member again changes nothing.
  const again = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "add", path: "members", value: [{ value: ann.id }] }),
    ),
    200,
  );
  assert.deepEqual(memberIds(again), memberIds(added));

  // Filter groups by a member.
  const byMember = await expectJson(
    await scim(p, "GET", `/Groups?filter=${encodeURIComponent(`members[value eq "${bob.id}"]`)}`),
    200,
  );
  assert.equal(byMember.totalResults, 1);
  const byMemberValue = await expectJson(
    await scim(p, "GET", `/Groups?filter=${encodeURIComponent(`members.value eq "${ann.id}"`)}`),
    200,
  );
  assert.equal(byMemberValue.totalResults, 1);
  // A user's groups, when asked for.
  const annGroups = await expectJson(await scim(p, "GET", `/Users/${ann.id}?attributes=groups`), 200);
  assert.deepEqual(
    (annGroups.groups as { value: string; display: string }[]).map((g) => [g.value, g.display]),
    [
      [group.id, "Sales"],
    ],
  );

  // Entra's removals: a value list, and a filter path.
  const removed = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ name: "removeMember", op: "Remove", path: "members", value: [{ $ref: null, value: ann.id }] }),
    ),
    200,
  );
  assert.deepEqual(memberIds(removed), [bob.id]);
  const byPath = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "Remove", path: `members[value eq "${bob.id}"]` }),
    ),
    200,
  );
  assert.deepEqual(memberIds(byPath), []);
  assert.notEqual(
    (byPath.meta as { version: string }).version,
    (removed.meta as { version: string }).version,
  );

  // Entra's rename.
  const renamed = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "Replace", path: "displayName", value: "Sales EMEA" }),
    ),
    200,
  );
  assert.equal(renamed.displayName, "Sales EMEA");
  assert.equal(renamed.externalId, externalId);

  const del = await scim(p, "DELETE", `/Groups/${group.id}`);
  assert.equal(del.status, 204);
  await expectScimError(await scim(p, "GET", `/Groups/${group.id}`), 404);

  // The audit trail names the SCIM client.
  const trail = await http(`/api/v1/projects/${p.project.id}/audit-events?type=organization.*&limit=20`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  const events = ((await trail.json()).data as Api.AuditEvent[]).reverse();
  assert.deepEqual(events.map((e) => e.type), [
    "organization.created",
    "organization.member_added",
    "organization.member_added",
    "organization.member_removed",
    "organization.member_removed",
    "organization.updated",
    "organization.deleted",
  ]);
  for (const e of events) assert.equal(e.actor.id, p.scimClientId);
});

test("SCIM Groups: Okta's create with members, replacement of the members, rename with its id, PUT", async () => {
  const p = await scimProject();
  const [ann, bob, cyd] = [await user(p, "Ann"), await user(p, "Bob"), await user(p, "Cyd")];
  const group = await expectJson(
    await scim(p, "POST", "/Groups", {
      schemas: [GROUP],
      displayName: "Test SCIMv2",
      members: [{ value: ann.id, display: "Ann" }],
    }),
    201,
  );
  assert.deepEqual(memberIds(group), [ann.id]);
  // Okta replaces the members with the list it holds.
  const replaced = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({
        op: "replace",
        path: "members",
        value: [{ value: bob.id, display: "Bob" }, { value: cyd.id }],
      }),
    ),
    200,
  );
  assert.deepEqual(memberIds(replaced), [bob.id, cyd.id].sort());
  // Okta's rename: a path-less replace that echoes the id.
  const renamed = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "replace", value: { id: group.id, displayName: "Test SCIMv2 renamed" } }),
    ),
    200,
  );
  assert.equal(renamed.displayName, "Test SCIMv2 renamed");
  // PUT replaces the whole group: externalId set, members exactly these.
  const put = await expectJson(
    await scim(p, "PUT", `/Groups/${group.id}`, {
      schemas: [GROUP],
      id: group.id,
      displayName: "Okta Group",
      externalId: "okta-1",
      members: [{ value: ann.id }],
    }),
    200,
  );
  assert.deepEqual([put.displayName, put.externalId, memberIds(put)], ["Okta Group", "okta-1", [ann.id]]);
  const byExternal = await expectJson(
    await scim(p, "GET", `/Groups?filter=${encodeURIComponent('externalId eq "okta-1"')}`),
    200,
  );
  assert.equal(byExternal.totalResults, 1);
  // Removing every member: remove with the path alone.
  const emptied = await expectJson(
    await scim(p, "PATCH", `/Groups/${group.id}`, patch({ op: "remove", path: "members" })),
    200,
  );
  assert.deepEqual(memberIds(emptied), []);
  // A deleted user leaves the group.
  await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "add", path: "members", value: [{ value: cyd.id }] }),
    ),
    200,
  );
  assert.equal((await scim(p, "DELETE", `/Users/${cyd.id}`)).status, 204);
  assert.deepEqual(memberIds(await expectJson(await scim(p, "GET", `/Groups/${group.id}`), 200)), []);
});

test("SCIM members added get the organization's default roles; the caller must cover them", async () => {
  const p = await scimProject();
  const ann = await user(p, "Ann");
  const group = await expectJson(
    await scim(p, "POST", "/Groups", { schemas: [GROUP], displayName: "Acme" }),
    201,
  );
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "org_reader",
    name: "Reader",
    scope: Api.RoleScope.Organization,
    permission_ids: [ids["users:read"]],
  });
  const setDefaults = await http(`/api/v1/projects/${p.project.id}/organizations/${group.id}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
    body: JSON.stringify({ default_role_ids: [role.id] }),
  });
  assert.equal(setDefaults.status, 200, await setDefaults.text());
  // The SCIM client holds scim:* only: it does not cover users:read, so it cannot give the role.
  await expectScimError(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "add", path: "members", value: [{ value: ann.id }] }),
    ),
    403,
  );
  // A client that covers it adds the member, who gets the default role.
  const client = await clientWith(p, ["scim:read", "scim:write", "users:read"]);
  const added = await scim(
    { ...p, scimToken: client.token },
    "PATCH",
    `/Groups/${group.id}`,
    patch({ op: "add", path: "members", value: [{ value: ann.id }] }),
  );
  await expectJson(added, 200);
  const member = await http(`/api/v1/projects/${p.project.id}/organizations/${group.id}/members/${ann.id}`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.deepEqual((await member.json()).role_ids, [role.id]);
});

test("SCIM Groups refuse bad input in RFC 7644's shape", async () => {
  const p = await scimProject();
  const group = await expectJson(
    await scim(p, "POST", "/Groups", { schemas: [GROUP], displayName: "Acme" }),
    201,
  );
  const url = `/Groups/${group.id}`;
  await expectScimError(
    await scim(p, "POST", "/Groups", { schemas: [GROUP], displayName: "ACME" }),
    409,
    "uniqueness",
  );
  await expectScimError(await scim(p, "POST", "/Groups", { schemas: [GROUP] }), 400, "invalidValue");
  await expectScimError(
    await scim(p, "POST", "/Groups", { schemas: [GROUP], displayName: "x".repeat(51) }),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "POST", "/Groups", { schemas: [GROUP], displayName: "B", members: [{ value: "nobody" }] }),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "PATCH", url, patch({ op: "add", path: "members", value: [{ value: "nobody" }] })),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "PATCH", url, patch({ op: "replace", path: "owner", value: "x" })),
    400,
    "invalidPath",
  );
  await expectScimError(
    await scim(p, "PATCH", url, patch({ op: "replace", path: "meta.lastModified", value: "x" })),
    400,
    "mutability",
  );
  await expectScimError(
    await scim(p, "PATCH", url, patch({ op: "replace", path: "displayName", value: "" })),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "PATCH", url, patch({ op: "replace", path: "displayName", value: "B" }), {
      "if-match": 'W/"x"',
    }),
    412,
  );
  await expectScimError(
    await scim(p, "GET", `/Groups?filter=${encodeURIComponent('members.display co "a"')}&sortBy=members`),
    400,
    "invalidValue",
  );
  await expectScimError(await scim(p, "GET", "/Groups/nothing"), 404);
  const reader = await scimProject(["scim:read"]);
  await expectScimError(await scim(reader, "POST", "/Groups", { schemas: [GROUP], displayName: "R" }), 403);
});

/** `n` users of the project made by the import (fast), their ids. */
async function manyUsers(p: ScimProject, n: number): Promise<string[]> {
  const tag = crypto.randomUUID().slice(0, 8);
  const res = await http(`/api/v1/projects/${p.project.id}/users/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      users: Array.from(
        { length: n },
        (_, i) => ({ email: `m${i}-${tag}@example.com`, display_name: `M ${i}` }),
      ),
    }),
  });
  const answer = await res.json();
  assert.equal(res.status, 200, JSON.stringify(answer).slice(0, 500));
  assert.equal(answer.created, n);
  return (answer.results as { user_id: string }[]).map((r) => r.user_id);
}

/**
 * The members named by the events of this type on the group, read as the NDJSON export and page by page (a
 * bulk write's events share milliseconds: the cursor must not skip them).
 */
async function eventCount(p: ScimProject, type: string, groupId: string): Promise<number> {
  const query = `/api/v1/projects/${p.project.id}/audit-events?type=${type}&target_id=${groupId}`;
  const res = await http(query, {
    headers: { authorization: `Bearer ${p.token}`, accept: "application/x-ndjson" },
  });
  const text = await res.text();
  assert.equal(res.status, 200, text.slice(0, 500));
  const events = text.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Api.AuditEvent);
  for (const e of events) {
    assert.equal(e.actor.id, p.scimClientId);
    assert.equal(typeof (e.details as { user_id?: unknown }).user_id, "string");
  }
  const paged: Api.AuditEvent[] = [];
  let cursor: string | null = null;
  do {
    const page = await http(`${query}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
      headers: { authorization: `Bearer ${p.token}` },
    });
    const body = await page.json();
    assert.equal(page.status, 200, JSON.stringify(body));
    paged.push(...body.data);
    cursor = body.next_cursor;
  } while (cursor);
  assert.deepEqual(paged.map((e) => e.id), events.map((e) => e.id), "pages and the export agree");
  return new Set(events.map((e) => (e.details as { user_id: string }).user_id)).size;
}

test("SCIM Groups: 3,000 members added and removed in one request each, set-based, one event each", async () => {
  const p = await scimProject();
  const ids = await manyUsers(p, 3000);
  const group = await expectJson(
    await scim(p, "POST", "/Groups", {
      schemas: [GROUP],
      displayName: "Everyone",
      members: ids.slice(0, 1000).map((value) => ({ value })),
    }),
    201,
  );
  assert.equal((group.members as unknown[]).length, 1000);
  const added = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "add", path: "members", value: ids.map((value) => ({ value })) }),
    ),
    200,
  );
  assert.deepEqual(memberIds(added), [...ids].sort());
  assert.equal(await eventCount(p, "organization.member_added", group.id as string), 3000);
  const removed = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "remove", path: "members", value: ids.slice(0, 1500).map((value) => ({ value })) }),
    ),
    200,
  );
  assert.deepEqual(memberIds(removed), ids.slice(1500).sort());
  assert.equal(await eventCount(p, "organization.member_removed", group.id as string), 1500);
  // Each member added got a row the admin API reads.
  const member = await http(
    `/api/v1/projects/${p.project.id}/organizations/${group.id}/members/${ids[2999]}`,
    {
      headers: { authorization: `Bearer ${p.token}` },
    },
  );
  assert.equal(member.status, 200, await member.text());

  // Past the cap: 400 tooMany, nothing changed.
  const tooMany = Array.from({ length: 10_001 }, () => ({ value: ids[0] }));
  await expectScimError(
    await scim(p, "PATCH", `/Groups/${group.id}`, patch({ op: "add", path: "members", value: tooMany })),
    400,
    "tooMany",
  );
  // Each operation visits the 1,500 members once: 600 of them are within the work a PATCH may do, 1,000 not.
  const noop = { op: "remove", path: 'members[value eq "nobody"]' };
  await expectJson(await scim(p, "PATCH", `/Groups/${group.id}`, patch(...Array(600).fill(noop))), 200);
  await expectScimError(
    await scim(p, "PATCH", `/Groups/${group.id}`, patch(...Array(1000).fill(noop))),
    400,
    "tooMany",
  );
  const still = await expectJson(await scim(p, "GET", `/Groups/${group.id}`), 200);
  assert.deepEqual(memberIds(still), ids.slice(1500).sort());
});

test("SCIM Groups: an existing member's value is immutable (add or replace through a filter)", async () => {
  const p = await scimProject();
  const [ann, bob, cid] = [await user(p, "Ann"), await user(p, "Bob"), await user(p, "Cid")];
  const group = await expectJson(
    await scim(p, "POST", "/Groups", {
      schemas: [GROUP],
      displayName: "Crew",
      members: [{ value: ann.id }, { value: bob.id }],
    }),
    201,
  );
  for (
    const op of [
      { op: "add", path: "members[value pr].value", value: cid.id },
      { op: "replace", path: "members[value pr].value", value: cid.id },
      { op: "add", path: `members[value eq "${ann.id}"]`, value: { value: cid.id } },
      { op: "replace", path: `members[value eq "${ann.id}"]`, value: { value: cid.id } },
    ]
  ) {
    await expectScimError(await scim(p, "PATCH", `/Groups/${group.id}`, patch(op)), 400, "mutability");
  }
  const still = await expectJson(await scim(p, "GET", `/Groups/${group.id}`), 200);
  assert.deepEqual(memberIds(still), [ann.id, bob.id].sort());
  // A filter matching nothing adds a member, as before.
  const added = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Groups/${group.id}`,
      patch({ op: "add", path: `members[value eq "${cid.id}"]`, value: {} }),
    ),
    200,
  );
  assert.deepEqual(memberIds(added), [ann.id, bob.id, cid.id].sort());
});

test("SCIM Groups: DELETE compares If-Match under the organization's lock (a racing PATCH wins or it does)", async () => {
  const p = await scimProject();
  const users = [await user(p, "Ann"), await user(p, "Bob")];
  for (let round = 0; round < 5; round++) {
    const group = await expectJson(
      await scim(p, "POST", "/Groups", { schemas: [GROUP], displayName: `Race ${round}` }),
      201,
    );
    const etag = (group.meta as { version: string }).version;
    const [patched, deleted] = await Promise.all([
      scim(
        p,
        "PATCH",
        `/Groups/${group.id}`,
        patch({ op: "add", path: "members", value: users.map((u) => ({ value: u.id })) }),
        { "if-match": etag },
      ),
      scim(p, "DELETE", `/Groups/${group.id}`, undefined, { "if-match": etag }),
    ]);
    await patched.body?.cancel();
    await deleted.body?.cancel();
    const statuses = [patched.status, deleted.status];
    assert.ok(
      [[200, 412], [412, 204], [404, 204]].some((s) => s[0] === statuses[0] && s[1] === statuses[1]),
      `PATCH and DELETE with the same version: ${statuses}`,
    );
  }
  const stale = await expectJson(
    await scim(p, "POST", "/Groups", { schemas: [GROUP], displayName: "Stale" }),
    201,
  );
  await expectScimError(
    await scim(p, "DELETE", `/Groups/${stale.id}`, undefined, { "if-match": 'W/"other"' }),
    412,
  );
  assert.equal((await scim(p, "DELETE", `/Groups/${stale.id}`)).status, 204);
});
