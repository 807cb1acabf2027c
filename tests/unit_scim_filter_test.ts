/** The SCIM filter and PATCH path parser (RFC 7644 §3.4.2.2, §3.5.2), the filter's SQL, and the PATCH engine. */
import assert from "node:assert/strict";
import { type Filter, parseFilter, parsePatchPath } from "../domain/provisioning/scim_filter.ts";
import { ScimError } from "../domain/provisioning/scim_errors.ts";
import { conditionOf, listQuery } from "../domain/provisioning/scim_query.ts";
import {
  applyPatch,
  MAX_MEMBER_CHANGES,
  MAX_PATCH_WORK,
  parsePatch,
} from "../domain/provisioning/scim_patch.ts";
import { MAX_REMEMBERED_TEXT, rememberedSummaries, statementSummary } from "../telemetry/statements.ts";
import { whereOf } from "../db/provisioning/scim_sql.ts";
import { USER_TABLE } from "../db/provisioning/scim_users.ts";
import { GROUP_TABLE } from "../db/provisioning/scim_groups.ts";

const eq = (path: string, value: unknown) => ({ op: "eq", path, value });

function refused(fn: () => unknown, status: number, scimType: string): void {
  assert.throws(fn, (err) => err instanceof ScimError && err.status === status && err.scimType === scimType);
}

Deno.test("parseFilter reads the RFC's examples", () => {
  assert.deepEqual(parseFilter('userName Eq "john"'), eq("userName", "john"));
  assert.deepEqual(parseFilter("title pr"), { op: "pr", path: "title" });
  assert.deepEqual(
    parseFilter('urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"'),
    { op: "sw", path: "urn:ietf:params:scim:schemas:core:2.0:User:userName", value: "J" },
  );
  assert.deepEqual(parseFilter('meta.lastModified gt "2011-05-13T04:42:34Z"').op, "gt");
  assert.deepEqual(parseFilter("active eq TRUE"), eq("active", true));
  assert.deepEqual(parseFilter("x eq null"), eq("x", null));
  assert.deepEqual(parseFilter("x eq -1.5e2"), eq("x", -150));
  assert.deepEqual(
    parseFilter('userType eq "Employee" and (emails co "example.com" or emails.value co "example.org")'),
    {
      op: "and",
      left: eq("userType", "Employee"),
      right: {
        op: "or",
        left: { op: "co", path: "emails", value: "example.com" },
        right: { op: "co", path: "emails.value", value: "example.org" },
      },
    },
  );
  assert.deepEqual(parseFilter('emails[type eq "work" and value co "@example.com"]'), {
    op: "[]",
    path: "emails",
    filter: {
      op: "and",
      left: eq("type", "work"),
      right: { op: "co", path: "value", value: "@example.com" },
    },
  });
  assert.deepEqual(parseFilter('not (userName eq "x")'), { op: "not", filter: eq("userName", "x") });
});

Deno.test("parseFilter: and binds tighter than or, both from the left; JSON string escapes", () => {
  const f = parseFilter("a eq 1 or b eq 2 and c eq 3 or d eq 4");
  assert.deepEqual(f, {
    op: "or",
    left: { op: "or", left: eq("a", 1), right: { op: "and", left: eq("b", 2), right: eq("c", 3) } },
    right: eq("d", 4),
  } as Filter);
  assert.deepEqual(parseFilter('x eq "a\\\\b\\"c\\u00e9"'), eq("x", 'a\\b"cé'));
});

Deno.test("parseFilter refuses malformed filters with invalidFilter", () => {
  for (
    const bad of [
      "",
      "   ",
      "userName",
      "userName eq",
      'userName zz "x"',
      '(userName eq "x"',
      'userName eq "x")',
      "userName eq 'x'",
      'userName eq "x" and',
      'not userName eq "x"',
      'userName eq "unterminated',
      'emails[type eq "work"',
      'userName eq "x" "y"',
      "userName eq bare",
      '1 eq "x"',
      'userName eq "a\u0001"',
      "(".repeat(33) + "a pr" + ")".repeat(33),
      "a pr or ".repeat(600) + "a pr",
    ]
  ) {
    refused(() => parseFilter(bad), 400, "invalidFilter");
  }
  assert.doesNotThrow(() => parseFilter("(".repeat(32) + "a pr" + ")".repeat(32)));
});

