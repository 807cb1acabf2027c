/**
 * The OpenAPI document as the routes define it, built without a database. `deno task openapi` runs this file
 * to write openapi/openapi.json, from which `deno task sdk` generates sdk/.
 */
import { loadConfig } from "../config.ts";
import { SILENT } from "../log.ts";
import { createApp, openApiHead } from "./app.ts";

export function buildOpenApiDocument(): unknown {
  // Registering routes touches none of the dependencies; they are only used when a request runs. The default
  // configuration (no environment): its PUBLIC_URL, http://localhost:8000, is the document's server.
  const config = loadConfig({});
  const app = createApp({
    sql: undefined as never,
    tokens: undefined as never,
    keys: undefined as never,
    config,
    log: SILENT,
  });
  return app.getOpenAPI31Document(openApiHead(config.publicUrl));
}

export function serialize(doc: unknown): string {
  return JSON.stringify(doc, null, 2) + "\n";
}

export const OPENAPI_PATH = new URL("../openapi/openapi.json", import.meta.url);

if (import.meta.main) {
  await Deno.writeTextFile(OPENAPI_PATH, serialize(buildOpenApiDocument()));
  console.log(`wrote ${OPENAPI_PATH.pathname}`);
}
