/** Organizations of a project (the customer companies of one application), their members and their roles. */
import { z } from "@hono/zod-openapi";
import {
  ChangedProperties,
  Description,
  Id,
  listQuery,
  Name,
  NewProperties,
  ProjectIdParam,
  Properties,
  Timestamps,
} from "./fields.ts";
import { UserIdParam } from "./users.ts";

/** At most this many email domains per organization. */
export const MAX_ORGANIZATION_DOMAINS = 100;
/** At most this many organization roles per member. */
export const MAX_MEMBER_ROLES = 50;

const MFA =
  "Whether the organization's members must use a second factor: `inherit` (the default: as the project's " +
  "`mfa` says), `optional` or `required`. Setting or changing it needs every permission of the project (its " +
  "admin client, or an operator), as the project's own `mfa` does.";
export const OrganizationMfa = z.enum(["inherit", "optional", "required"]).openapi("OrganizationMfa", {
  description: MFA,
});

/**
 * An email domain: a DNS name of at least two labels (letters, digits, hyphens; the last label begins with a
 * letter, so no address literal), lower-cased; no scheme, port, path or `@`. An internationalised name is given
 * in its ASCII form (`xn--…`).
 */
const OrganizationDomain = z.string().trim().toLowerCase().max(253, "at most 253 characters").regex(
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
  "must be a domain name such as example.com (no scheme, port, path or @)",
).openapi({ example: "acme.com" });

const DOMAINS = "The organization's email domains (its members' addresses end in `@` and one of them): DNS " +
  "names with at least one dot, stored lower-cased, no scheme, port, path or `@`, each at most once; at most " +
  `${MAX_ORGANIZATION_DOMAINS}. A common public mail domain (gmail.com, outlook.com, yahoo.com, icloud.com, …) ` +
  "is refused with 400 `invalid_params` naming `domains.<index>`, and a domain another organization of the " +
  "project holds with 409 `organization_domain_already_used`.";

const Domains = z.array(OrganizationDomain).max(
  MAX_ORGANIZATION_DOMAINS,
  `at most ${MAX_ORGANIZATION_DOMAINS} domains`,
).superRefine((list, ctx) => {
  const seen = new Set<string>();
  list.forEach((d, i) => {
    if (seen.has(d)) ctx.addIssue({ code: "custom", path: [i], message: "repeats another domain" });
    seen.add(d);
  });
}).openapi({ example: ["acme.com", "acme.co.uk"] });

const JOIN = "`true`: a user of the project who signs in (any way: a password, a passkey, an upstream " +
  "provider, single sign-on) with a verified address of one of `domains` joins the organization then, with " +
  "`default_role_ids` (docs/organizations.md § Joining by domain). Public mail domains are never an " +
  "organization's, so they never let anyone join.";

const DEFAULT_ROLES =
  'Organization roles of the project (`scope: "organization"`; a project role, or none of ' +
  "the project, is 400 naming `default_role_ids.<index>`), given to a member who joins by domain or just in " +
  "time through the organization's identity provider. The caller must hold every permission of each role it " +
  "adds (403 `insufficient_permission`): a default role is one given to whoever joins.";

const DefaultRoleIds = z.array(Id).max(50, "at most 50 roles");

export const Organization = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  properties: Properties,
  domains: z.array(z.string()).openapi({ description: "Lower-cased, sorted" }),
  mfa: OrganizationMfa,
  join_by_domain: z.boolean().openapi({
    description: "Whether a user who signs in with a verified address of one of `domains` joins the " +
      "organization then, with `default_role_ids`",
  }),
  default_role_ids: z.array(z.string()).openapi({
    description: "The organization roles a member who joins by domain, or just in time through the " +
      "organization's identity provider, is given (sorted)",
  }),
  ...Timestamps,
}).openapi("Organization");
export type Organization = z.infer<typeof Organization>;

