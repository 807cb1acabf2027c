/** The token endpoint (RFC 6749 §3.2), revocation (RFC 7009) and introspection (RFC 7662), form-encoded. */
import { z } from "@hono/zod-openapi";
import { AppError } from "../../../domain/shared/errors.ts";
import { exchangeCredentials } from "../../../domain/oauth/grants/exchange.ts";
import { tokensIssued } from "../../../telemetry/families.ts";
import { introspectToken, revokeToken } from "../../../domain/oauth/introspection.ts";
import { Introspection, TokenActionRequest, TokenRequest, TokenResponse } from "../../../openapi/tokens.ts";
import { OAUTH_ENDPOINT_CODES } from "../../../openapi/fields.ts";
import { presentedClientOf } from "./client_auth.ts";
import { FORM_ENDPOINTS } from "../../form_endpoints.ts";
import type { App } from "../../env.ts";
import { publicRoute } from "../operation.ts";
import { zodDetails } from "../../errors.ts";
import { formBody, jsonResponse, type OAuthCase, oauthErrorResponses } from "../responses.ts";

/** What the three form endpoints share (routes/middleware.ts). */
const FORM_LIMITS =
  "The form body is at most 64 KiB (413) and 64 fields (400 `invalid_request`). Errors carry the RFC 6749 §5.2 " +
  "code in `error` (`invalid_request`, `invalid_client`, `invalid_grant`, `unsupported_grant_type`; " +
  "`temporarily_unavailable` when throttled or when the database cannot be reached, `server_error` otherwise) and " +
  "the service's own code in `error_code`; every `invalid_client` with 401 carries `WWW-Authenticate: Basic`.";

/** Answers of `invalid_params` beyond `invalid_request`. */
const SECRET_IN_BODY: OAuthCase = {
  code: "invalid_params",
  error: "invalid_client",
  status: 401,
  when: "a `client_secret` in the form without HTTP Basic (client_secret_post is not supported)",
};

/** The device grant (RFC 8628 §3.4–3.5), polled by a device after `POST /api/v1/tokens/device_authorization`. */
const DEVICE_GRANT = "**urn:ietf:params:oauth:grant-type:device_code** (RFC 8628): `device_code`, with " +
  "`client_id` or HTTP Basic (the client that asked for it, whose `device_grant` is true, else " +
  "`unauthorized_client`); answers `authorization_pending` until the user decided at `/device`, `slow_down` when " +
  "polled sooner than the interval (which then grows by 5 seconds for that code), `access_denied` when the user " +
  "denied, `expired_token` after `expires_in`, `invalid_grant` (`invalid_device_code`) for an unknown code, " +
  "another client's or one already used; once approved, the user's tokens as the code grant gives them, once. ";

export const exchangeCredentialsRoute = publicRoute({
  method: "post",
  path: FORM_ENDPOINTS.token,
  operationId: "exchangeCredentials",
  tags: ["Tokens"],
  summary: "Exchange credentials for an access token",
  description: "Three grants. **client_credentials** (machines): `Authorization: Basic " +
    "base64(client_id:client_secret)`; no refresh token, authenticate again when the token expires. " +
    "**authorization_code** (users, after `/authorize`): `authorization_code` (or `code`), `redirect_uri` and " +
    "the PKCE `code_verifier`, with `client_id` (a public client) or HTTP Basic (a confidential one; `client_id` " +
    "may then be left out); answers an access and a refresh token. **refresh_token**: `refresh_token`, with " +
    "`client_id` or HTTP Basic; every refresh rotates both tokens, and a spent refresh token presented again ends " +
    "the whole session. Checks, in order (`error` / `error_code`): parameters (`invalid_request` / " +
    "`invalid_params`; a `grant_type` the service does not offer, such as `password`, is " +
    "`unsupported_grant_type`), client exists (`invalid_client` / `invalid_client`), Basic secret when sent " +
    "(`invalid_client` / `invalid_client_credentials`, 401; a client whose `token_endpoint_auth_method` is " +
    "`client_secret_basic` must send it with every grant; failed secrets are throttled per client id and " +
    "address, 429 `temporarily_unavailable` / `too_many_requests` with `Retry-After`), client active " +
    "(`invalid_client` / `client_not_active`), project active (`invalid_client` / `project_not_active`), then the " +
    "code or the refresh token, each refusal `invalid_grant` (an OAuth client sends its user to sign in again): " +
    "the code unknown or another client's (`invalid_authorization_code`), `different_authorize_redirect_uri`, " +
    "`auth_code_already_used` (which also revokes what the code issued), `auth_code_expired`, " +
    "`invalid_code_verifier`; the refresh token `invalid_refresh_token`, `refresh_token_already_used`, " +
    "`refresh_token_expired`. `invalid_client` is 401 with `WWW-Authenticate: Basic` when the request sent an " +
    "`Authorization` header or had to, and 400 when a public client's `client_id` names no active client. " +
    "Tokens carry `aud` = the project id; permissions are evaluated live on every request. A login whose " +
    "authorization request had `openid` in its `scope` also gets an `id_token` (and `scope`) from the code and " +
    "from every refresh. Answers carry `Cache-Control: no-store`. " + DEVICE_GRANT + FORM_LIMITS,
  security: [{ basicAuth: [] }],
  request: { body: formBody(TokenRequest) },
  responses: {
    200: jsonResponse(TokenResponse, "An access token"),
    // The token endpoint answers every code of the three form endpoints.
    ...oauthErrorResponses([...OAUTH_ENDPOINT_CODES], [
      {
        code: "invalid_params",
        error: "unsupported_grant_type",
        status: 400,
        when: "`grant_type` names a grant the service does not offer",
      },
      {
        code: "invalid_params",
        error: "invalid_client",
        status: 401,
        when: "`grant_type=client_credentials` without HTTP Basic",
      },
      SECRET_IN_BODY,
    ]),
  },
});

