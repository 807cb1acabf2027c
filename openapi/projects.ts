/** A project: the tenant that owns resources, roles, users and clients, and where its users' codes may go. */
import { z } from "@hono/zod-openapi";
import { booleanFilter, clearableText, Id, listOf, listQuery, Name, Timestamps } from "./fields.ts";

const DEFAULT_ROLE =
  "The role a user gets on creating an account through self-service sign-up (`signup`); null: " +
  "none. One of the project's roles, a project role (an organization role is 400 `invalid_params`; a deleted " +
  "role leaves none). Users created through an identity provider get " +
  "that provider's `default_role_id` instead.";

/** The system project, created at first start, administers the others through its admin client. */
export const SYSTEM_PROJECT_ID = "system";
export const SYSTEM_ADMIN_CLIENT_ID = "system-admin";

/** `https`, or `http` on a loopback host; absolute, without a fragment or credentials. */
export function redirectUriIssue(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "must be an absolute URI";
  }
  if (uri.includes("#")) return "must not contain a fragment";
  // The answer's own parameters would be duplicated, and a client library might read the wrong one.
  for (const name of ["code", "state", "iss", "error", "error_description", "error_uri"]) {
    if (url.searchParams.has(name)) return `must not have a query parameter named ${name}`;
  }
  // Matching is byte for byte, so the stored string must be exactly what a URL parser reads back.
  if (url.href !== uri) return `must be written in canonical form: ${JSON.stringify(url.href)}`;
  if (url.username || url.password) return "must not contain credentials";
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:" && loopback) return null;
  return "must use https (http is allowed only on localhost, 127.0.0.1 and [::1])";
}

const RedirectUri = z.string().max(2000).superRefine((uri, ctx) => {
  const issue = redirectUriIssue(uri);
  if (issue) ctx.addIssue({ code: "custom", message: issue });
}).openapi({ example: "https://app.example.com/callback" });

export const RedirectUris = z.array(RedirectUri).max(50).refine(
  (a) => new Set(a).size === a.length,
  "must not repeat a URI",
)
  .openapi({
    description:
      "Registered redirect URIs, matched byte for byte: `https`, or `http` on localhost, 127.0.0.1 " +
      "and [::1]; no fragment. At most 50.",
  });

export const PostLogoutRedirectUris = z.array(RedirectUri).max(50).refine(
  (a) => new Set(a).size === a.length,
  "must not repeat a URI",
).openapi({
  description:
    "Where `/logout` may send the browser afterwards (OpenID Connect `post_logout_redirect_uri`), " +
    "matched byte for byte, with the rules of `redirect_uris`. At most 50.",
});

/** A link of the pages' footer: absolute `https` (or `http` on a loopback host), without credentials. */
export function brandingUrlIssue(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "must be an absolute URL";
  }
  if (url.username || url.password) return "must not contain credentials";
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname)) return null;
  return "must use https (http is allowed only on localhost, 127.0.0.1 and [::1])";
}

const BrandingUrl = z.string().max(2000, "at most 2000 characters").superRefine((uri, ctx) => {
  const issue = brandingUrlIssue(uri);
  if (issue) ctx.addIssue({ code: "custom", message: issue });
});

const BRANDING =
  "What the pages the project's users see carry (docs/branding.md): the heading, the colour of " +
  "buttons and links, and the footer's links to terms and privacy.";

/** What a project's users see on its pages; the logo is set apart (`PUT …/branding/logo`). */
export const Branding = z.object({
  display_name: z.string().nullable().openapi({
    description: "The name the pages show as their heading; null: the project's `name`",
  }),
  primary_color: z.string().nullable().openapi({
    description: "The colour of buttons and links, `#rgb` or `#rrggbb`; null: the service's own",
    example: "#0f766e",
  }),
  terms_url: z.string().nullable().openapi({
    description: "The terms of service, linked in the pages' footer",
  }),
  privacy_url: z.string().nullable().openapi({
    description: "The privacy policy, linked in the pages' footer",
  }),
  logo_url: z.string().nullable().openapi({
    description:
      "The logo's URL, relative to this service's origin (`PUBLIC_URL`); it changes with the image. " +
      "Set with `PUT /api/v1/projects/{project_id}/branding/logo`; null: none",
    example: "/branding/0f1e2d3c4b5a/logo?v=6f1ed002ab5595d1",
  }),
}).openapi("Branding", { description: BRANDING });

