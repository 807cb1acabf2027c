/** Roles: `/api/v1/projects/{project_id}/roles`. */
import { createRoute, z } from "@hono/zod-openapi";
import { createRole, listRoles, updateRole } from "../domain/roles.ts";
import { type App, type Deps, guarded } from "./app.ts";
import {
  Code,
  Description,
  errorResponses,
  Id,
  jsonBody,
  jsonResponse,
  listOf,
  listQuery,
  Name,
  PermissionIds,
  ProjectIdParam,
  Timestamps,
} from "../openapi/schemas.ts";

const Role = z.object({
  id: z.string(),
  project_id: z.string(),
  code: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  permission_ids: z.array(z.string()),
  ...Timestamps,
}).openapi("Role");

const RoleBody = z.object({
  code: Code.openapi({
    description: "Letters, digits, dash, underscore; unique in the project (case-insensitively)",
  }),
  name: Name,
  description: Description,
  permission_ids: PermissionIds.optional(),
});

const CreateRoleBody = RoleBody.openapi("CreateRoleRequest");
const UpdateRoleBody = RoleBody.extend({
  permission_ids: PermissionIds.optional().openapi({
    description: "Omitted: unchanged. Given: replaces the role's permissions.",
  }),
}).openapi("UpdateRoleRequest");

const RoleIdParam = ProjectIdParam.extend({
  role_id: Id.openapi({ param: { name: "role_id", in: "path" } }),
});

export const createRoleRoute = createRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/roles",
  operationId: "createRole",
  tags: ["Roles"],
  summary: "Create a role",
  description: "Needs `roles:create`.",
  security: [{ bearerAuth: [] }],
  request: { params: ProjectIdParam, body: jsonBody(CreateRoleBody) },
  responses: {
    201: jsonResponse(Role, "The role"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
      "some_permissions_not_found",
      "role_code_already_used",
    ),
  },
});

export const updateRoleRoute = createRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/roles/{role_id}",
  operationId: "updateRole",
  tags: ["Roles"],
  summary: "Update a role",
  description:
    "Needs `roles:update`. A change of permissions applies to every user with the role on their next " +
    "request.",
  security: [{ bearerAuth: [] }],
  request: { params: RoleIdParam, body: jsonBody(UpdateRoleBody) },
  responses: {
    200: jsonResponse(Role, "The updated role"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
      "role_not_found",
      "some_permissions_not_found",
      "role_code_already_used",
    ),
  },
});

export const listRolesRoute = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/roles",
  operationId: "listRoles",
  tags: ["Roles"],
  summary: "List roles",
  description: "Needs `roles:read`. `search` matches the code, name and description.",
  security: [{ bearerAuth: [] }],
  request: {
    params: ProjectIdParam,
    query: listQuery(["name", "code", "created_at", "updated_at"] as const),
  },
  responses: {
    200: jsonResponse(listOf(Role, "RoleList"), "A page of roles"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
    ),
  },
});

export function registerRoleRoutes(app: App, deps: Deps) {
  app.openapi(guarded(deps, createRoleRoute, "roles:create"), async (c) => {
    return c.json(await createRole(deps.sql, c.req.valid("param").project_id, c.req.valid("json")), 201);
  });
  app.openapi(guarded(deps, updateRoleRoute, "roles:update"), async (c) => {
    const { project_id, role_id } = c.req.valid("param");
    return c.json(await updateRole(deps.sql, project_id, role_id, c.req.valid("json")), 200);
  });
  app.openapi(guarded(deps, listRolesRoute, "roles:read"), async (c) => {
    return c.json(await listRoles(deps.sql, c.req.valid("param").project_id, c.req.valid("query")), 200);
  });
}
