/** The token endpoint's grants, each a list of small named checks in the order of the contract. */
import { type Sql, transaction } from "../db/connection.ts";
import { type ClientCredentialsRow, findClientCredentials } from "../db/clients.ts";
import {
  consumeAuthorizationCode,
  consumeRefreshToken,
  findAuthorizationCode,
  findRefreshToken,
  insertRefreshToken,
  insertSession,
  revokeSession,
} from "../db/sessions.ts";
import { createHash } from "node:crypto";
import { decodeBase64Strict } from "./base64.ts";
import { AppError } from "./errors.ts";
import { newId, newSecret } from "./ids.ts";
import { hashSecret, secretMatches } from "./secrets.ts";
import type { TokenService } from "./tokens.ts";

export type GrantSettings = { refreshTokenTtl: number };

export type TokenRequest = {
  grant_type: "authorization_code" | "refresh_token" | "client_credentials";
  client_id?: string;
  client_secret?: string;
  authorization_code?: string;
  code?: string;
  redirect_uri?: string;
  code_verifier?: string;
  refresh_token?: string;
  state?: string;
};

export type TokenResponse = {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token?: string;
  refresh_token_expires_in?: number;
};

const BASIC_CHALLENGE = { "WWW-Authenticate": 'Basic realm="access-control", charset="UTF-8"' };

/** 401 `invalid_client_credentials` with the Basic challenge (RFC 6749 §5.2). */
export function badCredentials(description?: string): AppError {
  return new AppError("invalid_client_credentials", { description, headers: BASIC_CHALLENGE });
}

function missing(field: string, grant: string): AppError {
  return new AppError("invalid_params", { details: [{ field, issue: `required for grant_type=${grant}` }] });
}

/** RFC 6749 §2.3.1: the id and secret are form-urlencoded, then joined by a colon and base64-encoded. */
export function parseBasicCredentials(header: string): { clientId: string; secret: string } {
  const m = /^Basic +(\S+) *$/i.exec(header);
  if (!m) throw badCredentials("the Authorization header is not HTTP Basic");
  const bytes = decodeBase64Strict(m[1]);
  if (!bytes) throw badCredentials("the Basic credentials are not valid base64");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badCredentials("the Basic credentials are not valid UTF-8");
  }
  const colon = text.indexOf(":");
  if (colon < 0) throw badCredentials("the Basic credentials have no colon between client id and secret");
  try {
    const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    const clientId = formDecode(text.slice(0, colon));
    const secret = formDecode(text.slice(colon + 1));
    if (!clientId || !secret) throw new Error("empty");
    // Control characters are in no client id or secret; a NUL byte could not even be looked up.
    // deno-lint-ignore no-control-regex -- finding control characters is the point
    if (/[\u0000-\u001f\u007f]/.test(clientId + secret)) throw new Error("control character");
    return { clientId, secret };
  } catch {
    throw badCredentials("the Basic credentials are not form-urlencoded client id and secret");
  }
}

export async function exchangeCredentials(
  sql: Sql,
  tokens: TokenService,
  settings: GrantSettings,
  req: TokenRequest,
  authorization: string | undefined,
): Promise<TokenResponse> {
  switch (req.grant_type) {
    case "client_credentials":
      return await clientCredentials(sql, tokens, req, authorization);
    case "authorization_code":
      return await authorizationCode(sql, tokens, settings, req, authorization);
    case "refresh_token":
      return await refreshToken(sql, tokens, settings, req, authorization);
  }
}

/**
 * The requesting client, in the contract's order: exists (`invalid_client`), then, when HTTP Basic is sent,
 * its secret, then active and its project active. The secret comes before any state is revealed, so only
 * the client's holder learns that it is inactive. `client_id` in the form must match the Basic one; user
 * grants name a public client by `client_id` alone.
 */
async function requestingClient(
  sql: Sql,
  req: TokenRequest,
  authorization: string | undefined,
): Promise<ClientCredentialsRow> {
  refuseBodySecret(req);
  let clientId = req.client_id;
  let secret: string | undefined;
  if (authorization) {
    const basic = parseBasicCredentials(authorization);
    if (clientId !== undefined && basic.clientId !== clientId) {
      throw new AppError("invalid_params", {
        details: [{ field: "client_id", issue: "differs from the client id of the Basic credentials" }],
      });
    }
    clientId = basic.clientId;
    secret = basic.secret;
  }
  const client = await findClientCredentials(sql, clientId!);
  if (!client) throw new AppError("invalid_client");
  if (secret !== undefined && !secretMatches(secret, client.secret_hash)) {
    throw badCredentials("the client secret is wrong");
  }
  if (!client.is_active) throw new AppError("client_not_active");
  if (!client.project_is_active) throw new AppError("project_not_active");
  return client;
}

/** RFC 6749 §2.3: credentials a client sends must be checked; in the body they are not supported at all. */
function refuseBodySecret(req: TokenRequest): void {
  if (req.client_secret !== undefined) {
    throw new AppError("invalid_params", {
      details: [{ field: "client_secret", issue: "send the secret in HTTP Basic authentication only" }],
    });
  }
}

function required(req: TokenRequest, grant: string, fields: (keyof TokenRequest)[]): void {
  const details = fields.filter((f) => !req[f]).map((field) => ({
    field,
    issue: `required for grant_type=${grant}`,
  }));
  if (details.length > 0) throw new AppError("invalid_params", { details });
}

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge, compared in constant time. */
function verifierMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) return false;
  const computed = createHash("sha256").update(verifier, "ascii").digest("base64url");
  return secretMatches(computed, hashSecret(challenge));
}

