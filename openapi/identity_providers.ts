/** Upstream OpenID Connect identity providers of a project, and the external identities linked to users. */
import { z } from "@hono/zod-openapi";
import { booleanFilter, Id, listQuery, plain, ProjectIdParam, Timestamps } from "./fields.ts";

export const PRESETS = {
  google: { issuer: "https://accounts.google.com", display_name: "Google" },
  microsoft_entra_id: {
    issuer: "https://login.microsoftonline.com/{tenant_id}/v2.0",
    display_name: "Microsoft",
  },
} as const;
export type Preset = keyof typeof PRESETS;

const Issuer = z.string().max(500, "at most 500 characters").refine((u) => {
  try {
    const url = new URL(u);
    return (url.protocol === "https:" || url.protocol === "http:") && !url.username && !url.password &&
      !url.search && !url.hash && !u.includes("#") && !u.includes("?");
  } catch {
    return false;
  }
}, "must be an absolute https URL without query, fragment or credentials").openapi({
  description: "The provider's issuer identifier. Its discovery document " +
    "(`{issuer}/.well-known/openid-configuration`) is fetched when the provider is saved and must name exactly " +
    "this issuer. `https`; `http` only to a loopback host. Only global unicast addresses are reached unless " +
    "WEBHOOK_ALLOW_PRIVATE_TARGETS=true (the one setting for every URL an admin gives the service).",
  example: "https://accounts.google.com",
});

const ClaimName = plain(100).min(1, "must not be empty");

export const ClaimMapping = z.strictObject({
  email: ClaimName.default("email").openapi({ description: "Default `email`" }),
  name: ClaimName.default("name").openapi({ description: "Default `name`" }),
  picture: ClaimName.default("picture").openapi({ description: "Default `picture`" }),
}).openapi("IdentityProviderClaims", {
  description: "Which claims of the upstream ID token give the user's email, name and picture " +
    "(`email_verified` is always read as it is named)",
});

const Scopes = z.array(
  plain(100).regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, "must be a scope token (RFC 6749 §3.3)"),
)
  .min(1).max(20, "at most 20").refine((s) => s.includes("openid"), "must include openid").openapi({
    description: "Scopes asked of the provider; must include `openid`. Default `openid email profile`",
    example: ["openid", "email", "profile"],
  });

export const IdentityProvider = z.object({
  id: z.string(),
  project_id: z.string(),
  kind: z.literal("oidc"),
  preset: z.enum(["google", "microsoft_entra_id"]).nullable().openapi({
    description: "The preset the provider was made from, if any",
  }),
  display_name: z.string().openapi({ description: "The button's label on the login page" }),
  issuer: z.string(),
  client_id: z.string(),
  has_client_secret: z.boolean().openapi({
    description: "Whether a client secret is set; the secret itself is never returned",
  }),
  scopes: z.array(z.string()),
  claims: z.object({ email: z.string(), name: z.string(), picture: z.string() }),
  jit_provisioning: z.boolean(),
  default_role_id: z.string().nullable(),
  link_by_verified_email: z.boolean(),
  is_active: z.boolean(),
  organization_id: z.string().nullable().openapi({
    description: "The organization whose own sign-in this provider is (docs/organizations.md § An " +
      "organization's own sign-in), or null: the project's",
  }),
  redirect_uri: z.string().openapi({
    description: "Read-only: the redirect URI to register at the upstream provider for this client",
  }),
  metadata_fetched_at: z.string().openapi({
    format: "date-time",
    description: "When the discovery document was last fetched and validated",
  }),
  ...Timestamps,
}).openapi("IdentityProvider");
export type IdentityProvider = z.infer<typeof IdentityProvider>;

