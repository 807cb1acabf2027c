/** Service routes: health, readiness, the JWKS and the authorization server's metadata. */
import { metadataDocumentsAdmitted } from "../../../domain/oauth/client_metadata.ts";
import { jwksMaxAge, signingAlgorithms } from "../../../domain/keys/keys.ts";
import { type Readiness as ReadinessResult, readiness } from "../../../domain/system/readiness.ts";
import { bearerMatches } from "../../../telemetry/exposition.ts";
import {
  AuthorizationServerMetadata,
  Jwks,
  NotReady,
  ProtectedResourceMetadata,
  Readiness,
  Status,
} from "../../../openapi/service.ts";
import type { App } from "../../env.ts";
import { publicRoute } from "../operation.ts";
import { jsonResponse } from "../responses.ts";

export const getHealth = publicRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  tags: ["Service"],
  summary: "Liveness: the process is up",
  description:
    "Under `deno serve`, which starts the service on its first request, every request answers 503 " +
    "`system_error` with `Retry-After` while the service cannot start (its database cannot be reached, say).",
  responses: { 200: jsonResponse(Status, "The process answers") },
  errors: [],
});

export const getReadiness = publicRoute({
  method: "get",
  path: "/readyz",
  operationId: "getReadiness",
  tags: ["Service"],
  summary: "Readiness: 200 when ready, 503 naming the failing checks",
  description: "Checks the database (a statement within 2 s), the schema (every migration of this build " +
    "applied), the signing key (a current key this instance can sign with) and the background jobs every " +
    'instance runs (each succeeded recently). 200 `{"status":"ready"}` when all pass; 503 `system_error` ' +
    "with `Retry-After` and `failing` naming the checks that fail. Readiness tells strangers nothing more: " +
    "`checks` (the schema's version, the jobs' names and runs) and why a check fails come only to a bearer of " +
    "`METRICS_TOKEN`, and on the `METRICS_PORT` listener's `/readyz`; any other caller (a wrong token too) " +
    "gets the names alone.",
  responses: {
    200: jsonResponse(Readiness, "Every check passes"),
    503: jsonResponse(NotReady, "A check fails: `failing` names it"),
  },
});

export const getJwks = publicRoute({
  method: "get",
  path: "/.well-known/jwks.json",
  operationId: "getJwks",
  tags: ["Tokens"],
  summary: "The public keys that verify access tokens (JWKS)",
  description: "Access tokens are RFC 9068 JWTs (`typ: at+jwt`) signed with the current key (EdDSA by " +
    "default; ES256 or RS256 by `SIGNING_ALG`); the header's `kid` names the key. Published: the next key " +
    "(before it signs), the current one and previous ones (until their last token expires). Keys live in the " +
    "database, so every instance publishes the same set. Cache the answer for its `max-age` and refetch it " +
    "when a token names an unknown `kid`.",
  responses: { 200: jsonResponse(Jwks, "The signing keys in use") },
  errors: [],
});

export const getMetadata = publicRoute({
  method: "get",
  path: "/.well-known/oauth-authorization-server",
  operationId: "getAuthorizationServerMetadata",
  tags: ["Tokens"],
  summary: "Authorization server metadata (RFC 8414)",
  responses: { 200: jsonResponse(AuthorizationServerMetadata, "The metadata") },
  errors: [],
});

/** Where this service's protected resource metadata is: the `resource_metadata` of its Bearer challenges. */
export const PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource";

export const getProtectedResourceMetadata = publicRoute({
  method: "get",
  path: PROTECTED_RESOURCE_PATH,
  operationId: "getProtectedResourceMetadata",
  tags: ["Tokens"],
  summary: "This service's APIs as a protected resource (RFC 9728)",
  description:
    "Named by the `resource_metadata` of every Bearer challenge (a 401 of the admin, account and " +
    "decision APIs): the authorization server that issues their tokens is this service itself.",
  responses: { 200: jsonResponse(ProtectedResourceMetadata, "The metadata") },
  errors: [],
});

