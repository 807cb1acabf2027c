/** The client credentials grant (RFC 6749 §4.4): a machine client authenticates with HTTP Basic. */
import { authenticateClient } from "../client_auth.ts";
import { AppError } from "../../shared/errors.ts";
import type { TokenResponse } from "../../../openapi/tokens.ts";
import type { GrantContext } from "./grant.ts";
import { formIndicator, targetOf } from "../resource_indicators.ts";

export async function clientCredentials(ctx: GrantContext): Promise<TokenResponse> {
  if (!ctx.client.basic) {
    // RFC 6749 §4.4.2, §5.2: the grant needs client authentication; without any, `invalid_client`.
    throw new AppError("invalid_params", {
      details: [{ field: "Authorization", issue: "required for grant_type=client_credentials" }],
      oauth: "invalid_client",
    });
  }
  const indicator = formIndicator(ctx.form.resource);
  const client = await authenticateClient(ctx.sql, ctx.client, "token");
  const target = indicator === undefined
    ? undefined
    : await targetOf(ctx.sql, client.project_id, { clientId: client.id }, indicator, ctx.form.scope);
  const { token } = await ctx.tokens.issueAccessToken({
    projectId: client.project_id,
    subject: client.id,
    clientId: client.id,
    issuedAt: client.now,
    kid: client.current_kid,
    target,
    mayAct: client.may_act,
  });
  return {
    access_token: token,
    token_type: "Bearer",
    expires_in: ctx.tokens.accessTokenTtl,
    ...(target ? { scope: target.scope } : {}),
  };
}
