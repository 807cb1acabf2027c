/** Token revocation (RFC 7009) and introspection (RFC 7662), for clients of the token's project. */
import type { Sql } from "../db/connection.ts";
import { type ClientCredentialsRow, findClientCredentials } from "../db/clients.ts";
import { permissionCodes } from "../db/principals.ts";
import { findRefreshToken, revokeAccessToken, revokeSession } from "../db/sessions.ts";
import { AppError } from "./errors.ts";
import { liveToken } from "./gate.ts";
import { badCredentials, parseBasicCredentials } from "./grants.ts";
import { hashSecret, secretMatches } from "./secrets.ts";
import type { TokenService } from "./tokens.ts";

export type TokenActionRequest = { token: string; token_type_hint?: string; client_id?: string };

export type Introspection =
  | { active: false }
  | {
    active: true;
    token_type: "access_token" | "refresh_token";
    iss: string;
    sub: string;
    aud: string;
    client_id: string;
    exp: number;
    iat?: number;
    jti?: string;
    sid?: string;
    /** The subject's permissions now: a user's through the role, a client's directly. */
    permissions: string[];
  };

/** HTTP Basic authentication of a confidential client. */
async function authenticate(sql: Sql, authorization: string | undefined): Promise<ClientCredentialsRow> {
  if (!authorization) throw badCredentials("authenticate the client with HTTP Basic");
  const { clientId, secret } = parseBasicCredentials(authorization);
  const client = await findClientCredentials(sql, clientId);
  if (!client || !secretMatches(secret, client.secret_hash)) {
    throw badCredentials();
  }
  return client;
}

/**
 * RFC 7009. A confidential client authenticates with HTTP Basic; a public client (PKCE) names itself with
 * `client_id`, since holding the token is what lets one revoke it. A refresh token ends its whole session;
 * an access token is refused from the next request on. Unknown tokens, and tokens of another project,
 * answer 200 like any other (§2.2) and change nothing.
 */
export async function revokeToken(
  sql: Sql,
  tokens: TokenService,
  req: TokenActionRequest,
  authorization: string | undefined,
): Promise<void> {
  let projectId: string;
  if (authorization) projectId = (await authenticate(sql, authorization)).project_id;
  else if (req.client_id) {
    const client = await findClientCredentials(sql, req.client_id);
    if (!client) throw new AppError("invalid_client");
    projectId = client.project_id;
  } else {
    throw new AppError("invalid_params", {
      details: [{ field: "client_id", issue: "required without HTTP Basic authentication" }],
    });
  }
  const refresh = await findRefreshToken(sql, hashSecret(req.token));
  if (refresh) {
    if (refresh.project_id === projectId) await revokeSession(sql, refresh.session_id);
    return;
  }
  const claims = await tokens.verifyAccessToken(req.token);
  if (claims && claims.aud === projectId) {
    await revokeAccessToken(sql, { jti: claims.jti, project_id: projectId, exp: claims.exp });
  }
}

/**
 * RFC 7662 for an authenticated client of the token's project. `active` is decided live, like the gate
 * decides it; a database failure is an error (503), never `active: false`.
 */
export async function introspectToken(
  sql: Sql,
  tokens: TokenService,
  req: TokenActionRequest,
  authorization: string | undefined,
): Promise<Introspection> {
  const client = await authenticate(sql, authorization);
  if (!client.is_active) throw new AppError("client_not_active");
  if (!client.project_is_active) throw new AppError("project_not_active");
  // The hint orders the lookups; it never hides a token of the other type (RFC 7662 §2.1).
  const refreshFirst = req.token_type_hint === "refresh_token";
  if (refreshFirst) {
    const refreshed = await introspectRefresh(sql, tokens, req.token, client.project_id);
    if (refreshed) return refreshed;
  }
  const claims = await tokens.verifyAccessToken(req.token);
  if (claims) {
    if (claims.aud !== client.project_id) return { active: false };
    const live = await liveToken(sql, claims, { pathProjectId: null, permission: null });
    if (!live) return { active: false };
    return {
      active: true,
      token_type: "access_token",
      iss: tokens.issuer,
      sub: claims.sub,
      aud: claims.aud,
      client_id: claims.client_id,
      exp: claims.exp,
      iat: claims.iat,
      jti: claims.jti,
      ...(claims.sid ? { sid: claims.sid } : {}),
      permissions: await permissionCodes(
        sql,
        claims.sid ? { userId: claims.sub } : { clientId: claims.client_id },
      ),
    };
  }
  if (refreshFirst) return { active: false };
  return await introspectRefresh(sql, tokens, req.token, client.project_id) ?? { active: false };
}

/** A refresh token's introspection, or null when it is not a live refresh token of the project. */
async function introspectRefresh(
  sql: Sql,
  tokens: TokenService,
  token: string,
  projectId: string,
): Promise<Introspection | null> {
  const refresh = await findRefreshToken(sql, hashSecret(token));
  if (
    !refresh || refresh.project_id !== projectId || refresh.used || refresh.expired ||
    !refresh.session_live || !refresh.user_active || !refresh.client_live
  ) return null;
  return {
    active: true,
    token_type: "refresh_token",
    iss: tokens.issuer,
    sub: refresh.user_id,
    aud: refresh.project_id,
    client_id: refresh.client_id,
    exp: refresh.exp,
    sid: refresh.session_id,
    permissions: await permissionCodes(sql, { userId: refresh.user_id }),
  };
}
