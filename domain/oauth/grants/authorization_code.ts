/** The authorization code grant with PKCE (RFC 6749 §4.1.3, RFC 7636 §4.6), checked in the contract's order. */
import { createHash } from "node:crypto";
import { retryRead, transaction } from "../../../db/connection.ts";
import {
  consumeAuthorizationCode,
  findAuthorizationCode,
  revokeSession,
} from "../../../db/oauth/sessions.ts";
import { clientSource, record } from "../../audit/audit.ts";
import { authenticateWith } from "../client_auth.ts";
import { AppError } from "../../shared/errors.ts";
import { newId } from "../../shared/ids.ts";
import { hashSecret, secretMatches } from "../../shared/secrets.ts";
import type { TokenResponse } from "../../../openapi/tokens.ts";
import { decisionClaimsOf } from "../decision_claims.ts";
import { type GrantContext, issueUserTokens, required, userTarget } from "./grant.ts";

/** RFC 7636 §4.2 S256: BASE64URL(SHA256(ASCII(code_verifier))), the challenge of a verifier. */
export const s256 = (verifier: string) => createHash("sha256").update(verifier, "ascii").digest("base64url");

/** RFC 7636 §4.6: the verifier's S256 == code_challenge, compared in constant time. */
function verifierMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) return false;
  return secretMatches(s256(verifier), hashSecret(challenge));
}

/** RFC 6749 §4.1.2: a code used twice revokes what was issued from it; the replay is an audit event. */
async function replayedCode(
  ctx: GrantContext,
  projectId: string,
  clientId: string,
  sessionId: string | null,
) {
  // The revocation and its event in one transaction: neither exists without the other.
  await transaction(ctx.sql, async (tx) => {
    if (sessionId) await revokeSession(tx, sessionId);
    await record(tx, {
      projectId,
      type: "authorization_code.replayed",
      source: clientSource(clientId, ctx.client.request),
      target: { type: "session", id: sessionId },
      details: { client_id: clientId },
    });
  });
}

export async function authorizationCode(ctx: GrantContext): Promise<TokenResponse> {
  const { sql, form } = ctx;
  const code = form.authorization_code ?? form.code;
  if (
    form.authorization_code !== undefined && form.code !== undefined && form.code !== form.authorization_code
  ) {
    throw new AppError("invalid_params", {
      details: [{ field: "code", issue: "differs from authorization_code" }],
    });
  }
  required({ ...ctx, form: { ...form, authorization_code: code } }, "authorization_code", [
    "authorization_code",
    "redirect_uri",
    "code_verifier",
  ]);
  const codeHash = hashSecret(code!);
  const { client, row } = await authenticateWith(
    sql,
    ctx.client,
    "token",
    () => retryRead(() => findAuthorizationCode(sql, codeHash)),
  );
  if (!row || row.client_id !== client.id || row.project_id !== client.project_id) {
    throw new AppError("invalid_authorization_code");
  }
  if (row.redirect_uri !== form.redirect_uri) throw new AppError("different_authorize_redirect_uri");
  if (row.used) {
    await replayedCode(ctx, row.project_id, client.id, row.session_id);
    throw new AppError("auth_code_already_used");
  }
  if (row.expired) throw new AppError("auth_code_expired");
  if (!verifierMatches(form.code_verifier!, row.code_challenge)) throw new AppError("invalid_code_verifier");
  // Deactivated between the login and now: the session would be refused at once anyway.
  if (!row.user_active) {
    throw new AppError("invalid_authorization_code", { description: "the user is inactive" });
  }
  // Signed out (logout, a session ended by an admin, a new password) since the code was issued.
  if (!row.sso_live) throw endedBrowserSession();
  const target = await userTarget(ctx, client, { projectId: row.project_id, userId: row.user_id, ...row });
  const decisionClaims = await decisionClaimsOf(sql, row.project_id, row.user_id, client.decision_claims);
  const sessionId = newId();
  await ctx.tokens.prepareSigner(client.current_kid);
  const issued = await transaction(sql, async (tx) => {
    // One statement decides which of concurrent redemptions wins.
    const spent = await consumeAuthorizationCode(tx, codeHash, sessionId);
    if (spent === null) return null;
    return await issueUserTokens(ctx, tx, {
      projectId: row.project_id,
      sessionId,
      userId: row.user_id,
      clientId: client.id,
      mayAct: client.may_act,
      metadataUrl: client.metadata_url,
      fresh: true,
      spent,
      login: row,
      target,
      decisionClaims,
    });
  });
  if (issued === null) {
    // Lost the race, or the code expired between the checks and the update.
    const now = await findAuthorizationCode(sql, codeHash);
    if (now && !now.used && now.expired) throw new AppError("auth_code_expired");
    if (now && !now.used && !now.sso_live) throw endedBrowserSession();
    await replayedCode(ctx, row.project_id, client.id, now?.session_id ?? null);
    throw new AppError("auth_code_already_used");
  }
  return issued;
}

const endedBrowserSession = () =>
  new AppError("invalid_authorization_code", { description: "the browser session that issued it has ended" });