export const revokeTokenRoute = publicRoute({
  method: "post",
  path: FORM_ENDPOINTS.revocation,
  operationId: "revokeToken",
  tags: ["Tokens"],
  summary: "Revoke a token (RFC 7009)",
  description:
    "Authenticated with HTTP Basic, or by a public client (`token_endpoint_auth_method` `none`) with " +
    "`client_id`. A client revokes only tokens issued to it (RFC 7009 §2.1): a refresh token ends its whole " +
    "session (every token of it); an access token is refused from the next request on. Another client's " +
    "tokens, unknown tokens, and anything an inactive client sends answer 200 too and change nothing " +
    "(§2.2). Every token type is supported and an unknown `token_type_hint` is ignored, so " +
    "`unsupported_token_type` (§2.2.1) is never answered. Failed secrets are throttled per client id and address " +
    "(429 with `Retry-After`). " + FORM_LIMITS,
  security: [{ basicAuth: [] }],
  request: { body: formBody(TokenActionRequest) },
  responses: {
    200: jsonResponse(z.object({}).openapi("Empty"), "Revoked, or nothing to revoke"),
    ...oauthErrorResponses(["invalid_client", "invalid_client_credentials", "too_many_requests"], [
      SECRET_IN_BODY,
    ]),
  },
});

export const introspectTokenRoute = publicRoute({
  method: "post",
  path: FORM_ENDPOINTS.introspection,
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
  responses: {
    200: jsonResponse(Introspection, "The token's state"),
    ...oauthErrorResponses([
      "invalid_client_credentials",
      "client_not_active",
      "project_not_active",
      "too_many_requests",
    ]),
  },
});

/**
 * The token endpoint's validation hook: a form that does not parse is `invalid_request`, except a single
 * `grant_type` naming a grant the service does not offer (RFC 6749 §5.2 `unsupported_grant_type`).
 */
function tokenFormHook(
  result: { success: boolean; error?: { issues: Parameters<typeof zodDetails>[0] } },
): undefined {
  if (result.success) return undefined;
  // The validator hands the hook the form it parsed (@hono/zod-validator), a repeated field as an array.
  const grant = (result as { data?: Record<string, unknown> }).data?.grant_type;
  const offered = TokenRequest.shape.grant_type.options as readonly string[];
  const unsupported = typeof grant === "string" && grant !== "" && !offered.includes(grant);
  throw new AppError("invalid_params", {
    details: zodDetails(result.error?.issues ?? []),
    ...(unsupported
      ? {
        oauth: "unsupported_grant_type",
        description: `the grant type is not supported (${offered.join(", ")})`,
      }
      : {}),
  });
}

export function registerTokenRoutes(app: App) {
  app.openapi(exchangeCredentialsRoute, async (c) => {
    const { sql, tokens, config } = c.get("deps");
    const form = c.req.valid("form");
    const body = await exchangeCredentials({
      sql,
      tokens,
      settings: { refreshTokenTtl: config.refreshTokenTtl, sessionMaxTtl: config.sessionMaxTtl },
      form,
      client: presentedClientOf(c, form),
    });
    tokensIssued.child(form.grant_type).value++;
    c.header("Pragma", "no-cache");
    return c.json(body, 200);
  }, tokenFormHook);
  app.openapi(revokeTokenRoute, async (c) => {
    const { sql, tokens } = c.get("deps");
    const form = c.req.valid("form");
    await revokeToken(sql, tokens, form, presentedClientOf(c, form));
    return c.json({}, 200);
  });
  app.openapi(introspectTokenRoute, async (c) => {
    const { sql, tokens } = c.get("deps");
    const form = c.req.valid("form");
    const result = await introspectToken(sql, tokens, form, presentedClientOf(c, form));
    c.header("Pragma", "no-cache");
    return c.json(result, 200);
  });
}
