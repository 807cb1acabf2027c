/**
 * The API reference page: rendered by `@scalar/hono-api-reference`, with Scalar's standalone browser bundle
 * (`dist/browser/standalone.js` of the npm package `@scalar/api-reference`, pinned in deno.json) served by the
 * service itself, so `/docs` works offline and under a strict CSP, with Scalar's vendor features (the AI
 * agent, MCP, developer tools with deploy and share) switched off: the page shows this API and nothing else.
 */
import { Scalar } from "@scalar/hono-api-reference";
import type { Context } from "hono";
import { encodeBase64Url } from "../domain/shared/base64.ts";
import type { App, AppEnv } from "./env.ts";

const BUNDLE_PATH = "/docs/scalar.js";

/**
 * The bundle's file. The package exports no path to it, so it is found beside the package's entry point
 * (`dist/index.js`, never imported): a file under node_modules/, read with --allow-read alone, and embedded by
 * `deno task compile`, which names it with --include.
 */
function bundleFile(): URL {
  return new URL("./browser/standalone.js", import.meta.resolve("@scalar/api-reference"));
}

/** The bundle as shipped and, for the clients that accept gzip (nearly all), compressed once. */
let plain: Promise<Uint8Array<ArrayBuffer>> | undefined;
let gzipped: Promise<Uint8Array<ArrayBuffer>> | undefined;

function readPlain(): Promise<Uint8Array<ArrayBuffer>> {
  plain ??= (async () => await Deno.readFile(bundleFile()) as Uint8Array<ArrayBuffer>)().catch((err) => {
    plain = undefined;
    // A plain Error, so that a missing file is not mistaken for an unreachable database.
    throw new Error(`cannot read the API reference bundle: ${err}`);
  });
  return plain;
}

function readGzipped(): Promise<Uint8Array<ArrayBuffer>> {
  gzipped ??= (async () => {
    const stream = new Blob([await readPlain()]).stream().pipeThrough(new CompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  })().catch((err) => {
    gzipped = undefined;
    throw err;
  });
  return gzipped;
}

/** Fixed values: nothing a request controls reaches the page's script but the nonce, which is random. */
const CONFIG = {
  pageTitle: "Access-Control Service API",
  cdn: BUNDLE_PATH,
  url: "/openapi.json",
  favicon: "/favicon.svg",
  theme: "default", // Scalar's own theme, and no inline <style> for the Hono one
  withDefaultFonts: false,
  hideClientButton: true,
  telemetry: false,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
  documentDownloadType: "json",
} as const;

export function registerDocsRoutes(app: App) {
  app.get(BUNDLE_PATH, async (c: Context<AppEnv>) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=86400");
    c.header("Vary", "Accept-Encoding");
    if (/\bgzip\b/.test(c.req.header("accept-encoding") ?? "")) {
      c.header("Content-Encoding", "gzip");
      return c.body(await readGzipped());
    }
    return c.body(await readPlain());
  });

  app.get("/docs", (c: Context<AppEnv>, next) => {
    // The page loads the bundle with <script src> and starts it with one inline <script>: both carry the
    // nonce, so the policy allows no other inline script.
    const nonce = encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));
    c.header(
      "Content-Security-Policy",
      `default-src 'self'; script-src 'self' 'nonce-${nonce}'; style-src 'self' 'unsafe-inline'; ` +
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
    );
    c.header("Referrer-Policy", "no-referrer");
    c.header("X-Frame-Options", "DENY");
    return Scalar<AppEnv>({ ...CONFIG, nonce })(c, next);
  });
}
