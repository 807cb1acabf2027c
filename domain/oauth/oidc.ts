/**
 * OpenID Connect on top of the login (OpenID Connect Core 1.0): the authorization request's OpenID parameters,
 * the ID token's claims, and userinfo. A request without `openid` in its scope is a plain OAuth request and is
 * answered exactly as before; permissions stay out of scopes and out of every token, but for a client's claims
 * from decisions (domain/oauth/decision_claims.ts), which are search answers it asked for.
 */
import { retryRead, type Sql } from "../../db/connection.ts";
import { findSessionClaims } from "../../db/oauth/oidc.ts";
import { OIDC_SCOPES, type OidcScope, type UserInfo } from "../../openapi/oidc.ts";
import { liveToken } from "../authz/gate.ts";
import type { TokenService } from "../keys/tokens.ts";
import { ACR_MULTI, acrOf } from "./acr.ts";
import { organizationNameOf } from "../organizations/membership.ts";

/** What an authorization request with `openid` asked for, beyond OAuth's parameters. */
export type OidcRequest = {
  /** The granted scopes, space-separated: `openid`, and `profile` and `email` when asked (others ignored). */
  scope: string;
  nonce: string | null;
  /** `login` forces the form, `none` forbids it (§3.1.2.1). */
  prompt: "login" | "none" | null;
  /** Seconds since the last login after which the form is shown again. */
  maxAge: number | null;
  /** Pre-fills the email field. */
  loginHint: string | null;
  /** `acr_values` naming the multi-factor level (`2`): the login must include a second factor. */
  acr: typeof ACR_MULTI | null;
};

/** The bits of OpenID parameters that are simply wrong, in any request (each an `invalid_request` redirect). */
export function oidcParamIssue(get: (name: string) => string | undefined): string | null {
  const prompt = get("prompt");
  if (prompt !== undefined) {
    const values = prompt.split(" ").filter(Boolean);
    const unsupported = values.find((v) => v !== "login" && v !== "none");
    if (unsupported !== undefined) return `prompt=${unsupported.slice(0, 50)} is not supported (login, none)`;
    if (values.includes("none") && values.length > 1) {
      return "prompt=none cannot be combined with other values";
    }
  }
  const maxAge = get("max_age");
  if (maxAge !== undefined && !/^\d{1,9}$/.test(maxAge)) return "max_age must be a non-negative integer";
  const nonce = get("nonce");
  if (nonce !== undefined && nonce.length > 512) return "nonce is longer than 512 characters";
  const acr = get("acr_values");
  if (acr !== undefined && acr.length > 512) return "acr_values is longer than 512 characters";
  return null;
}

/** The OpenID request of valid parameters, or null when `scope` has no `openid` (a plain OAuth request). */
export function oidcRequest(get: (name: string) => string | undefined): OidcRequest | null {
  const asked = (get("scope") ?? "").split(" ");
  if (!asked.includes("openid")) return null;
  const prompt = (get("prompt") ?? "").split(" ");
  const maxAge = get("max_age");
  const hint = get("login_hint");
  return {
    scope: OIDC_SCOPES.filter((s) => asked.includes(s)).join(" "),
    nonce: get("nonce") || null,
    prompt: prompt.includes("none") ? "none" : prompt.includes("login") ? "login" : null,
    maxAge: maxAge === undefined ? null : Number(maxAge),
    loginHint: hint && hint.length <= 100 ? hint : null,
    // Voluntary (§3.1.2.1): an unknown value is ignored, and the ID token's `acr` says what was reached.
    acr: (get("acr_values") ?? "").split(" ").includes(ACR_MULTI) ? ACR_MULTI : null,
  };
}

export const hasOpenId = (scope: string | null): scope is string =>
  scope !== null && scope.split(" ").includes("openid");

const granted = (scope: string, s: OidcScope) => scope.split(" ").includes(s);

/**
 * `sub` and the claims of the granted scopes: `name`, `given_name`, `family_name`, `picture` (profile); `email`,
 * `email_verified` (email).
 * A claim without a value is left out, never `null` (OpenID Connect Core §5.3.2): a user without an avatar has
 * no `picture`, one without an email neither `email` nor `email_verified`.
 */
function claimsOf(
  userId: string,
  scope: string,
  u: {
    display_name: string;
    given_name: string | null;
    family_name: string | null;
    avatar_url: string | null;
    email: string | null;
    email_verified: boolean;
  },
): UserInfo {
  const claims: UserInfo = { sub: userId };
  if (granted(scope, "profile")) {
    if (u.display_name) claims.name = u.display_name;
    if (u.given_name) claims.given_name = u.given_name;
    if (u.family_name) claims.family_name = u.family_name;
    if (u.avatar_url) claims.picture = u.avatar_url;
  }
  // Verified: a link mailed to the address was followed (docs/email.md), an admin said so, or an upstream
  // identity provider said so when the user was created at sign-in.
  if (granted(scope, "email") && u.email) {
    Object.assign(claims, { email: u.email, email_verified: u.email_verified });
  }
  return claims;
}