/** The RFC 8414 document; the OpenID Connect configuration (routes/api/oauth/oidc.ts) extends it. */
export function authorizationServerMetadata(
  base: string,
  algorithms: string[],
  metadataDocuments: boolean,
): AuthorizationServerMetadata {
  return {
    issuer: base,
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/api/v1/tokens`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    revocation_endpoint: `${base}/api/v1/tokens/revoke`,
    introspection_endpoint: `${base}/api/v1/tokens/introspect`,
    device_authorization_endpoint: `${base}/api/v1/tokens/device_authorization`,
    response_types_supported: ["code"],
    grant_types_supported: [
      "authorization_code",
      "refresh_token",
      "client_credentials",
      "urn:ietf:params:oauth:grant-type:device_code",
      "urn:ietf:params:oauth:grant-type:token-exchange",
    ],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "none"],
    revocation_endpoint_auth_methods_supported: ["client_secret_basic", "none"],
    introspection_endpoint_auth_methods_supported: ["client_secret_basic"],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: metadataDocuments,
    id_token_signing_alg_values_supported: algorithms,
  };
}

export function registerSystemRoutes(app: App) {
  app.openapi(getHealth, (c) => c.json({ status: "ok" }, 200));

  app.openapi(getReadiness, async (c) => {
    c.header("Cache-Control", "no-store");
    const token = c.get("deps").config.metricsToken;
    const detailed = token !== undefined && bearerMatches(c.req.header("authorization"), token);
    const answer = readinessAnswer(await readiness(c.get("deps")), detailed);
    if (answer.ready) return c.json(answer.body, 200);
    c.header("Retry-After", "1");
    return c.json(answer.body, 503);
  });

  app.openapi(getJwks, async (c) => {
    // Short enough that a next key, published ACCESS_TOKEN_TTL before it signs, is known to every cache.
    c.header("Cache-Control", `public, max-age=${jwksMaxAge(c.get("deps").config.accessTokenTtl)}`);
    return c.json(await c.get("deps").tokens.jwks() as Jwks, 200);
  });

  app.openapi(getProtectedResourceMetadata, (c) => {
    const base = c.get("deps").config.publicUrl;
    c.header("Cache-Control", "public, max-age=3600");
    return c.json({
      resource: base,
      authorization_servers: [base],
      bearer_methods_supported: ["header"],
      resource_name: "Access-Control Service",
      resource_documentation: `${base}/docs`,
    }, 200);
  });

  app.openapi(getMetadata, async (c) => {
    const base = c.get("deps").config.publicUrl;
    const [algorithms, documents] = await Promise.all([
      signingAlgorithms(c.get("deps").sql),
      metadataDocumentsAdmitted(c.get("deps").sql),
    ]);
    c.header("Cache-Control", `public, max-age=${jwksMaxAge(c.get("deps").config.accessTokenTtl)}`);
    return c.json(authorizationServerMetadata(base, algorithms, documents), 200);
  });
}

/**
 * Readiness's answer: the checks' names alone, or (`detailed`: a bearer of METRICS_TOKEN, or the METRICS_PORT
 * listener) every check with its outcome and why it fails.
 */
export function readinessAnswer(
  r: ReadinessResult,
  detailed: boolean,
): { ready: true; body: Readiness } | { ready: false; body: NotReady } {
  if (r.ready) return { ready: true, body: { status: "ready", ...(detailed ? { checks: r.checks } : {}) } };
  const why = r.failing.map((name) => {
    const detail = r.checks[name as keyof typeof r.checks].detail;
    return detailed && detail ? `${name} (${detail})` : name;
  });
  return {
    ready: false,
    body: {
      error: "system_error",
      error_description: `not ready: ${why.join("; ")}`,
      status: "not_ready",
      failing: r.failing as NotReady["failing"],
      ...(detailed ? { checks: r.checks } : {}),
    },
  };
}

/** `/readyz` on the METRICS_PORT listener (telemetry/runtime.ts): every check, as to a METRICS_TOKEN bearer. */
export async function detailedReadiness(deps: Parameters<typeof readiness>[0]): Promise<Response> {
  const answer = readinessAnswer(await readiness(deps), true);
  return Response.json(answer.body, {
    status: answer.ready ? 200 : 503,
    headers: { "Cache-Control": "no-store", ...(answer.ready ? {} : { "Retry-After": "1" }) },
  });
}
