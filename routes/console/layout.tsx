/** The console's page frame and small building blocks: fields with their errors, lists with paging and sorting. */
import { raw } from "hono/html";
import type { Child } from "hono/jsx";

/** An API answer as the console receives it: its status and JSON body. */
export type ApiAnswer<T = unknown> = { ok: boolean; status: number; body: T & ApiError };
export type ApiError = {
  error?: string;
  error_description?: string;
  details?: { field: string; issue: string }[];
};

/**
 * What the frame and the forms need of a signed-in request (session.ts's `Console`): who is signed in, the
 * session's CSRF token, where to come back to, and the request.
 */
export type Signed = { who?: string | null; csrf: string; next: string; c: { req: { url: string } } };

/** The stylesheet: a constant of this file, written into the page as it is (JSX would escape its `>` and quotes). */
const STYLE = `
:root { color-scheme: light dark; line-height: 1.45;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", "DejaVu Sans", system-ui, sans-serif;
  --bg: #f6f7f9; --panel: #fff; --text: #1f2933; --muted: #5b6672; --line: #d9dee4; --accent: #1a56db;
  --accent-text: #fff; --accent-soft: #e8efff; --danger: #b91c1c; --ok-bg: #def7ec; --ok-text: #03543f;
  --err-bg: #fde8e8; --err-text: #9b1c1c; --focus: #f59e0b; --code-bg: #eef1f4; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #111418; --panel: #1a1f25; --text: #e6e9ec; --muted: #a3adb8; --line: #333b44; --accent: #5b8def;
    --accent-text: #0b1220; --accent-soft: #1d2a44; --danger: #f87171; --ok-bg: #0f3325; --ok-text: #a7f3d0;
    --err-bg: #3b1414; --err-text: #fecaca; --code-bg: #262d35; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); }
a { color: var(--accent); text-underline-offset: .15em; }
a:hover { text-decoration-thickness: 2px; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .85em; background: var(--code-bg);
  padding: .05rem .3rem; border-radius: .25rem; overflow-wrap: anywhere; }
.skip { position: absolute; left: -999px; } .skip:focus { left: .5rem; top: .5rem; background: var(--panel); padding: .5rem; z-index: 2; }
header.top { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: center; padding: .6rem 1rem;
  background: var(--panel); border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; text-decoration: none; color: inherit; }
header .context { display: flex; flex-wrap: wrap; gap: .25rem .6rem; align-items: center; margin-right: auto; min-width: 0; }
header .context a { font-weight: 600; }
header .who { color: var(--muted); font-size: .9rem; overflow-wrap: anywhere; }
header form { margin: 0; }
nav.tabs { background: var(--panel); border-bottom: 1px solid var(--line); }
nav.tabs ul { display: flex; flex-wrap: wrap; gap: .1rem .25rem; list-style: none; margin: 0 auto; padding: 0 .75rem; max-width: 72rem; }
nav.tabs a { display: inline-block; padding: .55rem .5rem; text-decoration: none; color: var(--muted); border-bottom: 3px solid transparent; }
nav.tabs a:hover { color: var(--text); }
nav.tabs a[aria-current=page] { color: var(--text); font-weight: 700; border-bottom-color: var(--accent); }
nav.tabs.sub { background: transparent; margin: 0 0 1rem; } nav.tabs.sub ul { padding: 0; margin: 0; }
main { padding: 1.25rem 1rem 3rem; max-width: 72rem; margin: 0 auto; }
.crumbs { margin: 0 0 .25rem; font-size: .9rem; color: var(--muted); }
h1 { font-size: 1.5rem; margin: .25rem 0 1rem; overflow-wrap: anywhere; } h2 { font-size: 1.15rem; margin: 1.75rem 0 .5rem; }
.narrow { max-width: 36rem; }
.card > :first-child { margin-top: 0; } .card > :last-child { margin-bottom: 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem; margin: 0 0 1rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
input[type=text], input[type=email], input[type=password], input[type=url], input[type=search], input[type=date], input:not([type]), select, textarea {
  width: 100%; max-width: 32rem; padding: .5rem; font: inherit; border: 1px solid var(--line); border-radius: .35rem;
  background: var(--panel); color: var(--text); }
textarea { min-height: 5rem; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
button, .button { display: inline-block; padding: .5rem .9rem; font: inherit; font-weight: 600; border: 1px solid transparent;
  border-radius: .35rem; background: var(--accent); color: var(--accent-text); cursor: pointer; text-decoration: none; margin: .75rem .5rem 0 0; }
button:hover, .button:hover { filter: brightness(1.08); }
button.secondary, .button.secondary { background: transparent; color: var(--text); border-color: var(--line); }
button.danger { background: var(--danger); color: #fff; }
button.copy { margin: 0 0 0 .3rem; padding: .05rem .45rem; font-size: .8rem; font-weight: 600; background: transparent;
  color: var(--accent); border-color: var(--line); vertical-align: baseline; }
.danger-link { color: var(--danger); }
header button { margin: 0; }
.hint { color: var(--muted); font-size: .9rem; margin: .2rem 0; }
.field-error { color: var(--danger); font-weight: 600; margin: .2rem 0; }
.alert, .notice { padding: .75rem 1rem; border-radius: .4rem; margin: 0 0 1rem; border-left: 4px solid; }
.alert { background: var(--err-bg); color: var(--err-text); }
.notice { background: var(--ok-bg); color: var(--ok-text); }
.secret { font-family: ui-monospace, monospace; word-break: break-all; padding: .5rem; border: 1px dashed var(--muted); }
.table-wrap { overflow-x: auto; background: var(--panel); border: 1px solid var(--line); border-radius: .5rem; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; padding: .5rem .6rem; }
th, td { text-align: left; padding: .5rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
tbody tr:last-child td { border-bottom: 0; }
th { font-size: .85rem; color: var(--muted); font-weight: 600; } th a { color: inherit; }
tbody tr:hover { background: var(--accent-soft); }
td .sub { display: block; font-size: .85rem; color: var(--muted); }
.toolbar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin: .75rem 0; }
.toolbar > div { flex: 1 1 12rem; max-width: 24rem; }
.toolbar label { margin: 0 0 .25rem; } .toolbar button { margin: 0; }
fieldset { border: 1px solid var(--line); border-radius: .4rem; margin: .75rem 0; max-width: 40rem; min-width: 0; }
fieldset label, .check label { display: inline; font-weight: 400; margin: 0; }
fieldset.bare { border: 0; padding: 0; margin: 0; max-width: none; }
fieldset.bare > div > label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
.check { display: block; margin: .3rem 0; }
.check .condition { display: block; margin: .2rem 0 .4rem 1.6rem; }
.check .condition label { display: block; font-size: .85rem; color: var(--muted); }
.check .condition input { width: 100%; max-width: 34rem; font-family: ui-monospace, monospace; }
.perm-row { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; max-width: 40rem; }
.pager { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin: .75rem 0; }
.badge { display: inline-block; font-size: .78rem; padding: .05rem .5rem; border-radius: .7rem; border: 1px solid var(--line); white-space: nowrap; }
.badge.on { background: var(--ok-bg); color: var(--ok-text); border-color: transparent; }
.badge.off { background: var(--err-bg); color: var(--err-text); border-color: transparent; }
td code + code, dd code + code { margin-left: .3rem; }
ul.glance { display: flex; flex-wrap: wrap; gap: .75rem; list-style: none; padding: 0; margin: 0 0 1rem; }
ul.glance a { display: block; min-width: 8rem; padding: .6rem .9rem; background: var(--panel); border: 1px solid var(--line);
  border-radius: .5rem; text-decoration: none; color: var(--text); }
ul.glance a:hover { border-color: var(--accent); }
ul.glance strong { display: block; font-size: 1.4rem; color: var(--accent); }
ul.perms { columns: 16rem; padding-left: 1.2rem; }
details summary { cursor: pointer; font-weight: 600; margin: 1rem 0 .25rem; }
@media (max-width: 40rem) { th.wide, td.wide { display: none; } main { padding: 1rem .75rem 2rem; } header.top { padding: .5rem .75rem; }
  nav.tabs ul { padding: 0 .4rem; } nav.tabs a { padding: .45rem .35rem; } .perm-row { grid-template-columns: 1fr; } }
`;