/** The ID token of a user session whose scope has `openid`, signed with the access token's key. */
export async function issueIdToken(
  sql: Sql,
  tokens: TokenService,
  t: {
    projectId: string;
    sessionId: string;
    userId: string;
    clientId: string;
    /** The granted scopes. */
    scope: string;
    /** Only on the ID token of the code exchange (§12.2: a refreshed one carries none). */
    nonce: string | null;
    authTime: Date;
    ssoSessionId: string | null;
    /** The database's time, as stamped on the access token; its key. */
    issuedAt: Date;
    kid: string;
    accessToken: string;
    /** Claims from decisions (domain/oauth/decision_claims.ts), as the access token carries them. */
    decisionClaims?: Record<string, string[]>;
    /** The organization the user signed in to, as the access token's `org_id`. */
    organizationId?: string | null;
  },
): Promise<string> {
  const user = await findSessionClaims(sql, t.projectId, t.sessionId, t.userId);
  // In the transaction that opened the session or spent its token: a session without its user is a fault.
  if (!user) throw new Error(`session ${t.sessionId} has no user ${t.userId}`);
  const iat = Math.floor(t.issuedAt.getTime() / 1000);
  return await tokens.signIdToken(t.kid, {
    // First, so that no name can override ours (their names are never ours: RESERVED_CLAIM_NAMES).
    ...t.decisionClaims,
    ...claimsOf(t.userId, t.scope, user),
    aud: t.clientId,
    exp: iat + tokens.accessTokenTtl,
    iat,
    auth_time: Math.floor(t.authTime.getTime() / 1000),
    ...(t.nonce !== null ? { nonce: t.nonce } : {}),
    // How the user authenticated (RFC 8176) and the level it reached; through an upstream identity provider,
    // named by `idp`.
    ...authContext(user),
    ...(user.provider_id !== null ? { idp: user.provider_id } : {}),
    // The single sign-on session, which a logout ends (OpenID Connect Front-Channel Logout §3).
    ...(t.ssoSessionId !== null ? { sid: t.ssoSessionId } : { sid: t.sessionId }),
    ...(t.organizationId ? { org_id: t.organizationId } : {}),
  }, t.accessToken);
}

/**
 * `amr` and `acr` of a login: what it recorded (the methods presented at its `auth_time`: `["fed", "otp", "mfa"]`
 * after an upstream provider and a code); `["fed"]` for an upstream login from before the methods were kept.
 */
export function authContext(login: { amr: string[] | null; provider_id: string | null }) {
  const amr = login.amr ?? (login.provider_id !== null ? ["fed"] : null);
  return amr === null ? {} : { amr, acr: acrOf(amr) };
}

/**
 * A refused userinfo request, answered with `WWW-Authenticate: Bearer error="…"` (RFC 6750 §3.1); the HTTP
 * edge gives each code its status.
 */
export class BearerError extends Error {
  constructor(readonly code: "invalid_request" | "invalid_token" | "insufficient_scope", message: string) {
    super(message);
  }
}

/**
 * Userinfo (§5.3): the user's claims for a live access token of an OpenID session. Live like every other
 * request: a deactivated user, an ended session, a revoked token or key are refused at once.
 */
export async function userInfo(sql: Sql, tokens: TokenService, token: string | undefined): Promise<UserInfo> {
  if (token === undefined) throw new BearerError("invalid_token", "a bearer access token is required");
  const claims = await tokens.verifyAccessToken(token);
  if (!claims || claims.sid === undefined) {
    throw new BearerError("invalid_token", "the access token is invalid, expired or not a user's");
  }
  const sessionId = claims.sid;
  const row = await liveToken(sql, claims, { pathProjectId: null, permission: null });
  if (!row) throw new BearerError("invalid_token", "the access token is no longer valid");
  const user = await retryRead(() => findSessionClaims(sql, claims.aud, sessionId, claims.sub));
  if (!user) throw new BearerError("invalid_token", "the access token is no longer valid");
  if (!hasOpenId(user.scope)) {
    throw new BearerError("insufficient_scope", "the login did not ask for the openid scope");
  }
  const info = claimsOf(claims.sub, user.scope, user);
  if (claims.org_id) {
    const name = await organizationNameOf(sql, claims.aud, claims.org_id);
    Object.assign(info, { org_id: claims.org_id, ...(name === null ? {} : { org_name: name }) });
  }
  return info;
}
