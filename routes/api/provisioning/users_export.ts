/** `GET /api/v1/projects/{project_id}/users/export`: every user of the project as JSON lines, streamed. */
import { exportUsers } from "../../../domain/provisioning/export_users.ts";
import { ProjectIdParam } from "../../../openapi/fields.ts";
import { ExportedUser, ExportUsersQuery } from "../../../openapi/users.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";

export const exportUsersRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/users/export",
  operationId: "exportUsers",
  tags: ["Users"],
  summary: "Export users",
  permission: "users:read",
  description:
    "Every user of the project, one JSON object a line (`application/x-ndjson`), oldest first, as the " +
    "admin API shows them (with `password_scheme`, never the hash). Streamed: the users are read a thousand at a " +
    "time as the client reads the answer, so any number of them can be exported; the pages are separate reads, " +
    "so a user created or deleted during the export may or may not be in it. With " +
    "`include_password_hashes=true` each user with a password also carries `password_hash`, in a form " +
    "`POST …/users/import` takes back (another project, another instance of the service): that needs " +
    "`users:export_secrets` as well (403 `insufficient_permission` naming it), and is recorded as a " +
    "`users.exported_with_secrets` audit event before the first line is sent.",
  request: { params: ProjectIdParam, query: ExportUsersQuery },
  responses: {
    200: {
      description: "The users, one JSON object a line",
      content: { "application/x-ndjson": { schema: ExportedUser } },
    },
  },
});

export function registerUserExportRoutes(app: App) {
  app.openapi(exportUsersRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const include = c.req.valid("query").include_password_hashes ?? false;
    const pages = await exportUsers(c.get("deps").sql, c.get("principal"), project_id, {
      includePasswordHashes: include,
    });
    const encoder = new TextEncoder();
    // One page waits at most (the default high-water mark of one chunk): memory stays a page's, whatever the size.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await pages.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
      async cancel() {
        await pages.return(undefined);
      },
    });
    c.header("Content-Type", "application/x-ndjson; charset=utf-8");
    return c.body(body, 200) as never;
  });
}
