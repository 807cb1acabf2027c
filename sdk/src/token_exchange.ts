/**
 * Token exchange (RFC 8693) for an agent that acts for a user or a client: the agent's client (with a
 * `delegation`) exchanges the subject's access token for one whose `act` names the agent, holding only what the
 * subject holds, the delegation allows and the agent asks (docs/agents.md).
 */
import type { Api } from "./generated/models.ts";
import { ApiError } from "./errors.ts";
import type { Wire } from "./wire.ts";
import { postTokenForm, type TokenClientOptions } from "./token_forms.ts";

export type ExchangedToken = Wire<Api.TokenResponse>;

const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";

/**
 * Exchanges `subjectToken` (an access token of this service) for a token acting for its subject. `scope` names
 * `resource:permission` codes (or, with `resource`, that API's permission codes); none asks for all that the
 * subject holds and the delegation allows. Throws ApiError: `unauthorized_client` (no delegation), `invalid_grant`
 * (the subject token is not live), `invalid_scope` (more than the intersection), `invalid_target`.
 */
export async function exchangeToken(
  o: TokenClientOptions & {
    subjectToken: string;
    scope?: string;
    /** An API's indicator (RFC 8707): the token is then for that API (`aud`). */
    resource?: string;
    /** A client-credentials token of the agent's own client, if the agent wants to present one. */
    actorToken?: string;
  },
): Promise<ExchangedToken> {
  const form: Record<string, string> = {
    grant_type: GRANT_TYPE,
    subject_token: o.subjectToken,
    subject_token_type: ACCESS_TOKEN,
    requested_token_type: ACCESS_TOKEN,
  };
  if (o.scope !== undefined) form.scope = o.scope;
  if (o.resource !== undefined) form.resource = o.resource;
  if (o.actorToken !== undefined) {
    form.actor_token = o.actorToken;
    form.actor_token_type = ACCESS_TOKEN;
  }
  const res = await postTokenForm(o, "/api/v1/tokens", form);
  if (!res.ok) throw await ApiError.fromResponse(res);
  return await res.json();
}
