/** The token endpoint (RFC 6749 §3.2): `POST /api/v1/tokens`, form-encoded. */
import { createRoute, z } from "@hono/zod-openapi";
import { exchangeCredentials } from "../domain/grants.ts";
import { introspectToken, revokeToken } from "../domain/introspection.ts";
import type { App, Deps } from "./app.ts";
import { errorResponses, jsonResponse } from "../openapi/schemas.ts";

const field = (description: string) => z.string().max(4096).optional().openapi({ description });

const TokenRequest = z.object({
  grant_type: z.enum(["authorization_code", "refresh_token", "client_credentials"]).openapi({
    description: "`client_credentials` for machine clients (HTTP Basic authentication required).",
  }),
  client_id: field("Required for `authorization_code` and `refresh_token`; with Basic, must match it."),
  client_secret: field("Not accepted: send client credentials with HTTP Basic."),
  authorization_code: field("The code from the authorize redirect (`code` is accepted too)."),
  code: field("RFC 6749's name for `authorization_code`."),
  redirect_uri: field("Required for `authorization_code`; must equal the authorize request's."),
  code_verifier: field("Required for `authorization_code` (PKCE, S256)."),
  refresh_token: field("Required for `refresh_token`."),
  state: field("Optional; ignored."),
}).openapi("TokenRequest");

const TokenResponse = z.object({
  access_token: z.string().openapi({ description: "An RFC 9068 JWT; verify it with the JWKS." }),
  token_type: z.literal("Bearer"),
  expires_in: z.number().int().openapi({
    description: "Seconds until the access token expires",
    example: 900,
  }),
  refresh_token: z.string().optional().openapi({ description: "User grants only" }),
  refresh_token_expires_in: z.number().int().optional().openapi({ description: "User grants only" }),
}).openapi("TokenResponse");

export const exchangeCredentialsRoute = createRoute({
  method: "post",
  path: "/api/v1/tokens",
  operationId: "exchangeCredentials",
  tags: ["Tokens"],
  summary: "Exchange credentials for an access token",
  description: "Three grants. **client_credentials** (machines): `Authorization: Basic " +
    "base64(client_id:client_secret)`; no refresh token, authenticate again when the token expires. " +
    "**authorization_code** (users, after `/authorize`): `client_id`, `authorization_code` (or `code`), " +
    "`redirect_uri` and the PKCE `code_verifier`; answers an access and a refresh token. " +
    "**refresh_token**: `client_id` and `refresh_token`; every refresh rotates both tokens, and a spent refresh " +
    "token presented again ends the whole session. Checks, in order: parameters (`invalid_params`), client " +
    "exists (`invalid_client`), Basic secret when sent (`invalid_client_credentials`, 401 with " +
    "`WWW-Authenticate: Basic`), client active (`client_not_active`), project active (`project_not_active`), " +
    "then the code (unknown or another client's `invalid_authorization_code`, `different_authorize_redirect_uri`, " +
    "`auth_code_already_used` — which also revokes what the code issued —, `auth_code_expired`, " +
    "`invalid_code_verifier`) or the refresh token (`invalid_refresh_token`, `refresh_token_already_used`, " +
    "`refresh_token_expired`). Tokens carry `aud` = the project id; permissions are evaluated live on every " +
    "request. Answers carry `Cache-Control: no-store`.",
  security: [{ basicAuth: [] }],
  request: {
    body: {
      required: true,
      content: { "application/x-www-form-urlencoded": { schema: TokenRequest } },
    },
  },
  responses: {
    200: jsonResponse(TokenResponse, "An access token"),
    ...errorResponses(
      "invalid_params",
      "invalid_client",
      "client_not_active",
      "project_not_active",
      "invalid_authorization_code",
      "different_authorize_redirect_uri",
      "auth_code_already_used",
      "auth_code_expired",
      "invalid_code_verifier",
      "invalid_refresh_token",
      "refresh_token_expired",
      "refresh_token_already_used",
      "invalid_client_credentials",
    ),
  },
});

