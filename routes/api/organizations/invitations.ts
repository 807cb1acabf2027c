/**
 * Invitations to join an organization: `/api/v1/projects/{project_id}/organizations/{organization_id}/invitations`
 * (docs/organizations.md § Invitations). The link's page is routes/pages/invitations.ts.
 */
import {
  createInvitation,
  getInvitation,
  listInvitations,
  resendInvitation,
  revokeInvitation,
} from "../../../domain/organizations/invitations.ts";
import { listOf } from "../../../openapi/fields.ts";
import {
  CreateInvitationRequest,
  Invitation,
  InvitationListQuery,
  InvitationParam,
  OrganizationIdParam,
} from "../../../openapi/organizations.ts";
import type { App } from "../../env.ts";
import { invitationSettings } from "../../settings.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse } from "../responses.ts";

const LINK = "The mail (through the outbox, docs/email.md) carries a link to the service's page " +
  "`/authorize/invitation?token=…`, which works once, until `expires_at`: a user of the project with the address (and " +
  "it verified) joins there with one button; without one, the page creates the user with a name and a " +
  "password (the address verified by the link) and they join.";

export const createInvitationRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/invitations",
  operationId: "createOrganizationInvitation",
  tags: ["Organizations"],
  summary: "Invite an address",
  permission: "organizations:update",
  description: 'Invites an address with organization roles (`scope: "organization"`; a project role, or no ' +
    "role of the project, is 400 `invalid_params` naming `role_ids.<index>`; the caller must hold every " +
    "permission of each, else 403). An address of a member already is 409 `member_already_exists`; an " +
    `open invitation to the same address is revoked and replaced. ${LINK} One transaction with its ` +
    "`organization.invitation_sent` event and its mail.",
  request: { params: OrganizationIdParam, body: jsonBody(CreateInvitationRequest) },
  responses: { 201: jsonResponse(Invitation, "The invitation, pending") },
  errors: ["organization_not_found", "member_already_exists"],
});

export const listInvitationsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/invitations",
  operationId: "listOrganizationInvitations",
  tags: ["Organizations"],
  summary: "List an organization's invitations",
  permission: "organizations:read",
  description:
    "Every invitation with its status now (`pending`, `accepted`, `revoked`, `expired`); `search` " +
    "matches the address, `status` keeps one status. The link is never shown: only its mail has it.",
  request: { params: OrganizationIdParam, query: InvitationListQuery },
  responses: { 200: jsonResponse(listOf(Invitation, "OrganizationInvitationList"), "A page of invitations") },
  errors: ["organization_not_found"],
});

export const getInvitationRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/invitations/{invitation_id}",
  operationId: "getOrganizationInvitation",
  tags: ["Organizations"],
  summary: "Get an invitation",
  permission: "organizations:read",
  request: { params: InvitationParam },
  responses: { 200: jsonResponse(Invitation, "The invitation") },
  errors: ["organization_not_found", "invitation_not_found"],
});

export const resendInvitationRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/invitations/{invitation_id}/resend",
  operationId: "resendOrganizationInvitation",
  tags: ["Organizations"],
  summary: "Mail an invitation again",
  permission: "organizations:update",
  description: "A new link (the one mailed before stops working), working as long as first asked from now, " +
    "in a new mail; an expired invitation is pending again. Accepted or revoked: 409 " +
    "`invitation_not_pending`. The caller must still hold every permission of its roles (403). One " +
    "transaction with its `organization.invitation_resent` event and its mail.",
  request: { params: InvitationParam },
  responses: { 200: jsonResponse(Invitation, "The invitation, pending") },
  errors: ["organization_not_found", "invitation_not_found", "invitation_not_pending"],
});

export const revokeInvitationRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/invitations/{invitation_id}",
  operationId: "revokeOrganizationInvitation",
  tags: ["Organizations"],
  summary: "Revoke an invitation",
  permission: "organizations:update",
  description: "Its link stops working at once; the invitation stays listed as `revoked`. Accepted or " +
    "revoked already: 409 `invitation_not_pending`. One transaction with its " +
    "`organization.invitation_revoked` event.",
  request: { params: InvitationParam },
  responses: { 200: jsonResponse(Invitation, "The invitation, revoked") },
  errors: ["organization_not_found", "invitation_not_found", "invitation_not_pending"],
});

export function registerInvitationRoutes(app: App) {
  app.openapi(createInvitationRoute, async (c) => {
    const { project_id, organization_id } = c.req.valid("param");
    const deps = c.get("deps");
    return c.json(
      await createInvitation(
        deps.sql,
        invitationSettings(c),
        c.get("principal"),
        project_id,
        organization_id,
        c.req.valid("json"),
      ),
      201,
    );
  });
  app.openapi(listInvitationsRoute, async (c) => {
    const { project_id, organization_id } = c.req.valid("param");
    return c.json(
      await listInvitations(c.get("deps").sql, project_id, organization_id, c.req.valid("query")),
      200,
    );
  });
  app.openapi(getInvitationRoute, async (c) => {
    const { project_id, organization_id, invitation_id } = c.req.valid("param");
    return c.json(await getInvitation(c.get("deps").sql, project_id, organization_id, invitation_id), 200);
  });
  app.openapi(resendInvitationRoute, async (c) => {
    const { project_id, organization_id, invitation_id } = c.req.valid("param");
    const deps = c.get("deps");
    return c.json(
      await resendInvitation(
        deps.sql,
        invitationSettings(c),
        c.get("principal"),
        project_id,
        organization_id,
        invitation_id,
      ),
      200,
    );
  });
  app.openapi(revokeInvitationRoute, async (c) => {
    const { project_id, organization_id, invitation_id } = c.req.valid("param");
    return c.json(
      await revokeInvitation(
        c.get("deps").sql,
        c.get("principal"),
        project_id,
        organization_id,
        invitation_id,
      ),
      200,
    );
  });
}
