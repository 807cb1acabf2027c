/** Users: `/api/v1/projects/{project_id}/users` and the lookup by external id. */
import { createRoute, z } from "@hono/zod-openapi";
import {
  createUser,
  getCurrentUser,
  getExternalUser,
  listUsers,
  updateCurrentUser,
  updateUser,
} from "../domain/users.ts";
import { type App, type Deps, guarded } from "./app.ts";
import {
  booleanFilter,
  errorResponses,
  Id,
  jsonBody,
  jsonResponse,
  listOf,
  listQuery,
  Name,
  ProjectIdParam,
  Timestamps,
} from "../openapi/schemas.ts";

const User = z.object({
  id: z.string(),
  project_id: z.string(),
  display_name: z.string(),
  avatar_url: z.string().nullable(),
  external_user_id: z.string().nullable(),
  email: z.string().nullable().openapi({ description: "Stored trimmed and lower-cased" }),
  role_id: z.string().nullable(),
  is_active: z.boolean(),
  permissions: z.array(z.string()).optional().openapi({
    description:
      "Only with `include_permissions=true`: the sorted `resource:permission` codes of the user's role",
    example: ["orders:read", "orders:refund"],
  }),
  ...Timestamps,
}).openapi("User");

const isHttpUrl = (v: string) => {
  try {
    return ["http:", "https:"].includes(new URL(v).protocol);
  } catch {
    return false;
  }
};

/** "" means absent on create and "remove" on update; null likewise. */
const AvatarUrl = z.string().max(2048, "at most 2048 characters")
  .refine((v) => v === "" || isHttpUrl(v), "must be an http or https URL").nullable().optional()
  .openapi({ description: 'URL of an image. On update: omitted keeps it; null or "" removes it.' });
const ExternalUserId = z.string().max(100, "at most 100 characters")
  .refine((v) => v === "" || v.trim() !== "", "must not be blank").nullable().optional().openapi({
    description: "The calling system's id for the user; unique in the project (exact match). Required when " +
      'email is absent. On update: omitted keeps it; null or "" removes it.',
  });
const Email = z.string().trim().max(100, "at most 100 characters")
  .refine((v) => v === "" || z.regexes.email.test(v), "must be a valid email").nullable().optional().openapi({
    description:
      'Unique in the project, case-insensitively. On update: omitted keeps it; null or "" removes it.',
  });
const RoleId = z.string().max(100).nullable().optional().openapi({
  description: 'A role of this project. On update: omitted keeps it; null or "" removes it.',
});

const CreateUserBody = z.object({
  display_name: Name,
  avatar_url: AvatarUrl,
  external_user_id: ExternalUserId,
  email: Email,
  password: z.string().min(8, "at least 8 characters").max(1024, "at most 1024 characters").nullable()
    .optional()
    .openapi({
      description: "At least 8 characters; required when email is given. Stored only as an argon2id hash.",
    }),
  role_id: RoleId,
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
}).superRefine((u, ctx) => {
  if (!u.email && !u.external_user_id) {
    ctx.addIssue({ code: "custom", path: ["external_user_id"], message: "required when email is absent" });
  }
  if (u.email && !u.password) {
    ctx.addIssue({ code: "custom", path: ["password"], message: "required when email is given" });
  }
}).openapi("CreateUserRequest");

const UpdateUserBody = z.object({
  display_name: Name,
  is_active: z.boolean().openapi({
    description: "false deactivates the user and ends their sessions at once",
  }),
  avatar_url: AvatarUrl,
  external_user_id: ExternalUserId,
  email: Email,
  password: z.string().max(1024, "at most 1024 characters")
    .refine((v) => v === "" || v.length >= 8, "at least 8 characters").nullable().optional()
    .openapi({
      description: "Empty or omitted keeps the current password; a new one ends the user's sessions.",
    }),
  role_id: RoleId,
}).superRefine((u, ctx) => {
  if (!u.email && !u.external_user_id) {
    ctx.addIssue({
      code: "custom",
      path: ["external_user_id"],
      message: "required when email is not provided",
    });
  }
}).openapi("UpdateUserRequest");

const UserIdParam = ProjectIdParam.extend({
  user_id: Id.openapi({ param: { name: "user_id", in: "path" } }),
});

const userErrors = [
  "invalid_params",
  "invalid_authorization_token",
  "insufficient_permission",
  "project_not_found",
  "role_not_found",
  "user_external_id_already_used",
  "user_email_already_used",
] as const;

export const createUserRoute = createRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/users",
  operationId: "createUser",
  tags: ["Users"],
  summary: "Create a user",
  description:
    "Needs `users:create`. Either fully managed (`email` with `password`, logs in on the login page) " +
    "or identified by `external_user_id` (supplied by the calling system).",
  security: [{ bearerAuth: [] }],
  request: { params: ProjectIdParam, body: jsonBody(CreateUserBody) },
  responses: { 201: jsonResponse(User, "The user"), ...errorResponses(...userErrors) },
});

export const updateUserRoute = createRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/users/{user_id}",
  operationId: "updateUser",
  tags: ["Users"],
  summary: "Update a user",
  description:
    "Needs `users:update`. `external_user_id` is required when `email` is not provided. A changed " +
    "role applies on the user's next request.",
  security: [{ bearerAuth: [] }],
  request: { params: UserIdParam, body: jsonBody(UpdateUserBody) },
  responses: {
    200: jsonResponse(User, "The updated user"),
    ...errorResponses(...userErrors, "user_not_found"),
  },
});