export type Tab =
  | "projects"
  | "home"
  | "resources"
  | "roles"
  | "users"
  | "organizations"
  | "clients"
  | "sessions"
  | "audit"
  | "webhooks"
  | "sign-in"
  | "branding"
  | "identity-providers";

/** An id as selectable code, with a copy button that console.js shows (without script, the text is selectable). */
export function CopyId(p: { id: string; label?: string }) {
  return (
    <>
      <code>{p.id}</code>
      <button
        type="button"
        class="copy"
        data-copy-text={p.id}
        aria-label={`Copy ${p.label ?? "id"} ${p.id}`}
        hidden
      >
        Copy
      </button>
    </>
  );
}

/** An instant: UTC text, localised to the reader's zone by console.js from `datetime`. */
export function Time(p: { at: string | null | undefined }) {
  if (!p.at) return <span>never</span>;
  return <time datetime={p.at}>{`${p.at.replace("T", " ").slice(0, 19)} UTC`}</time>;
}

type Frame = {
  nonce: string;
  title: string;
  k?: Signed;
  project?: { id: string; name: string };
  tab?: Tab;
  /** Operators see the projects list. */
  operator?: boolean;
  children?: Child;
};

/** The top bar: the projects (for operators), the project, who is signed in, and Sign out. */
function TopBar(p: Omit<Frame, "nonce" | "title" | "children"> & { base: string }) {
  return (
    <header class="top">
      <a class="brand" href="/console">Access Control</a>
      <span class="context">
        {p.operator && (
          <a href="/console/projects" aria-current={p.tab === "projects" ? "page" : undefined}>
            Projects
          </a>
        )}
        {p.project && (
          <span id="current-project">
            {p.operator ? "› " : ""}
            <a href={p.base}>{p.project.name}</a> <CopyId id={p.project.id} label="project id" />
          </span>
        )}
      </span>
      {p.k?.who && (
        <span class="who" id="signed-in-as">
          Signed in as <strong>{p.k.who}</strong>
        </span>
      )}
      {p.k && (
        <form method="post" action="/console/signout">
          <Csrf k={p.k} />
          <button type="submit" class="secondary">Sign out</button>
        </form>
      )}
    </header>
  );
}

