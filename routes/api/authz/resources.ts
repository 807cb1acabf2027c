/** Resources and their permissions: `/api/v1/projects/{project_id}/resources`. */
import {
  createResource,
  deleteResource,
  getResource,
  listResources,
  resourceListRead,
  updateResource,
} from "../../../domain/authz/resources.ts";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import {
  CreateResourceRequest,
  Resource,
  ResourceIdParam,
  ResourceListQuery,
  UpdateResourceRequest,
} from "../../../openapi/resources.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";

export const createResourceRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/resources",
  operationId: "createResource",
  tags: ["Resources"],
  summary: "Create a resource with its permissions",
  permission: "resources:create",
  description: "Creates the resource and its permissions in one transaction.",
  request: { params: ProjectIdParam, body: jsonBody(CreateResourceRequest) },
  responses: { 201: jsonResponse(Resource, "The resource with its permissions") },
  errors: ["resource_code_already_used", "resource_indicator_already_used"],
});

export const updateResourceRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}",
  operationId: "updateResource",
  tags: ["Resources"],
  summary: "Update a resource and its permissions",
  permission: "resources:update",
  description:
    "Default resources are read-only (403 `default_resource_immutable`). Every change applies in " +
    "one transaction and takes effect on the next request of any token.",
  request: { params: ResourceIdParam, body: jsonBody(UpdateResourceRequest) },
  responses: { 200: jsonResponse(Resource, "The updated resource") },
  errors: [
    "default_resource_immutable",
    "resource_not_found",
    "resource_code_already_used",
    "resource_indicator_already_used",
  ],
});

export const listResourcesRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/resources",
  operationId: "listResources",
  tags: ["Resources"],
  summary: "List resources with their permissions",
  permission: "resources:read",
  description:
    "`search` matches the name, code and description of the resource or of any of its permissions.",
  request: { params: ProjectIdParam, query: ResourceListQuery },
  responses: { 200: jsonResponse(listOf(Resource, "ResourceList"), "A page of resources") },
  reads: ({ param, query }) => resourceListRead(param.project_id as string, query as ResourceListQuery),
});

export const getResourceRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}",
  operationId: "getResource",
  tags: ["Resources"],
  summary: "Get a resource",
  permission: "resources:read",
  description: "The resource with its permissions, as the list shows it; an unknown id, or another " +
    "project's, is `resource_not_found`.",
  request: { params: ResourceIdParam },
  responses: { 200: jsonResponse(Resource, "The resource") },
  errors: ["resource_not_found"],
});

export const deleteResourceRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}",
  operationId: "deleteResource",
  tags: ["Resources"],
  summary: "Delete a resource",
  permission: "resources:delete",
  description: "Its permissions go with it and leave every role and client that held them: what those hold " +
    "changes on their next request. The caller must cover the resource's permissions (403 " +
    "`insufficient_permission` otherwise); default resources are read-only (403 " +
    "`default_resource_immutable`). One transaction with its `resource.deleted` audit event (the resource's " +
    "last state); its objects and their grants go too, each grant with a `grant.deleted` event " +
    "(`details.cause`); answers 204.",
  request: { params: ResourceIdParam },
  responses: { 204: { description: "Deleted" } },
  errors: ["resource_not_found", "default_resource_immutable"],
});

export function registerResourceRoutes(app: App) {
  app.openapi(getResourceRoute, async (c) => {
    const { project_id, resource_id } = c.req.valid("param");
    return c.json(await getResource(c.get("deps").sql, project_id, resource_id), 200);
  });
  app.openapi(deleteResourceRoute, async (c) => {
    const { project_id, resource_id } = c.req.valid("param");
    await deleteResource(c.get("deps").sql, c.get("principal"), project_id, resource_id);
    return c.body(null, 204) as never;
  });
  app.openapi(createResourceRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return c.json(
      await createResource(c.get("deps").sql, c.get("principal"), project_id, c.req.valid("json")),
      201,
    );
  });
  app.openapi(updateResourceRoute, async (c) => {
    const { project_id, resource_id } = c.req.valid("param");
    const [{ sql }, principal, body] = [c.get("deps"), c.get("principal"), c.req.valid("json")];
    return c.json(await updateResource(sql, principal, project_id, resource_id, body), 200);
  });
  app.openapi(listResourcesRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return jsonText(
      c,
      await listResources(c.get("deps").sql, project_id, c.req.valid("query"), c.get("attached")),
      200,
    );
  });
}
