/** Users: `/api/v1/projects/{project_id}/users`, the lookup by external id, and the current user. */
import { updateCurrentUser } from "../../../domain/signin/current_user.ts";
import {
  createUser,
  deleteUser,
  getCurrentUser,
  getExternalUser,
  getUser,
  listUsers,
  updateUser,
  userListRead,
} from "../../../domain/accounts/users.ts";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import {
  CreateUserRequest,
  CurrentUser,
  ExternalUserParams,
  ExternalUserQuery,
  UpdateCurrentUserRequest,
  UpdateUserRequest,
  User,
  UserIdParam,
  UserListQuery,
} from "../../../openapi/users.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";
import { linkSettings, mfaSettings } from "../../settings.ts";

export const createUserRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/users",
  operationId: "createUser",
  tags: ["Users"],
  summary: "Create a user",
  permission: "users:create",
  description:
    "Either fully managed (`email` with `password`, or `send_invitation: true` to mail them a link " +
    "to choose one; logs in on the login page) or identified by " +
    "`external_user_id` (supplied by the calling system). A `role_id` that is an organization role is 400 " +
    "`invalid_params` (members hold those, in their organization). A `role_id` whose permissions the caller " +
    "does not all hold is refused with 403 `insufficient_permission`, naming the codes.",
  request: { params: ProjectIdParam, body: jsonBody(CreateUserRequest) },
  responses: { 201: jsonResponse(User, "The user") },
  errors: ["role_not_found", "user_external_id_already_used", "user_email_already_used"],
});

export const updateUserRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/users/{user_id}",
  operationId: "updateUser",
  tags: ["Users"],
  summary: "Update a user",
  permission: "users:update",
  description: "`external_user_id` is required when `email` is not provided. A changed role applies on the " +
    "user's next request; an organization role is 400 `invalid_params`. Changing a user's password, email, " +
    "external id, active state or role needs every permission the user holds (the caller cannot act on users above it), and a new role's permissions must " +
    "all be held by the caller: 403 `insufficient_permission` otherwise. The display name and avatar change " +
    "freely. The system project keeps an operator: deactivating, or giving a role short of every system " +
    "permission to, its last active user whose role holds them all is refused with 409 `last_operator`.",
  request: { params: UserIdParam, body: jsonBody(UpdateUserRequest) },
  responses: { 200: jsonResponse(User, "The updated user") },
  errors: [
    "role_not_found",
    "user_external_id_already_used",
    "user_email_already_used",
    "user_not_found",
    "last_operator",
  ],
});

export const listUsersRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users",
  operationId: "listUsers",
  tags: ["Users"],
  summary: "List users",
  permission: "users:read",
  description: "`search` matches the display name and email.",
  request: { params: ProjectIdParam, query: UserListQuery },
  responses: { 200: jsonResponse(listOf(User, "UserList"), "A page of users") },
  reads: ({ param, query }) => userListRead(param.project_id as string, query as UserListQuery),
});

export const getExternalUserRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/external/{external_user_id}",
  operationId: "getExternalUser",
  tags: ["Users"],
  summary: "Get a user by external id",
  permission: "users:read",
  description: "With `include_permissions=true` the answer lists the permissions the user holds through " +
    "their role, evaluated now.",
  request: { params: ExternalUserParams, query: ExternalUserQuery },
  responses: { 200: jsonResponse(User, "The user") },
  errors: ["user_not_found"],
});

export const getCurrentUserRoute = guardedRoute({
  method: "get",
  path: "/api/v1/users/current",
  operationId: "getCurrentUser",
  tags: ["Users"],
  summary: "The user the token belongs to",
  permission: null,
  description: "A client-credentials token has no user: `user_not_found`.",
  responses: { 200: jsonResponse(CurrentUser, "The user's profile and permissions") },
  errors: ["user_not_found"],
});

