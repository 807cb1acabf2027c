/** The token endpoint (RFC 6749 §3.2), revocation (RFC 7009) and introspection (RFC 7662), form-encoded. */
import { z } from "@hono/zod-openapi";
import { exchangeCredentials } from "../domain/grants/exchange.ts";
import { introspectToken, revokeToken } from "../domain/introspection.ts";
import { Introspection, TokenActionRequest, TokenRequest, TokenResponse } from "../openapi/tokens.ts";
import { presentedClient } from "./client_auth.ts";
import type { App } from "./env.ts";
import { publicRoute } from "./operation.ts";
import { formBody, jsonResponse } from "./responses.ts";

/** What the three form endpoints share (routes/middleware.ts). */
const FORM_LIMITS =
  "The form body is at most 64 KiB (413 `invalid_params`) and 64 fields (400 `invalid_params`).";

export const exchangeCredentialsRoute = publicRoute({
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
    "`WWW-Authenticate: Basic`; a client whose `token_endpoint_auth_method` is `client_secret_basic` must " +
    "send it with every grant; failed secrets are throttled per client id and address, 429 " +
    "`too_many_requests` with `Retry-After`), client active (`client_not_active`), project active (`project_not_active`), " +
    "then the code (unknown or another client's `invalid_authorization_code`, `different_authorize_redirect_uri`, " +
    "`auth_code_already_used` — which also revokes what the code issued —, `auth_code_expired`, " +
    "`invalid_code_verifier`) or the refresh token (`invalid_refresh_token`, `refresh_token_already_used`, " +
    "`refresh_token_expired`). Tokens carry `aud` = the project id; permissions are evaluated live on every " +
    "request. A login whose authorization request had `openid` in its `scope` also gets an `id_token` (and " +
    "`scope`) from the code and from every refresh. Answers carry `Cache-Control: no-store`. " + FORM_LIMITS,
  security: [{ basicAuth: [] }],
  request: { body: formBody(TokenRequest) },
  responses: { 200: jsonResponse(TokenResponse, "An access token") },
  errors: [
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
    "too_many_requests",
  ],
});

export const revokeTokenRoute = publicRoute({
  method: "post",
  path: "/api/v1/tokens/revoke",
  operationId: "revokeToken",
  tags: ["Tokens"],
  summary: "Revoke a token (RFC 7009)",
  description:
    "Authenticated with HTTP Basic, or by a public client (`token_endpoint_auth_method` `none`) with " +
    "`client_id`. A client revokes only tokens issued to it (RFC 7009 §2.1): a refresh token ends its whole " +
    "session (every token of it); an access token is refused from the next request on. Another client's " +
    "tokens, unknown tokens, and anything an inactive client sends answer 200 too and change nothing " +
    "(§2.2). Failed secrets are throttled per client id and address (429 with `Retry-After`). " + FORM_LIMITS,
  security: [{ basicAuth: [] }],
  request: { body: formBody(TokenActionRequest) },
  responses: { 200: jsonResponse(z.object({}).openapi("Empty"), "Revoked, or nothing to revoke") },
  errors: ["invalid_params", "invalid_client", "invalid_client_credentials", "too_many_requests"],
});

export const introspectTokenRoute = publicRoute({
  method: "post",
  path: "/api/v1/tokens/introspect",
  operationId: "introspectToken",
  tags: ["Tokens"],
  summary: "Introspect a token (RFC 7662)",
  description:
    "Authenticated with HTTP Basic by an active client of the token's project. `active` is decided " +
    "live (project, client, session, user, revocation), and `permissions` lists what the token's subject may " +
    "do now. A token of another project is `active: false`. A database failure answers 503, never " +
    "`active: false`. " + FORM_LIMITS,
  security: [{ basicAuth: [] }],
  request: { body: formBody(TokenActionRequest) },
  responses: { 200: jsonResponse(Introspection, "The token's state") },
  errors: [
    "invalid_params",
    "invalid_client_credentials",
    "client_not_active",
    "project_not_active",
    "too_many_requests",
  ],
});

export function registerTokenRoutes(app: App) {
  app.openapi(exchangeCredentialsRoute, async (c) => {
    const { sql, tokens, config } = c.var.deps;
    const form = c.req.valid("form");
    const body = await exchangeCredentials({
      sql,
      tokens,
      settings: { refreshTokenTtl: config.refreshTokenTtl, sessionMaxTtl: config.sessionMaxTtl },
      form,
      client: presentedClient(c, form),
    });
    c.header("Pragma", "no-cache");
    return c.json(body, 200);
  });
  app.openapi(revokeTokenRoute, async (c) => {
    const { sql, tokens } = c.var.deps;
    const form = c.req.valid("form");
    await revokeToken(sql, tokens, form, presentedClient(c, form));
    return c.json({}, 200);
  });
  app.openapi(introspectTokenRoute, async (c) => {
    const { sql, tokens } = c.var.deps;
    const form = c.req.valid("form");
    const result = await introspectToken(sql, tokens, form, presentedClient(c, form));
    c.header("Pragma", "no-cache");
    return c.json(result, 200);
  });
}
