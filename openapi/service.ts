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
  response_types_supported: z.array(z.string()),
  grant_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  introspection_endpoint_auth_methods_supported: z.array(z.string()),
  authorization_response_iss_parameter_supported: z.boolean(),
  id_token_signing_alg_values_supported: z.array(z.string()).openapi({
    description: "The algorithms of the published signing keys, the current key's first",
  }),
}).openapi("AuthorizationServerMetadata");
export type AuthorizationServerMetadata = z.infer<typeof AuthorizationServerMetadata>;
