/** Projects: create and list (system project), read and update (the project itself or the system project). */
import { createRoute, z } from "@hono/zod-openapi";
import {
  createProject,
  getProject,
  listProjects,
  redirectUriIssue,
  updateProject,
} from "../domain/projects.ts";
import { type App, type Deps, guarded } from "./app.ts";
import {
  booleanFilter,
  clearableText,
  errorResponses,
  jsonBody,
  jsonResponse,
  listQuery,
  Name,
  Pagination,
  ProjectIdParam,
  Timestamps,
} from "../openapi/schemas.ts";

const RedirectUri = z.string().max(2000).superRefine((uri, ctx) => {
  const issue = redirectUriIssue(uri);
  if (issue) ctx.addIssue({ code: "custom", message: issue });
}).openapi({ example: "https://app.example.com/callback" });

const RedirectUris = z.array(RedirectUri).max(50).refine(
  (a) => new Set(a).size === a.length,
  "must not repeat a URI",
)
  .openapi({
    description:
      "Registered redirect URIs, matched byte for byte: `https`, or `http` on localhost, 127.0.0.1 " +
      "and [::1]; no fragment. At most 50.",
  });

const Project = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  redirect_uris: z.array(z.string()),
  is_active: z.boolean(),
  is_system: z.boolean().openapi({
    description: "True for the system project, which administers the others",
  }),
  ...Timestamps,
}).openapi("Project");

const CreatedProject = Project.extend({
  admin_client: z.object({
    client_id: z.string(),
    client_secret: z.string().openapi({ description: "Shown only here; store it now." }),
  }).openapi({ description: "The project's admin client, granted every default permission of the project" }),
}).openapi("CreatedProject");

const CreateProjectBody = z.object({
  name: Name,
  description: clearableText(200),
  redirect_uris: RedirectUris.optional(),
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
}).openapi("CreateProjectRequest");

const UpdateProjectBody = z.object({
  name: Name,
  description: clearableText(200).openapi({ description: 'Omitted keeps it; null or "" clears it' }),
  redirect_uris: RedirectUris.optional().openapi({
    description: "Omitted keeps them; an array replaces them",
  }),
  is_active: z.boolean().optional().openapi({
    description:
      "Omitted keeps it. Only a system-project token may change it; the system project stays active.",
  }),
}).openapi("UpdateProjectRequest");

const ProjectList = z.object({ data: z.array(Project), pagination: Pagination }).openapi("ProjectList");

export const createProjectRoute = createRoute({
  method: "post",
  path: "/api/v1/projects",
  operationId: "createProject",
  tags: ["Projects"],
  summary: "Create a project",
  description: "Needs `projects:create` on a system-project token. Creates the project with its default " +
    "resources (`resources`, `roles`, `users`, `clients`, `projects`) and its admin client, whose secret the " +
    "answer carries once.",
  security: [{ bearerAuth: [] }],
  request: { body: jsonBody(CreateProjectBody) },
  responses: {
    201: jsonResponse(CreatedProject, "The project, with its admin client's credentials"),
    ...errorResponses("invalid_params", "invalid_authorization_token", "insufficient_permission"),
  },
});

export const listProjectsRoute = createRoute({
  method: "get",
  path: "/api/v1/projects",
  operationId: "listProjects",
  tags: ["Projects"],
  summary: "List projects",
  description: "Needs `projects:read` on a system-project token. `search` matches name and description.",
  security: [{ bearerAuth: [] }],
  request: {
    query: listQuery(["name", "created_at", "updated_at"] as const).extend({
      is_active: booleanFilter("Only active (true) or inactive (false) projects"),
    }),
  },
  responses: {
    200: jsonResponse(ProjectList, "A page of projects"),
    ...errorResponses("invalid_params", "invalid_authorization_token", "insufficient_permission"),
  },
});

export const getProjectRoute = createRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}",
  operationId: "getProject",
  tags: ["Projects"],
  summary: "Get a project",
  description: "Needs `projects:read`, on a token of this project or of the system project.",
  security: [{ bearerAuth: [] }],
  request: { params: ProjectIdParam },
  responses: {
    200: jsonResponse(Project, "The project"),
    ...errorResponses("invalid_authorization_token", "insufficient_permission", "project_not_found"),
  },
});

export const updateProjectRoute = createRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}",
  operationId: "updateProject",
  tags: ["Projects"],
  summary: "Update a project",
  description: "Needs `projects:update`, on a token of this project or of the system project. Deactivating " +
    "a project (system-project token only) refuses every token of it on the next request.",
  security: [{ bearerAuth: [] }],
  request: { params: ProjectIdParam, body: jsonBody(UpdateProjectBody) },
  responses: {
    200: jsonResponse(Project, "The updated project"),
    ...errorResponses(
      "invalid_params",
      "invalid_authorization_token",
      "insufficient_permission",
      "project_not_found",
    ),
  },
});

export function registerProjectRoutes(app: App, deps: Deps) {
  app.openapi(
    guarded(deps, createProjectRoute, "projects:create", "system"),
    async (c) => c.json(await createProject(deps.sql, c.req.valid("json")), 201),
  );
  app.openapi(
    guarded(deps, listProjectsRoute, "projects:read", "system"),
    async (c) => c.json(await listProjects(deps.sql, c.req.valid("query")), 200),
  );
  app.openapi(
    guarded(deps, getProjectRoute, "projects:read", "own-or-system"),
    async (c) => c.json(await getProject(deps.sql, c.req.valid("param").project_id), 200),
  );
  app.openapi(
    guarded(deps, updateProjectRoute, "projects:update", "own-or-system"),
    async (c) =>
      c.json(
        await updateProject(
          deps.sql,
          c.get("principal"),
          c.req.valid("param").project_id,
          c.req.valid("json"),
        ),
        200,
      ),
  );
}