Deno.test("parsePatchPath reads Entra ID's and Okta's paths", () => {
  assert.deepEqual(parsePatchPath("name.givenName"), { path: "name.givenName" });
  assert.deepEqual(parsePatchPath('emails[type eq "work"].value'), {
    path: "emails",
    filter: eq("type", "work"),
    sub: "value",
  });
  assert.deepEqual(parsePatchPath('members[value eq "2819c223-7f76-453a-919d-413861904646"]'), {
    path: "members",
    filter: eq("value", "2819c223-7f76-453a-919d-413861904646"),
  });
  for (const bad of ["", "a b", 'emails[type eq "work"', 'emails[type eq "work"]value', "emails[]", "9x"]) {
    refused(() => parsePatchPath(bad), 400, "invalidPath");
  }
});

Deno.test("a filter becomes SQL whose values are parameters, over the whitelist only", () => {
  const params: unknown[] = ["project"];
  const sql = whereOf(
    conditionOf("User", parseFilter(`userName eq "A'; drop table users; --" or externalId co "50%_"`)),
    USER_TABLE,
    params,
  );
  assert.equal(
    sql,
    `((lower(u.email) collate "C" = $2::text collate "C") or (u.external_user_id like $3::text))`,
  );
  assert.deepEqual(params, ["project", "a'; drop table users; --", "%50\\%\\_%"]);
  const group: unknown[] = [];
  assert.equal(
    whereOf(conditionOf("Group", parseFilter('not (members[value eq "u1"])')), GROUP_TABLE, group),
    '(not coalesce(exists (select 1 from organization_members m\n        join users mu on mu.project_id = m.project_id and mu.id = m.user_id\n        where m.project_id = o.project_id and m.organization_id = o.id and (m.user_id collate "C" = $1::text collate "C")), false))',
  );
  refused(() => conditionOf("User", parseFilter('nickName eq "x"')), 400, "invalidPath");
  refused(() => conditionOf("User", parseFilter('password eq "x"')), 400, "invalidFilter");
  refused(() => conditionOf("User", parseFilter("active co true")), 400, "invalidFilter");
  refused(() => conditionOf("User", parseFilter('meta.created eq "soon"')), 400, "invalidFilter");
  refused(() => conditionOf("Group", parseFilter('members[value eq "x"] and emails pr')), 400, "invalidPath");
});

Deno.test("listQuery: startIndex from 1, count capped at 200 and floored at 0, sortOrder checked", () => {
  const q = listQuery("User", { startIndex: "0", count: "1000" });
  assert.deepEqual([q.startIndex, q.offset, q.count], [1, 0, 200]);
  assert.equal(listQuery("User", { count: "-5" }).count, 0);
  assert.equal(listQuery("User", {}).count, 100);
  assert.deepEqual(listQuery("User", { sortBy: "NAME.familyName", sortOrder: "Descending" }).sort, {
    column: "familyName",
    descending: true,
  });
  refused(() => listQuery("User", { sortOrder: "up", sortBy: "userName" }), 400, "invalidValue");
  refused(() => listQuery("User", { startIndex: "1.5" }), 400, "invalidValue");
});

const PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const user = () => ({
  schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
  id: "u1",
  userName: "ann@example.com",
  name: { givenName: "Ann", familyName: "Smith" },
  displayName: "Ann",
  emails: [{ value: "ann@example.com", type: "work", primary: true }],
  active: true,
});
const ops = (...operations: unknown[]) => ({ schemas: [PATCH], Operations: operations });

Deno.test("applyPatch: Entra ID's and Okta's operations, names in any case", () => {
  assert.equal(
    applyPatch("User", user(), ops({ op: "Replace", path: "ACTIVE", value: "False" })).active,
    "False",
  );
  assert.equal(applyPatch("User", user(), ops({ op: "replace", value: { Active: false } })).active, false);
  const mail = applyPatch(
    "User",
    user(),
    ops({ op: "Replace", path: 'emails[type eq "work"].value', value: "b@x.org" }),
  );
  assert.deepEqual(mail.emails, [{ value: "b@x.org", type: "work", primary: true }]);
  const names = applyPatch(
    "User",
    user(),
    ops({ op: "add", value: { "name.familyName": "Jones" } }),
  );
  assert.deepEqual(names.name, { givenName: "Ann", familyName: "Jones" });
  const merged = applyPatch(
    "User",
    user(),
    ops({ op: "replace", path: "name", value: { GivenName: "Anne" } }),
  );
  assert.deepEqual(merged.name, { givenName: "Anne", familyName: "Smith" }, "a complex value merges");
  const removed = applyPatch("User", user(), ops({ op: "remove", path: "name.familyName" }));
  assert.deepEqual(removed.name, { givenName: "Ann" });
  const added = applyPatch(
    "User",
    { ...user(), emails: [] },
    ops({ op: "add", path: 'emails[type eq "work"].value', value: "c@x.org" }),
  );
  assert.deepEqual(
    added.emails,
    [{ type: "work", value: "c@x.org" }],
    "add creates the element the filter names",
  );
  const group = { id: "g", displayName: "G", members: [{ value: "a" }, { value: "b" }] };
  assert.deepEqual(
    applyPatch("Group", group, ops({ op: "remove", path: 'members[value eq "a"]' })).members,
    [{ value: "b" }],
  );
  assert.deepEqual(
    applyPatch("Group", group, ops({ op: "Remove", path: "members", value: [{ value: "b" }] })).members,
    [{ value: "a" }],
  );
  assert.deepEqual(
    applyPatch("Group", group, ops({ op: "add", path: "members", value: [{ value: "b" }, { value: "c" }] }))
      .members,
    [{ value: "a" }, { value: "b" }, { value: "c" }],
  );
  assert.deepEqual(applyPatch("Group", group, ops({ op: "remove", path: "members" })).members, undefined);
  assert.deepEqual(group.members.length, 2, "the current representation is not changed");
});

