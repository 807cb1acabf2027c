/**
 * The device grant (RFC 8628 §3.4–3.5): the device polls with its device code until the user decided at /device.
 * Checked in order: the client, its right to the grant, the code (unknown or another client's, used, expired),
 * the user's decision, the polling rate; then the user's tokens, once.
 */
import { retryRead, transaction } from "../../../db/connection.ts";
import {
  consumeDeviceCode,
  type DeviceCodeRow,
  findDeviceCodeByDeviceCode,
  pollDeviceCode,
} from "../../../db/oauth/device_codes.ts";
import { authenticateWith } from "../client_auth.ts";
import { AppError } from "../../shared/errors.ts";
import { hashSecret } from "../../shared/secrets.ts";
import type { TokenResponse } from "../../../openapi/tokens.ts";
import { DEVICE_GRANT_TYPE } from "../device_authorization.ts";
import type { DecisionClaim } from "../../../openapi/clients.ts";
import { decisionClaimsOf } from "../decision_claims.ts";
import { type GrantContext, issueUserTokens, required, userTarget } from "./grant.ts";

export async function deviceCode(ctx: GrantContext): Promise<TokenResponse> {
  const { sql, form } = ctx;
  required(ctx, DEVICE_GRANT_TYPE, ["device_code"]);
  const codeHash = hashSecret(form.device_code!);
  const { client, row } = await authenticateWith(
    sql,
    ctx.client,
    "token",
    () => retryRead(() => findDeviceCodeByDeviceCode(sql, codeHash)),
  );
  if (!client.device_grant) {
    throw new AppError("unauthorized_client", {
      description: "the client may not use the device grant (device_grant is false)",
    });
  }
  if (!row || row.client_id !== client.id || row.project_id !== client.project_id) {
    throw new AppError("invalid_device_code");
  }
  // A device code gives tokens once (RFC 8628 §3.5: `invalid_grant` after that).
  if (row.used) {
    throw new AppError("invalid_device_code", { description: "the device code was already used" });
  }
  if (row.expired) throw new AppError("expired_token");
  if (row.status === "denied") throw new AppError("access_denied");
  if (row.status === "pending") {
    if (await pollDeviceCode(sql, row.id)) {
      throw new AppError("slow_down", {
        description: `polling too fast: wait ${row.interval_seconds + 5} seconds between requests`,
      });
    }
    throw new AppError("authorization_pending");
  }
  return await approvedTokens(ctx, client, row);
}

/** The user's tokens for an approved device code, as the code grant gives them: a new session of the user. */
async function approvedTokens(
  ctx: GrantContext,
  client: {
    id: string;
    third_party: boolean;
    current_kid: string;
    may_act: string | null;
    decision_claims: DecisionClaim[] | null;
  },
  row: DeviceCodeRow,
): Promise<TokenResponse> {
  const login = row.login!;
  if (!row.user_active) throw new AppError("invalid_device_code", { description: "the user is inactive" });
  // Signed out since approving (as a code of an OpenID login counts only while its browser session does).
  if (!row.sso_live) {
    throw new AppError("invalid_device_code", {
      description: "the sign-in that approved the device has ended",
    });
  }
  const userId = row.user_id!;
  const target = await userTarget(ctx, client, {
    projectId: row.project_id,
    userId,
    resource: login.resource,
    resource_scope: login.resource_scope,
  });
  const decisionClaims = await decisionClaimsOf(ctx.sql, row.project_id, userId, client.decision_claims);
  await ctx.tokens.prepareSigner(client.current_kid);
  const issued = await transaction(ctx.sql, async (tx) => {
    // One statement decides which of concurrent polls wins.
    const spent = await consumeDeviceCode(tx, row.id);
    if (spent === null) return null;
    return await issueUserTokens(ctx, tx, {
      projectId: row.project_id,
      sessionId: row.session_id!,
      userId,
      clientId: client.id,
      mayAct: client.may_act,
      fresh: true,
      spent,
      login: {
        ...login,
        auth_time: login.auth_time === null ? null : new Date(login.auth_time),
        nonce: null,
      },
      target,
      decisionClaims,
    });
  });
  if (issued === null) {
    const now = await findDeviceCodeByDeviceCode(ctx.sql, hashSecret(ctx.form.device_code!));
    if (now && !now.used && now.expired) throw new AppError("expired_token");
    throw new AppError("invalid_device_code", { description: "the device code was already used" });
  }
  return issued;
}
