/** The published contract: openapi/openapi.json and sdk/ match the routes; /openapi.json and /docs serve. */
import assert from "node:assert/strict";
import { buildOpenApiDocument, OPENAPI_PATH, serialize } from "../routes/document.ts";
import { GENERATED_DIR, generateSdk } from "../openapi/sdk.ts";
import { baseUrl, http, test } from "./helpers.ts";

test("openapi/openapi.json is up to date with the routes (run `deno task openapi`)", async () => {
  const fromRoutes = serialize(buildOpenApiDocument());
  assert.equal(
    await Deno.readTextFile(OPENAPI_PATH),
    fromRoutes,
    "openapi/openapi.json drifted: run `deno task openapi`",
  );
});

test("sdk/src/generated/ is up to date with openapi/openapi.json (run `deno task sdk`)", async () => {
  const out = await Deno.makeTempDir({ prefix: "acs-sdk-" });
  try {
    await generateSdk(out);
    const names = (dir: string) => [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(
      names(GENERATED_DIR),
      names(out),
      "sdk/src/generated/ holds exactly what the generator writes",
    );
    for (const name of names(out)) {
      assert.equal(
        await Deno.readTextFile(`${GENERATED_DIR}/${name}`),
        await Deno.readTextFile(`${out}/${name}`),
        `sdk/src/generated/${name} drifted: run \`deno task sdk\``,
      );
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

test("every operation has an operationId, a tag, a summary and documented errors", () => {
  const doc = buildOpenApiDocument() as {
    openapi: string;
    paths: Record<
      string,
      Record<
        string,
        {
          operationId?: string;
          tags?: string[];
          summary?: string;
          responses: Record<string, unknown>;
          security?: unknown[];
        }
      >
    >;
    components: { securitySchemes: Record<string, unknown> };
  };
  assert.equal(doc.openapi, "3.1.0");
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ["basicAuth", "bearerAuth"]);
  const ids = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.ok(op.operationId, `${where} has an operationId`);
      assert.ok(!ids.has(op.operationId!), `${where}: operationId is unique`);
      ids.add(op.operationId!);
      assert.ok(op.tags?.length, `${where} has a tag`);
      assert.ok(op.summary, `${where} has a summary`);
      if (path.startsWith("/api/")) assert.ok(op.responses["500"], `${where} documents system_error`);
      if (path.startsWith("/api/v1/projects")) {
        assert.deepEqual(op.security, [{ bearerAuth: [] }], `${where} needs a bearer token`);
        assert.ok(op.responses["401"] && op.responses["403"], `${where} documents 401 and 403`);
      }
    }
  }
});

test("GET /openapi.json serves the same document as openapi/openapi.json, with PUBLIC_URL as its server", async () => {
  const res = await http("/openapi.json");
  assert.equal(res.status, 200);
  const { servers: served, ...rest } = await res.json();
  const { servers: written, ...file } = JSON.parse(await Deno.readTextFile(OPENAPI_PATH));
  assert.deepEqual(rest, file);
  assert.deepEqual(served, [{ url: await baseUrl() }], "the running service's PUBLIC_URL");
  assert.deepEqual(written, [{ url: "http://localhost:8000" }], "the file is the same wherever it is made");
});

test("GET /docs serves the API reference with its script from this service, under a strict CSP", async () => {
  const res = await http("/docs");
  assert.equal(res.status, 200);
  const html = await res.text();
  const csp = res.headers.get("content-security-policy") ?? "";
  assert.match(csp, /frame-ancestors 'none'/);
  assert.match(csp, /script-src 'self' 'nonce-/);
  assert.match(html, /<script[^>]+src="\/docs\/scalar\.js"/);
  assert.doesNotMatch(html, /https?:\/\/(cdn|fonts)\./, "no third-party assets");
  assert.match(html, /\/openapi\.json/);
  // Scalar's vendor features that need the internet or a vendor account are off.
  assert.match(html, /"agent":\s*\{\s*"disabled":\s*true\s*\}/);
  assert.match(html, /"mcp":\s*\{\s*"disabled":\s*true\s*\}/);
  assert.match(html, /"showDeveloperTools":\s*"never"/);
  // Every script the page has carries the response's nonce: no inline script runs without it.
  const nonce = /'nonce-([^']+)'/.exec(csp)![1];
  const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
  assert.equal(scripts.length, 2);
  for (const tag of scripts) assert.ok(tag.includes(`nonce="${nonce}"`), tag);
  const scriptSrc = csp.split(";").map((d) => d.trim()).find((d) => d.startsWith("script-src "));
  assert.equal(scriptSrc, `script-src 'self' 'nonce-${nonce}'`);
  const script = await http("/docs/scalar.js");
  assert.equal(script.status, 200);
  assert.match(script.headers.get("content-type") ?? "", /javascript/);
  assert.ok((await script.arrayBuffer()).byteLength > 100_000);
  // A client that does not take gzip gets the script as it is.
  const plain = await http("/docs/scalar.js", { headers: { "accept-encoding": "identity" } });
  assert.equal(plain.headers.get("content-encoding"), null);
  assert.match((await plain.text()).slice(0, 200), /[a-zA-Z(]/);
});

test("GET /healthz and GET /readyz", async () => {
  assert.deepEqual(await (await http("/healthz")).json(), { status: "ok" });
  // Strangers learn that it is ready, nothing more (the checks are for a bearer of METRICS_TOKEN).
  assert.deepEqual(await (await http("/readyz")).json(), { status: "ready" });
});

test("the service's lockfile holds no test-only or SDK-generator package (deno task start installs it whole)", async () => {
  const lock = JSON.parse(await Deno.readTextFile(new URL("../deno.lock", import.meta.url)));
  const packages = Object.keys(lock.npm ?? {}).map((key) => key.replace(/^(@?[^@]+)@.*$/, "$1"));
  const devOnly = ["playwright-core", "oauth4webapi", "standardwebhooks", "openapi-generator-plus"];
  assert.deepEqual(
    packages.filter((name) => devOnly.includes(name) || name.startsWith("@openapi-generator-plus/")),
    [],
    "a test ran or was checked without --lock=tests/deno.lock: restore deno.lock (git checkout deno.lock)",
  );
});

test("no task sets V8 heap flags: the service thread's heap comes from HEAP_YOUNG_GENERATION_MB and HEAP_LIMIT_MB", async () => {
  // Flags would size only the idle main thread (the service runs in a worker with its own limits), and a second
  // place to set the heap would disagree with the first.
  const { tasks } = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  for (const task of ["start", "dev", "compile", "bench"]) {
    assert.doesNotMatch(tasks[task] as string, /--v8-flags/, task);
  }
});