export const listUsersRoute = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users",
  operationId: "listUsers",
  tags: ["Users"],
  summary: "List users",
  description: "Needs `users:read`. `search` matches the display name and email.",
  security: [{ bearerAuth: [] }],
  request: {
    params: ProjectIdParam,
    query: listQuery(
      ["display_name", "email", "external_user_id", "is_active", "created_at", "updated_at"] as const,
    ).extend({
      is_active: booleanFilter("Only active (true) or inactive (false) users"),
      role_id: z.string().max(100).optional().openapi({ description: "Only users with this role" }),
    }),
  },
  responses: {
    200: jsonResponse(listOf(User, "UserList"), "A page of users"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
    ),
  },
});

export const getExternalUserRoute = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/external/{external_user_id}",
  operationId: "getExternalUser",
  tags: ["Users"],
  summary: "Get a user by external id",
  description:
    "Needs `users:read`. With `include_permissions=true` the answer lists the permissions the user " +
    "holds through their role, evaluated now.",
  security: [{ bearerAuth: [] }],
  request: {
    params: ProjectIdParam.extend({
      // Any string: one that no user can have (too long, say) is simply not found.
      external_user_id: z.string().min(1).max(4096).openapi({
        param: { name: "external_user_id", in: "path" },
      }),
    }),
    query: z.object({ include_permissions: booleanFilter("Include `permissions` (default false)") }),
  },
  responses: {
    200: jsonResponse(User, "The user"),
    ...errorResponses(
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
      "user_not_found",
    ),
  },
});

const CurrentUser = User.extend({
  permissions: z.array(z.string()).openapi({
    description: "The user's `resource:permission` codes, evaluated now",
  }),
}).openapi("CurrentUser");

const UpdateCurrentUserBody = z.object({
  display_name: Name,
  email: z.string().trim().max(100, "at most 100 characters").refine(
    (v) => z.regexes.email.test(v),
    "must be a valid email",
  )
    .openapi({ description: "Required; unique in the project, case-insensitively" }),
  avatar_url: AvatarUrl,
  password: z.string().max(1024, "at most 1024 characters")
    .refine((v) => v === "" || v.length >= 8, "at least 8 characters").nullable().optional()
    .openapi({
      description: "Empty or omitted keeps the current password; a new one ends the user's other sessions.",
    }),
}).openapi("UpdateCurrentUserRequest");

export const getCurrentUserRoute = createRoute({
  method: "get",
  path: "/api/v1/users/current",
  operationId: "getCurrentUser",
  tags: ["Users"],
  summary: "The user the token belongs to",
  description: "Needs only a valid user token (from the login). A client-credentials token has no user: " +
    "`user_not_found`.",
  security: [{ bearerAuth: [] }],
  responses: {
    200: jsonResponse(CurrentUser, "The user's profile and permissions"),
    ...errorResponses("invalid_authorization_token", "user_not_found"),
  },
});

export const updateCurrentUserRoute = createRoute({
  method: "put",
  path: "/api/v1/users/current",
  operationId: "updateCurrentUser",
  tags: ["Users"],
  summary: "Update the user the token belongs to",
  description:
    "Needs only a valid user token. `display_name` and `email` are required; `avatar_url` omitted keeps " +
    'it and null or "" removes it; `password` empty or omitted keeps it.',
  security: [{ bearerAuth: [] }],
  request: { body: jsonBody(UpdateCurrentUserBody) },
  responses: {
    200: jsonResponse(CurrentUser, "The updated profile"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "user_not_found",
      "user_email_already_used",
    ),
  },
});

export function registerUserRoutes(app: App, deps: Deps) {
  app.openapi(guarded(deps, getCurrentUserRoute, null), async (c) => {
    return c.json(await getCurrentUser(deps.sql, c.get("principal")), 200);
  });
  app.openapi(guarded(deps, updateCurrentUserRoute, null), async (c) => {
    return c.json(await updateCurrentUser(deps.sql, c.get("principal"), c.req.valid("json")), 200);
  });
  app.openapi(guarded(deps, createUserRoute, "users:create"), async (c) => {
    return c.json(await createUser(deps.sql, c.req.valid("param").project_id, c.req.valid("json")), 201);
  });
  app.openapi(guarded(deps, updateUserRoute, "users:update"), async (c) => {
    const { project_id, user_id } = c.req.valid("param");
    return c.json(await updateUser(deps.sql, project_id, user_id, c.req.valid("json")), 200);
  });
  app.openapi(guarded(deps, listUsersRoute, "users:read"), async (c) => {
    return c.json(await listUsers(deps.sql, c.req.valid("param").project_id, c.req.valid("query")), 200);
  });
  app.openapi(guarded(deps, getExternalUserRoute, "users:read"), async (c) => {
    const { project_id, external_user_id } = c.req.valid("param");
    const include = c.req.valid("query").include_permissions ?? false;
    return c.json(await getExternalUser(deps.sql, project_id, external_user_id, include), 200);
  });
}
