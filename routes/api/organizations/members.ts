/**
 * An organization's members: `/api/v1/projects/{project_id}/organizations/{organization_id}/members`, and the
 * organizations of a user, `/api/v1/projects/{project_id}/users/{user_id}/organizations`.
 */
import {
  addMember,
  getMember,
  listMembers,
  listUserOrganizations,
  removeMember,
  updateMember,
} from "../../../domain/organizations/members.ts";
import { listOf } from "../../../openapi/fields.ts";
import {
  AddMemberRequest,
  MemberListQuery,
  MemberParam,
  OrganizationIdParam,
  OrganizationMember,
  UpdateMemberRequest,
  UserOrganization,
  UserOrganizationListQuery,
  UserOrganizationsParam,
} from "../../../openapi/organizations.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse } from "../responses.ts";

const ROLES = 'Each of `role_ids` must be an organization role of the project (`scope: "organization"`): a ' +
  "project role, or no role of the project, is 400 `invalid_params` naming `role_ids.<index>`. Least " +
  "privilege: the caller must hold every permission of each role it gives (403 `insufficient_permission`, " +
  "naming the codes it lacks) and of each role it takes away (403).";

export const listMembersRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/members",
  operationId: "listOrganizationMembers",
  tags: ["Organizations"],
  summary: "List an organization's members",
  permission: "organizations:read",
  description: "Each member with their organization roles there, their display name and email. `search` " +
    "matches the display name and the email; `role_id` keeps the members holding that role.",
  request: { params: OrganizationIdParam, query: MemberListQuery },
  responses: { 200: jsonResponse(listOf(OrganizationMember, "OrganizationMemberList"), "A page of members") },
  errors: ["organization_not_found"],
});

export const addMemberRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/members",
  operationId: "addOrganizationMember",
  tags: ["Organizations"],
  summary: "Add a member",
  permission: "organizations:update",
  description: "Adds a user of the project (another project's, or none, is 400 `invalid_params` naming " +
    "`user_id`) with organization roles; a user may belong to any number of organizations. A user who is a " +
    `member already is 409 \`member_already_exists\`. ${ROLES} One transaction with its ` +
    "`organization.member_added` event.",
  request: { params: OrganizationIdParam, body: jsonBody(AddMemberRequest) },
  responses: { 201: jsonResponse(OrganizationMember, "The member") },
  errors: ["organization_not_found", "member_already_exists"],
});

export const getMemberRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/members/{user_id}",
  operationId: "getOrganizationMember",
  tags: ["Organizations"],
  summary: "Get a member",
  permission: "organizations:read",
  description: "A user who is not a member (or no user) is `member_not_found`.",
  request: { params: MemberParam },
  responses: { 200: jsonResponse(OrganizationMember, "The member") },
  errors: ["organization_not_found", "member_not_found"],
});

export const updateMemberRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/members/{user_id}",
  operationId: "updateOrganizationMember",
  tags: ["Organizations"],
  summary: "Replace a member's roles",
  permission: "organizations:update",
  description:
    `\`role_ids\` replaces the member's roles in the organization. ${ROLES} The roles the member ` +
    "keeps need nothing. One transaction with its `organization.member_updated` event (none when nothing " +
    "changed).",
  request: { params: MemberParam, body: jsonBody(UpdateMemberRequest) },
  responses: { 200: jsonResponse(OrganizationMember, "The member") },
  errors: ["organization_not_found", "member_not_found"],
});

export const removeMemberRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}/members/{user_id}",
  operationId: "removeOrganizationMember",
  tags: ["Organizations"],
  summary: "Remove a member",
  permission: "organizations:update",
  description: "The member loses their roles in the organization (the user stays), so the caller must hold " +
    "every permission of each of them (403 `insufficient_permission` otherwise). One transaction with its " +
    "`organization.member_removed` event; answers 204.",
  request: { params: MemberParam },
  responses: { 204: { description: "Removed" } },
  errors: ["organization_not_found", "member_not_found"],
});

export const listUserOrganizationsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/{user_id}/organizations",
  operationId: "listUserOrganizations",
  tags: ["Organizations"],
  summary: "A user's organizations",
  permission: "organizations:read",
  description: "The organizations the user belongs to, each with the user's organization roles there. " +
    "`search` matches the organization's name. An unknown user, or another project's, is `user_not_found`.",
  request: { params: UserOrganizationsParam, query: UserOrganizationListQuery },
  responses: {
    200: jsonResponse(listOf(UserOrganization, "UserOrganizationList"), "A page of organizations"),
  },
  errors: ["user_not_found"],
});

export function registerMemberRoutes(app: App) {
  app.openapi(listMembersRoute, async (c) => {
    const { project_id, organization_id } = c.req.valid("param");
    return c.json(
      await listMembers(c.get("deps").sql, project_id, organization_id, c.req.valid("query")),
      200,
    );
  });
  app.openapi(addMemberRoute, async (c) => {
    const { project_id, organization_id } = c.req.valid("param");
    const [{ sql }, principal, body] = [c.get("deps"), c.get("principal"), c.req.valid("json")];
    return c.json(await addMember(sql, principal, project_id, organization_id, body), 201);
  });
  app.openapi(getMemberRoute, async (c) => {
    const { project_id, organization_id, user_id } = c.req.valid("param");
    return c.json(await getMember(c.get("deps").sql, project_id, organization_id, user_id), 200);
  });
  app.openapi(updateMemberRoute, async (c) => {
    const { project_id, organization_id, user_id } = c.req.valid("param");
    const [{ sql }, principal, body] = [c.get("deps"), c.get("principal"), c.req.valid("json")];
    return c.json(await updateMember(sql, principal, project_id, organization_id, user_id, body), 200);
  });
  app.openapi(removeMemberRoute, async (c) => {
    const { project_id, organization_id, user_id } = c.req.valid("param");
    await removeMember(c.get("deps").sql, c.get("principal"), project_id, organization_id, user_id);
    return c.body(null, 204) as never;
  });
  app.openapi(listUserOrganizationsRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    return c.json(
      await listUserOrganizations(c.get("deps").sql, project_id, user_id, c.req.valid("query")),
      200,
    );
  });
}
