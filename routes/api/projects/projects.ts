/** Projects: create and list (system project), read and update (the project itself or the system project). */
import { sourceOf } from "../../../domain/audit/audit.ts";
import { listDefaultResources } from "../../../domain/authz/defaults.ts";
import {
  createProject,
  getProject,
  listProjects,
  projectListRead,
  projectRead,
  updateProject,
} from "../../../domain/projects/projects.ts";
import { ProjectIdParam } from "../../../openapi/fields.ts";
import {
  CreatedProject,
  CreateProjectRequest,
  Project,
  ProjectList,
  ProjectListQuery,
  UpdateProjectRequest,
} from "../../../openapi/projects.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse, jsonText } from "../responses.ts";

export const createProjectRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects",
  operationId: "createProject",
  tags: ["Projects"],
  summary: "Create a project",
  permission: "projects:create",
  scope: "system",
  description: "Creates the project with its default resources and their permissions: " +
    `${listDefaultResources()}; and its admin client, which holds every one of those permissions and whose ` +
    "secret the answer carries once.",
  request: { body: jsonBody(CreateProjectRequest) },
  responses: { 201: jsonResponse(CreatedProject, "The project, with its admin client's credentials") },
});

export const listProjectsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects",
  operationId: "listProjects",
  tags: ["Projects"],
  summary: "List projects",
  permission: "projects:read",
  scope: "system",
  description: "`search` matches name and description.",
  request: { query: ProjectListQuery },
  responses: { 200: jsonResponse(ProjectList, "A page of projects") },
  reads: ({ query }) => projectListRead(query as ProjectListQuery),
});

export const getProjectRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}",
  operationId: "getProject",
  tags: ["Projects"],
  summary: "Get a project",
  permission: "projects:read",
  scope: "own-or-system",
  request: { params: ProjectIdParam },
  responses: { 200: jsonResponse(Project, "The project") },
  reads: ({ param }) => projectRead(param.project_id as string),
});

export const updateProjectRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}",
  operationId: "updateProject",
  tags: ["Projects"],
  summary: "Update a project",
  permission: "projects:update",
  scope: "own-or-system",
  description: "Deactivating a project (system-project token only) refuses every token of it on the next " +
    "request and ends its sessions. `redirect_uris` decide where every user's codes go: changing them needs a " +
    "caller that covers the whole project (its admin client, the system project's admin client, or a caller " +
    "holding every permission of the project), else 403 `insufficient_permission`; `projects:update` alone " +
    'renames and re-describes. `signup` opens the login page\'s "Create an account" (`"open"`, or ' +
    '`{"domains": [...]}` for addresses of those domains only) or closes it (`"off"`, the default); changing ' +
    "it needs the same caller as `redirect_uris`.",
  request: { params: ProjectIdParam, body: jsonBody(UpdateProjectRequest) },
  responses: { 200: jsonResponse(Project, "The updated project") },
  errors: ["invalid_params"],
});

export function registerProjectRoutes(app: App) {
  app.openapi(createProjectRoute, async (c) => {
    return c.json(
      await createProject(c.get("deps").sql, sourceOf(c.get("principal")), c.req.valid("json")),
      201,
    );
  });
  app.openapi(
    listProjectsRoute,
    async (c) =>
      jsonText(c, await listProjects(c.get("deps").sql, c.req.valid("query"), c.get("attached")), 200),
  );
  app.openapi(getProjectRoute, async (c) => {
    return c.json(
      await getProject(c.get("deps").sql, c.req.valid("param").project_id, c.get("attached")),
      200,
    );
  });
  app.openapi(updateProjectRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    return c.json(
      await updateProject(c.get("deps").sql, c.get("principal"), project_id, c.req.valid("json")),
      200,
    );
  });
}
