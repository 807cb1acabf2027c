/** Invitations to join an organization, mailed to an address (docs/organizations.md § Invitations). */
import { z } from "@hono/zod-openapi";
import { Id, listQuery, Timestamps } from "./fields.ts";
import { MAX_MEMBER_ROLES, OrganizationIdParam } from "./organizations.ts";

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
