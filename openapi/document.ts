/** The OpenAPI document as the routes define it, built without a database. */
import { loadConfig } from "../config.ts";
import { createApp, OPENAPI_INFO } from "../routes/app.ts";

export function buildOpenApiDocument(): unknown {
  // Registering routes touches none of the dependencies; they are only used when a request runs.
  const app = createApp({
    sql: undefined as never,
    tokens: undefined as never,
    config: loadConfig({}),
    log: { error() {}, info() {} },
  });
  return app.getOpenAPI31Document(OPENAPI_INFO);
}

export function serialize(doc: unknown): string {
  return JSON.stringify(doc, null, 2) + "\n";
}

export const OPENAPI_PATH = new URL("./openapi.json", import.meta.url);
