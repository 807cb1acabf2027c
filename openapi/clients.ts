/** A machine client of a project: its secret is shown once; it holds permissions directly. */
import { z } from "@hono/zod-openapi";
import {
  booleanFilter,
  ChangedProperties,
  Code,
  Description,
  Id,
  listQuery,
  Name,
  NewProperties,
  PermissionIds,
  ProjectIdParam,
  Properties,
  Timestamps,
} from "./fields.ts";
import { PostLogoutRedirectUris, RedirectUris } from "./projects.ts";

export const TokenEndpointAuthMethod = z.enum(["none", "client_secret_basic"]).openapi({
  description:
    "How the client authenticates at the token endpoint (RFC 7591): `none`, a public client that " +
    "names itself with `client_id` and proves the login with PKCE (the default), or `client_secret_basic`, a " +
    "confidential client that sends HTTP Basic with every grant, and may then leave `client_id` out of the form " +
    "(without Basic: 401 `invalid_client`, `error_code` `invalid_client_credentials`). " +
    "Client credentials always need HTTP Basic. Default `none`; omitted on update: unchanged.",
}).openapi("TokenEndpointAuthMethod");
export type TokenEndpointAuthMethod = z.infer<typeof TokenEndpointAuthMethod>;

const CLIENT_LISTS = "The client's own redirect URIs, with the rules of the project's `redirect_uris` " +
  "(absolute, `https` or `http` on localhost, 127.0.0.1 and [::1], no fragment, canonical form, at most 50), " +
  "matched byte for byte. Non-empty: only these are accepted for this client, and the project's list no " +
  "longer applies to it; empty: the project's list applies. Setting or changing them needs a caller that " +
  "covers the whole project, as the project's list does.";
const CLIENT_LOGOUT_LISTS = "Where `/logout` may send the browser after this client's sign-out, with the " +
  "rules of `redirect_uris`. Non-empty: only these, for this client; empty: the project's " +
  "`post_logout_redirect_uris` apply. Setting or changing them needs a caller that covers the whole project.";
const ClientRedirectUris = RedirectUris.openapi({ description: `${CLIENT_LISTS} Default [].` });
const ClientPostLogoutRedirectUris = PostLogoutRedirectUris.openapi({
  description: `${CLIENT_LOGOUT_LISTS} Default [].`,
});

const THIRD_PARTY = "Another party's application: before its first authorization code for a user, the user " +
  "sees a consent page (the client's name and host, the API, the permissions asked), and the decision is " +
  "kept (the user's `consents`). false (first-party): never a consent page.";
const DEVICE_GRANT =
  "The client may use the device authorization grant (RFC 8628): a device without a browser " +
  "(a CLI, a TV) asks `POST /api/v1/tokens/device_authorization` for a code, the user enters it at `/device` " +
  "and signs in there, and the device polls the token endpoint with " +
  "`grant_type=urn:ietf:params:oauth:grant-type:device_code`. false: such requests answer `unauthorized_client`.";

const DELEGATION =
  "What the client may carry when it acts for the project's users and clients (RFC 8693 token " +
  'exchange): null (the default) lets it act for nobody; `{"permission_ids": [...]}` names the permissions a ' +
  "token it exchanges may hold, besides what the subject holds and what it asks (docs/agents.md). Setting or " +
  "changing it needs a caller that covers these permissions.";
const Delegation = z.strictObject({ permission_ids: PermissionIds }).nullable();
const DelegationAnswer = z.object({ permission_ids: z.array(z.string()) }).nullable().openapi({
  description: DELEGATION,
});

const MAY_ACT = "RFC 8693 `may_act`: the one client (of this project) that may exchange the access tokens " +
  'issued to this client, its users\' and its own, which then carry `may_act: {"sub": <that client>}`; any ' +
  "other client's exchange of them is `unauthorized_client`. null (the default): any client with a delegation.";

const DECISION_REASONS =
  "Whether the decisions this client asks for (the AuthZEN endpoints, with its tokens) " +
  'carry their reason (`context.reason_admin`): false answers bare `{"decision": …}` objects, for a policy ' +
  "enforcement point that need not learn the model's ids (or a harness comparing answers exactly).";

/** At most this many decision claims per client, and ids per claim (the issue's caps; docs/authzen.md). */
export const MAX_DECISION_CLAIMS = 3;
export const MAX_DECISION_CLAIM_IDS = 100;

/**
 * The one list of claim names a decision claim may not take: JWT's registered claims (RFC 7519 §4.1), those of
 * OpenID Connect Core (§2, §5.1), RFC 9068 and RFC 8693, and every name this service writes into a token or
 * may (org_id, permissions, claims_truncated).
 */
// deno-fmt-ignore
export const RESERVED_CLAIM_NAMES: readonly string[] = [
  "iss", "sub", "aud", "exp", "nbf", "iat", "jti", "typ", "cty",
  "scope", "client_id", "sid", "act", "may_act", "cnf", "azp", "nonce", "auth_time", "amr", "acr", "at_hash",
  "c_hash", "s_hash", "idp", "events", "txn", "org_id", "tenant", "permissions", "roles", "groups",
  "entitlements", "claims_truncated", "name", "given_name", "family_name", "middle_name", "nickname",
  "preferred_username", "profile", "picture", "website", "email", "email_verified", "gender", "birthdate",
  "zoneinfo", "locale", "phone_number", "phone_number_verified", "address", "updated_at",
];