Deno.test("applyPatch refuses with the RFC's scimType", () => {
  refused(() => applyPatch("User", user(), { Operations: [] }), 400, "invalidSyntax");
  refused(() => applyPatch("User", user(), ops()), 400, "invalidSyntax");
  refused(() => applyPatch("User", user(), ops({ op: "copy", path: "active" })), 400, "invalidSyntax");
  refused(() => applyPatch("User", user(), ops({ op: "add", path: "active" })), 400, "invalidSyntax");
  refused(() => applyPatch("User", user(), ops({ op: "add", value: "x" })), 400, "invalidSyntax");
  refused(() => applyPatch("User", user(), ops({ op: "remove" })), 400, "noTarget");
  refused(
    () => applyPatch("User", user(), ops({ op: "replace", path: "title", value: "x" })),
    400,
    "invalidPath",
  );
  refused(
    () =>
      applyPatch("User", user(), ops({ op: "replace", path: 'emails[type eq "home"].value', value: "x" })),
    400,
    "noTarget",
  );
  refused(
    () => applyPatch("User", user(), ops({ op: "replace", path: "id", value: "u2" })),
    400,
    "mutability",
  );
  refused(() => applyPatch("User", user(), ops({ op: "remove", path: "meta" })), 400, "mutability");
  refused(
    () => applyPatch("User", user(), ops({ op: "replace", path: "name.givenName[x pr]" })),
    400,
    "invalidPath",
  );
  assert.doesNotThrow(() => applyPatch("User", user(), ops({ op: "replace", path: "id", value: "u1" })));
});

const PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const patchOf = (...ops: unknown[]) => ({ schemas: [PATCH_OP], Operations: ops });
const group = (n: number, from = 0) => ({
  schemas: ["urn:ietf:params:scim:schemas:core:2.0:Group"],
  id: "g",
  displayName: "G",
  members: Array.from(
    { length: n },
    (_, i) => ({ value: `u${from + i}`, display: `U ${from + i}`, type: "User" }),
  ),
});
const valuesOf = (doc: Record<string, unknown>) => (doc.members as { value: string }[]).map((m) => m.value);

Deno.test("applyPatch: 10,000 members added and 10,000 removed in one operation each, exactly", () => {
  const current = group(10_000);
  // Half already members (skipped), half new, repeats once each; then the first 10,000 removed by value.
  const adds = Array.from({ length: 10_000 }, (_, i) => ({ value: `u${5_000 + i}` }));
  const added = applyPatch("Group", current, patchOf({ op: "add", path: "members", value: adds }));
  assert.equal(valuesOf(added).length, 15_000);
  assert.deepEqual(new Set(valuesOf(added)).size, 15_000);
  const drops = Array.from({ length: 10_000 }, (_, i) => ({ value: `u${i}` }));
  const removed = applyPatch("Group", added, patchOf({ op: "remove", path: "members", value: drops }));
  assert.deepEqual(valuesOf(removed), Array.from({ length: 5_000 }, (_, i) => `u${10_000 + i}`));
  // A filter over every member: each element visited once.
  const kept = applyPatch("Group", current, patchOf({ op: "remove", path: 'members[value sw "u1"]' }));
  assert.equal(valuesOf(kept).length, 10_000 - 1 - 10 - 100 - 1_000);
});

