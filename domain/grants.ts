/** The token endpoint's grants, each a list of small named checks in the order of the contract. */
import type { Sql } from "../db/connection.ts";
import { findClientCredentials } from "../db/clients.ts";
import { decodeBase64Strict } from "./base64.ts";
import { AppError } from "./errors.ts";
import { secretMatches } from "./secrets.ts";
import type { TokenService } from "./tokens.ts";

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

function badCredentials(description: string): AppError {
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
  req: TokenRequest,
  authorization: string | undefined,
): Promise<TokenResponse> {
  switch (req.grant_type) {
    case "client_credentials":
      return await clientCredentials(sql, tokens, req, authorization);
    case "authorization_code":
    case "refresh_token":
      throw new AppError("invalid_params", {
        details: [{ field: "grant_type", issue: `${req.grant_type} is not enabled on this server yet` }],
      });
  }
}

async function clientCredentials(
  sql: Sql,
  tokens: TokenService,
  req: TokenRequest,
  authorization: string | undefined,
): Promise<TokenResponse> {
  if (!authorization) throw missing("Authorization", "client_credentials");
  if (req.client_secret !== undefined) {
    // RFC 6749 §2.3: one authentication method per request; we support only HTTP Basic.
    throw new AppError("invalid_params", {
      details: [{ field: "client_secret", issue: "send the secret in HTTP Basic authentication only" }],
    });
  }
  const { clientId, secret } = parseBasicCredentials(authorization);
  if (req.client_id !== undefined && req.client_id !== clientId) {
    throw new AppError("invalid_params", {
      details: [{ field: "client_id", issue: "differs from the client id of the Basic credentials" }],
    });
  }
  const client = await findClientCredentials(sql, clientId);
  if (!client) throw new AppError("invalid_client");
  // The secret is checked before any state is revealed, so only the client's holder learns it is inactive.
  if (!secretMatches(secret, client.secret_hash)) throw badCredentials("the client secret is wrong");
  if (!client.is_active) throw new AppError("client_not_active");
  if (!client.project_is_active) throw new AppError("project_not_active");
  const { token } = await tokens.issueAccessToken({
    projectId: client.project_id,
    subject: client.id,
    clientId: client.id,
  });
  return { access_token: token, token_type: "Bearer", expires_in: tokens.accessTokenTtl };
}