export const CreateOrganizationRequest = z.strictObject({
  name: Name.openapi({ description: "Unique in the project (case-insensitively); 1 to 50 characters" }),
  description: Description,
  properties: NewProperties,
  domains: Domains.optional().openapi({ description: `Default none. ${DOMAINS}` }),
  // The enum's description says the default: the SDK's generator takes none beside an enum's $ref.
  mfa: OrganizationMfa.optional(),
  join_by_domain: z.boolean().optional().openapi({ description: `Default false. ${JOIN}` }),
  default_role_ids: DefaultRoleIds.optional().openapi({ description: `Default none. ${DEFAULT_ROLES}` }),
}).openapi("CreateOrganizationRequest");
export type CreateOrganizationRequest = z.infer<typeof CreateOrganizationRequest>;

export const UpdateOrganizationRequest = z.strictObject({
  name: Name.optional().openapi({
    description: "Omitted: unchanged. Unique in the project (case-insensitively)",
  }),
  description: Description,
  properties: ChangedProperties,
  domains: Domains.optional().openapi({
    description: `Omitted: unchanged. Given: replaces them ([] removes them all). ${DOMAINS}`,
  }),
  mfa: OrganizationMfa.optional(),
  join_by_domain: z.boolean().optional().openapi({ description: `Omitted: unchanged. ${JOIN}` }),
  default_role_ids: DefaultRoleIds.optional().openapi({
    description: `Omitted: unchanged. Given: replaces them ([] removes them all). ${DEFAULT_ROLES}`,
  }),
}).openapi("UpdateOrganizationRequest");
export type UpdateOrganizationRequest = z.infer<typeof UpdateOrganizationRequest>;

export const OrganizationIdParam = ProjectIdParam.extend({
  organization_id: Id.openapi({ param: { name: "organization_id", in: "path" } }),
});

export const OrganizationListQuery = listQuery(["name", "created_at", "updated_at"] as const);
export type OrganizationListQuery = z.infer<typeof OrganizationListQuery>;

const ROLE_IDS = 'Organization roles of the project (`scope: "organization"`); repeats collapse. A project ' +
  "role, or an id that is no role of this project, is refused with 400 `invalid_params` naming " +
  "`role_ids.<index>`. The caller must hold every permission of each role it gives or takes away (403 " +
  "`insufficient_permission` otherwise).";
const RoleIds = z.array(Id).max(MAX_MEMBER_ROLES, `at most ${MAX_MEMBER_ROLES} roles`);

export const OrganizationMember = z.object({
  organization_id: z.string(),
  user_id: z.string(),
  role_ids: z.array(z.string()).openapi({ description: "The member's organization roles here, sorted" }),
  display_name: z.string().openapi({ description: "The user's" }),
  email: z.string().nullable().openapi({ description: "The user's" }),
  ...Timestamps,
}).openapi("OrganizationMember");
export type OrganizationMember = z.infer<typeof OrganizationMember>;

export const AddMemberRequest = z.strictObject({
  user_id: Id.openapi({ description: "A user of this project (else 400 `invalid_params` naming `user_id`)" }),
  role_ids: RoleIds.optional().openapi({ description: `Default none. ${ROLE_IDS}` }),
}).openapi("AddOrganizationMemberRequest");
export type AddMemberRequest = z.infer<typeof AddMemberRequest>;

export const UpdateMemberRequest = z.strictObject({
  role_ids: RoleIds.openapi({
    description: `Replaces the member's roles ([] removes them all). ${ROLE_IDS}`,
  }),
}).openapi("UpdateOrganizationMemberRequest");
export type UpdateMemberRequest = z.infer<typeof UpdateMemberRequest>;

export const MemberParam = OrganizationIdParam.extend({
  user_id: Id.openapi({ param: { name: "user_id", in: "path" } }),
});

export const MemberListQuery = listQuery(["created_at", "updated_at"] as const).extend({
  role_id: Id.optional().openapi({ description: "Only members holding this role" }),
});
export type MemberListQuery = z.infer<typeof MemberListQuery>;

/** An organization a user belongs to, with the roles they hold there. */
export const UserOrganization = z.object({
  organization_id: z.string(),
  name: z.string().openapi({ description: "The organization's" }),
  role_ids: z.array(z.string()).openapi({ description: "The user's organization roles there, sorted" }),
  ...Timestamps,
}).openapi("UserOrganization");
export type UserOrganization = z.infer<typeof UserOrganization>;

