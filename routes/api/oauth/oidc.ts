/** OpenID Connect: the provider's configuration and userinfo (Bearer, RFC 6750). */
import { metadataDocumentsAdmitted } from "../../../domain/oauth/client_metadata.ts";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { BearerError, userInfo } from "../../../domain/oauth/oidc.ts";
import { jwksMaxAge, signingAlgorithms } from "../../../domain/keys/keys.ts";
import { CLAIMS_SUPPORTED, OIDC_SCOPES, OpenIdConfiguration, UserInfo } from "../../../openapi/oidc.ts";
import type { App, AppEnv } from "../../env.ts";
import { publicRoute } from "../operation.ts";
import { jsonResponse } from "../responses.ts";
import { authorizationServerMetadata } from "../system/system.ts";
import { ACR_MULTI, ACR_SINGLE } from "../../../domain/oauth/acr.ts";

export const getOpenIdConfiguration = publicRoute({
  method: "get",
  path: "/.well-known/openid-configuration",
  operationId: "getOpenIdConfiguration",
  tags: ["Tokens"],
  summary: "OpenID Connect discovery",
  description: "The RFC 8414 metadata plus what OpenID Connect libraries read: `userinfo_endpoint`, " +
    "`end_session_endpoint`, `scopes_supported` (`openid`, `profile`, `email`; other scopes are ignored), " +
    "`claims_supported`, `subject_types_supported` and `prompt_values_supported`. A request whose `scope` " +
    "has `openid` gets an ID token (signed like the access tokens, `aud` = the client id) and a single " +
    "sign-on session; any other request is plain OAuth.",
  responses: { 200: jsonResponse(OpenIdConfiguration, "The provider's configuration") },
  errors: [],
});

const UserInfoError = z.object({ error: z.string(), error_description: z.string() }).openapi("BearerError");
const bearerErrors = {
  401: jsonResponse(
    UserInfoError,
    'No, an invalid, expired or no longer live access token: `WWW-Authenticate: Bearer error="invalid_token"`',
  ),
  403: jsonResponse(UserInfoError, 'The login did not ask for `openid`: `error="insufficient_scope"`'),
};

const userInfoRoute = (method: "get" | "post") =>
  publicRoute({
    method,
    path: "/userinfo",
    operationId: method === "get" ? "getUserInfo" : "postUserInfo",
    tags: ["Tokens"],
    summary: "The signed-in user's claims (OpenID Connect userinfo)",
    description: "Send the user's access token as `Authorization: Bearer`. Answers `sub` (the user id) and " +
      "the claims of the scopes granted at the login: `name` and `picture` with `profile`, `email` and " +
      "`email_verified` with `email`; a claim without a value (no avatar, no email) is left out, never null. " +
      "Live: a deactivated user, an ended session or a revoked token is " +
      "refused at once.",
    responses: { 200: jsonResponse(UserInfo, "The user's claims"), ...bearerErrors },
  });
export const getUserInfoRoute = userInfoRoute("get");
export const postUserInfoRoute = userInfoRoute("post");

/** The status of each RFC 6750 §3.1 code. */
const BEARER_STATUS = { invalid_request: 400, invalid_token: 401, insufficient_scope: 403 } as const;

/** `Authorization: Bearer <token>`; undefined when absent; a malformed header is refused. */
function bearerOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!m) throw new BearerError("invalid_request", "the Authorization header is not a bearer token");
  return m[1];
}

async function answerUserInfo(c: Context<AppEnv>) {
  const { sql, tokens } = c.get("deps");
  c.header("Cache-Control", "no-store");
  c.header("Pragma", "no-cache");
  try {
    const token = bearerOf(c.req.header("authorization"));
    return c.json(await userInfo(sql, tokens, token), 200);
  } catch (err) {
    if (!(err instanceof BearerError)) throw err;
    const sent = c.req.header("authorization") !== undefined || err.code !== "invalid_token";
    c.header(
      "WWW-Authenticate",
      sent
        ? `Bearer error="${err.code}", error_description="${err.message}"`
        : `Bearer error="invalid_token"`,
    );
    return c.json({ error: err.code, error_description: err.message }, BEARER_STATUS[err.code]);
  }
}

export function registerOidcRoutes(app: App) {
  app.openapi(getOpenIdConfiguration, async (c) => {
    const base = c.get("deps").config.publicUrl;
    const [algorithms, documents] = await Promise.all([
      signingAlgorithms(c.get("deps").sql),
      metadataDocumentsAdmitted(c.get("deps").sql),
    ]);
    c.header("Cache-Control", `public, max-age=${jwksMaxAge(c.get("deps").config.accessTokenTtl)}`);
    return c.json({
      ...authorizationServerMetadata(base, algorithms, documents),
      userinfo_endpoint: `${base}/userinfo`,
      end_session_endpoint: `${base}/logout`,
      scopes_supported: [...OIDC_SCOPES],
      claims_supported: [...CLAIMS_SUPPORTED],
      subject_types_supported: ["public"],
      prompt_values_supported: ["none", "login"],
      acr_values_supported: [ACR_SINGLE, ACR_MULTI],
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    }, 200);
  });
  app.openapi(getUserInfoRoute, answerUserInfo as never);
  app.openapi(postUserInfoRoute, answerUserInfo as never);
}
