/** Service routes: health, readiness, the JWKS, the OpenAPI document and the API reference page. */
import { createRoute, z } from "@hono/zod-openapi";
import { Scalar } from "@scalar/hono-api-reference";
import { encodeBase64Url } from "../domain/base64.ts";
import type { MiddlewareHandler } from "hono";
import { type App, type AppEnv, type Deps, OPENAPI_INFO } from "./app.ts";
import { errorResponses, jsonResponse } from "../openapi/schemas.ts";

const Status = z.object({ status: z.string().openapi({ example: "ok" }) }).openapi("Status");

export const getHealth = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  tags: ["Service"],
  summary: "Liveness: the process is up",
  responses: { 200: jsonResponse(Status, "The process answers") },
});

export const getReadiness = createRoute({
  method: "get",
  path: "/readyz",
  operationId: "getReadiness",
  tags: ["Service"],
  summary: "Readiness: the database answers",
  responses: { 200: jsonResponse(Status, "The database answers"), ...errorResponses() },
});

const Jwk = z.object({
  kty: z.string().openapi({ example: "OKP" }),
  crv: z.string().openapi({ example: "Ed25519" }),
  x: z.string(),
  kid: z.string(),
  alg: z.string().openapi({ example: "EdDSA" }),
  use: z.string().openapi({ example: "sig" }),
}).openapi("Jwk");

export const getJwks = createRoute({
  method: "get",
  path: "/.well-known/jwks.json",
  operationId: "getJwks",
  tags: ["Tokens"],
  summary: "The public keys that verify access tokens (JWKS)",
  description: "Access tokens are RFC 9068 JWTs (`typ: at+jwt`) signed with EdDSA (Ed25519); the header's " +
    "`kid` names the key. Keys live in the database, so every instance publishes the same set.",
  responses: {
    200: jsonResponse(z.object({ keys: z.array(Jwk) }).openapi("Jwks"), "The signing keys in use"),
    ...errorResponses(),
  },
});

const Metadata = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  jwks_uri: z.string(),
  revocation_endpoint: z.string(),
  introspection_endpoint: z.string(),
  response_types_supported: z.array(z.string()),
  grant_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  introspection_endpoint_auth_methods_supported: z.array(z.string()),
  authorization_response_iss_parameter_supported: z.boolean(),
}).openapi("AuthorizationServerMetadata");

export const getMetadata = createRoute({
  method: "get",
  path: "/.well-known/oauth-authorization-server",
  operationId: "getAuthorizationServerMetadata",
  tags: ["Tokens"],
  summary: "Authorization server metadata (RFC 8414)",
  responses: { 200: jsonResponse(Metadata, "The metadata") },
});

/** The Scalar bundle, read once from the npm package and served by us, so /docs needs no CDN. */
let scalarBundle: Promise<Uint8Array> | undefined;
function readScalarBundle(): Promise<Uint8Array> {
  scalarBundle ??= (async () => {
    const entry = import.meta.resolve("@scalar/api-reference");
    try {
      return await Deno.readFile(new URL("./browser/standalone.js", entry));
    } catch (err) {
      scalarBundle = undefined; // try again next time
      // A plain Error, so that a missing file is not mistaken for an unreachable database.
      throw new Error(`cannot read the API reference bundle: ${err}`);
    }
  })();
  return scalarBundle;
}

export function registerSystemRoutes(app: App, deps: Deps) {
  app.openapi(getHealth, (c) => c.json({ status: "ok" }, 200));

  app.openapi(getReadiness, async (c) => {
    await deps.sql`select 1`;
    return c.json({ status: "ready" }, 200);
  });

  app.openapi(getJwks, async (c) => {
    c.header("Cache-Control", "public, max-age=300");
    return c.json(await deps.tokens.jwks() as z.infer<typeof Jwk> & { keys: z.infer<typeof Jwk>[] }, 200);
  });

  app.openapi(getMetadata, (c) => {
    const base = deps.config.publicUrl;
    c.header("Cache-Control", "public, max-age=300");
    return c.json({
      issuer: base,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/api/v1/tokens`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      revocation_endpoint: `${base}/api/v1/tokens/revoke`,
      introspection_endpoint: `${base}/api/v1/tokens/introspect`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "none"],
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "none"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic"],
      authorization_response_iss_parameter_supported: true,
    }, 200);
  });

  app.doc31("/openapi.json", OPENAPI_INFO);

  app.get("/docs/scalar.js", async (c) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=86400");
    return c.body(await readScalarBundle() as Uint8Array<ArrayBuffer>);
  });

  app.get("/docs", async (c, next) => {
    const nonce = encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));
    c.header(
      "Content-Security-Policy",
      `default-src 'self'; script-src 'self' 'nonce-${nonce}'; style-src 'self' 'unsafe-inline'; ` +
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
    );
    c.header("Referrer-Policy", "no-referrer");
    const page = Scalar({
      url: "/openapi.json",
      cdn: "/docs/scalar.js",
      pageTitle: "Access-Control Service API",
      nonce,
      withDefaultFonts: false,
      hideClientButton: true,
      telemetry: false,
    }) as unknown as MiddlewareHandler<AppEnv>;
    return await page(c, next) as Response;
  });
}
