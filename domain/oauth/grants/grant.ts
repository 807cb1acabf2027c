/** What every grant of the token endpoint takes and answers, and the checks they share. */
import type { Sql } from "../../../db/connection.ts";
import type { TokenRequest, TokenResponse } from "../../../openapi/tokens.ts";
import { insertRefreshToken, openSession } from "../../../db/oauth/sessions.ts";
import type { PresentedClient } from "../client_auth.ts";
import { AppError } from "../../shared/errors.ts";
import { newSecret } from "../../shared/ids.ts";
import { hashSecret } from "../../shared/secrets.ts";
import type { TokenService } from "../../keys/tokens.ts";
import { hasOpenId, issueIdToken } from "../oidc.ts";
import { formIndicator, type Target, targetOf } from "../resource_indicators.ts";
import { needsConsent } from "../clients.ts";
import { requireMembership, signInMfaPolicy } from "../../organizations/membership.ts";
import { findSessionAuth } from "../../../db/oauth/oidc.ts";
import { retryRead } from "../../../db/connection.ts";
import { ACR_MULTI, acrOf } from "../acr.ts";

/**
 * A switch (refresh, token exchange) into an organization that requires a second factor needs a login that gave
 * one: else 400 `access_denied` (the application signs the user in to it, with `organization=`, to give it).
 */
export async function requireSecondFactorIn(
  sql: Sql,
  projectId: string,
  sessionId: string,
  organizationId: string,
): Promise<void> {
  const policy = await retryRead(() => signInMfaPolicy(sql, projectId, organizationId));
  if (policy !== "required") return;
  const login = await retryRead(() => findSessionAuth(sql, projectId, sessionId));
  if (login && acrOf(login.amr ?? []) === ACR_MULTI) return;
  throw new AppError("access_denied", {
    description: "the organization requires a second factor: sign the user in to it with organization=",
  });
}

/**
 * The API a user grant's token is for: the authorization's `resource` (RFC 8707), which the token request may
 * repeat but never change (a token for another API would be one the user's sign-in did not ask for), with the
 * scope it asked, granted as the user holds it now (and, for a client that needs consent, has consented to it).
 * Null for a token of the project.
 */
export async function userTarget(
  ctx: GrantContext,
  client: { id: string; third_party: boolean },
  s: {
    projectId: string;
    userId: string;
    resource: string | null;
    resource_scope: string | null;
    organization_id?: string | null;
  },
): Promise<Target | undefined> {
  const asked = formIndicator(ctx.form.resource);
  if (asked !== undefined && asked !== s.resource) {
    throw new AppError("invalid_target", {
      description: s.resource === null
        ? "the authorization asked for no resource: a token for an API needs a sign-in that asked for it"
        : "the resource is not the one the authorization asked for",
    });
  }
  if (s.resource === null) return undefined;
  // A client that needs consent gets no more than the user consented to (domain/signin/consent.ts), also on a
  // refresh after the user's role gained permissions: those are the client's only once the user is asked again.
  const user = { userId: s.userId, organizationId: s.organization_id ?? null };
  const subject = needsConsent(client) ? { ...user, consentOf: client.id } : user;
  return await targetOf(ctx.sql, s.projectId, subject, s.resource, s.resource_scope);
}

/** How the session's user signed in (see db/oauth/sessions.ts `CodeLogin`), read from its code or its session. */
export type SessionLogin = {
  scope: string | null;
  nonce: string | null;
  auth_time: Date | null;
  sso_session_id: string | null;
  ip?: string | null;
  user_agent?: string | null;
  amr?: string[] | null;
  /** RFC 8707: the API the authorization asked for, and the scope it asked (kept by the session). */
  resource?: string | null;
  resource_scope?: string | null;
  /** The organization the session's tokens are of now (`org_id`): the login's, or the one a refresh switched to. */
  organization_id?: string | null;
};

export type GrantSettings = {
  /** Lifetime of each refresh token, seconds. */
  refreshTokenTtl: number;
  /** A login session ends this long after the login, whatever its refreshes, seconds. */
  sessionMaxTtl: number;
};

/** One request to the token endpoint: its form, the client it presented, and the services it needs. */
export type GrantContext = {
  sql: Sql;
  tokens: TokenService;
  settings: GrantSettings;
  form: TokenRequest;
  client: PresentedClient;
};

/**
 * `invalid_params` naming every field the grant needs and the form lacks; `client_id` among them unless HTTP
 * Basic names the client (RFC 6749 §2.3.1, §4.1.3: a client that authenticates need not repeat its id).
 */
