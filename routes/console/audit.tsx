/**
 * The console's page of a project's audit trail: the API's filters (dates as days, or exact instants) and cursor
 * paging; actors and targets by name where the API tells them (each looked up once per page), times in the
 * reader's zone (console.js; UTC without script).
 */
import type { AuditEvent } from "../../openapi/audit.ts";
import type { App } from "../env.ts";
import { Alert, type ApiAnswer, CopyId, Field, Layout, type Problem, problemOf, Time } from "./layout.tsx";
import { ApiRefusal, type Console, html, signedIn } from "./session.ts";
import { projectApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";

const FILTERS = ["type", "actor_id", "target_id", "since", "until"] as const;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A filter's value for the API: a day (from the date picker) is its first instant in UTC; `until` takes the whole day. */
function instantOf(name: "since" | "until", value: string): string {
  if (!DAY.test(value)) return value;
  const start = new Date(`${value}T00:00:00Z`);
  if (Number.isNaN(start.getTime())) return value;
  if (name === "until") start.setUTCDate(start.getUTCDate() + 1);
  return start.toISOString().replace(".000Z", "Z");
}

/** The kinds of record an event may name, the API's area and the console's page of each. */
const AREAS: Record<string, string> = {
  user: "users",
  client: "clients",
  role: "roles",
  resource: "resources",
  webhook: "webhooks",
  organization: "organizations",
};

type Named = { name: string; href: string | null };

/**
 * Looks up the names of the records the events name, once each: in the page's project, then (an operator's own
 * users and clients act on every project) in the signed-in user's project. Whatever is not found, or not
 * readable, stays an id.
 */
async function namesOf(k: Console, projectId: string, events: AuditEvent[]): Promise<Map<string, Named>> {
  const wanted = new Map<string, { type: string; id: string }>();
  for (const e of events) {
    for (const ref of [e.actor, e.target]) {
      if (ref?.id && AREAS[ref.type]) wanted.set(`${ref.type}:${ref.id}`, { type: ref.type, id: ref.id });
    }
  }
  const names = new Map<string, Named>();
  const lookUp = async (project: string, type: string, id: string): Promise<Named | null> => {
    const area = AREAS[type];
    const res = await k.api<{ name?: string; display_name?: string; url?: string; email?: string | null }>(
      "GET",
      `${projectApi(project, area)}/${encodeURIComponent(id)}`,
    );
    if (!res.ok) return null;
    const b = res.body;
    const name = b.display_name ?? b.name ?? b.url ?? id;
    return { name, href: `${projectPath(project)}/${area}/${encodeURIComponent(id)}` };
  };
  await Promise.all([...wanted].map(async ([key, { type, id }]) => {
    let found = await lookUp(projectId, type, id);
    if (!found && k.session.projectId !== projectId && (type === "user" || type === "client")) {
      found = await lookUp(k.session.projectId, type, id);
    }
    if (found) names.set(key, found);
  }));
  return names;
}

/** An actor or target: its name linked to its page when known, else its kind and id. */
function Ref(p: { ref: { type: string; id: string | null } | null; names: Map<string, Named> }) {
  if (!p.ref) return <span class="hint">none</span>;
  const known = p.ref.id ? p.names.get(`${p.ref.type}:${p.ref.id}`) : undefined;
  if (known) {
    return (
      <>
        {known.href ? <a href={known.href}>{known.name}</a> : known.name}
        <span class="sub">{p.ref.type}</span>
      </>
    );
  }
  return (
    <>
      {p.ref.type}
      {p.ref.id && (
        <span class="sub">
          <CopyId id={p.ref.id} label={`${p.ref.type} id`} />
        </span>
      )}
    </>
  );
}

/** The filters as given (`shown`) and as the API takes them (`q`: days as instants, 25 a page). */
function filtersOf(url: URL) {
  const shown = new URLSearchParams();
  const q = new URLSearchParams();
  for (const f of [...FILTERS, "cursor"]) {
    const v = url.searchParams.get(f)?.trim();
    if (!v) continue;
    shown.set(f, v);
    q.set(f, f === "since" || f === "until" ? instantOf(f, v) : v);
  }
  q.set("limit", "25");
  return { shown, q };
}

const dateType = (v: string | null) => !v || DAY.test(v) ? "date" : "text";

function DateFilters(p: { shown: URLSearchParams; problem: Problem | null }) {
  const { shown, problem } = p;
  return (
    <div class="toolbar">
      <div>
        <Field
          name="type"
          label="Event type"
          plain
          value={shown.get("type")}
          problem={problem}
          hint="e.g. client.deactivated, or role.*"
        />
      </div>
      <div>
        <Field
          name="since"
          label="Since"
          plain
          type={dateType(shown.get("since"))}
          value={shown.get("since")}
          problem={problem}
          hint="From the start of this day (UTC)"
        />
      </div>
      <div>
        <Field
          name="until"
          label="Until"
          plain
          type={dateType(shown.get("until"))}
          value={shown.get("until")}
          problem={problem}
          hint="To the end of this day (UTC)"
        />
      </div>
    </div>
  );
}

function FilterForm(p: { shown: URLSearchParams; problem: Problem | null; path: string }) {
  const { shown, problem } = p;
  return (
    <form method="get" role="search" class="card">
      <DateFilters shown={shown} problem={problem} />
      <details open={shown.get("actor_id") || shown.get("target_id") ? true : undefined}>
        <summary>Actor and target</summary>
        <Field name="actor_id" label="Actor id" plain value={shown.get("actor_id")} problem={problem} />
        <Field name="target_id" label="Target id" plain value={shown.get("target_id")} problem={problem} />
      </details>
      <button type="submit">Filter</button>
      {shown.size > 0 && (
        <a href={p.path} class="button secondary">
          Clear filters
        </a>
      )}
    </form>
  );
}

function EventRow(p: { e: AuditEvent; names: Map<string, Named> }) {
  const { e, names } = p;
  return (
    <tr>
      <td>
        <Time at={e.occurred_at} />
      </td>
      <td>
        <code>{e.type}</code>
      </td>
      <td>
        <Ref ref={e.actor} names={names} />
        {e.request?.ip && <span class="sub">from {e.request.ip}</span>}
      </td>
      <td class="wide">
        <Ref ref={e.target} names={names} />
        {e.changes && Object.keys(e.changes).length > 0 && (
          <span class="sub">changed: {Object.keys(e.changes).join(", ")}</span>
        )}
      </td>
    </tr>
  );
}

function EventsTable(p: { events: AuditEvent[]; names: Map<string, Named>; ok: boolean }) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="hint">Newest first; times in your time zone</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Actor</th>
            <th scope="col" class="wide">Target</th>
          </tr>
        </thead>
        <tbody>
          {p.events.map((e) => <EventRow key={e.id} e={e} names={p.names} />)}
        </tbody>
      </table>
      {p.ok && p.events.length === 0 && <p class="hint card">No events match.</p>}
    </div>
  );
}

