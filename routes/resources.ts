/** Resources and their permissions: `/api/v1/projects/{project_id}/resources`. */
import { createRoute, z } from "@hono/zod-openapi";
import { createResource, listResources, updateResource } from "../domain/resources.ts";
import { type App, type Deps, guarded } from "./app.ts";
import {
  booleanFilter,
  Code,
  Description,
  errorResponses,
  Id,
  jsonBody,
  jsonResponse,
  listOf,
  listQuery,
  Name,
  ProjectIdParam,
  text,
  Timestamps,
} from "../openapi/schemas.ts";

const Permission = z.object({
  id: z.string().openapi({ description: "Referenced by roles and clients through `permission_ids`" }),
  name: z.string(),
  code: z.string(),
  description: z.string().nullable(),
  ...Timestamps,
}).openapi("Permission");

const Resource = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  code: z.string(),
  description: z.string().nullable(),
  is_default: z.boolean().openapi({ description: "A default system resource: read-only" }),
  permissions: z.array(Permission).openapi({ description: "Sorted by code" }),
  ...Timestamps,
}).openapi("Resource");

const PermissionInput = z.object({
  name: Name,
  code: Code,
  description: text(200).nullable().optional(),
}).openapi("PermissionInput");

const PermissionInputs = z.array(PermissionInput).max(100, "at most 100 permissions per request")
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((p, i) => {
      const key = p.code.toLowerCase();
      if (seen.has(key)) {
        ctx.addIssue({ code: "custom", path: [i, "code"], message: "repeats another permission's code" });
      }
      seen.add(key);
    });
  });

const CreateResourceBody = z.object({
  name: Name,
  code: Code.openapi({ description: "Unique in the project (case-insensitively)" }),
  description: Description,
  permissions: PermissionInputs.optional().openapi({
    description: "Created with the resource; codes unique",
  }),
}).openapi("CreateResourceRequest");

const UpdateResourceBody = z.object({
  name: Name,
  code: z.string().min(1, "must not be empty").max(50, "at most 50 characters")
    .refine((v) => v.trim() !== "", "must not be blank").openapi({
      description: "At most 50 characters; unique in the project (case-insensitively)",
    }),
  description: Description,
  permissions: PermissionInputs.optional().openapi({
    description:
      "Omitted: unchanged. Given: matched by code — a kept code keeps its id and its grants, a new " +
      "code is created, a code left out is deleted together with its grants to roles and clients.",
  }),
}).openapi("UpdateResourceRequest");

const ResourceIdParam = ProjectIdParam.extend({
  resource_id: Id.openapi({ param: { name: "resource_id", in: "path" } }),
});

export const createResourceRoute = createRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/resources",
  operationId: "createResource",
  tags: ["Resources"],
  summary: "Create a resource with its permissions",
  description: "Needs `resources:create`. Creates the resource and its permissions in one transaction.",
  security: [{ bearerAuth: [] }],
  request: { params: ProjectIdParam, body: jsonBody(CreateResourceBody) },
  responses: {
    201: jsonResponse(Resource, "The resource with its permissions"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
      "resource_code_already_used",
    ),
  },
});

export const updateResourceRoute = createRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/resources/{resource_id}",
  operationId: "updateResource",
  tags: ["Resources"],
  summary: "Update a resource and its permissions",
  description:
    "Needs `resources:update`. Default resources are read-only (403 `default_resource_immutable`). " +
    "Every change applies in one transaction and takes effect on the next request of any token.",
  security: [{ bearerAuth: [] }],
  request: { params: ResourceIdParam, body: jsonBody(UpdateResourceBody) },
  responses: {
    200: jsonResponse(Resource, "The updated resource"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "default_resource_immutable",
      "project_not_found",
      "resource_not_found",
      "resource_code_already_used",
    ),
  },
});

export const listResourcesRoute = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/resources",
  operationId: "listResources",
  tags: ["Resources"],
  summary: "List resources with their permissions",
  description:
    "Needs `resources:read`. `search` matches the name, code and description of the resource or of " +
    "any of its permissions.",
  security: [{ bearerAuth: [] }],
  request: {
    params: ProjectIdParam,
    query: listQuery(["name", "code", "created_at", "updated_at"] as const).extend({
      is_default: booleanFilter("Only default system resources (true) or only the project's own (false)"),
    }),
  },
  responses: {
    200: jsonResponse(listOf(Resource, "ResourceList"), "A page of resources"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
    ),
  },
});

export function registerResourceRoutes(app: App, deps: Deps) {
  app.openapi(guarded(deps, createResourceRoute, "resources:create"), async (c) => {
    return c.json(await createResource(deps.sql, c.req.valid("param").project_id, c.req.valid("json")), 201);
  });
  app.openapi(guarded(deps, updateResourceRoute, "resources:update"), async (c) => {
    const { project_id, resource_id } = c.req.valid("param");
    return c.json(await updateResource(deps.sql, project_id, resource_id, c.req.valid("json")), 200);
  });
  app.openapi(guarded(deps, listResourcesRoute, "resources:read"), async (c) => {
    return c.json(await listResources(deps.sql, c.req.valid("param").project_id, c.req.valid("query")), 200);
  });
}