export function required(ctx: GrantContext, grant: string, fields: (keyof TokenRequest)[]): void {
  const form = ctx.form;
  const needed: (keyof TokenRequest)[] = ctx.client.basic ? fields : ["client_id", ...fields];
  const details = needed.filter((f) => !form[f]).map((field) => ({
    field,
    issue: `required for grant_type=${grant}`,
  }));
  if (details.length > 0) throw new AppError("invalid_params", { details });
}

/**
 * The access and refresh tokens of a user session: a new session (code grant) or the next refresh token of
 * one (refresh grant).
 */
export async function issueUserTokens(
  ctx: GrantContext,
  tx: Sql,
  s: {
    projectId: string;
    sessionId: string;
    userId: string;
    clientId: string;
    /** The client's URL when it is identified by its metadata document: the `client_id` it knows itself by. */
    metadataUrl?: string | null;
    fresh: boolean;
    /** The database's time and current signing key, from the statement that spent the code or token. */
    spent: { now: Date; kid: string };
    login: SessionLogin;
    /** For one API (RFC 8707): the access token's `aud` and `scope`. */
    target?: Target;
    /** The client's `may_act` (RFC 8693 §4.4), which the access token carries. */
    mayAct?: string | null;
    /** The client's decision claims as answered for the user (domain/oauth/decision_claims.ts), in both tokens. */
    decisionClaims?: Record<string, string[]>;
    /** A refresh in the same organization: the membership must be the one its token was issued in. */
    memberSince?: Date;
  },
): Promise<TokenResponse> {
  const refresh = newSecret();
  const organizationId = s.login.organization_id ?? null;
  // A token of an organization only for a member of it now, checked in the transaction that issues it.
  if (organizationId !== null) {
    await requireMembership(tx, s.projectId, organizationId, s.userId, s.memberSince);
  }
  const refreshTtl = s.fresh
    ? await openSession(tx, {
      project_id: s.projectId,
      id: s.sessionId,
      user_id: s.userId,
      client_id: s.clientId,
      token_hash: hashSecret(refresh),
      ttlSeconds: ctx.settings.refreshTokenTtl,
      maxTtlSeconds: ctx.settings.sessionMaxTtl,
      scope: s.login.scope,
      auth_time: s.login.auth_time,
      sso_session_id: s.login.sso_session_id,
      ip: s.login.ip ?? null,
      user_agent: s.login.user_agent ?? null,
      amr: s.login.amr ?? null,
      resource: s.login.resource ?? null,
      resource_scope: s.login.resource_scope ?? null,
      organization_id: organizationId,
    })
    : await insertRefreshToken(tx, {
      project_id: s.projectId,
      token_hash: hashSecret(refresh),
      session_id: s.sessionId,
      ttlSeconds: ctx.settings.refreshTokenTtl,
      organization_id: organizationId,
    });
  const { token } = await ctx.tokens.issueAccessToken({
    projectId: s.projectId,
    subject: s.userId,
    clientId: s.clientId,
    sessionId: s.sessionId,
    issuedAt: s.spent.now,
    kid: s.spent.kid,
    target: s.target,
    mayAct: s.mayAct,
    decisionClaims: s.decisionClaims,
    organizationId,
  });
  const response: TokenResponse = {
    access_token: token,
    token_type: "Bearer",
    expires_in: ctx.tokens.accessTokenTtl,
    refresh_token: refresh,
    refresh_token_expires_in: refreshTtl,
  };
  // OpenID Connect sessions get an ID token with every grant, the refresh grant included (§12.2).
  if (hasOpenId(s.login.scope)) {
    response.id_token = await issueIdToken(tx, ctx.tokens, {
      projectId: s.projectId,
      sessionId: s.sessionId,
      userId: s.userId,
      // The ID token's `aud` is the client_id the client sent (OpenID Connect Core §2).
      clientId: s.metadataUrl ?? s.clientId,
      scope: s.login.scope,
      nonce: s.fresh ? s.login.nonce : null,
      authTime: s.login.auth_time ?? s.spent.now,
      ssoSessionId: s.login.sso_session_id,
      issuedAt: s.spent.now,
      kid: s.spent.kid,
      accessToken: token,
      decisionClaims: s.decisionClaims,
      organizationId,
    });
    response.scope = s.login.scope;
  }
  // The access token's scope (RFC 6749 §5.1) is then the API's, whatever the ID token's was.
  if (s.target) response.scope = s.target.scope;
  return response;
}
