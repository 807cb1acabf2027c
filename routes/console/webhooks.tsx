/**
 * Console pages of a project's webhooks, read-only: the subscriptions (where, which events, state) and each
 * one's recent deliveries. Creating and changing them is the admin API's (`/api/v1/projects/{id}/webhooks`).
 */
import type { Webhook, WebhookDelivery } from "../../openapi/webhooks.ts";
import type { App } from "../env.ts";
import {
  Active,
  Alert,
  type ApiAnswer,
  CopyId,
  Layout,
  listQuery,
  type Page,
  Pager,
  problemOf,
  Time,
} from "./layout.tsx";
import { areaApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { ApiRefusal, type Console, findIn, html, signedIn } from "./session.ts";

const api = (k: Console) => areaApi(k, "webhooks");

const ApiNote = () => (
  <p class="hint">
    Webhooks are created and changed through the admin API (<code>POST /api/v1/projects/…/webhooks</code>);
    this page shows them and their deliveries.
  </p>
);

const DELIVERY_BADGE: Record<WebhookDelivery["status"], string> = {
  pending: "badge",
  sending: "badge",
  delivered: "badge on",
  failed: "badge off",
};

function WebhooksTable(p: { base: string; hooks: Webhook[] }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col" class="wide">Events</th>
            <th scope="col">State</th>
            <th scope="col" class="wide">Created</th>
          </tr>
        </thead>
        <tbody>
          {p.hooks.map((w) => (
            <tr key={w.id}>
              <td>
                <a href={`${p.base}/${encodeURIComponent(w.id)}`}>{w.url}</a>
                {w.description && <span class="sub">{w.description}</span>}
              </td>
              <td class="wide">
                {w.event_types.map((t) => <code key={t}>{t}</code>)}
              </td>
              <td>
                <Active on={w.is_active} />
              </td>
              <td class="wide">
                <Time at={w.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The project's webhooks. */
async function listWebhooks(k: Console) {
  const q = listQuery(k);
  q.delete("search");
  let s: Scope, page: Page<Webhook>;
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    page = await k.get<Page<Webhook>>(`${api(k)}?${q}`);
  } catch (err) {
    return refusedPage(k, err);
  }
  const base = `${projectPath(s.project.id)}/webhooks`;
  return html(
    k.c,
    (nonce) => (
      <Layout
        nonce={nonce}
        title="Webhooks"
        k={k}
        project={s.project}
        tab="webhooks"
        operator={s.operator}
      >
        <h1>Webhooks</h1>
        <ApiNote />
        {page.data.length === 0
          ? <p class="card">No webhooks yet.</p>
          : <WebhooksTable base={base} hooks={page.data} />}
        <Pager query={q} page={page} noun="webhook" />
      </Layout>
    ),
  );
}

function WebhookFacts(p: { w: Webhook }) {
  const { w } = p;
  return (
    <dl class="facts card">
      <dt>Webhook id</dt>
      <dd>
        <CopyId id={w.id} label="webhook id" />
      </dd>
      <dt>URL</dt>
      <dd>
        <code>{w.url}</code>
      </dd>
      <dt>Events</dt>
      <dd>{w.event_types.map((t) => <code key={t}>{t}</code>)}</dd>
      <dt>State</dt>
      <dd>
        <Active on={w.is_active} />
      </dd>
      {w.description && (
        <>
          <dt>Description</dt>
          <dd>{w.description}</dd>
        </>
      )}
      <dt>Updated</dt>
      <dd>
        <Time at={w.updated_at} />
      </dd>
    </dl>
  );
}

function DeliveryRow(p: { d: WebhookDelivery }) {
  const { d } = p;
  return (
    <tr>
      <td>
        <code>{d.event_type}</code>
        <span class="sub">
          <CopyId id={d.event_id} label="event id" />
        </span>
      </td>
      <td>
        <span class={DELIVERY_BADGE[d.status]}>{d.status}</span>
      </td>
      <td class="wide">{d.attempts}</td>
      <td class="wide">
        {d.last_status ?? ""}
        {d.last_error && <span class="sub">{d.last_error}</span>}
        {d.last_attempt_at && (
          <span class="sub">
            <Time at={d.last_attempt_at} />
          </span>
        )}
      </td>
      <td>
        <Time at={d.created_at} />
      </td>
    </tr>
  );
}

function Deliveries(p: { q: URLSearchParams; page: Page<WebhookDelivery> }) {
  if (p.page.data.length === 0) return <p>No deliveries yet.</p>;
  return (
    <>
      <div class="table-wrap">
        <table>
          <caption class="hint">Newest first</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col" class="wide">Attempts</th>
              <th scope="col" class="wide">Last answer</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {p.page.data.map((d) => <DeliveryRow key={d.id} d={d} />)}
          </tbody>
        </table>
      </div>
      <Pager query={p.q} page={p.page} noun="delivery" many="deliveries" />
    </>
  );
}

type WebhookProps = {
  nonce: string;
  k: Console;
  s: Scope;
  w: Webhook;
  q: URLSearchParams;
  res: ApiAnswer<Page<WebhookDelivery>>;
};

function WebhookPage(p: WebhookProps) {
  const { k, s, w, res } = p;
  const problem = res.ok ? null : problemOf(res);
  return (
    <Layout
      nonce={p.nonce}
      title={`Webhook ${w.url}`}
      k={k}
      project={s.project}
      tab="webhooks"
      operator={s.operator}
    >
      <p class="crumbs">
        <a href={`${projectPath(s.project.id)}/webhooks`}>Webhooks</a> ›
      </p>
      <h1>Webhook {w.url}</h1>
      <WebhookFacts w={w} />
      <ApiNote />
      <h2>Deliveries</h2>
      <Alert problem={problem} />
      {res.ok && <Deliveries q={p.q} page={res.body} />}
    </Layout>
  );
}

/** A webhook and its recent deliveries. */
async function showWebhook(k: Console) {
  let s: Scope, hook: Webhook | null;
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    hook = await findIn<Webhook>(k, api(k), k.c.req.param("wid")!);
  } catch (err) {
    return refusedPage(k, err);
  }
  if (!hook) return k.notFound();
  const w = hook;
  const q = new URLSearchParams({ page_size: "20" });
  const n = new URL(k.c.req.url).searchParams.get("page_num");
  if (n) q.set("page_num", n);
  const res = await k.api<Page<WebhookDelivery>>(
    "GET",
    `${api(k)}/${encodeURIComponent(w.id)}/deliveries?${q}`,
  );
  if (!res.ok && res.status !== 403) return refusedPage(k, new ApiRefusal(res));
  return html(k.c, (nonce) => <WebhookPage nonce={nonce} k={k} s={s} w={w} q={q} res={res} />);
}

export function registerWebhookPages(app: App) {
  app.get("/console/projects/:pid/webhooks", signedIn(app, listWebhooks));
  app.get("/console/projects/:pid/webhooks/:wid", signedIn(app, showWebhook));
}
