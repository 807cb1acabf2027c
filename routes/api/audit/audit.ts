/** The audit trail: `/api/v1/projects/{project_id}/audit-events`, as pages or as an NDJSON export. */
import { exportEvents, listEvents } from "../../../domain/audit/audit.ts";
import { AuditEvent, AuditEventPage, AuditQuery } from "../../../openapi/audit.ts";
import { ProjectIdParam } from "../../../openapi/fields.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";

export const listAuditEventsRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/audit-events",
  operationId: "listAuditEvents",
  tags: ["Audit"],
  summary: "Read the audit trail",
  permission: "audit:read",
  description: "Every change and security fact of the project, newest first. Filters: `type` (exact, or a " +
    "prefix such as `role.*`), `actor_id`, `target_id`, `since` (inclusive), `until` (exclusive). Pages by " +
    "cursor: pass `next_cursor` as `cursor`; pages stay stable while new events arrive; a cursor works only with " +
    "the project and filters that made it. With `Accept: application/x-ndjson` the answer streams every " +
    "matching event, one JSON object per line, read in bounded batches (an export for a SIEM). Events are kept " +
    "`AUDIT_RETENTION_DAYS` days.",
  request: { params: ProjectIdParam, query: AuditQuery },
  responses: {
    200: {
      description: "A page of events, or with `Accept: application/x-ndjson` every matching event",
      content: {
        "application/json": { schema: AuditEventPage },
        "application/x-ndjson": { schema: AuditEvent },
      },
    },
  },
});

export function registerAuditRoutes(app: App) {
  app.openapi(listAuditEventsRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const q = c.req.valid("query");
    const sql = c.get("deps").sql;
    if (/application\/x-ndjson/i.test(c.req.header("accept") ?? "")) {
      const events = exportEvents(sql, project_id, q);
      const encoder = new TextEncoder();
      // Validates the cursor before the answer starts: a bad one is still a 400.
      const first = await events.next();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          if (!first.done) controller.enqueue(encoder.encode(JSON.stringify(first.value) + "\n"));
          else controller.close();
        },
        async pull(controller) {
          const next = await events.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(JSON.stringify(next.value) + "\n"));
        },
        async cancel() {
          await events.return(undefined);
        },
      });
      c.header("Content-Type", "application/x-ndjson; charset=utf-8");
      return c.body(body, 200) as never;
    }
    return c.json(await listEvents(sql, project_id, q), 200);
  });
}
