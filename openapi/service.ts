/** The service's own answers: health, the JWKS, and the authorization server's metadata. */
import { z } from "@hono/zod-openapi";

export const Status = z.object({ status: z.string().openapi({ example: "ok" }) }).openapi("Status");

export const Jwk = z.object({
  kty: z.string().openapi({ example: "OKP", description: "`OKP` (Ed25519), `EC` (P-256) or `RSA`" }),
  kid: z.string(),
  alg: z.string().openapi({ example: "EdDSA", description: "`EdDSA`, `ES256` or `RS256`" }),
  use: z.string().openapi({ example: "sig" }),
  crv: z.string().optional().openapi({ example: "Ed25519" }),
  x: z.string().optional(),
  y: z.string().optional(),
  n: z.string().optional(),
  e: z.string().optional(),
}).openapi("Jwk");
export type Jwk = z.infer<typeof Jwk>;
export const Jwks = z.object({ keys: z.array(Jwk) }).openapi("Jwks");
export type Jwks = z.infer<typeof Jwks>;

export const AuthorizationServerMetadata = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  jwks_uri: z.string(),
  revocation_endpoint: z.string(),
  introspection_endpoint: z.string(),
  device_authorization_endpoint: z.string().openapi({
    description: "RFC 8628: where a client with `device_grant` asks for a device code",
  }),
  response_types_supported: z.array(z.string()),
  grant_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  introspection_endpoint_auth_methods_supported: z.array(z.string()),
  authorization_response_iss_parameter_supported: z.boolean(),
  client_id_metadata_document_supported: z.boolean().openapi({
    description: "true when some project admits clients identified by the URL of their metadata document " +
      "(`client_metadata_documents`); MCP clients use such a `client_id` only then",
  }),
  id_token_signing_alg_values_supported: z.array(z.string()).openapi({
    description: "The algorithms of the published signing keys, the current key's first",
  }),
}).openapi("AuthorizationServerMetadata");
export type AuthorizationServerMetadata = z.infer<typeof AuthorizationServerMetadata>;

/** RFC 9728 §2: this service's own APIs as a protected resource. */
export const ProtectedResourceMetadata = z.object({
  resource: z.string().openapi({ description: "The service's URL (its issuer): every API under it" }),
  authorization_servers: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  resource_name: z.string(),
  resource_documentation: z.string(),
}).openapi("ProtectedResourceMetadata");
export type ProtectedResourceMetadata = z.infer<typeof ProtectedResourceMetadata>;

/** One check's outcome (a fresh schema each time, so that each field keeps its own description). */
const check = () => ({
  status: z.enum(["ok", "failing", "unknown"]).openapi({
    description: "`unknown`: not checked, because the database did not answer",
  }),
  detail: z.string().optional().openapi({ description: "Why it fails, when it does" }),
});

export const ReadinessChecks = z.object({
  database: z.object(check()).openapi({ description: "The database answers a statement within 2 s" }),
  migrations: z.object({
    ...check(),
    applied: z.number().int().optional().openapi({ description: "The schema's version in the database" }),
    expected: z.number().int().openapi({ description: "The last migration this build knows" }),
  }).openapi({ description: "Every migration this build knows is applied" }),
  signing_key: z.object(check()).openapi({
    description: "There is a current signing key and this instance can sign with it",
  }),
  jobs: z.object({
    ...check(),
    jobs: z.array(z.object({
      name: z.string().openapi({ example: "webhook-deliveries" }),
      leased: z.boolean().openapi({
        description: "Runs in one instance at a time: shown, never failing here",
      }),
      last_run: z.string().nullable().openapi({ description: "This instance's last run (ISO 8601)" }),
      last_success: z.string().nullable(),
      status: z.enum(["ok", "failing", "waiting"]).openapi({ description: "`waiting`: not run here yet" }),
    })),
  }).openapi({
    description:
      "The jobs every instance runs have succeeded within three of their periods (at least a minute)",
  }),
}).openapi("ReadinessChecks");

export const Readiness = z.object({
  status: z.literal("ready"),
  checks: ReadinessChecks.optional().openapi({
    description: "Only for a bearer of `METRICS_TOKEN`, and on the `METRICS_PORT` listener",
  }),
}).openapi("Readiness");
export type Readiness = z.infer<typeof Readiness>;

export const NotReady = z.object({
  error: z.literal("system_error"),
  error_description: z.string().openapi({
    example: "not ready: database",
    description: "The failing checks; why each fails only where `checks` is given",
  }),
  status: z.literal("not_ready").optional().openapi({
    description:
      "Absent, as `failing` and `checks`, while the service is still starting (or, under `deno serve`, " +
      "could not start: its log says why)",
  }),
  failing: z.array(z.enum(["database", "migrations", "signing_key", "jobs"])).optional().openapi({
    description: "The checks that fail",
  }),
  checks: ReadinessChecks.optional().openapi({
    description: "Only for a bearer of `METRICS_TOKEN`, and on the `METRICS_PORT` listener",
  }),
}).openapi("NotReady");
export type NotReady = z.infer<typeof NotReady>;