const DECISION_CLAIMS = "Claims from decisions (the AuthZEN IdP scenario; docs/authzen.md): at most " +
  `${MAX_DECISION_CLAIMS} searches whose answers go into the access token and ID token of this client's ` +
  "users (authorization code, refresh and device code grants; never client credentials or an exchange). Each " +
  "`claim` is the ids of the registered objects of `resource_type` the user may do `action` on when the token " +
  "is issued, as the resource search (`POST /access/v1/search/resource`) answers them, sorted by id, at most " +
  `${MAX_DECISION_CLAIM_IDS}; when more exist, the first ${MAX_DECISION_CLAIM_IDS} and the claim's name in ` +
  "`claims_truncated` (absent when nothing was cut). A refresh computes them again. `claim`: lower case, " +
  "digits and underscore, starting with a letter, at most 40 characters, unique in the list, never a name " +
  "tokens already use (`sub`, `scope`, `email`, …); `resource_type` and `action`: codes of a resource and of " +
  "one of its permissions in this project. Setting or changing them publishes search answers, so the caller " +
  "must also hold `access:search` (403 `insufficient_permission`). Beware the token's size: 3 claims of 100 " +
  "ids of up to 200 characters are some 60 kB.";

const DecisionClaim = z.strictObject({
  claim: z.string().regex(
    /^[a-z][a-z0-9_]{0,39}$/,
    "lower case letters, digits and _, from a letter, at most 40",
  )
    .refine((c) => !RESERVED_CLAIM_NAMES.includes(c), "a name tokens already use"),
  resource_type: Code.openapi({
    description: "The code of one of the project's resources",
    example: "record",
  }),
  action: Code.openapi({ description: "The code of one of that resource's permissions", example: "delete" }),
}).openapi("DecisionClaim");
export type DecisionClaim = z.infer<typeof DecisionClaim>;

const DecisionClaims = z.array(DecisionClaim).max(MAX_DECISION_CLAIMS, `at most ${MAX_DECISION_CLAIMS}`)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((c, i) => {
      if (seen.has(c.claim)) ctx.addIssue({ code: "custom", path: [i, "claim"], message: "named twice" });
      seen.add(c.claim);
    });
  });

export const Client = z.object({
  id: z.string().openapi({ description: "The client_id" }),
  project_id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  is_active: z.boolean(),
  is_admin: z.boolean().openapi({
    description:
      "The project's admin client: it cannot be deactivated or lose permissions; rotate its secret instead",
  }),
  token_endpoint_auth_method: TokenEndpointAuthMethod,
  permission_ids: z.array(z.string()).openapi({ description: "Permissions granted directly to the client" }),
  redirect_uris: z.array(z.string()).openapi({
    description: "The client's own redirect URIs; empty: the project's `redirect_uris` apply to it",
  }),
  post_logout_redirect_uris: z.array(z.string()).openapi({
    description: "The client's own post-logout redirect URIs; empty: the project's apply to it",
  }),
  third_party: z.boolean().openapi({ description: THIRD_PARTY }),
  device_grant: z.boolean().openapi({ description: DEVICE_GRANT }),
  decision_reasons: z.boolean().openapi({ description: DECISION_REASONS }),
  decision_claims: z.array(DecisionClaim).openapi({ description: DECISION_CLAIMS }),
  metadata_url: z.string().nullable().openapi({
    description:
      "For a client that identifies itself by the `https` URL of its metadata document (OAuth Client " +
      "ID Metadata Documents; the project's `client_metadata_documents`): that URL, which is its `client_id` at " +
      "`/authorize` and the token endpoint. Recorded on its first use (`created_at`); its `name` and " +
      "`redirect_uris` are the document's, refreshed as the document's caching allows, and only `is_active` " +
      "(false blocks it), `description` and `properties` can be changed. null: a client registered through this API.",
  }),
  last_used_at: z.string().nullable().openapi({
    description: "For a client of a metadata document: its last authorization or token request; else null",
  }),
  delegation: DelegationAnswer,
  may_act: z.string().nullable().openapi({ description: MAY_ACT }),
  properties: Properties,
  ...Timestamps,
}).openapi("Client");
export type Client = z.infer<typeof Client>;

export const ClientWithSecret = Client.extend({
  client_secret: z.string().openapi({
    description: "Shown only in this answer; store it now (the service keeps only its hash). It is the " +
      "client's password for HTTP Basic: with `client_secret_basic`, at every grant and at revocation; for a " +
      "public client (`none`), only for what it does as itself — the `client_credentials` grant, which always " +
      "needs it — never at a user's login, which PKCE proves. A public client that never acts as itself (a " +
      "single-page or mobile app) can ignore it.",
  }),
}).openapi("ClientWithSecret");
export type ClientWithSecret = z.infer<typeof ClientWithSecret>;

