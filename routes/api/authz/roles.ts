/** Roles: `/api/v1/projects/{project_id}/roles`. */
import {
  createRole,
  deleteRole,
  getRole,
  listRoles,
  roleListRead,
  updateRole,
} from "../../../domain/authz/roles.ts";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import {
  CreateRoleRequest,
  DeleteRoleQuery,
  Role,
  RoleIdParam,
  RoleListQuery,
  UpdateRoleRequest,
} from "../../../openapi/roles.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";

export const createRoleRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/roles",
  operationId: "createRole",
  tags: ["Roles"],
  summary: "Create a role",
  permission: "roles:create",
  description: "`scope` (default `project`) is fixed at creation: an organization role is held by " +
    "organizations' members, never as a user's role, a default role or on an object grant. The caller grants " +
    "only permissions it holds itself (the project's admin client holds them all): otherwise 403 " +
    "`insufficient_permission`, `details` naming the codes it lacks, and nothing is written. Unknown ids are checked first (`some_permissions_not_found`).",
  request: { params: ProjectIdParam, body: jsonBody(CreateRoleRequest) },
  responses: { 201: jsonResponse(Role, "The role") },
  errors: ["some_permissions_not_found", "role_code_already_used"],
});

export const updateRoleRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/roles/{role_id}",
  operationId: "updateRole",
  tags: ["Roles"],
  summary: "Update a role",
  permission: "roles:update",
  description: "A change of permissions applies to every user (or member) with the role on their next " +
    "request; `scope` cannot change (sending it is 400 `invalid_params`). Every " +
    "permission added must be held by the caller (403 `insufficient_permission` otherwise, naming the " +
    "codes); permissions the role keeps or loses need not be. In the system project, taking from a role " +
    "a permission that leaves no active user holding every system permission is refused with 409 " +
    "`last_operator`.",
  request: { params: RoleIdParam, body: jsonBody(UpdateRoleRequest) },
  responses: { 200: jsonResponse(Role, "The updated role") },
  errors: ["role_not_found", "some_permissions_not_found", "role_code_already_used", "last_operator"],
});

export const listRolesRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/roles",
  operationId: "listRoles",
  tags: ["Roles"],
  summary: "List roles",
  permission: "roles:read",
  description: "`search` matches the code, name and description; `scope` keeps the project's or the " +
    "organization roles.",
  request: { params: ProjectIdParam, query: RoleListQuery },
  responses: { 200: jsonResponse(listOf(Role, "RoleList"), "A page of roles") },
  reads: ({ param, query }) => roleListRead(param.project_id as string, query as RoleListQuery),
});

export const getRoleRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/roles/{role_id}",
  operationId: "getRole",
  tags: ["Roles"],
  summary: "Get a role",
  permission: "roles:read",
  description: "The role as the list shows it; an unknown id, or another project's, is `role_not_found`.",
  request: { params: RoleIdParam },
  responses: { 200: jsonResponse(Role, "The role") },
  errors: ["role_not_found"],
});

export const deleteRoleRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/roles/{role_id}",
  operationId: "deleteRole",
  tags: ["Roles"],
  summary: "Delete a role",
  permission: "roles:delete",
  description: "Its users would lose what it grants, so the caller must cover the role's permissions (403 " +
    "`insufficient_permission` otherwise). A role that users still have is refused with 409 `role_in_use` " +
    "(`details` says how many) unless `reassign_role_id` names another role of the project, which the caller " +
    "must be able to give: its users move to that role in the same transaction (an unknown one is " +
    "`role_not_found`, an organization role 400 `invalid_params`). Members holding an organization role lose " +
    "it. Its grants on objects end, each with a `grant.deleted` event (`details.cause`). " +
    "One transaction with its `role.deleted` audit event; answers 204. In the system project, moving the " +
    "last active operator (a user whose role holds every system permission) to a role short of them is " +
    "refused with 409 `last_operator`.",
  request: { params: RoleIdParam, query: DeleteRoleQuery },
  responses: { 204: { description: "Deleted" } },
  errors: ["role_not_found", "role_in_use", "last_operator"],
});

export function registerRoleRoutes(app: App) {
  app.openapi(getRoleRoute, async (c) => {
    const { project_id, role_id } = c.req.valid("param");
    return c.json(await getRole(c.get("deps").sql, project_id, role_id), 200);
  });
  app.openapi(deleteRoleRoute, async (c) => {
    const { project_id, role_id } = c.req.valid("param");
    const { reassign_role_id } = c.req.valid("query");
    await deleteRole(c.get("deps").sql, c.get("principal"), project_id, role_id, reassign_role_id);
    return c.body(null, 204) as never;
  });
  app.openapi(createRoleRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return c.json(
      await createRole(c.get("deps").sql, c.get("principal"), project_id, c.req.valid("json")),
      201,
    );
  });
  app.openapi(updateRoleRoute, async (c) => {
    const { project_id, role_id } = c.req.valid("param");
    return c.json(
      await updateRole(c.get("deps").sql, c.get("principal"), project_id, role_id, c.req.valid("json")),
      200,
    );
  });
  app.openapi(listRolesRoute, async (c) => {
    return jsonText(
      c,
      await listRoles(
        c.get("deps").sql,
        c.req.valid("param").project_id,
        c.req.valid("query"),
        c.get("attached"),
      ),
      200,
    );
  });
}
