/** OpenID Connect answers: the provider's configuration and the userinfo claims. */
import { z } from "@hono/zod-openapi";
import { AuthorizationServerMetadata } from "./service.ts";

/** The scopes the service knows; any other scope in a request is ignored. */
export const OIDC_SCOPES = ["openid", "profile", "email"] as const;
export type OidcScope = (typeof OIDC_SCOPES)[number];

/** The claims each scope adds to the ID token and userinfo, besides `sub`. */
export const SCOPE_CLAIMS: Record<OidcScope, readonly string[]> = {
  openid: [],
  profile: ["name", "given_name", "family_name", "picture"],
  email: ["email", "email_verified"],
};

export const CLAIMS_SUPPORTED = [
  "iss",
  "sub",
  "aud",
  "exp",
  "iat",
  "auth_time",
  "nonce",
  "sid",
  "at_hash",
  "amr",
  "acr",
  "idp",
  "org_id",
  "name",
  "given_name",
  "family_name",
  "picture",
  "email",
  "email_verified",
] as const;

export const OpenIdConfiguration = AuthorizationServerMetadata.extend({
  userinfo_endpoint: z.string(),
  end_session_endpoint: z.string(),
  scopes_supported: z.array(z.string()),
  claims_supported: z.array(z.string()),
  subject_types_supported: z.array(z.string()),
  prompt_values_supported: z.array(z.string()),
  acr_values_supported: z.array(z.string()).openapi({
    description: "`1`: one factor; `2`: a second factor too (ask for it with `acr_values=2`)",
  }),
  claims_parameter_supported: z.boolean(),
  request_parameter_supported: z.boolean(),
  request_uri_parameter_supported: z.boolean(),
}).openapi("OpenIdConfiguration");
export type OpenIdConfiguration = z.infer<typeof OpenIdConfiguration>;

export const UserInfo = z.object({
  sub: z.string().openapi({ description: "The user id" }),
  name: z.string().optional().openapi({ description: "With `profile`: the display name" }),
  given_name: z.string().optional().openapi({ description: "With `profile`, when the user has one" }),
  family_name: z.string().optional().openapi({ description: "With `profile`, when the user has one" }),
  picture: z.string().optional().openapi({
    description: "With `profile`, when the user has an avatar: its URL",
  }),
  email: z.string().optional().openapi({ description: "With `email`, when the user has one" }),
  email_verified: z.boolean().optional().openapi({
    description: "With `email`, beside `email`: whether the address is known to be the user's (a mailed " +
      "link was followed, or an admin or an upstream identity provider said so)",
  }),
  org_id: z.string().optional().openapi({
    description: "A token of an organization: the organization the user signed in to (a member of it now)",
  }),
  org_name: z.string().optional().openapi({ description: "With `org_id`: the organization's name now" }),
}).openapi("UserInfo", {
  description: "A claim without a value is left out, never null (OpenID Connect Core §5.3.2).",
});
export type UserInfo = z.infer<typeof UserInfo>;