/** The project's tabs. */
function Tabs(p: { project: { name: string }; base: string; tab?: Tab }) {
  const base = p.base;
  const tabs: [Tab, string, string][] = [
    ["home", "Overview", base],
    ["resources", "Resources", `${base}/resources`],
    ["roles", "Roles", `${base}/roles`],
    ["users", "Users", `${base}/users`],
    ["organizations", "Organizations", `${base}/organizations`],
    ["clients", "Clients", `${base}/clients`],
    ["sessions", "Sessions", `${base}/sessions`],
    ["audit", "Audit trail", `${base}/audit`],
    ["webhooks", "Webhooks", `${base}/webhooks`],
    ["sign-in", "Sign-in", `${base}/sign-in`],
    ["branding", "Branding", `${base}/branding`],
    ["identity-providers", "Identity providers", `${base}/identity-providers`],
  ];
  return (
    <nav class="tabs" aria-label={`Project ${p.project.name}`}>
      <ul>
        {tabs.map(([tab, label, href]) => (
          <li key={tab}>
            <a href={href} aria-current={tab === p.tab ? "page" : undefined}>{label}</a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

export function Layout(p: Frame) {
  const base = p.project ? `/console/projects/${encodeURIComponent(p.project.id)}` : "";
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        <title>{p.title} · Console</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <style nonce={p.nonce}>{raw(STYLE)}</style>
        <script src="/console/assets/console.js" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <TopBar k={p.k} project={p.project} tab={p.tab} operator={p.operator} base={base} />
        {p.project && <Tabs project={p.project} base={base} tab={p.tab} />}
        <main id="main" tabindex={-1}>{p.children}</main>
      </body>
    </html>
  );
}

/** The hidden fields of every form: the CSRF token, and the page to come back to after a new sign-in. */
export function Csrf(p: { k: Signed; back?: string }) {
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
  /** A filter, not a record's field: no "(optional)". */
  plain?: boolean;
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
      <label for={id}>{p.label}{p.required || p.plain ? "" : " (optional)"}</label>
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
export function listQuery(k: Signed, extra: string[] = []): URLSearchParams {
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

/** A count with its noun, singular for one ("1 permission", "0 users"); `many` for an irregular plural. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The pager of a list; `noun` is the singular ("user"), `many` its plural when not just an added "s". */
export function Pager(p: { query: URLSearchParams; page: Page<unknown>; noun: string; many?: string }) {
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
        Page {page_num} of {last} · {plural(total, p.noun, p.many)}
      </span>
      {page_num < last && <a href={link(page_num + 1)} rel="next">Next page</a>}
    </nav>
  );
}

export const Active = (p: { on: boolean }) => (
  <span class={p.on ? "badge on" : "badge off"}>{p.on ? "active" : "inactive"}</span>
);

/** A secret shown once, with a copy button (console.js) that works without script as selectable text. */
export function SecretOnce(p: { label: string; id: string; secret: string }) {
  return (
    <section aria-labelledby="secret-heading" class="notice">
      <h2 id="secret-heading">{p.label}</h2>
      <p>
        Client id: <CopyId id={p.id} label="client id" />
      </p>
      <p>Client secret (shown only now; store it safely):</p>
      <p class="secret" id="client-secret">{p.secret}</p>
      <button type="button" data-copy="client-secret" hidden>Copy secret</button>
    </section>
  );
}

/** A record's `properties` as the JSON textarea shows them. */
export const propertiesText = (properties: Record<string, unknown> | undefined) =>
  JSON.stringify(properties ?? {}, null, 2);

/**
 * The JSON textarea's text as the API's `properties` (empty: `{}`), or the problem to show on the form when it is
 * not JSON at all; what JSON it holds the API checks (an object, identifier keys, at most 4 KB).
 */
export function parsedProperties(text: string): { value: unknown } | { problem: Problem } {
  if (text.trim() === "") return { value: {} };
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    const issue = `not valid JSON (${err instanceof Error ? err.message : "unreadable"})`;
    return {
      problem: {
        message: "Some fields need attention: properties is not valid JSON.",
        fields: { properties: issue },
      },
    };
  }
}

/** The `properties` textarea: attributes that decisions' conditions will read. */
export function PropertiesField(p: { value: string; problem: Problem | null }) {
  return (
    <Field
      name="properties"
      label="Properties"
      value={p.value}
      problem={p.problem}
      textarea
      hint={'A JSON object of attributes that conditions will read, e.g. {"owner": "user-1", "region": "eu"}: ' +
        "keys are letters, digits and _ (not starting with a digit), at most 4 KB. Saving replaces them whole."}
    />
  );
}

/** A checkbox sent as `name=true` when checked, with its label. */
export function Check(p: { name: string; label: string; checked: boolean }) {
  return (
    <p class="check">
      <input type="checkbox" id={`f-${p.name}`} name={p.name} value="true" checked={p.checked} />{" "}
      <label for={`f-${p.name}`}>{p.label}</label>
    </p>
  );
}
