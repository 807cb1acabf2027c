/** The console's page of a project's audit trail, with the API's filters and cursor paging. */
import type { AuditEvent } from "../../openapi/audit.ts";
import type { App } from "../env.ts";
import { Alert, Field, Layout } from "./layout.tsx";
import { ApiRefusal, html, signedIn } from "./session.ts";
import { projectApi, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { problemOf } from "./layout.tsx";

const FILTERS = ["type", "actor_id", "target_id", "since", "until"] as const;

export function registerAuditPage(app: App) {
  app.get(
    "/console/projects/:pid/audit",
    signedIn(app, async (k) => {
      const url = new URL(k.c.req.url);
      const q = new URLSearchParams();
      for (const f of [...FILTERS, "cursor"]) {
        const v = url.searchParams.get(f)?.trim();
        if (v) q.set(f, v);
      }
      q.set("limit", "25");
      let s: Scope;
      try {
        s = await scopeOf(k, k.c.req.param("pid")!);
      } catch (err) {
        return refusedPage(k, err);
      }
      const res = await k.api<{ data: AuditEvent[]; next_cursor: string | null }>(
        "GET",
        `${projectApi(s.project.id, "audit-events")}?${q}`,
      );
      if (res.status === 403) return refusedPage(k, new ApiRefusal(res));
      const problem = res.ok ? null : problemOf(res);
      const events = res.ok ? res.body.data : [];
      const next = new URLSearchParams(q);
      next.delete("limit");
      if (res.ok && res.body.next_cursor) next.set("cursor", res.body.next_cursor);
      return html(
        k.c,
        (nonce) => (
          <Layout
            nonce={nonce}
            title="Audit trail"
            k={k}
            project={s.project}
            tab="audit"
            operator={s.operator}
          >
            <h1>Audit trail</h1>
            <Alert problem={problem} />
            <form method="get" role="search">
              <Field
                name="type"
                label="Event type"
                value={q.get("type")}
                problem={problem}
                hint="e.g. client.deactivated, or a prefix such as role.*"
              />
              <Field name="actor_id" label="Actor id" value={q.get("actor_id")} problem={problem} />
              <Field name="target_id" label="Target id" value={q.get("target_id")} problem={problem} />
              <Field
                name="since"
                label="Since"
                value={q.get("since")}
                problem={problem}
                hint="RFC 3339, e.g. 2026-01-31T12:00:00Z"
              />
              <Field name="until" label="Until" value={q.get("until")} problem={problem} />
              <button type="submit">Filter</button>
            </form>
            <div class="table-wrap">
              <table>
                <caption class="hint">Newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Event</th>
                    <th scope="col">Actor</th>
                    <th scope="col" class="wide">Target</th>
                  </tr>
                </thead>
                <tbody>
                  {events.map((e) => (
                    <tr>
                      <td>{e.occurred_at.replace("T", " ").slice(0, 19)}</td>
                      <td>
                        <code>{e.type}</code>
                      </td>
                      <td>{e.actor.type}{e.actor.id ? ` ${e.actor.id}` : ""}</td>
                      <td class="wide">{e.target ? `${e.target.type} ${e.target.id ?? ""}` : ""}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {res.ok && res.body.next_cursor && (
              <nav class="pager" aria-label="Pages">
                <a href={`?${next}`} rel="next">Older events</a>
              </nav>
            )}
          </Layout>
        ),
        problem ? 400 : 200,
      );
    }),
  );
}
