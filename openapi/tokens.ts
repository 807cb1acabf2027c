/** The token endpoint's form and answer, and the forms and answers of revocation and introspection. */
import { z } from "@hono/zod-openapi";
import { plain } from "./fields.ts";

const field = (description: string) => plain(4096).optional().openapi({ description });

export const TokenRequest = z.object({
  grant_type: z.enum([
    "authorization_code",
    "refresh_token",
    "client_credentials",
    "urn:ietf:params:oauth:grant-type:device_code",
    "urn:ietf:params:oauth:grant-type:token-exchange",
  ]).openapi({
    description: "`client_credentials` for machine clients (HTTP Basic authentication required); " +
      "`urn:ietf:params:oauth:grant-type:device_code` for a device polling for its user's approval (RFC 8628); " +
      "`urn:ietf:params:oauth:grant-type:token-exchange` for a client with a `delegation` acting for the " +
      "subject of `subject_token` (RFC 8693; docs/agents.md).",
  }),
  client_id: field("Required without HTTP Basic in the user grants; with Basic, optional but must match."),
  client_secret: field("Not accepted: send client credentials with HTTP Basic."),
  authorization_code: field("The code from the authorize redirect (`code` is accepted too)."),
  code: field("RFC 6749's name for `authorization_code`."),
  redirect_uri: field("Required for `authorization_code`; must equal the authorize request's."),
  code_verifier: field("Required for `authorization_code` (PKCE, S256)."),
  refresh_token: field("Required for `refresh_token`."),
  organization: field(
    "Refresh grant and token exchange, optional: the id of another organization the user belongs to, whose " +
      "tokens (`org_id`) the refresh issues from now on, or the exchange issues (docs/organizations.md). " +
      "Without it the refresh keeps the session's organization and the exchange the subject token's. A user " +
      "who is not a member of it (or no longer of the one kept), or an organization requiring a second " +
      "factor the login did not give: `access_denied`. In an exchange, only for a user's subject token that " +
      "was not itself exchanged (`invalid_params` otherwise).",
  ),
  device_code: field(
    "Required for the device grant: the `device_code` of the device authorization (RFC 8628).",
  ),
  subject_token: field(
    "Token exchange: an access token of this service, of a user or a client of the exchanging client's project, " +
      "live (not expired, not revoked, its session and subject active). Otherwise `invalid_grant`.",
  ),
  subject_token_type: field(
    "Token exchange: `urn:ietf:params:oauth:token-type:access_token` (the only type taken: others are " +
      "`invalid_request`).",
  ),
  actor_token: field(
    "Token exchange, optional: a client-credentials access token of the exchanging client itself, which then is " +
      "the actor as it is anyway (another party's token is `invalid_request`).",
  ),
  actor_token_type: field(
    "Token exchange, with `actor_token`: `urn:ietf:params:oauth:token-type:access_token`.",
  ),
  requested_token_type: field(
    "Token exchange, optional: `urn:ietf:params:oauth:token-type:access_token` (the only one issued).",
  ),
  audience: field(
    "Token exchange: the same as `resource` (an API's indicator); with both, they must be equal.",
  ),
  state: field("Optional; ignored."),
  resource: z.union([plain(2000), z.array(plain(2000)).max(10)]).optional().openapi({
    description: "RFC 8707: the resource indicator of the one API the access token is for (a resource's " +
      "`indicator` in the client's project). The token's `aud` is then that indicator and its `scope` the " +
      "permission codes of that resource asked in `scope` that the subject holds (all it holds when `scope` " +
      "names none of them). In the code and refresh grants it must be the authorization request's `resource` " +
      "(omitted: that one). Unknown, of another project, not an absolute URI, with a fragment, or repeated: " +
      "`invalid_target`.",
  }),
  scope: field(
    "With `resource`: the permission codes of that API wanted, space-separated (others are ignored). " +
      "Without it: ignored, except in token exchange, where it names `resource:permission` codes (or, with " +
      "`resource`, that API's permission codes) the new token is asked for; one beyond what the subject holds " +
      "and the client may carry is `invalid_scope`.",
  ),
}).openapi("TokenRequest");
export type TokenRequest = z.infer<typeof TokenRequest>;

export const TokenResponse = z.object({
  access_token: z.string().openapi({ description: "An RFC 9068 JWT; verify it with the JWKS." }),
  token_type: z.literal("Bearer"),
  expires_in: z.number().int().openapi({
    description: "Seconds until the access token expires",
    example: 900,
  }),
  refresh_token: z.string().optional().openapi({ description: "User grants only" }),
  refresh_token_expires_in: z.number().int().optional().openapi({ description: "User grants only" }),
  id_token: z.string().optional().openapi({
    description: "OpenID Connect: when the authorization request's `scope` had `openid` (also on refresh)",
  }),
  scope: z.string().optional().openapi({
    description:
      "With `resource`: the access token's scope, the granted permission codes of that API. Otherwise " +
      "OpenID Connect: the granted scopes (`openid`, `profile`, `email`), space-separated. In token exchange " +
      "without `resource`: the `resource:permission` codes granted.",
  }),
  issued_token_type: z.string().optional().openapi({
    description: "Token exchange (RFC 8693 §2.2.1): `urn:ietf:params:oauth:token-type:access_token`",
  }),
}).openapi("TokenResponse");
export type TokenResponse = z.infer<typeof TokenResponse>;