export const UserOrganizationsParam = UserIdParam;

export const UserOrganizationListQuery = listQuery(["created_at", "updated_at"] as const);
export type UserOrganizationListQuery = z.infer<typeof UserOrganizationListQuery>;

// Invitations to join an organization, mailed to an address (docs/organizations.md § Invitations).

/** How long an invitation's link works when the request does not say: 7 days. */
export const INVITATION_TTL_DEFAULT = 7 * 86_400;
/** The longest an invitation's link may work: 30 days. */
export const INVITATION_TTL_MAX = 30 * 86_400;

const STATUSES = ["pending", "accepted", "revoked", "expired"] as const;

export const InvitationStatus = z.enum(STATUSES).openapi(
  "InvitationStatus",
  {
    description: "`pending`: its link works; `accepted`: the invited person joined (`accepted_user_id`); " +
      "`revoked`: an admin revoked it, or a newer invitation to the same address replaced it; `expired`: its " +
      "link's time ran out (a resend gives it a new link).",
  },
);

export const Invitation = z.object({
  id: z.string(),
  organization_id: z.string(),
  email: z.string().openapi({ description: "The invited address, trimmed and lower-cased" }),
  role_ids: z.array(z.string()).openapi({
    description: "The organization roles the invited person is given on acceptance (those still " +
      "organization roles of the project then)",
  }),
  status: InvitationStatus,
  expires_at: z.string().openapi({ description: "When the link stops working" }),
  sent_count: z.number().int().openapi({ description: "How many times it was mailed (1, then each resend)" }),
  last_sent_at: z.string(),
  accepted_at: z.string().nullable(),
  accepted_user_id: z.string().nullable().openapi({
    description: "The user who joined: an existing user with the address, or one the acceptance created",
  }),
  revoked_at: z.string().nullable(),
  ...Timestamps,
}).openapi("OrganizationInvitation");
export type Invitation = z.infer<typeof Invitation>;

const EMAIL = z.string().trim().toLowerCase().max(100, "at most 100 characters")
  .refine((v) => z.regexes.email.test(v), "must be a valid email");

export const CreateInvitationRequest = z.strictObject({
  email: EMAIL.openapi({
    description: "The address to invite. One that belongs to a member of the organization already is " +
      "409 `member_already_exists`; a pending invitation to the same address is replaced (its link stops " +
      "working).",
    example: "bob@acme.example",
  }),
  role_ids: z.array(Id).max(MAX_MEMBER_ROLES, `at most ${MAX_MEMBER_ROLES} roles`).optional().openapi({
    description: 'Default none. Organization roles of the project (`scope: "organization"`): a project ' +
      "role, or an id that is no role of this project, is 400 `invalid_params` naming `role_ids.<index>`. " +
      "The caller must hold every permission of each (403 `insufficient_permission`).",
  }),
  expires_in: z.number().int("must be a whole number").min(300, "at least 300")
    .max(INVITATION_TTL_MAX, `at most ${INVITATION_TTL_MAX}`).optional().openapi({
      description:
        `Seconds the link works: 300 to ${INVITATION_TTL_MAX} (default ${INVITATION_TTL_DEFAULT}, ` +
        "7 days); a resend gives it as long again",
    }),
}).openapi("CreateOrganizationInvitationRequest");
export type CreateInvitationRequest = z.infer<typeof CreateInvitationRequest>;

export const InvitationParam = OrganizationIdParam.extend({
  invitation_id: Id.openapi({ param: { name: "invitation_id", in: "path" } }),
});

export const InvitationListQuery = listQuery(["created_at", "updated_at", "expires_at"] as const).extend({
  // Inline (not the named schema): the SDK's generator takes no reference to an enum in a query parameter.
  status: z.enum(STATUSES).optional().openapi({ description: "Only invitations in this status" }),
});
export type InvitationListQuery = z.infer<typeof InvitationListQuery>;
