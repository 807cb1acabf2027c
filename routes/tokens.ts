/** The token endpoint (RFC 6749 §3.2): `POST /api/v1/tokens`, form-encoded. */
import { createRoute, z } from "@hono/zod-openapi";
import { exchangeCredentials } from "../domain/grants.ts";
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
  description: "Client credentials: `grant_type=client_credentials` with `Authorization: Basic " +
    "base64(client_id:client_secret)`; the answer has no refresh token, so authenticate again when the " +
    "token expires. Checks, in order: parameters (`invalid_params`), client exists (`invalid_client`), " +
    "secret (`invalid_client_credentials`, 401 with `WWW-Authenticate: Basic`), client active " +
    "(`client_not_active`), project active (`project_not_active`). Tokens carry `aud` = the project id; " +
    "permissions are not in the token but evaluated live on every request. Answers carry " +
    "`Cache-Control: no-store`.",
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

export function registerTokenRoutes(app: App, deps: Deps) {
  app.openapi(exchangeCredentialsRoute, async (c) => {
    const body = await exchangeCredentials(
      deps.sql,
      deps.tokens,
      c.req.valid("form"),
      c.req.header("authorization"),
    );
    c.header("Pragma", "no-cache");
    return c.json(body, 200);
  });
}