export const TokenActionRequest = z.object({
  token: plain(4096).min(1).openapi({ description: "An access token or a refresh token" }),
  token_type_hint: plain(100).optional().openapi({
    description: "`access_token` or `refresh_token`: where to look first; other values are ignored",
  }),
  client_id: field("For revocation by a public client, without HTTP Basic"),
});
export type TokenActionRequest = z.infer<typeof TokenActionRequest>;

/** RFC 8693 §4.1's `act`: an actor, with the actor it acts for nested (at most 5 deep). */
type Act = { sub: string; act?: Act };
const ActClaim: z.ZodType<Act> = z.object({
  sub: z.string(),
  act: z.lazy(() => ActClaim).optional(),
}).openapi("Act");

export const Introspection = z.object({
  active: z.boolean(),
  token_type: z.enum(["access_token", "refresh_token"]).optional(),
  iss: z.string().optional(),
  sub: z.string().optional().openapi({ description: "The user id, or the client id for client credentials" }),
  aud: z.string().optional().openapi({
    description:
      "The project id, or for a token asked for one API (RFC 8707 `resource`) that API's indicator",
  }),
  scope: z.string().optional().openapi({
    description: "A token for one API: what of its granted permission codes the subject still holds",
  }),
  client_id: z.string().optional(),
  exp: z.number().int().optional(),
  iat: z.number().int().optional(),
  jti: z.string().optional(),
  sid: z.string().optional(),
  org_id: z.string().optional().openapi({
    description: "A user token of an organization: its id (the user is a member of it now)",
  }),
  org_name: z.string().optional().openapi({ description: "With `org_id`: the organization's name now" }),
  organization_permissions: z.array(z.string()).optional().openapi({
    description: "With `org_id`: the `resource:permission` codes the user's organization roles there hold " +
      "outright now. They hold only on that organization's objects (docs/organizations.md); `permissions` " +
      "stays what the user holds project-wide.",
  }),
  amr: z.array(z.string()).optional().openapi({
    description: "How the user authenticated at the login (RFC 8176): `pwd`, `otp`, `mfa`, `fed`",
  }),
  acr: z.string().optional().openapi({
    description: "The level the login reached: `1` (one factor) or `2` (a second factor too)",
  }),
  permissions: z.array(z.string()).optional().openapi({
    description:
      "The subject's `resource:permission` codes now: a user's through the role, a client's directly; for a " +
      "token of an exchange, only those every actor's delegation has and the exchange asked for. Only those " +
      "held outright: a permission the role holds under a condition is in `conditional_permissions`.",
  }),
  conditional_permissions: z.array(z.string()).optional().openapi({
    description: "The `resource:permission` codes the user's role holds only under a condition (CEL): held " +
      "for a decision whose condition is true, so never reported in `permissions`; ask the decision " +
      "endpoint (/access/v1/evaluation) with the resource. Omitted when there are none.",
  }),
  act: ActClaim.optional().openapi({
    description:
      "A token of an exchange (RFC 8693 §4.1): the client acting for the subject (`sub`), and the one " +
      "it acts for in turn nested in `act`",
  }),
}).openapi("Introspection");
export type Introspection = z.infer<typeof Introspection>;

/** RFC 8628 §3.1: the device authorization request, form-encoded. */
export const DeviceAuthorizationRequest = z.object({
  client_id: field("Required without HTTP Basic (a public client); with Basic, optional but must match."),
  client_secret: field("Not accepted: send client credentials with HTTP Basic."),
  scope: field(
    "Space-separated: `openid` (and `profile`, `email`) for an ID token; with `resource`, the permission codes " +
      "of that API wanted.",
  ),
  resource: z.union([plain(2000), z.array(plain(2000)).max(10)]).optional().openapi({
    description:
      "RFC 8707: the indicator of the one API the tokens are for, as at `/authorize`. Unknown, of " +
      "another project, not an absolute URI, with a fragment, or repeated: `invalid_target`.",
  }),
}).openapi("DeviceAuthorizationRequest");
export type DeviceAuthorizationRequest = z.infer<typeof DeviceAuthorizationRequest>;

/** RFC 8628 §3.2: the device authorization response. */
export const DeviceAuthorizationResponse = z.object({
  device_code: z.string().openapi({
    description: "A secret for the device only: it polls the token endpoint with it",
  }),
  user_code: z.string().openapi({
    description:
      "What the user enters at `verification_uri`: eight letters shown as `XXXX-XXXX` (entered in " +
      "any case, with or without the dash)",
    example: "BDFG-HJKL",
  }),
  verification_uri: z.string().openapi({ description: "The verification page, `/device` of this service" }),
  verification_uri_complete: z.string().openapi({
    description: "The same with the user code filled in (for a QR code or a link)",
  }),
  expires_in: z.number().int().openapi({ description: "Seconds the codes live", example: 600 }),
  interval: z.number().int().openapi({ description: "Seconds to wait between polls", example: 5 }),
}).openapi("DeviceAuthorizationResponse");
export type DeviceAuthorizationResponse = z.infer<typeof DeviceAuthorizationResponse>;
