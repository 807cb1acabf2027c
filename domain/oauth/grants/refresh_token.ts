/** The refresh token grant (RFC 6749 §6): every refresh rotates; a spent token presented again ends its session. */
import { retryRead, transaction } from "../../../db/connection.ts";
import { consumeRefreshToken, findRefreshToken, revokeSession } from "../../../db/oauth/sessions.ts";
import { clientSource, record } from "../../audit/audit.ts";
import { authenticateWith } from "../client_auth.ts";
import { AppError } from "../../shared/errors.ts";
import { hashSecret } from "../../shared/secrets.ts";
import { refreshReuse } from "../../../telemetry/families.ts";
import type { TokenResponse } from "../../../openapi/tokens.ts";
import { decisionClaimsOf } from "../decision_claims.ts";
import { type GrantContext, issueUserTokens, required, requireSecondFactorIn, userTarget } from "./grant.ts";

export async function refreshToken(ctx: GrantContext): Promise<TokenResponse> {
  const { sql, form } = ctx;
  required(ctx, "refresh_token", ["refresh_token"]);
  const tokenHash = hashSecret(form.refresh_token!);
  const { client, row } = await authenticateWith(
    sql,
    ctx.client,
    "token",
    () => retryRead(() => findRefreshToken(sql, tokenHash)),
  );
  if (!row || row.client_id !== client.id || row.project_id !== client.project_id) {
    throw new AppError("invalid_refresh_token");
  }
  // RFC 9700 §4.14.2: a spent refresh token presented again means it leaked; end the whole session.
  const reused = async () => {
    refreshReuse.child().value++;
    // The revocation and its event in one transaction: neither exists without the other.
    await transaction(sql, async (tx) => {
      await revokeSession(tx, row.session_id);
      await record(tx, {
        projectId: row.project_id,
        type: "refresh_token.reuse_detected",
        source: clientSource(client.id, ctx.client.request),
        target: { type: "session", id: row.session_id },
        details: { client_id: client.id, user_id: row.user_id },
      });
    });
    return new AppError("refresh_token_already_used");
  };
  if (row.used) throw await reused();
  if (row.expired) throw new AppError("refresh_token_expired");
  if (!row.session_live) {
    throw new AppError("invalid_refresh_token", { description: "the session has ended" });
  }
  if (!row.user_active) throw new AppError("invalid_refresh_token", { description: "the user is inactive" });
  // `organization` switches the session's tokens to another organization the user belongs to (checked, with
  // the one kept, when the tokens are issued: `access_denied` for one the user is not a member of).
  const organizationId = form.organization ?? row.organization_id;
  if (organizationId !== null && organizationId !== row.organization_id) {
    await requireSecondFactorIn(sql, row.project_id, row.session_id, organizationId);
  }
  const target = await userTarget(ctx, client, {
    projectId: row.project_id,
    userId: row.user_id,
    ...row,
    organization_id: organizationId,
  });
  // Answered again at every refresh: the token says what the user may do now.
  const decisionClaims = await decisionClaimsOf(sql, row.project_id, row.user_id, client.decision_claims);
  await ctx.tokens.prepareSigner(client.current_kid);
  const issued = await transaction(sql, async (tx) => {
    const spent = await consumeRefreshToken(tx, tokenHash);
    if (spent === null) return null;
    return await issueUserTokens(ctx, tx, {
      projectId: row.project_id,
      sessionId: row.session_id,
      userId: row.user_id,
      clientId: client.id,
      mayAct: client.may_act,
      metadataUrl: client.metadata_url,
      fresh: false,
      spent,
      login: { ...row, nonce: null, organization_id: organizationId },
      // Staying in the token's organization: only in the membership the token was issued in.
      memberSince: organizationId === row.organization_id ? row.issued_at : undefined,
      target,
      decisionClaims,
    });
  });
  if (issued === null) throw await reused();
  return issued;
}
