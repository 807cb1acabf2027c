/** The console's page frame and small building blocks: fields with their errors, lists with paging and sorting. */
import type { Child } from "hono/jsx";
import type { ApiAnswer, Console } from "./session.ts";

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.45; }
* { box-sizing: border-box; }
body { margin: 0; background: Canvas; color: CanvasText; }
a { color: LinkText; }
.skip { position: absolute; left: -999px; } .skip:focus { left: .5rem; top: .5rem; background: Canvas; padding: .5rem; }
header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; padding: .75rem 1rem; border-bottom: 1px solid GrayText; }
header .brand { font-weight: 700; text-decoration: none; color: inherit; margin-right: auto; }
header form { margin: 0; }
nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: .5rem 1rem; border-bottom: 1px solid GrayText; }
nav a[aria-current=page] { font-weight: 700; }
main { padding: 1rem; max-width: 70rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: .25rem 0 1rem; } h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
input[type=text], input[type=email], input[type=password], input[type=url], input[type=search], input:not([type]), select, textarea {
  width: 100%; max-width: 32rem; padding: .5rem; font: inherit; border: 1px solid GrayText; border-radius: .3rem; background: Field; color: FieldText; }
textarea { min-height: 5rem; }
input:focus-visible, select:focus-visible, textarea:focus-visible, button:focus-visible, a:focus-visible { outline: 3px solid Highlight; outline-offset: 2px; }
button, .button { display: inline-block; padding: .5rem .9rem; font: inherit; font-weight: 600; border: 0; border-radius: .3rem;
  background: #1a56db; color: #fff; cursor: pointer; text-decoration: none; margin: .75rem .5rem 0 0; }
button.secondary { background: #4b5563; } button.danger { background: #b91c1c; }
header button { margin: 0; }
.hint { color: GrayText; font-size: .9rem; margin: .2rem 0; }
.field-error { color: #b91c1c; font-weight: 600; margin: .2rem 0; }
.alert { padding: .75rem; border-radius: .3rem; background: #fde8e8; color: #9b1c1c; margin: 0 0 1rem; }
.notice { padding: .75rem; border-radius: .3rem; background: #def7ec; color: #03543f; margin: 0 0 1rem; }
.secret { font-family: ui-monospace, monospace; word-break: break-all; padding: .5rem; border: 1px dashed GrayText; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .45rem .5rem; border-bottom: 1px solid GrayText; vertical-align: top; }
.toolbar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: .5rem; }
.toolbar label { margin: 0 0 .25rem; } .toolbar button { margin: 0; }
fieldset { border: 1px solid GrayText; border-radius: .3rem; margin: .75rem 0; max-width: 40rem; }
fieldset label, .check label { display: inline; font-weight: 400; margin: 0; }
.check { display: block; margin: .3rem 0; }
.perm-row { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; max-width: 40rem; }
.pager { display: flex; gap: 1rem; align-items: center; margin: .75rem 0; }
.badge { font-size: .8rem; padding: .05rem .4rem; border-radius: .6rem; border: 1px solid GrayText; }
@media (max-width: 40rem) { th.wide, td.wide { display: none; } main { padding: .75rem; } }
`;

export type Tab = "projects" | "home" | "resources" | "roles" | "users" | "clients" | "audit";

export function Layout(p: {
  nonce: string;
  title: string;
  k?: Console;
  project?: { id: string; name: string };
  tab?: Tab;
  /** Operators see the projects list. */
  operator?: boolean;
  children?: Child;
}) {
  const base = p.project ? `/console/projects/${encodeURIComponent(p.project.id)}` : "";
  const tabs: [Tab, string, string][] = p.project
    ? [
      ["home", "Overview", base],
      ["resources", "Resources", `${base}/resources`],
      ["roles", "Roles", `${base}/roles`],
      ["users", "Users", `${base}/users`],
      ["clients", "Clients", `${base}/clients`],
      ["audit", "Audit trail", `${base}/audit`],
    ]
    : [];
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        <title>{p.title} · Console</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <style nonce={p.nonce}>{STYLE}</style>
        <script src="/console/assets/console.js" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header>
          <a class="brand" href="/console">Access-Control Console</a>
          {p.operator && <a href="/console/projects">Projects</a>}
          {p.k && (
            <form method="post" action="/console/signout">
              <Csrf k={p.k} />
              <button type="submit" class="secondary">Sign out</button>
            </form>
          )}
        </header>
        {tabs.length > 0 && (
          <nav aria-label={`Project ${p.project!.name}`}>
            <ul>
              {tabs.map(([tab, label, href]) => (
                <li>
                  <a href={href} aria-current={tab === p.tab ? "page" : undefined}>{label}</a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        <main id="main" tabindex={-1}>{p.children}</main>
      </body>
    </html>
  );
}

/** The hidden fields of every form: the CSRF token, and the page to come back to after a new sign-in. */
export function Csrf(p: { k: Console; back?: string }) {
  return (
    <>
      <input type="hidden" name="csrf" value={p.k.csrf} />
      <input type="hidden" name="back" value={p.back ?? p.k.next} />
    </>
  );
}

/** An API refusal in plain words, and its field errors by field. */
export type Problem = { message: string; fields: Record<string, string> };

const PLAIN: Record<string, string> = {
  insufficient_permission: "You are not allowed to do this",
  invalid_params: "Some fields need attention",
};

export function problemOf(answer: ApiAnswer): Problem {
  const fields: Record<string, string> = {};
  for (const d of answer.body.details ?? []) {
    fields[d.field] ??= d.issue;
    // `redirect_uris.1` belongs next to the redirect URIs field too.
    fields[d.field.split(".")[0]] ??= d.field.includes(".") ? `${d.field}: ${d.issue}` : d.issue;
  }
  const code = answer.body.error ?? "error";
  const said = answer.body.error_description ?? "the request was refused";
  const lead = PLAIN[code];
  const message = lead ? `${lead}: ${said}.` : `${said[0].toUpperCase()}${said.slice(1)}.`;
  return { message, fields };
}

export function Alert(p: { problem?: Problem | null; notice?: string | null }) {
  return (
    <>
      {p.problem && <p class="alert" role="alert" id="form-error">{p.problem.message}</p>}
      {p.notice && <p class="notice" role="status">{p.notice}</p>}
    </>
  );
}

/** A labelled input with its hint and its error, tied together for screen readers. */
export function Field(p: {
  name: string;
  label: string;
  value?: string | null;
  type?: string;
  required?: boolean;
  hint?: string;
  problem?: Problem | null;
  /** The API's name of the field, when it differs. */
  apiField?: string;
  autocomplete?: string;
  textarea?: boolean;
}) {
  const error = p.problem?.fields[p.apiField ?? p.name];
  const id = `f-${p.name}`;
  const described = [p.hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  const common = {
    id,
    name: p.name,
    required: p.required,
    "aria-invalid": error ? "true" : undefined,
    "aria-describedby": described || undefined,
    autocomplete: p.autocomplete,
  };
  return (
    <div>
      <label for={id}>{p.label}{p.required ? "" : " (optional)"}</label>
      {p.hint && <p class="hint" id={`${id}-hint`}>{p.hint}</p>}
      {p.textarea
        ? <textarea {...common}>{p.value ?? ""}</textarea>
        : <input type={p.type ?? "text"} value={p.value ?? ""} {...common} />}
      {error && <p class="field-error" id={`${id}-error`}>{error}</p>}
    </div>
  );
}

export type Page<T> = { data: T[]; pagination: { page_num: number; page_size: number; total: number } };

/** The list parameters of a page's query string, passed to the API as they are. */
export function listQuery(k: Console, extra: string[] = []): URLSearchParams {
  const url = new URL(k.c.req.url);
  const q = new URLSearchParams();
  for (const name of ["page_num", "sort_by", "sort_dir", "search", ...extra]) {
    const v = url.searchParams.get(name);
    if (v) q.set(name, v);
  }
  q.set("page_size", "20");
  return q;
}

export function SearchBox(p: { query: URLSearchParams; label: string; children?: Child }) {
  return (
    <form method="get" class="toolbar" role="search">
      <div>
        <label for="search">{p.label}</label>
        <input id="search" name="search" type="search" value={p.query.get("search") ?? ""} />
      </div>
      {p.children}
      {p.query.get("sort_by") && <input type="hidden" name="sort_by" value={p.query.get("sort_by")!} />}
      {p.query.get("sort_dir") && <input type="hidden" name="sort_dir" value={p.query.get("sort_dir")!} />}
      <button type="submit">Search</button>
    </form>
  );
}

/** A column header that sorts the list by `field` (and flips the direction when it already does). */
export function SortTh(p: { query: URLSearchParams; field: string; label: string; class?: string }) {
  const active = (p.query.get("sort_by") ?? "created_at") === p.field;
  const dir = p.query.get("sort_dir") ?? "desc";
  const q = new URLSearchParams(p.query);
  q.delete("page_size");
  q.delete("page_num");
  q.set("sort_by", p.field);
  q.set("sort_dir", active && dir === "asc" ? "desc" : "asc");
  return (
    <th
      scope="col"
      class={p.class}
      aria-sort={active ? (dir === "asc" ? "ascending" : "descending") : undefined}
    >
      <a href={`?${q}`}>{p.label}{active ? (dir === "asc" ? " ▲" : " ▼") : ""}</a>
    </th>
  );
}

export function Pager(p: { query: URLSearchParams; page: Page<unknown>; noun: string }) {
  const { page_num, page_size, total } = p.page.pagination;
  const last = Math.max(1, Math.ceil(total / page_size));
  const link = (n: number) => {
    const q = new URLSearchParams(p.query);
    q.delete("page_size");
    q.set("page_num", String(n));
    return `?${q}`;
  };
  return (
    <nav class="pager" aria-label="Pages">
      {page_num > 1 && <a href={link(page_num - 1)} rel="prev">Previous page</a>}
      <span>
        Page {page_num} of {last} · {total} {p.noun}
      </span>
      {page_num < last && <a href={link(page_num + 1)} rel="next">Next page</a>}
    </nav>
  );
}

export const Active = (p: { on: boolean }) => <span class="badge">{p.on ? "active" : "inactive"}</span>;

/** A secret shown once, with a copy button (console.js) that works without script as selectable text. */
export function SecretOnce(p: { label: string; id: string; secret: string }) {
  return (
    <section aria-labelledby="secret-heading" class="notice">
      <h2 id="secret-heading">{p.label}</h2>
      <p>
        Client id: <code>{p.id}</code>
      </p>
      <p>Client secret (shown only now; store it safely):</p>
      <p class="secret" id="client-secret">{p.secret}</p>
      <button type="button" data-copy="client-secret" hidden>Copy secret</button>
    </section>
  );
}