export const BrandingRequest = z.strictObject({
  display_name: Name.nullable().optional().openapi({
    description: "At most 50 characters; null or omitted: the project's `name`",
  }),
  primary_color: z.string().regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, "must be a colour: #rgb or #rrggbb")
    .nullable().optional().openapi({
      description: "`#rgb` or `#rrggbb`; null or omitted: none",
      example: "#0f766e",
    }),
  terms_url: BrandingUrl.nullable().optional().openapi({
    description: "Absolute `https` URL (`http` only on localhost, 127.0.0.1, [::1]); null or omitted: none",
  }),
  privacy_url: BrandingUrl.nullable().optional().openapi({
    description: "Absolute `https` URL (`http` only on localhost, 127.0.0.1, [::1]); null or omitted: none",
  }),
}).openapi("BrandingRequest", {
  description: `${BRANDING} On update: omitted keeps it; an object replaces it (a field it leaves out is ` +
    "cleared); the logo is kept either way.",
});
export type BrandingRequest = z.infer<typeof BrandingRequest>;

const MFA_POLICY =
  "Second factors at sign-in: `off` never asks for one; `optional` (the default) asks users " +
  "who enrolled one; `required` also makes users without one enrol right after their password.";
const MfaPolicy = z.enum(["off", "optional", "required"]);

const SIGNUP =
  'Self-service sign-up on the login page: `"off"` (no "Create an account" link; the sign-up page answers ' +
  '404), `"open"` (anyone may create an account), or `{"domains": [...]}` (only addresses whose domain part, ' +
  "after the last `@`, is exactly one of these, case-insensitively: `example.com` admits `ann@example.com`, " +
  "not `ann@mail.example.com`). New accounts get no role. With `require_verified_email` the address is " +
  "verified by a mailed link before the first code; otherwise the new user is signed in at once. An address " +
  'already registered is mailed instead of refused (docs/log-in-users.md, "Sign-up").';
/** A domain name of an allowed sign-up address, stored lower-cased. */
const SignupDomain = z.string().trim().toLowerCase().max(253, "at most 253 characters").regex(
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/,
  "must be a domain name such as example.com",
);
export const Signup = z.union([
  z.enum(["off", "open"]),
  z.strictObject({
    domains: z.array(SignupDomain).min(1, "at least one domain").max(100, "at most 100 domains").refine(
      (a) => new Set(a).size === a.length,
      "must not repeat a domain",
    ),
  }),
  // Inline, not a named component: the SDK's generator cannot extend a named union with a description.
]).openapi({ description: SIGNUP });
export type Signup = z.infer<typeof Signup>;
/** The same in answers: open, as every answer is (a client must accept fields added later). */
const SignupAnswer = z.union([z.enum(["off", "open"]), z.object({ domains: z.array(z.string()) })])
  .openapi({ description: SIGNUP });

const CLIENT_METADATA_DOCUMENTS =
  "Whether clients may identify themselves by an `https` URL (OAuth Client ID Metadata Documents, as MCP " +
  'clients do) when they ask for one of this project\'s APIs (`resource`): `"off"` (no), `"any"` (any host), or ' +
  '`{"hosts": [...]}` (only documents on these hosts, exactly, case-insensitively). Such a client is recorded on ' +
  "first use and always shows the consent page (docs/agents.md).";
/** A host name of an allowed client metadata document, stored lower-cased. */
const MetadataHost = z.string().trim().toLowerCase().max(253, "at most 253 characters").regex(
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/,
  "must be a host name such as agents.example.com",
);
export const ClientMetadataDocuments = z.union([
  z.enum(["off", "any"]),
  z.strictObject({
    hosts: z.array(MetadataHost).min(1, "at least one host").max(100, "at most 100 hosts").refine(
      (a) => new Set(a).size === a.length,
      "must not repeat a host",
    ),
  }),
  // Inline, not a named component: the SDK's generator cannot extend a named union with a description.
]).openapi({ description: CLIENT_METADATA_DOCUMENTS });
export type ClientMetadataDocuments = z.infer<typeof ClientMetadataDocuments>;
const ClientMetadataDocumentsAnswer = z.union([
  z.enum(["off", "any"]),
  z.object({ hosts: z.array(z.string()) }),
])
  .openapi({ description: CLIENT_METADATA_DOCUMENTS });