export const updateCurrentUserRoute = guardedRoute({
  method: "put",
  path: "/api/v1/users/current",
  operationId: "updateCurrentUser",
  tags: ["Users"],
  summary: "Update the user the token belongs to",
  permission: null,
  description:
    "A user's token (from the login). `display_name` and `email` are required; `avatar_url` omitted keeps it and " +
    'null or "" removes it; `password` empty or omitted keeps it. A new `password` or another `email` needs ' +
    "fresh proof: `current_password` when the user has a password (missing or wrong: 400 `invalid_params` on " +
    "it, wrong attempts throttled like logins, 429); for a user without one, `code` (the current code of " +
    "their authenticator or a recovery code), else 403 `reauthentication_required`: a token alone never " +
    "takes the account over. A new password mails the user a notice.",
  request: { body: jsonBody(UpdateCurrentUserRequest) },
  responses: { 200: jsonResponse(CurrentUser, "The updated profile") },
  errors: [
    "invalid_params",
    "reauthentication_required",
    "user_not_found",
    "user_email_already_used",
    "too_many_requests",
  ],
});

export const getUserRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/{user_id}",
  operationId: "getUser",
  tags: ["Users"],
  summary: "Get a user",
  permission: "users:read",
  description: "The user as the list shows them; with `include_permissions=true` also the permissions they " +
    "hold through their role, evaluated now. An unknown id, or another project's, is `user_not_found`.",
  request: { params: UserIdParam, query: ExternalUserQuery },
  responses: { 200: jsonResponse(User, "The user") },
  errors: ["user_not_found"],
});

export const deleteUserRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/users/{user_id}",
  operationId: "deleteUser",
  tags: ["Users"],
  summary: "Delete a user",
  permission: "users:delete",
  description:
    "Their login and single sign-on sessions end, their tokens are refused from the next request " +
    "on, and their email and external id can be used again. The caller must cover the user's permissions " +
    "(403 `insufficient_permission` otherwise) and cannot delete itself. One transaction with its " +
    "`user.deleted` audit event (the user's last state) and one `grant.deleted` per grant on objects it ends " +
    "(`details.cause`); answers 204. The system project's last active user whose role holds every system " +
    "permission cannot be deleted: 409 `last_operator`.",
  request: { params: UserIdParam },
  responses: { 204: { description: "Deleted" } },
  errors: ["user_not_found", "last_operator"],
});

export function registerUserRoutes(app: App) {
  app.openapi(getUserRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    const { include_permissions } = c.req.valid("query");
    return c.json(await getUser(c.get("deps").sql, project_id, user_id, include_permissions ?? false), 200);
  });
  app.openapi(deleteUserRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    await deleteUser(c.get("deps").sql, c.get("principal"), project_id, user_id);
    return c.body(null, 204) as never;
  });
  app.openapi(getCurrentUserRoute, async (c) => {
    return c.json(await getCurrentUser(c.get("deps").sql, c.get("principal")), 200);
  });
  app.openapi(updateCurrentUserRoute, async (c) => {
    return c.json(
      await updateCurrentUser(c.get("deps").sql, c.get("principal"), c.req.valid("json"), {
        mfa: mfaSettings(c),
        mail: linkSettings(c),
      }),
      200,
    );
  });
  app.openapi(createUserRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return c.json(
      await createUser(
        c.get("deps").sql,
        c.get("principal"),
        project_id,
        c.req.valid("json"),
        linkSettings(c),
      ),
      201,
    );
  });
  app.openapi(updateUserRoute, async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    return c.json(
      await updateUser(
        c.get("deps").sql,
        c.get("principal"),
        project_id,
        user_id,
        c.req.valid("json"),
        linkSettings(c),
      ),
      200,
    );
  });
  app.openapi(listUsersRoute, async (c) => {
    return jsonText(
      c,
      await listUsers(
        c.get("deps").sql,
        c.req.valid("param").project_id,
        c.req.valid("query"),
        c.get("attached"),
      ),
      200,
    );
  });
  app.openapi(getExternalUserRoute, async (c) => {
    const { project_id, external_user_id } = c.req.valid("param");
    const include = c.req.valid("query").include_permissions ?? false;
    return c.json(await getExternalUser(c.get("deps").sql, project_id, external_user_id, include), 200);
  });
}