/** Opens a session for the user and issues its first access and refresh tokens. */
async function issueUserTokens(
  tokens: TokenService,
  settings: GrantSettings,
  tx: Sql,
  s: { projectId: string; sessionId: string; userId: string; clientId: string; fresh: boolean },
): Promise<TokenResponse> {
  if (s.fresh) {
    await insertSession(tx, {
      project_id: s.projectId,
      id: s.sessionId,
      user_id: s.userId,
      client_id: s.clientId,
      ttlSeconds: settings.refreshTokenTtl,
    });
  }
  const refresh = newSecret();
  await insertRefreshToken(tx, {
    project_id: s.projectId,
    token_hash: hashSecret(refresh),
    session_id: s.sessionId,
    ttlSeconds: settings.refreshTokenTtl,
  });
  const { token } = await tokens.issueAccessToken({
    projectId: s.projectId,
    subject: s.userId,
    clientId: s.clientId,
    sessionId: s.sessionId,
  });
  return {
    access_token: token,
    token_type: "Bearer",
    expires_in: tokens.accessTokenTtl,
    refresh_token: refresh,
    refresh_token_expires_in: settings.refreshTokenTtl,
  };
}

async function authorizationCode(
  sql: Sql,
  tokens: TokenService,
  settings: GrantSettings,
  req: TokenRequest,
  authorization: string | undefined,
): Promise<TokenResponse> {
  const code = req.authorization_code ?? req.code;
  if (req.authorization_code !== undefined && req.code !== undefined && req.code !== req.authorization_code) {
    throw new AppError("invalid_params", {
      details: [{ field: "code", issue: "differs from authorization_code" }],
    });
  }
  required({ ...req, authorization_code: code }, "authorization_code", [
    "client_id",
    "authorization_code",
    "redirect_uri",
    "code_verifier",
  ]);
  const client = await requestingClient(sql, req, authorization);
  const codeHash = hashSecret(code!);
  const row = await findAuthorizationCode(sql, codeHash);
  if (!row || row.client_id !== client.id || row.project_id !== client.project_id) {
    throw new AppError("invalid_authorization_code");
  }
  if (row.redirect_uri !== req.redirect_uri) throw new AppError("different_authorize_redirect_uri");
  if (row.used) {
    await replayedCode(sql, row.session_id);
    throw new AppError("auth_code_already_used");
  }
  if (row.expired) throw new AppError("auth_code_expired");
  if (!verifierMatches(req.code_verifier!, row.code_challenge)) throw new AppError("invalid_code_verifier");
  // Deactivated between the login and now: the session would be refused at once anyway.
  if (!row.user_active) {
    throw new AppError("invalid_authorization_code", { description: "the user is inactive" });
  }
  const sessionId = newId();
  const issued = await transaction(sql, async (tx) => {
    // One statement decides which of concurrent redemptions wins.
    if (!(await consumeAuthorizationCode(tx, codeHash, sessionId))) return null;
    return await issueUserTokens(tokens, settings, tx, {
      projectId: row.project_id,
      sessionId,
      userId: row.user_id,
      clientId: client.id,
      fresh: true,
    });
  });
  if (issued === null) {
    // Lost the race, or the code expired between the checks and the update.
    const now = await findAuthorizationCode(sql, codeHash);
    if (now && !now.used && now.expired) throw new AppError("auth_code_expired");
    await replayedCode(sql, now?.session_id ?? null);
    throw new AppError("auth_code_already_used");
  }
  return issued;
}

/** RFC 6749 §4.1.2: a code used twice revokes what was issued from it. */
async function replayedCode(sql: Sql, sessionId: string | null): Promise<void> {
  if (sessionId) await revokeSession(sql, sessionId);
}

async function refreshToken(
  sql: Sql,
  tokens: TokenService,
  settings: GrantSettings,
  req: TokenRequest,
  authorization: string | undefined,
): Promise<TokenResponse> {
  required(req, "refresh_token", ["client_id", "refresh_token"]);
  const client = await requestingClient(sql, req, authorization);
  const tokenHash = hashSecret(req.refresh_token!);
  const row = await findRefreshToken(sql, tokenHash);
  if (!row || row.client_id !== client.id || row.project_id !== client.project_id) {
    throw new AppError("invalid_refresh_token");
  }
  if (row.used) {
    // RFC 9700 §4.14.2: a spent refresh token presented again means it leaked; end the whole session.
    await revokeSession(sql, row.session_id);
    throw new AppError("refresh_token_already_used");
  }
  if (row.expired) throw new AppError("refresh_token_expired");
  if (!row.session_live) {
    throw new AppError("invalid_refresh_token", { description: "the session has ended" });
  }
  if (!row.user_active) throw new AppError("invalid_refresh_token", { description: "the user is inactive" });
  const issued = await transaction(sql, async (tx) => {
    if (!(await consumeRefreshToken(tx, tokenHash))) return null;
    return await issueUserTokens(tokens, settings, tx, {
      projectId: row.project_id,
      sessionId: row.session_id,
      userId: row.user_id,
      clientId: client.id,
      fresh: false,
    });
  });
  if (issued === null) {
    await revokeSession(sql, row.session_id);
    throw new AppError("refresh_token_already_used");
  }
  return issued;
}

async function clientCredentials(
  sql: Sql,
  tokens: TokenService,
  req: TokenRequest,
  authorization: string | undefined,
): Promise<TokenResponse> {
  if (!authorization) throw missing("Authorization", "client_credentials");
  const client = await requestingClient(sql, req, authorization);
  const { token } = await tokens.issueAccessToken({
    projectId: client.project_id,
    subject: client.id,
    clientId: client.id,
  });
  return { access_token: token, token_type: "Bearer", expires_in: tokens.accessTokenTtl };
}
