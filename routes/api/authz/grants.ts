/** Roles granted on objects: `/api/v1/projects/{project_id}/grants`. */
import { createGrant, deleteGrant, getGrant, listGrants } from "../../../domain/authz/object_grants.ts";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import { CreateGrantRequest, Grant, GrantIdParam, GrantListQuery } from "../../../openapi/objects.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";

export const createGrantRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/grants",
  operationId: "createGrant",
  tags: ["Grants"],
  summary: "Grant a role on an object",
  permission: "grants:create",
  description: "Gives `subject` the role's permissions of the object's resource on that object and every " +
    "descendant, until `expires_at` (decided on the service's database clock), in the AuthZEN decisions and " +
    "searches. An unknown `object.type`, `object.id` or `role_id` is 404 (`resource_not_found`, " +
    "`object_not_found`, `role_not_found`); a subject that is not a user or client of the project, an " +
    'organization role (`scope: "organization"`), or an `expires_at` not in the future, is 400 ' +
    "`invalid_params`. The caller must hold the role's permissions of " +
    "that resource (403 `insufficient_permission` naming the codes it lacks). One transaction with its " +
    "`grant.created` event.",
  request: { params: ProjectIdParam, body: jsonBody(CreateGrantRequest) },
  responses: { 201: jsonResponse(Grant, "The grant") },
  errors: ["resource_not_found", "object_not_found", "role_not_found"],
});

export const listGrantsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/grants",
  operationId: "listGrants",
  tags: ["Grants"],
  summary: "List grants on objects",
  permission: "grants:read",
  description: "Filtered by subject (`subject_id`, with `subject_type`), role, object (`object_type`, a " +
    "resource code, with `object_id`); live grants only unless `include_expired=true` (expired grants are " +
    "purged GRANT_RETENTION_DAYS after their expiry). Newest first by default.",
  request: { params: ProjectIdParam, query: GrantListQuery },
  responses: { 200: jsonResponse(listOf(Grant, "GrantList"), "A page of grants") },
});

export const getGrantRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/grants/{grant_id}",
  operationId: "getGrant",
  tags: ["Grants"],
  summary: "Get a grant",
  permission: "grants:read",
  request: { params: GrantIdParam },
  responses: { 200: jsonResponse(Grant, "The grant") },
  errors: ["grant_not_found"],
});

export const deleteGrantRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/grants/{grant_id}",
  operationId: "deleteGrant",
  tags: ["Grants"],
  summary: "Revoke a grant",
  permission: "grants:delete",
  description: "The subject loses what it gave on its next decision. The caller must hold the role's " +
    "permissions of the object's resource, as to give it (403 `insufficient_permission`). One transaction " +
    "with its `grant.deleted` event; answers 204.",
  request: { params: GrantIdParam },
  responses: { 204: { description: "Revoked" } },
  errors: ["grant_not_found"],
});

export function registerGrantRoutes(app: App) {
  app.openapi(createGrantRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return c.json(
      await createGrant(c.get("deps").sql, c.get("principal"), project_id, c.req.valid("json")),
      201,
    );
  });
  app.openapi(listGrantsRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return jsonText(c, await listGrants(c.get("deps").sql, project_id, c.req.valid("query")), 200);
  });
  app.openapi(getGrantRoute, async (c) => {
    const { project_id, grant_id } = c.req.valid("param");
    return c.json(await getGrant(c.get("deps").sql, project_id, grant_id), 200);
  });
  app.openapi(deleteGrantRoute, async (c) => {
    const { project_id, grant_id } = c.req.valid("param");
    await deleteGrant(c.get("deps").sql, c.get("principal"), project_id, grant_id);
    return c.body(null, 204) as never;
  });
}