const ProviderFields = {
  display_name: z.string().trim().min(1, "must not be empty").max(50, "at most 50 characters").optional()
    .openapi({ description: "Required unless a preset names it" }),
  client_id: plain(500).min(1, "must not be empty"),
  scopes: Scopes.optional(),
  claims: ClaimMapping.optional(),
  jit_provisioning: z.boolean().optional().openapi({
    description: "Create a user at the first sign-in of an unknown upstream account (default false)",
  }),
  default_role_id: Id.nullable().optional().openapi({
    description: "The role of users created at sign-in: a project role (an organization role is 400 " +
      "`invalid_params`); the caller must hold its permissions",
  }),
  link_by_verified_email: z.boolean().optional().openapi({
    description:
      "Link an upstream account to the user with the same email, only when the provider says the " +
      "email is verified and so does this service (default false)",
  }),
  is_active: z.boolean().optional().openapi({
    description: "Default true; inactive providers show no button",
  }),
  organization_id: Id.nullable().optional().openapi({
    description:
      "An organization of the project (else 400 `invalid_params`) whose own sign-in this is: its " +
      "button shows only on a sign-in to that organization, `/authorize?organization=` goes straight to it, " +
      "and so does an address of one of the organization's domains entered on the login page. Whoever signs " +
      "in through it becomes a member just in time (with the organization's `default_role_ids`), signed in to " +
      "the organization, under its `mfa`. Null (the default): the project's. On update: omitted keeps it.",
  }),
};

export const CreateIdentityProviderRequest = z.strictObject({
  kind: z.literal("oidc").openapi({ description: "`oidc`: an OpenID Connect provider" }),
  preset: z.enum(["google", "microsoft_entra_id"]).optional().openapi({
    description: "Fills in the issuer (and the display name): `google`, or `microsoft_entra_id` with " +
      "`tenant_id`",
  }),
  tenant_id: plain(100).regex(/^[A-Za-z0-9.-]+$/, "must be a tenant id or domain").optional().openapi({
    description: "With the `microsoft_entra_id` preset: the directory (tenant) id",
  }),
  issuer: Issuer.optional().openapi({ description: "Required unless a preset gives it" }),
  client_secret: plain(1000).min(1).optional().openapi({
    description: "The client secret registered at the provider (`client_secret_basic` or `_post`, as the " +
      "provider supports); sealed with KEY_ENCRYPTION_KEY when set, and never returned. Without it the " +
      "service is a public client (PKCE only).",
  }),
  ...ProviderFields,
}).openapi("CreateIdentityProviderRequest");
export type CreateIdentityProviderRequest = z.infer<typeof CreateIdentityProviderRequest>;

export const UpdateIdentityProviderRequest = z.strictObject({
  ...ProviderFields,
  display_name: ProviderFields.display_name.unwrap(),
  issuer: Issuer,
  client_secret: plain(1000).min(1).nullable().optional().openapi({
    description: "Omitted: unchanged; null: removed; a value: replaced",
  }),
}).openapi("UpdateIdentityProviderRequest", {
  description: "Replaces the provider; optional fields omitted keep their value",
});
export type UpdateIdentityProviderRequest = z.infer<typeof UpdateIdentityProviderRequest>;

export const IdentityProviderIdParam = ProjectIdParam.extend({
  provider_id: Id.openapi({ param: { name: "provider_id", in: "path" } }),
});

export const IdentityProviderListQuery = listQuery(["created_at", "updated_at", "display_name"] as const)
  .extend({ is_active: booleanFilter("Only active (true) or inactive (false) providers") });
export type IdentityProviderListQuery = z.infer<typeof IdentityProviderListQuery>;

export const ExternalIdentity = z.object({
  provider_id: z.string(),
  provider_display_name: z.string(),
  subject: z.string().openapi({ description: "The upstream `sub`" }),
  email: z.string().nullable().openapi({ description: "The upstream email when linked or last used" }),
  created_at: z.string().openapi({ format: "date-time" }),
  last_login_at: z.string().nullable().openapi({ format: "date-time" }),
}).openapi("ExternalIdentity");
export type ExternalIdentity = z.infer<typeof ExternalIdentity>;

export const ExternalIdentityList = z.object({ data: z.array(ExternalIdentity) }).openapi(
  "ExternalIdentityList",
);

export const LinkIdentityRequest = z.strictObject({
  provider_id: Id,
  subject: plain(255).min(1, "must not be empty").openapi({ description: "The upstream `sub`" }),
  email: z.email().max(100).optional(),
}).openapi("LinkIdentityRequest");
export type LinkIdentityRequest = z.infer<typeof LinkIdentityRequest>;

export const UserIdParam = ProjectIdParam.extend({
  user_id: Id.openapi({ param: { name: "user_id", in: "path" } }),
});
export const IdentityParam = UserIdParam.extend({
  provider_id: Id.openapi({ param: { name: "provider_id", in: "path" } }),
});
