/**
 * Unit tests of routes/api/unknown_fields.ts: which known field an unknown one was probably meant to be, the
 * distance behind it, and the check that a JSON body's schema refuses unknown fields at every level.
 */
import assert from "node:assert/strict";
import { z } from "@hono/zod-openapi";
import { editDistance, openPlaces, suggestField, unknownFieldIssue } from "../routes/api/unknown_fields.ts";
import { extensibleJsonBody, jsonBody } from "../routes/api/responses.ts";
import { zodDetails } from "../routes/errors.ts";

const PROJECT = [
  "name",
  "description",
  "redirect_uris",
  "post_logout_redirect_uris",
  "mfa",
  "is_active",
  "require_verified_email",
];
const ROLE = ["code", "name", "description", "permission_ids"];

Deno.test("editDistance counts insertions, deletions, substitutions and adjacent transpositions once", () => {
  assert.equal(editDistance("name", "name", 2), 0);
  assert.equal(editDistance("redirect_uri", "redirect_uris", 2), 1);
  assert.equal(editDistance("nmae", "name", 2), 1);
  assert.equal(editDistance("nme", "name", 2), 1);
  assert.equal(editDistance("descripton", "description", 2), 1);
  assert.equal(editDistance("kitten", "sitting", 5), 3);
  assert.equal(editDistance("ca", "abc", 5), 3, "optimal string alignment: no edit of a transposed pair");
  assert.equal(editDistance("a".repeat(50), "b", 2), 3, "stops past the limit");
  assert.equal(editDistance("abcdef", "uvwxyz", 2), 3);
});

Deno.test("suggestField: a near spelling, a plural, a stem or another case of a known field", () => {
  assert.equal(suggestField("redirect_uri", PROJECT), "redirect_uris");
  assert.equal(suggestField("redirectUris", PROJECT), "redirect_uris");
  assert.equal(suggestField("Redirect-URIs", PROJECT), "redirect_uris");
  assert.equal(suggestField("post_logout_redirect_uri", PROJECT), "post_logout_redirect_uris");
  assert.equal(suggestField("nmae", PROJECT), "name");
  assert.equal(suggestField("isActive", PROJECT), "is_active");
  assert.equal(suggestField("active", PROJECT), null, "four edits from is_active");
  assert.equal(suggestField("redirect", PROJECT), "redirect_uris");
  assert.equal(suggestField("permissions", ROLE), "permission_ids");
  assert.equal(suggestField("permission", ROLE), "permission_ids");
  assert.equal(suggestField("descripton", ROLE), "description");
  assert.equal(suggestField("permission_ids", ["name", "code", "permissions"]), "permissions");
  assert.equal(suggestField("role", ["display_name", "role_id", "email"]), "role_id");
});

Deno.test("suggestField: nothing when no known field is close", () => {
  assert.equal(suggestField("colour", PROJECT), null);
  assert.equal(suggestField("foo", ROLE), null);
  assert.equal(suggestField("x", ["id", "name"]), null, "one or two letters are never close");
  assert.equal(suggestField("ip", ["id", "name"]), null);
  assert.equal(suggestField("perm", ROLE), null, "a stem of four letters, but no field starts with perm_");
  assert.equal(suggestField("__proto__", ROLE), null);
  assert.equal(suggestField("name".repeat(100), ROLE), null, "a long key is never compared");
  assert.equal(suggestField("name", []), null);
});

Deno.test("suggestField: the closest field wins, then the one declared first", () => {
  assert.equal(suggestField("redirect_ur", ["redirect_urls", "redirect_uri"]), "redirect_uri");
  assert.equal(suggestField("cod", ["code", "cot"]), "code", "both one edit away: the first declared");
});

Deno.test("unknownFieldIssue says unknown field, with the field meant when there is one", () => {
  assert.equal(unknownFieldIssue("redirect_uri", PROJECT), "unknown field; did you mean `redirect_uris`?");
  assert.equal(unknownFieldIssue("colour", PROJECT), "unknown field");
});

Deno.test("openPlaces finds every object of a body that takes unknown fields, at any depth", () => {
  const strict = z.strictObject({
    name: z.string(),
    items: z.array(z.strictObject({ id: z.string() })).optional(),
    nested: z.strictObject({ a: z.number().nullable() }).nullable().optional(),
  });
  assert.deepEqual(openPlaces(strict), []);
  assert.deepEqual(openPlaces(strict.extend({ more: z.string() })), [], "extend keeps it strict");
  const open = z.object({
    name: z.string(),
    items: z.array(z.object({ id: z.string() })),
    either: z.union([z.strictObject({ a: z.string() }), z.object({ b: z.string() })]),
    tags: z.record(z.string(), z.string()).optional(),
    piped: z.string().transform((s) => s.length).pipe(z.number()),
  });
  assert.deepEqual(openPlaces(open), ["", "items.*", "either", "tags"]);
  assert.deepEqual(openPlaces(z.strictObject({ inner: z.looseObject({}) }).superRefine(() => {})), ["inner"]);
});

Deno.test("jsonBody refuses, at startup, a schema that would take unknown fields; extensibleJsonBody does not", () => {
  assert.throws(
    () => jsonBody(z.strictObject({ list: z.array(z.object({ id: z.string() })) })),
    /must refuse unknown fields \(z\.strictObject\); open: `list\.\*`/,
  );
  assert.throws(() => jsonBody(z.object({ id: z.string() })), /open: the body/);
  const body = jsonBody(z.strictObject({ id: z.string() }));
  assert.equal(body.required, true);
  assert.ok(extensibleJsonBody(z.object({ id: z.string() })).content["application/json"].schema);
});

Deno.test("a body's parse names the field meant for each unknown key of an object", async () => {
  const schema = z.strictObject({
    name: z.string(),
    permission_ids: z.array(z.string()).optional(),
    objects: z.array(z.strictObject({ id: z.string(), parent_id: z.string().optional() })).optional(),
  });
  const { content } = jsonBody(schema);
  const result = await content["application/json"].schema.safeParseAsync({
    name: "x",
    permissions: [],
    colour: "red",
    objects: [{ id: "a", parnt_id: "b" }],
  });
  assert.equal(result.success, false);
  assert.deepEqual(zodDetails(result.error!.issues as Parameters<typeof zodDetails>[0]), [
    { field: "objects.0.parnt_id", issue: "unknown field; did you mean `parent_id`?" },
    { field: "permissions", issue: "unknown field; did you mean `permission_ids`?" },
    { field: "colour", issue: "unknown field" },
  ]);
});
