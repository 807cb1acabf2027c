/**
 * A user import's body measured before its parse (domain/provisioning/import_scan.ts): users counted as the
 * parse would see them, strings (and their escapes) skipped, pathological bodies refused. No database.
 */
import assert from "node:assert/strict";
import { IMPORT_SCAN, scanJson, scanJsonLines } from "../domain/provisioning/import_scan.ts";
import { IMPORT_MAX_USERS } from "../openapi/users.ts";

const user = (i: number) => JSON.stringify({ email: `u${i}@example.com`, properties: { a: [1, 2], b: "x" } });
const many = (n: number) => Array.from({ length: n }, (_, i) => user(i));

Deno.test("the scan's limit of users is the API's", () => {
  assert.equal(IMPORT_SCAN.users, IMPORT_MAX_USERS);
});

Deno.test("JSON: 10,000 users pass, 10,001 are refused, in an array or in {users}", () => {
  assert.equal(scanJson("[" + many(10_000).join(",") + "]"), null);
  assert.equal(scanJson(`{"users": [${many(10_000).join(", ")}], "firebase": {"rounds": 8}}`), null);
  assert.match(scanJson("[" + many(10_001).join(",") + "]")!.issue, /at most 10000 users/);
  assert.match(scanJson(`{"users":[${many(10_001).join(",")}]}`)!.issue, /at most 10000 users/);
  assert.equal(scanJson("[]"), null);
  assert.equal(scanJson(" [ 1 , 2 ] "), null);
});

Deno.test("JSON: brackets, commas and colons inside strings (with escapes) are not counted", () => {
  const tricky = JSON.stringify({ email: 'a"],[,,:{}\\' + ",".repeat(20_000) });
  assert.equal(scanJson("[" + tricky + "]"), null);
  assert.equal(scanJson("[" + Array(10_000).fill('"a,b,\\"c,d"').join(",") + "]"), null);
});

Deno.test("JSON: a body of millions of small values is refused before the parse", () => {
  // 16 MiB of `[[],[],…]`: some 5.6 million arrays.
  const arrays = "[" + "[],".repeat(5_000_000) + "[]]";
  assert.match(scanJson(arrays)!.issue, /at most 10000 users|JSON values/);
  // The same inside a hundred users of under 64 KiB each: few users, more values than any import holds.
  const one = '{"properties": {"a": [' + "[],".repeat(20_000) + "[]]}}";
  assert.match(scanJson(`{"users": [${Array(100).fill(one).join(",")}]}`)!.issue, /JSON values/);
  assert.match(scanJson("[" + "[" + "[],".repeat(30_000) + "[]]" + "]")!.issue, /a user is larger/);
  const colons = "[" + Array(9_000).fill("{" + '"a":1,'.repeat(100) + '"a":1}').join(",") + "]";
  assert.match(scanJson(colons)!.issue, /JSON values/);
});

Deno.test("JSON: a user larger than 64 KiB is refused", () => {
  const big = JSON.stringify({ email: "a@example.com", display_name: "x".repeat(IMPORT_SCAN.userBytes) });
  assert.match(scanJson("[" + big + "]")!.issue, /a user is larger than 64 KiB/);
  assert.match(scanJson(`{"users": [${user(1)}, ${big}]}`)!.issue, /a user is larger than 64 KiB/);
  assert.equal(scanJson("[" + JSON.stringify({ display_name: "x".repeat(60_000) }) + "]"), null);
});

Deno.test("JSON lines: non-blank lines counted without splitting, long lines and many values refused", () => {
  assert.equal(scanJsonLines(many(10_000).join("\n")), null);
  assert.equal(scanJsonLines('{"firebase": {}}\n' + many(10_000).join("\r\n") + "\n\n"), null);
  assert.match(scanJsonLines(many(10_002).join("\n"))!.issue, /at most 10000 users/);
  assert.equal(scanJsonLines("\n".repeat(16 * 1024 * 1024 - 1)), null); // blank: no users, and no strings made
  assert.match(
    scanJsonLines(user(1) + "\n" + "x".repeat(IMPORT_SCAN.userBytes + 1))!.issue,
    /line 2 is larger/,
  );
  const values = Array(10_000).fill("[" + "[],".repeat(200) + "[]]").join("\n");
  assert.match(scanJsonLines(values)!.issue, /JSON values/);
});
