/** A project's overview: its facts, how many of each area it has, its settings, and (for operators) its state. */
import type { Project } from "../../openapi/projects.ts";
import type { App } from "../env.ts";
import { Active, Alert, CopyId, Csrf, Layout, type Page, type Problem, problemOf, Time } from "./layout.tsx";
import {
  formValues,
  pid,
  projectApi,
  projectBody,
  ProjectForm,
  projectPath,
  refusedPage,
  type Scope,
  scopeOf,
} from "./projects.tsx";
import { type Console, html, signedIn } from "./session.ts";

/** The areas counted on a project's overview. */
const GLANCE = [
  ["resources", "resources", "resource"],
  ["roles", "roles", "role"],
  ["users", "users", "user"],
  ["organizations", "organizations", "organization"],
  ["clients", "clients", "client"],
  ["webhooks", "webhooks", "webhook"],
] as const;

type Glance = { area: string; label: string; total: number | null };

/** At a glance: how many of each the project has, where the user may read them. */
function glanceOf(k: Console, p: Project): Promise<Glance[]> {
  return Promise.all(GLANCE.map(async ([area, many, one]) => {
    const res = await k.api<Page<unknown>>("GET", `${projectApi(p.id, area)}?page_size=1`);
    const total = res.ok ? res.body.pagination.total : null;
    return { area, label: total === 1 ? one : many, total };
  }));
}

function ProjectFacts(p: { p: Project }) {
  return (
    <dl class="facts card">
      <dt>Project ID</dt>
      <dd>
        <CopyId id={p.p.id} label="project id" />
      </dd>
      <dt>State</dt>
      <dd>
        <Active on={p.p.is_active} />
        {p.p.is_system ? " · the system project, where operators sign in" : ""}
      </dd>
      {p.p.description && (
        <>
          <dt>Description</dt>
          <dd>{p.p.description}</dd>
        </>
      )}
      <dt>Console sign-in</dt>
      <dd>
        <CopyId id={`/console/signin?project=${p.p.id}`} label="sign-in path" />
      </dd>
      {p.p.created_at && (
        <>
          <dt>Created</dt>
          <dd>
            <Time at={p.p.created_at} />
          </dd>
        </>
      )}
    </dl>
  );
}

function GlanceList(p: { glance: Glance[]; path: string }) {
  return (
    <ul class="glance" aria-label="At a glance">
      {p.glance.filter((g) => g.total !== null).map((g) => (
        <li key={g.area}>
          <a href={`${p.path}/${g.area}`}>
            <strong>{g.total}</strong> {g.label}
          </a>
        </li>
      ))}
    </ul>
  );
}

/** The settings form where the user may change them, else the redirect URIs to read. */
function Settings(
  p: { k: Console; s: Scope; values: Record<string, string>; problem: Problem | null; path: string },
) {
  const project = p.s.project;
  return p.s.can("projects:update")
    ? (
      <form method="post" action={p.path}>
        <h2>Settings</h2>
        <Csrf k={p.k} back={p.path} />
        <ProjectForm k={p.k} values={p.values} problem={p.problem} />
        <button type="submit">Save settings</button>
      </form>
    )
    : (
      <>
        <h2>Redirect URIs</h2>
        <ul>{project.redirect_uris.map((u) => <li key={u}>{u}</li>)}</ul>
        <h2>Post-logout redirect URIs</h2>
        <ul>{project.post_logout_redirect_uris.map((u) => <li key={u}>{u}</li>)}</ul>
      </>
    );
}

function StateForm(p: { k: Console; p: Project; path: string }) {
  return (
    <form method="post" action={`${p.path}/active`}>
      <h2>State</h2>
      <Csrf k={p.k} back={p.path} />
      <input type="hidden" name="is_active" value={p.p.is_active ? "false" : "true"} />
      <button type="submit" class={p.p.is_active ? "danger" : undefined}>
        {p.p.is_active ? "Deactivate project" : "Activate project"}
      </button>
    </form>
  );
}

function HomePage(
  p: {
    nonce: string;
    k: Console;
    s: Scope;
    glance: Glance[];
    values: Record<string, string>;
    problem: Problem | null;
  },
) {
  const { k, s } = p;
  const project = s.project;
  const notice = k.c.req.query("done") ? "Saved." : null;
  const path = projectPath(project.id);
  return (
    <Layout nonce={p.nonce} title={project.name} k={k} project={project} tab="home" operator={s.operator}>
      <h1>{project.name}</h1>
      <Alert problem={p.problem} notice={notice} />
      <ProjectFacts p={project} />
      <GlanceList glance={p.glance} path={path} />
      <Settings k={k} s={s} values={p.values} problem={p.problem} path={path} />
      {s.operator && !project.is_system && <StateForm k={k} p={project} path={path} />}
    </Layout>
  );
}

async function home(k: Console, problem: Problem | null, values?: Record<string, string>) {
  let s: Scope;
  try {
    s = await scopeOf(k, pid(k));
  } catch (err) {
    return refusedPage(k, err);
  }
  const p = s.project;
  const glance = await glanceOf(k, p);
  const v = values ?? {
    name: p.name,
    description: p.description ?? "",
    redirect_uris: p.redirect_uris.join("\n"),
    post_logout_redirect_uris: p.post_logout_redirect_uris.join("\n"),
  };
  return html(
    k.c,
    (nonce) => <HomePage nonce={nonce} k={k} s={s} glance={glance} values={v} problem={problem} />,
    problem ? 400 : 200,
  );
}

const showHome = (k: Console) => home(k, null);

async function saveSettings(k: Console) {
  const values = formValues(k);
  const res = await k.api("PUT", projectApi(pid(k)), projectBody(values));
  if (!res.ok) return home(k, problemOf(res), values);
  return k.c.redirect(`${projectPath(pid(k))}?done=1`, 303);
}

async function setActive(k: Console) {
  const path = projectApi(pid(k));
  const current = await k.api<Project>("GET", path);
  if (!current.ok) return home(k, problemOf(current));
  const res = await k.api("PUT", path, {
    name: current.body.name,
    is_active: k.field("is_active") === "true",
  });
  if (!res.ok) return home(k, problemOf(res));
  return k.c.redirect(`${projectPath(pid(k))}?done=1`, 303);
}

/** Mounted after registerProjectPages: `/console/projects/new` comes before `/console/projects/:pid`. */
export function registerProjectHome(app: App) {
  app.get("/console/projects/:pid", signedIn(app, showHome));
  app.post("/console/projects/:pid", signedIn(app, saveSettings));
  app.post("/console/projects/:pid/active", signedIn(app, setActive));
}
