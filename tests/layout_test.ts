/**
 * The house's rules, read from the code's own imports (docs/architecture.md): three floors with one-way arrows,
 * capability folders in a fixed order on the domain floor, no import circle, no crowded folder, and pages that
 * import no other page. Pure: reads files, needs no database.
 */
import assert from "node:assert/strict";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const SOURCE = ["routes", "domain", "db", "openapi", "telemetry"];
const TOP = ["main.ts", "service.ts", "jobs.ts", "config.ts", "log.ts", "heap.ts"];

/** The domain's capabilities, from the ground up: a folder imports only folders at or below its own. */
export const CAPABILITIES = [
  "shared",
  "audit",
  "outbound",
  "keys",
  "console",
  "authz",
  "events",
  "projects",
  "accounts",
  "organizations",
  "oauth",
  "factors",
  "signin",
  "signup",
  "federation",
  "provisioning",
  "system",
] as const;

function* walk(dir: string): Generator<string> {
  for (const entry of Deno.readDirSync(join(ROOT, dir))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) {
      if (!["assets", "migrations", "node_modules", "generator"].includes(entry.name)) yield* walk(path);
    } else if (/\.tsx?$/.test(entry.name)) yield path;
  }
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*["'](\.{1,2}\/[^"'?]+)["']|import\(\s*["'](\.{1,2}\/[^"'?]+)["']\s*\)/g;

/** Every source file with the files of this tree it imports (relative specifiers only). */
function graph(): Map<string, string[]> {
  const files = [...SOURCE.flatMap((d) => [...walk(d)]), ...TOP];
  const out = new Map<string, string[]>();
  for (const file of files) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    const deps: string[] = [];
    for (const m of text.matchAll(IMPORT)) {
      const target = normalize(join(dirname(file), m[1] ?? m[2]));
      if (!target.startsWith("..") && /\.tsx?$/.test(target)) deps.push(target);
    }
    out.set(file, deps);
  }
  return out;
}

const floorOf = (file: string) => file.split("/")[0];
const capabilityOf = (file: string) => file.startsWith("domain/") ? file.split("/")[1] : null;

Deno.test("the floors' arrows point one way: routes → domain → db → openapi, never back", () => {
  const below: Record<string, string[]> = {
    routes: ["routes", "domain", "openapi", "telemetry"],
    domain: ["domain", "db", "openapi", "telemetry"],
    db: ["db", "openapi"],
    openapi: ["openapi"],
    telemetry: ["telemetry", "db"],
  };
  const wrong: string[] = [];
  for (const [file, deps] of graph()) {
    const allowed = below[floorOf(file)];
    if (!allowed) continue; // the top-level files compose the floors
    for (const dep of deps) {
      const floor = floorOf(dep);
      if (TOP.includes(dep) && !["config.ts", "log.ts", "heap.ts"].includes(dep)) {
        wrong.push(`${file} → ${dep}`);
      } else if (!TOP.includes(dep) && !allowed.includes(floor)) wrong.push(`${file} → ${dep}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("the domain's capability folders import only those at or below them", () => {
  const rank = new Map<string, number>(CAPABILITIES.map((c, i) => [c, i]));
  const folders = new Set([...walk("domain")].map((f) => f.split("/")[1]));
  assert.deepEqual(
    [...folders].filter((f) => !rank.has(f)),
    [],
    "a new domain folder gets a place in the order",
  );
  const wrong: string[] = [];
  for (const [file, deps] of graph()) {
    const from = capabilityOf(file);
    if (from === null) continue;
    for (const dep of deps) {
      const to = capabilityOf(dep);
      if (to !== null && rank.get(to)! > rank.get(from)!) wrong.push(`${file} → ${dep}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("no import circle among the source files", () => {
  const g = graph();
  const state = new Map<string, "open" | "done">();
  const circles: string[] = [];
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === "done") return;
    if (state.get(file) === "open") {
      circles.push([...path.slice(path.indexOf(file)), file].join(" → "));
      return;
    }
    state.set(file, "open");
    for (const dep of g.get(file) ?? []) visit(dep, [...path, file]);
    state.set(file, "done");
  };
  for (const file of g.keys()) visit(file, []);
  assert.deepEqual(circles, []);
});

Deno.test("no folder of the source holds more than 20 files", () => {
  const counts = new Map<string, number>();
  for (const file of SOURCE.flatMap((d) => [...walk(d)])) {
    counts.set(dirname(file), (counts.get(dirname(file)) ?? 0) + 1);
  }
  assert.deepEqual([...counts].filter(([, n]) => n > 20), []);
});

Deno.test("a page imports no other page: only the pages' kit, views, flow and the shared plumbing", () => {
  const wrong: string[] = [];
  for (const [file, deps] of graph()) {
    if (!file.startsWith("routes/pages/")) continue;
    for (const dep of deps) {
      if (!dep.startsWith("routes/pages/")) continue;
      const kind = relative("routes/pages", dep).split("/")[0];
      const ok = kind === "kit" || (kind === "views" && !file.includes("/kit/")) ||
        (dep === "routes/pages/flow.ts" && !file.includes("/kit/") && !file.includes("/views/"));
      if (!ok) wrong.push(`${file} → ${dep}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("the routes read a request's variables with c.get: Hono's c.var copies them all into a new object", () => {
  const wrong: string[] = [];
  for (const file of [...walk("routes"), "service.ts"]) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    if (/\bc\.var\b/.test(text)) wrong.push(file);
  }
  assert.deepEqual(wrong, []);
});
