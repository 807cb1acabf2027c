/** The token endpoint's grants, each a list of small named checks in the order of the contract. */
import { authorizationCode } from "./authorization_code.ts";
import { clientCredentials } from "./client_credentials.ts";
import { deviceCode } from "./device_code.ts";
import type { TokenResponse } from "../../../openapi/tokens.ts";
import type { GrantContext } from "./grant.ts";
import { refreshToken } from "./refresh_token.ts";
import { tokenExchange } from "./token_exchange.ts";

export async function exchangeCredentials(ctx: GrantContext): Promise<TokenResponse> {
  switch (ctx.form.grant_type) {
    case "client_credentials":
      return await clientCredentials(ctx);
    case "authorization_code":
      return await authorizationCode(ctx);
    case "refresh_token":
      return await refreshToken(ctx);
    case "urn:ietf:params:oauth:grant-type:device_code":
      return await deviceCode(ctx);
    case "urn:ietf:params:oauth:grant-type:token-exchange":
      return await tokenExchange(ctx);
  }
}
