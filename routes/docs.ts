/**
 * The API reference page: Scalar's standalone bundle, vendored (routes/assets) and served by the service, so
 * `/docs` works offline and under a strict CSP, with Scalar's vendor features (the AI agent, MCP, developer
 * tools with deploy and share) switched off: the page shows this API and nothing else.
 */
import { html, raw } from "hono/html";
import type { Context } from "hono";
import { encodeBase64Url } from "../domain/shared/base64.ts";
import type { App, AppEnv } from "./env.ts";

const BUNDLE = new URL("./assets/scalar-api-reference-1.72.1.js.gz", import.meta.url);

/** The bundle as stored (gzip) and, for the rare client that does not accept gzip, unpacked once. */
let gzipped: Promise<Uint8Array> | undefined;
let plain: Promise<Uint8Array> | undefined;

function readGzipped(): Promise<Uint8Array> {
  gzipped ??= Deno.readFile(BUNDLE).catch((err) => {
    gzipped = undefined;
    // A plain Error, so that a missing file is not mistaken for an unreachable database.
    throw new Error(`cannot read the API reference bundle: ${err}`);
  });
  return gzipped;
}

async function readPlain(): Promise<Uint8Array> {
  plain ??= (async () => {
    const stream = new Blob([await readGzipped() as Uint8Array<ArrayBuffer>]).stream()
      .pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  })();
  return await plain;
}

const CONFIG = {
  url: "/openapi.json",
  withDefaultFonts: false,
  hideClientButton: true,
  telemetry: false,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
  documentDownloadType: "json",
};

function page(nonce: string) {
  // The configuration is JSON of fixed values: nothing a request controls reaches the script.
  return html`<!doctype html>
<html lang="en">
  <head>
    <title>Access-Control Service API</title>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta property="csp-nonce" content="${nonce}">
    <link rel="icon" href="/favicon.svg" type="image/svg+xml">
  </head>
  <body>
    <div id="app"></div>
    <script src="/docs/scalar.js" nonce="${nonce}"></script>
    <script nonce="${nonce}">Scalar.createApiReference("#app", ${raw(JSON.stringify(CONFIG))})</script>
  </body>
</html>`;
}

export function registerDocsRoutes(app: App) {
  app.get("/docs/scalar.js", async (c: Context<AppEnv>) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=86400");
    c.header("Vary", "Accept-Encoding");
    if (/\bgzip\b/.test(c.req.header("accept-encoding") ?? "")) {
      c.header("Content-Encoding", "gzip");
      return c.body(await readGzipped() as Uint8Array<ArrayBuffer>);
    }
    return c.body(await readPlain() as Uint8Array<ArrayBuffer>);
  });

  app.get("/docs", (c: Context<AppEnv>) => {
    const nonce = encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));
    c.header(
      "Content-Security-Policy",
      `default-src 'self'; script-src 'self' 'nonce-${nonce}'; style-src 'self' 'unsafe-inline'; ` +
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
    );
    c.header("Referrer-Policy", "no-referrer");
    c.header("X-Frame-Options", "DENY");
    return c.html(page(nonce));
  });
}