export const Project = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  redirect_uris: z.array(z.string()),
  post_logout_redirect_uris: z.array(z.string()),
  mfa: MfaPolicy.openapi({ description: MFA_POLICY }),
  is_active: z.boolean(),
  require_verified_email: z.boolean().openapi({
    description: "true: a user whose `email_verified` is false cannot sign in on the login page; the page " +
      "offers to mail them a verification link (see docs/email.md)",
  }),
  branding: Branding,
  is_system: z.boolean().openapi({
    description: "True for the system project, which administers the others",
  }),
  signup: SignupAnswer,
  client_metadata_documents: ClientMetadataDocumentsAnswer,
  default_role_id: z.string().nullable().openapi({ description: DEFAULT_ROLE }),
  ...Timestamps,
}).openapi("Project");
export type Project = z.infer<typeof Project>;

export const CreatedProject = Project.extend({
  admin_client: z.object({
    client_id: z.string(),
    client_secret: z.string().openapi({ description: "Shown only here; store it now." }),
  }).openapi({ description: "The project's admin client, granted every default permission of the project" }),
}).openapi("CreatedProject");
export type CreatedProject = z.infer<typeof CreatedProject>;

export const CreateProjectRequest = z.strictObject({
  name: Name,
  description: clearableText(200),
  redirect_uris: RedirectUris.optional(),
  post_logout_redirect_uris: PostLogoutRedirectUris.optional(),
  mfa: MfaPolicy.optional().openapi({ description: `${MFA_POLICY} Default \`optional\`.` }),
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
  require_verified_email: z.boolean().optional().openapi({
    description: "Default false: users sign in whether or not their address is verified",
  }),
  signup: Signup.optional().openapi({ description: `${SIGNUP} Default \`"off"\`.` }),
  client_metadata_documents: ClientMetadataDocuments.optional().openapi({
    description: `${CLIENT_METADATA_DOCUMENTS} Default \`"off"\`.`,
  }),
  branding: BrandingRequest.optional(),
}).openapi("CreateProjectRequest");
export type CreateProjectRequest = z.infer<typeof CreateProjectRequest>;

export const UpdateProjectRequest = z.strictObject({
  name: Name,
  description: clearableText(200).openapi({ description: 'Omitted keeps it; null or "" clears it' }),
  redirect_uris: RedirectUris.optional().openapi({
    description: "Omitted keeps them; an array replaces them",
  }),
  post_logout_redirect_uris: PostLogoutRedirectUris.optional().openapi({
    description: "Omitted keeps them; an array replaces them. Only a caller covering the whole project may " +
      "change them, as `redirect_uris`.",
  }),
  mfa: MfaPolicy.optional().openapi({
    description:
      `${MFA_POLICY} Omitted keeps it. Only a caller covering the whole project may change it, as ` +
      "`redirect_uris`.",
  }),
  is_active: z.boolean().optional().openapi({
    description:
      "Omitted keeps it. Only a system-project token may change it; the system project stays active.",
  }),
  require_verified_email: z.boolean().optional().openapi({
    description:
      "Omitted keeps it. Only a caller covering the whole project may change it, as `redirect_uris`.",
  }),
  signup: Signup.optional().openapi({
    description:
      "Omitted keeps it. Only a caller covering the whole project may change it, as `redirect_uris`.",
  }),
  client_metadata_documents: ClientMetadataDocuments.optional().openapi({
    description:
      "Omitted keeps it. Only a caller covering the whole project may change it, as `redirect_uris` " +
      "(it decides which applications may ask its users for access).",
  }),
  default_role_id: Id.nullable().optional().openapi({
    description:
      `${DEFAULT_ROLE} Omitted keeps it; null clears it. Only a caller covering the whole project ` +
      "may change it, as `signup` (it decides what anyone who signs up may do).",
  }),
  branding: BrandingRequest.optional(),
}).openapi("UpdateProjectRequest");
export type UpdateProjectRequest = z.infer<typeof UpdateProjectRequest>;

export const ProjectList = listOf(Project, "ProjectList");

export const ProjectListQuery = listQuery(["name", "created_at", "updated_at"] as const).extend({
  is_active: booleanFilter("Only active (true) or inactive (false) projects"),
});
export type ProjectListQuery = z.infer<typeof ProjectListQuery>;
