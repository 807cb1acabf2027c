/**
 * The generated tables of the guides are what `deno task docs-gen` writes: docs/api.md's and docs/authzen.md's
 * operations with what each needs (from openapi/openapi.json's `x-permission`, `x-permission-scope` and
 * `x-also-needs`), and docs/model-permissions.md's default resources (from domain/authz/defaults.ts). Reads files
 * only: no service, no database.
 */
import assert from "node:assert/strict";
import { blocks, GENERATED_DOCS, needs, readDocument, rewrite } from "../routes/docs_gen.ts";
import { DEFAULTS } from "../domain/authz/defaults.ts";

const read = (path: string) => Deno.readTextFile(new URL(`../${path}`, import.meta.url));

Deno.test("the guides' generated tables are up to date (run `deno task docs-gen`)", async () => {
  const doc = await readDocument();
  for (const path of GENERATED_DOCS) {
    const source = await read(path);
    assert.ok(blocks(source) > 0, `${path} has no generated table`);
    assert.equal(source, rewrite(source, doc), `${path} drifted: run \`deno task docs-gen\``);
  }
});

Deno.test("every guarded operation's permission is in docs/api.md's table, on its operation's row", async () => {
  const doc = await readDocument();
  const source = await read("docs/api.md");
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!("x-permission" in op)) continue;
      const row = source.split("\n").find((l) => l.includes(`| \`${method.toUpperCase()} ${path}\` `));
      assert.ok(row, `${method} ${path} has a row`);
      assert.ok(row.includes(needs(op)), `${method} ${path}: ${row}`);
      if (op["x-permission"]) assert.ok(row.includes(`\`${op["x-permission"]}\``), row);
    }
  }
});

Deno.test("docs/model-permissions.md lists every permission of every default resource", async () => {
  const source = await read("docs/model-permissions.md");
  for (const d of DEFAULTS) {
    const actions: readonly string[] = [...d.actions, ...("systemActions" in d ? d.systemActions : [])];
    for (const a of actions) assert.ok(source.includes(`\`${d.code}:${a}\``), `${d.code}:${a}`);
  }
});

Deno.test("a stale table is found", () => {
  const doc = {
    paths: {
      "/x": { get: { summary: "X", "x-permission": "users:read", "x-permission-scope": "own" } },
    },
  };
  const stale = "<!-- generated: operations (deno task docs-gen) -->\n\n| old |\n\n" +
    "<!-- end generated: operations -->\n";
  const fresh = rewrite(stale, doc);
  assert.notEqual(fresh, stale);
  assert.match(fresh, /\| X +\| `GET \/x` +\| `users:read` +\|/);
  assert.equal(rewrite(fresh, doc), fresh);
});