Deno.test("parsePatch sizes a PATCH before it is applied; applyPatch stops past MAX_PATCH_WORK", () => {
  const emails = (n: number) => Array.from({ length: n }, () => ({}));
  refused(
    () => parsePatch("User", patchOf({ op: "add", path: "emails", value: emails(100_000) })),
    400,
    "tooMany",
  );
  refused(
    () => parsePatch("User", patchOf({ op: "add", path: "emails", value: emails(11) })),
    400,
    "tooMany",
  );
  refused(
    () => parsePatch("User", patchOf({ op: "replace", value: { emails: emails(11) } })),
    400,
    "tooMany",
  );
  assert.equal(parsePatch("User", patchOf({ op: "add", path: "emails", value: emails(10) })).length, 1);
  const members = (n: number) => Array.from({ length: n }, (_, i) => ({ value: `u${i}` }));
  refused(
    () =>
      parsePatch("Group", patchOf({ op: "add", path: "members", value: members(MAX_MEMBER_CHANGES + 1) })),
    400,
    "tooMany",
  );
  // In all, across operations.
  const half = { op: "add", path: "members", value: members(MAX_MEMBER_CHANGES / 2 + 1) };
  refused(() => parsePatch("Group", patchOf(half, half)), 400, "tooMany");
  // The work: operations × the list each visits.
  const big = group(2_000);
  const noop = { op: "remove", path: 'members[value eq "nobody"]' };
  const fits = Math.floor(MAX_PATCH_WORK / 2_000);
  assert.equal(valuesOf(applyPatch("Group", big, patchOf(...Array(fits).fill(noop)))).length, 2_000);
  const over = patchOf(...Array(Math.min(1000, fits + 1)).fill(noop));
  if (fits + 1 <= 1000) refused(() => applyPatch("Group", big, over), 400, "tooMany");
  refused(() => applyPatch("Group", group(1_001), patchOf(...Array(1000).fill(noop))), 400, "tooMany");
});

Deno.test("applyPatch: an existing member's value is immutable; a new member's is given", () => {
  const current = group(3);
  for (
    const op of [
      { op: "add", path: "members[value pr].value", value: "u9" },
      { op: "replace", path: "members[value pr].value", value: "u9" },
      { op: "add", path: 'members[value eq "u1"]', value: { value: "u9" } },
      { op: "replace", path: 'members[value eq "u1"]', value: { value: "u9" } },
    ]
  ) {
    refused(() => applyPatch("Group", current, patchOf(op)), 400, "mutability");
  }
  const added = applyPatch(
    "Group",
    current,
    patchOf({ op: "add", path: 'members[value eq "u9"]', value: {} }),
  );
  assert.deepEqual(valuesOf(added), ["u0", "u1", "u2", "u9"]);
});

Deno.test("listQuery: startIndex past 2^31 - 1 is an offset the database takes (an empty page); strict dates", () => {
  for (const startIndex of ["2147483648", "2147483649", "999999999999999"]) {
    const q = listQuery("User", { startIndex });
    assert.equal(q.offset, 2 ** 31 - 1);
    assert.equal(q.startIndex, Number(startIndex));
  }
  const date = (d: string) => listQuery("User", { filter: `meta.created gt "${d}"` });
  for (
    const bad of [
      "0000-01-01T00:00:00Z",
      "2026-02-30T00:00:00Z",
      "2025-02-29T00:00:00Z",
      "2026-04-31T00:00:00Z",
      "2026-00-10T00:00:00Z",
      "2026-01-01T23:60:00Z",
      "2026-01-01",
      "+002026-01-01T00:00:00Z",
      "9999-12-31T23:59:59-01:00",
    ]
  ) {
    refused(() => date(bad), 400, "invalidFilter");
  }
  assert.equal(
    (date("2024-02-29T10:00:00+02:00").cond as { value: string }).value,
    "2024-02-29T08:00:00.000Z",
  );
  assert.equal((date("0001-01-01T00:00:00Z").cond as { value: string }).value, "0001-01-01T00:00:00.000Z");
});

Deno.test("statementSummary remembers short texts only: a long SCIM filter's SQL is not kept", () => {
  const before = rememberedSummaries();
  const long = `select u.id from users u where ${"u.email = $1 or ".repeat(MAX_REMEMBERED_TEXT / 10)}true`;
  assert.equal(statementSummary(long), "select users");
  assert.equal(statementSummary(long + " "), "select users");
  assert.equal(rememberedSummaries(), before);
  const short = `select 1 from signing_keys where id = $1 -- ${crypto.randomUUID()}`;
  assert.equal(statementSummary(short), "select signing_keys");
  assert.equal(rememberedSummaries(), before + 1);
});
