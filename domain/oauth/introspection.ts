/** Token revocation (RFC 7009) and introspection (RFC 7662), for clients of the token's project. */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import type { Introspection, TokenActionRequest } from "../../openapi/tokens.ts";
import { heldCodes } from "../../db/authz/principals.ts";
import { findRefreshToken, revokeAccessToken, revokeSession } from "../../db/oauth/sessions.ts";
import { clientSource, record } from "../audit/audit.ts";
import { delegatedPermissions } from "../../db/oauth/delegated_tokens.ts";
import { authenticateClient, authenticateWith, type PresentedClient } from "./client_auth.ts";
import { liveToken, principalOf } from "../authz/gate.ts";
import { findSessionAuth } from "../../db/oauth/oidc.ts";
import { findIndicatorProject, findIndicatorTarget } from "../../db/oauth/resource_indicators.ts";
import { authContext } from "./oidc.ts";
import { findMembership, organizationNameOf } from "../organizations/membership.ts";
import { hashSecret } from "../shared/secrets.ts";
import { holderOf, type TokenService } from "../keys/tokens.ts";

/**
 * RFC 7009. A confidential client authenticates with HTTP Basic; a public client (PKCE) names itself with
 * `client_id`, since holding the token is what lets one revoke it. A client revokes only its own tokens
 * (§2.1): a refresh token ends its whole session, an access token is refused from the next request on. Other
 * clients' tokens, unknown tokens, and anything an inactive client sends answer 200 (§2.2) and change nothing.
 */
export async function revokeToken(
  sql: Sql,
  tokens: TokenService,
  req: TokenActionRequest,
  presented: PresentedClient,
): Promise<void> {
  const { client, row: refresh } = await authenticateWith(
    sql,
    presented,
    "revocation",
    () => retryRead(() => findRefreshToken(sql, hashSecret(req.token))),
    // A URL client recorded by several projects: an access token names its project by its `aud`.
    () => accessTokenProject(sql, tokens, req.token),
  );
  if (!client.is_active || !client.project_is_active) return;
  const source = clientSource(client.id, presented.request);
  if (refresh) {
    if (refresh.project_id === client.project_id && refresh.client_id === client.id && refresh.session_live) {
      await transaction(sql, async (tx) => {
        await revokeSession(tx, refresh.session_id);
        await record(tx, {
          projectId: client.project_id,
          type: "session.revoked",
          source,
          target: { type: "session", id: refresh.session_id },
          details: { user_id: refresh.user_id, reason: "refresh token revoked (RFC 7009)" },
        });
      });
    }
    return;
  }
  const claims = await tokens.verifyAccessToken(req.token);
  const ofProject = claims !== null && (claims.aud === client.project_id ||
    await retryRead(() => findIndicatorProject(sql, claims.aud)) === client.project_id);
  if (claims && ofProject && claims.client_id === client.id) {
    await transaction(sql, async (tx) => {
      if (
        !(await revokeAccessToken(tx, { jti: claims.jti, project_id: client.project_id, exp: claims.exp }))
      ) return;
      await record(tx, {
        projectId: client.project_id,
        type: "token.revoked",
        source,
        target: { type: "token", id: claims.jti },
        details: { subject: claims.sub },
      });
    });
  }
}

/** The project of an access token of this service (its `aud`: the project, or one of its APIs), or undefined. */
async function accessTokenProject(
  sql: Sql,
  tokens: TokenService,
  token: string,
): Promise<string | undefined> {
  const claims = await tokens.verifyAccessToken(token);
  if (!claims) return undefined;
  return await retryRead(() => findIndicatorProject(sql, claims.aud)) ?? claims.aud;
}

/**
 * RFC 7662 for an authenticated client of the token's project. `active` is decided live, like the gate
 * decides it; a database failure is an error (503), never `active: false`.
 */