const TokenActionRequest = z.object({
  token: z.string().min(1).max(4096).openapi({ description: "An access token or a refresh token" }),
  token_type_hint: z.string().max(100).optional().openapi({
    description: "`access_token` or `refresh_token`: where to look first; other values are ignored",
  }),
  client_id: field("For revocation by a public client, without HTTP Basic"),
});

const Introspection = z.object({
  active: z.boolean(),
  token_type: z.enum(["access_token", "refresh_token"]).optional(),
  iss: z.string().optional(),
  sub: z.string().optional().openapi({ description: "The user id, or the client id for client credentials" }),
  aud: z.string().optional().openapi({ description: "The project id" }),
  client_id: z.string().optional(),
  exp: z.number().int().optional(),
  iat: z.number().int().optional(),
  jti: z.string().optional(),
  sid: z.string().optional(),
  permissions: z.array(z.string()).optional().openapi({
    description:
      "The subject's `resource:permission` codes now: a user's through the role, a client's directly",
  }),
}).openapi("Introspection");

export const revokeTokenRoute = createRoute({
  method: "post",
  path: "/api/v1/tokens/revoke",
  operationId: "revokeToken",
  tags: ["Tokens"],
  summary: "Revoke a token (RFC 7009)",
  description:
    "Authenticated with HTTP Basic by a client of the token's project, or by a public client with " +
    "`client_id`. A refresh token ends its whole session (every token of it); an access token is refused from " +
    "the next request on. Answers 200 for unknown tokens too (RFC 7009 §2.2).",
  security: [{ basicAuth: [] }],
  request: {
    body: {
      required: true,
      content: { "application/x-www-form-urlencoded": { schema: TokenActionRequest } },
    },
  },
  responses: {
    200: jsonResponse(z.object({}).openapi("Empty"), "Revoked, or nothing to revoke"),
    ...errorResponses("invalid_params", "invalid_client", "invalid_client_credentials"),
  },
});

export const introspectTokenRoute = createRoute({
  method: "post",
  path: "/api/v1/tokens/introspect",
  operationId: "introspectToken",
  tags: ["Tokens"],
  summary: "Introspect a token (RFC 7662)",
  description:
    "Authenticated with HTTP Basic by an active client of the token's project. `active` is decided " +
    "live (project, client, session, user, revocation), and `permissions` lists what the token's subject may " +
    "do now. A token of another project is `active: false`. A database failure answers 503, never " +
    "`active: false`.",
  security: [{ basicAuth: [] }],
  request: {
    body: {
      required: true,
      content: { "application/x-www-form-urlencoded": { schema: TokenActionRequest } },
    },
  },
  responses: {
    200: jsonResponse(Introspection, "The token's state"),
    ...errorResponses(
      "invalid_params",
      "invalid_client_credentials",
      "client_not_active",
      "project_not_active",
    ),
  },
});

export function registerTokenRoutes(app: App, deps: Deps) {
  const settings = { refreshTokenTtl: deps.config.refreshTokenTtl };
  app.openapi(exchangeCredentialsRoute, async (c) => {
    const body = await exchangeCredentials(
      deps.sql,
      deps.tokens,
      settings,
      c.req.valid("form"),
      c.req.header("authorization"),
    );
    c.header("Pragma", "no-cache");
    return c.json(body, 200);
  });
  app.openapi(revokeTokenRoute, async (c) => {
    await revokeToken(deps.sql, deps.tokens, c.req.valid("form"), c.req.header("authorization"));
    return c.json({}, 200);
  });
  app.openapi(introspectTokenRoute, async (c) => {
    const result = await introspectToken(
      deps.sql,
      deps.tokens,
      c.req.valid("form"),
      c.req.header("authorization"),
    );
    c.header("Pragma", "no-cache");
    return c.json(result, 200);
  });
}