type Events = ApiAnswer<{ data: AuditEvent[]; next_cursor: string | null }>;

type AuditProps = {
  nonce: string;
  k: Console;
  s: Scope;
  shown: URLSearchParams;
  res: Events;
  names: Map<string, Named>;
};

function AuditPage(p: AuditProps) {
  const { k, s, shown, res } = p;
  const problem = res.ok ? null : problemOf(res);
  const events = res.ok ? res.body.data : [];
  const next = new URLSearchParams(shown);
  if (res.ok && res.body.next_cursor) next.set("cursor", res.body.next_cursor);
  return (
    <Layout nonce={p.nonce} title="Audit trail" k={k} project={s.project} tab="audit" operator={s.operator}>
      <h1>Audit trail</h1>
      <Alert problem={problem} />
      <FilterForm shown={shown} problem={problem} path={new URL(k.c.req.url).pathname} />
      <EventsTable events={events} names={p.names} ok={res.ok} />
      {res.ok && res.body.next_cursor && (
        <nav class="pager" aria-label="Pages">
          <a href={`?${next}`} rel="next">Older events</a>
        </nav>
      )}
    </Layout>
  );
}

/** The project's audit trail, filtered, 25 events a page. */
async function auditPage(k: Console) {
  const { shown, q } = filtersOf(new URL(k.c.req.url));
  let s: Scope;
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
  } catch (err) {
    return refusedPage(k, err);
  }
  const res: Events = await k.api("GET", `${projectApi(s.project.id, "audit-events")}?${q}`);
  if (res.status === 403) return refusedPage(k, new ApiRefusal(res));
  const names = await namesOf(k, s.project.id, res.ok ? res.body.data : []);
  names.set(`project:${s.project.id}`, { name: s.project.name, href: projectPath(s.project.id) });
  return html(
    k.c,
    (nonce) => <AuditPage nonce={nonce} k={k} s={s} shown={shown} res={res} names={names} />,
    res.ok ? 200 : 400,
  );
}

export function registerAuditPage(app: App) {
  app.get("/console/projects/:pid/audit", signedIn(app, auditPage));
}