export const CreateClientRequest = z.strictObject({
  name: Name,
  description: Description,
  permission_ids: PermissionIds.optional(),
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
  token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
  redirect_uris: ClientRedirectUris.optional(),
  post_logout_redirect_uris: ClientPostLogoutRedirectUris.optional(),
  third_party: z.boolean().optional().openapi({ description: `${THIRD_PARTY} Default false.` }),
  device_grant: z.boolean().optional().openapi({ description: `${DEVICE_GRANT} Default false.` }),
  decision_reasons: z.boolean().optional().openapi({ description: `${DECISION_REASONS} Default true.` }),
  decision_claims: DecisionClaims.optional().openapi({ description: `${DECISION_CLAIMS} Default [].` }),
  delegation: Delegation.optional().openapi({ description: `${DELEGATION} Default null.` }),
  may_act: Id.nullable().optional().openapi({ description: `${MAY_ACT} Default null.` }),
  properties: NewProperties,
}).openapi("CreateClientRequest");
export type CreateClientRequest = z.infer<typeof CreateClientRequest>;

export const UpdateClientRequest = z.strictObject({
  name: Name,
  is_active: z.boolean().openapi({
    description: "false refuses the client's tokens from the next request on",
  }),
  description: Description,
  permission_ids: PermissionIds.optional().openapi({
    description: "Omitted: unchanged. Given: replaces the client's permissions.",
  }),
  token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
  redirect_uris: ClientRedirectUris.optional().openapi({
    description:
      `${CLIENT_LISTS} Omitted: unchanged; an array replaces them ([] falls back to the project's).`,
  }),
  post_logout_redirect_uris: ClientPostLogoutRedirectUris.optional().openapi({
    description: `${CLIENT_LOGOUT_LISTS} Omitted: unchanged; an array replaces them ([] falls back to the ` +
      "project's).",
  }),
  third_party: z.boolean().optional().openapi({ description: `${THIRD_PARTY} Omitted: unchanged.` }),
  device_grant: z.boolean().optional().openapi({ description: `${DEVICE_GRANT} Omitted: unchanged.` }),
  decision_reasons: z.boolean().optional().openapi({
    description: `${DECISION_REASONS} Omitted: unchanged.`,
  }),
  decision_claims: DecisionClaims.optional().openapi({
    description: `${DECISION_CLAIMS} Omitted: unchanged; an array replaces them. Tokens issued before keep ` +
      "what they carry.",
  }),
  delegation: Delegation.optional().openapi({
    description:
      `${DELEGATION} Omitted: unchanged. A change counts at once: the tokens the client exchanged ` +
      "before carry no more than the new delegation allows.",
  }),
  may_act: Id.nullable().optional().openapi({
    description:
      `${MAY_ACT} Omitted: unchanged; null clears it. Tokens issued before keep the claim they carry.`,
  }),
  properties: ChangedProperties,
}).openapi("UpdateClientRequest");
export type UpdateClientRequest = z.infer<typeof UpdateClientRequest>;

export const ClientIdParam = ProjectIdParam.extend({
  client_id: Id.openapi({ param: { name: "client_id", in: "path" } }),
});

export const ClientListQuery = listQuery(["name", "is_active", "created_at", "updated_at"] as const).extend({
  is_active: booleanFilter("Only active (true) or inactive (false) clients"),
});
export type ClientListQuery = z.infer<typeof ClientListQuery>;

/** A client's SCIM token (docs/provisioning.md): the token itself is shown once, at creation. */
export const ScimToken = z.object({
  id: z.string(),
  project_id: z.string(),
  client_id: z.string(),
  description: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable().openapi({ description: "null: it does not expire" }),
  last_used_at: z.string().nullable().openapi({
    description: "When it last authenticated a SCIM request (to the minute); null: never",
  }),
}).openapi("ScimToken");
export type ScimToken = z.infer<typeof ScimToken>;

export const ScimTokenWithSecret = ScimToken.extend({
  token: z.string().openapi({
    description: "The bearer token for /scim/v2/{project_id}/ (`scim_` and 43 characters): shown only now; " +
      "only its SHA-256 is stored",
  }),
}).openapi("ScimTokenWithSecret");
export type ScimTokenWithSecret = z.infer<typeof ScimTokenWithSecret>;

export const CreateScimTokenRequest = z.strictObject({
  description: z.string().trim().max(200, "at most 200 characters").nullable().optional().openapi({
    description: 'What the token is for, e.g. "Entra ID provisioning"',
  }),
  expires_in_days: z.number().int().min(1).max(3650).nullable().optional().openapi({
    description: "Days until it expires (1 to 3650); omitted or null: it does not expire",
  }),
}).openapi("CreateScimTokenRequest");
export type CreateScimTokenRequest = z.infer<typeof CreateScimTokenRequest>;

export const ScimTokenList = z.object({ data: z.array(ScimToken) }).openapi("ScimTokenList");

export const ScimTokenParam = ClientIdParam.extend({
  token_id: Id.openapi({ param: { name: "token_id", in: "path" } }),
});
