/** Organizations: `/api/v1/projects/{project_id}/organizations`. */
import {
  createOrganization,
  deleteOrganization,
  getOrganization,
  listOrganizations,
  updateOrganization,
} from "../../../domain/organizations/organizations.ts";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import {
  CreateOrganizationRequest,
  Organization,
  OrganizationIdParam,
  OrganizationListQuery,
  UpdateOrganizationRequest,
} from "../../../openapi/organizations.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";

const DOMAINS =
  "A public mail domain is refused with 400 `invalid_params` naming `domains.<index>`; a domain " +
  "another organization of the project holds with 409 `organization_domain_already_used`, naming it. Setting " +
  "`mfa` (other than `inherit` on creation) needs every permission of the project: the project's admin client " +
  "or an operator; otherwise 403 `insufficient_permission` on `mfa`.";

export const createOrganizationRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/organizations",
  operationId: "createOrganization",
  tags: ["Organizations"],
  summary: "Create an organization",
  permission: "organizations:create",
  description: "A customer company of the project's application: its members hold organization roles in it " +
    "(`…/organizations/{organization_id}/members`). The name is unique in the project, case-insensitively " +
    `(409 \`organization_name_already_used\`). ${DOMAINS} One transaction with its ` +
    "`organization.created` event.",
  request: { params: ProjectIdParam, body: jsonBody(CreateOrganizationRequest) },
  responses: { 201: jsonResponse(Organization, "The organization") },
  errors: ["organization_name_already_used", "organization_domain_already_used"],
});

export const listOrganizationsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/organizations",
  operationId: "listOrganizations",
  tags: ["Organizations"],
  summary: "List organizations",
  permission: "organizations:read",
  description: "`search` matches the name, the description and the domains.",
  request: { params: ProjectIdParam, query: OrganizationListQuery },
  responses: { 200: jsonResponse(listOf(Organization, "OrganizationList"), "A page of organizations") },
});

export const getOrganizationRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}",
  operationId: "getOrganization",
  tags: ["Organizations"],
  summary: "Get an organization",
  permission: "organizations:read",
  description: "An unknown id, or another project's, is `organization_not_found`.",
  request: { params: OrganizationIdParam },
  responses: { 200: jsonResponse(Organization, "The organization") },
  errors: ["organization_not_found"],
});

export const updateOrganizationRoute = guardedRoute({
  method: "patch",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}",
  operationId: "updateOrganization",
  tags: ["Organizations"],
  summary: "Update an organization",
  permission: "organizations:update",
  description:
    'Changes the fields given; an omitted field keeps its value, `description` null or "" clears ' +
    `it, \`properties\` and \`domains\` replace the stored ones whole. ${DOMAINS} One transaction with its ` +
    "`organization.updated` event (none when nothing changed).",
  request: { params: OrganizationIdParam, body: jsonBody(UpdateOrganizationRequest) },
  responses: { 200: jsonResponse(Organization, "The updated organization") },
  errors: ["organization_not_found", "organization_name_already_used", "organization_domain_already_used"],
});

export const deleteOrganizationRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/organizations/{organization_id}",
  operationId: "deleteOrganization",
  tags: ["Organizations"],
  summary: "Delete an organization",
  permission: "organizations:delete",
  description:
    "Its members go with it (their users stay), so the caller must hold every permission of each " +
    "role its members hold there (403 `insufficient_permission` otherwise). Its objects stay, the project's " +
    "(`organization_id` null). One transaction with its `organization.deleted` event (`details`: " +
    "`members_removed`, `objects_released`); answers 204.",
  request: { params: OrganizationIdParam },
  responses: { 204: { description: "Deleted" } },
  errors: ["organization_not_found"],
});

export function registerOrganizationRoutes(app: App) {
  app.openapi(createOrganizationRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const [{ sql }, principal, body] = [c.get("deps"), c.get("principal"), c.req.valid("json")];
    return c.json(await createOrganization(sql, principal, project_id, body), 201);
  });
  app.openapi(listOrganizationsRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return jsonText(c, await listOrganizations(c.get("deps").sql, project_id, c.req.valid("query")), 200);
  });
  app.openapi(getOrganizationRoute, async (c) => {
    const { project_id, organization_id } = c.req.valid("param");
    return c.json(await getOrganization(c.get("deps").sql, project_id, organization_id), 200);
  });
  app.openapi(updateOrganizationRoute, async (c) => {
    const { project_id, organization_id } = c.req.valid("param");
    const [{ sql }, principal, body] = [c.get("deps"), c.get("principal"), c.req.valid("json")];
    return c.json(await updateOrganization(sql, principal, project_id, organization_id, body), 200);
  });
  app.openapi(deleteOrganizationRoute, async (c) => {
    const { project_id, organization_id } = c.req.valid("param");
    await deleteOrganization(c.get("deps").sql, c.get("principal"), project_id, organization_id);
    return c.body(null, 204) as never;
  });
}