export async function introspectToken(
  sql: Sql,
  tokens: TokenService,
  req: TokenActionRequest,
  presented: PresentedClient,
): Promise<Introspection> {
  const client = await authenticateClient(sql, presented, "introspection");
  // The hint orders the lookups; it never hides a token of the other type (RFC 7662 §2.1).
  const refreshFirst = req.token_type_hint === "refresh_token";
  if (refreshFirst) {
    const refreshed = await introspectRefresh(sql, tokens, req.token, client.project_id);
    if (refreshed) return refreshed;
  }
  const verified = await tokens.verifyAccessToken(req.token);
  if (verified) {
    // A token for one of the project's APIs (RFC 8707) names it by its indicator, which must still be there;
    // the same read says what of the API its subject (a user's session, or the client itself) holds now.
    const forApi = verified.aud !== client.project_id;
    const subject = holderOf(verified);
    const inOrganization = "userId" in subject && verified.org_id
      ? { ...subject, organizationId: verified.org_id }
      : subject;
    const api = forApi
      ? await retryRead(() => findIndicatorTarget(sql, verified.aud, inOrganization))
      : undefined;
    if (forApi && api?.project_id !== client.project_id) return { active: false };
    const claims = { ...verified, aud: client.project_id };
    const live = await liveToken(sql, claims, { pathProjectId: null, permission: null });
    if (!live) return { active: false };
    const principal = principalOf(claims, live);
    // A token of an exchange holds what its subject holds within its actors' delegations and what it asked.
    const delegated = verified.act
      ? await retryRead(() => delegatedPermissions(sql, verified.jti))
      : undefined;
    const held = delegated ? { permissions: delegated.map((p) => p.code) } : await heldOf(sql, subject);
    const organization = verified.org_id && "userId" in subject
      ? await organizationPart(sql, claims.aud, verified.org_id, subject.userId)
      : {};
    const ofApi = delegated ? delegated.map((p) => p.permission) : api?.held ?? [];
    return {
      active: true,
      token_type: "access_token",
      iss: tokens.issuer,
      sub: claims.sub,
      aud: verified.aud,
      client_id: claims.client_id,
      exp: claims.exp,
      iat: claims.iat,
      jti: claims.jti,
      ...(api ? { scope: liveScope(verified.scope, ofApi) } : {}),
      ...(verified.act ? { act: verified.act } : {}),
      ...(principal.sessionId ? { sid: principal.sessionId } : {}),
      ...(principal.sessionId ? await sessionAuth(sql, claims.aud, principal.sessionId) : {}),
      ...organization,
      ...held,
    };
  }
  if (refreshFirst) return { active: false };
  return await introspectRefresh(sql, tokens, req.token, client.project_id) ?? { active: false };
}

/** What of a token's `scope` its subject still holds of the API (a role or grant changed since: live). */
function liveScope(scope: string | undefined, held: string[]): string {
  return (scope ?? "").split(" ").filter((code) => held.includes(code)).join(" ");
}

/**
 * A token of an organization: `org_id`, its name now (`org_name`) and what the user's organization roles there
 * hold (`organization_permissions`, outright; they hold only on that organization's objects).
 */
async function organizationPart(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
  /** Its name when the caller read it already (null: deleted). */
  known?: string | null,
) {
  const name = known !== undefined ? known : await organizationNameOf(sql, projectId, organizationId);
  const held = await retryRead(() => heldCodes(sql, { userId, organizationId }));
  return {
    org_id: organizationId,
    ...(name === null ? {} : { org_name: name }),
    organization_permissions: held.plain,
  };
}

/** A subject's permissions as introspection shows them: outright, and (when any) under a condition. */
async function heldOf(sql: Sql, subject: { userId: string } | { clientId: string }) {
  const held = await retryRead(() => heldCodes(sql, subject));
  return {
    permissions: held.plain,
    ...(held.conditional.length > 0 ? { conditional_permissions: held.conditional } : {}),
  };
}

/** The session's `amr` and `acr`, when its login recorded them. */
async function sessionAuth(sql: Sql, projectId: string, sessionId: string) {
  const row = await retryRead(() => findSessionAuth(sql, projectId, sessionId));
  return row ? authContext(row) : {};
}

/** A refresh token's introspection, or null when it is not a live refresh token of the project. */
async function introspectRefresh(
  sql: Sql,
  tokens: TokenService,
  token: string,
  projectId: string,
): Promise<Introspection | null> {
  const refresh = await retryRead(() => findRefreshToken(sql, hashSecret(token)));
  if (
    !refresh || refresh.project_id !== projectId || refresh.used || refresh.expired ||
    !refresh.session_live || !refresh.user_active || !refresh.client_live
  ) return null;
  // A refresh token of an organization counts while its user is a member (a refresh is refused otherwise).
  let organization = {};
  if (refresh.organization_id !== null) {
    const { organization_id: org } = refresh;
    const m = await retryRead(() => findMembership(sql, refresh.project_id, org, refresh.user_id));
    if (!m?.member || m.since! > refresh.issued_at) return null;
    organization = await organizationPart(sql, refresh.project_id, org, refresh.user_id, m.name);
  }
  return {
    active: true,
    token_type: "refresh_token",
    iss: tokens.issuer,
    sub: refresh.user_id,
    aud: refresh.project_id,
    client_id: refresh.client_id,
    exp: refresh.exp,
    sid: refresh.session_id,
    ...await sessionAuth(sql, refresh.project_id, refresh.session_id),
    ...organization,
    ...await heldOf(sql, { userId: refresh.user_id }),
  };
}
