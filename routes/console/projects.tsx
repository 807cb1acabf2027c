/** Console pages of projects: the operators' list (search, create with the admin client's secret shown once), a project's overview with its settings. */
import type { Project } from "../../openapi/projects.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import type { App } from "../env.ts";
import {
  Active,
  Alert,
  CopyId,
  Csrf,
  Field,
  Layout,
  listQuery,
  type Page,
  Pager,
  type Problem,
  problemOf,
  SearchBox,
  SecretOnce,
  SortTh,
  Time,
} from "./layout.tsx";
import { ApiRefusal, type Console, html, type Me, signedIn } from "./session.ts";

/** What a project page knows: the project, whether the user is an operator, and what the user may do there. */
export type Scope = { project: Project; operator: boolean; can: (permission: string) => boolean };

export async function scopeOf(k: Console, projectId: string): Promise<Scope> {
  const me = await k.me();
  const read = await k.api<Project>("GET", projectApi(projectId));
  // A user without projects:read still works in their own project; the page then knows only its id.
  if (!read.ok && !(read.status === 403 && k.session.projectId === projectId)) throw new ApiRefusal(read);
  const project: Project = read.ok ? read.body : {
    id: projectId,
    name: `Project ${projectId}`,
    description: null,
    redirect_uris: [],
    post_logout_redirect_uris: [],
    mfa: "optional",
    is_active: true,
    require_verified_email: false,
    is_system: projectId === SYSTEM_PROJECT_ID,
    created_at: "",
    updated_at: "",
  };
  const operator = k.session.projectId === SYSTEM_PROJECT_ID && me.permissions.includes("projects:create");
  const own = k.session.projectId === projectId;
  // In their own project a user sees what their role allows; operators act on every project (the API decides).
  const can = (permission: string) => own ? me.permissions.includes(permission) : operator;
  return { project, operator, can };
}

/** A page whose essential read the API refused: its words, on a page of their own. */
export function refusedPage(k: Console, err: unknown) {
  if (!(err instanceof ApiRefusal)) throw err;
  const problem = problemOf(err.answer);
  const status = err.answer.status === 404 ? 404 : 403;
  return html(
    k.c,
    (nonce) => (
      <Layout nonce={nonce} title="Not available" k={k} operator={k.session.projectId === SYSTEM_PROJECT_ID}>
        <h1>Not available</h1>
        <Alert problem={problem} />
        <p>
          <a href="/console">Back to the console</a>
        </p>
      </Layout>
    ),
    status,
  );
}

const pid = (k: Console) => k.c.req.param("pid")!;

/** The areas counted on a project's overview. */
const GLANCE = [
  ["resources", "resources", "resource"],
  ["roles", "roles", "role"],
  ["users", "users", "user"],
  ["clients", "clients", "client"],
  ["webhooks", "webhooks", "webhook"],
] as const;
export const projectPath = (id: string) => `/console/projects/${encodeURIComponent(id)}`;

/** The admin API's path of a project, or of one of its areas (`roles`, `users`, …). */
export const projectApi = (id: string, area?: string) =>
  `/api/v1/projects/${encodeURIComponent(id)}${area ? `/${area}` : ""}`;

/** The admin API's path of an area of the project the console page shows (its `pid` parameter). */
export const areaApi = (k: Console, area: string) => projectApi(k.c.req.param("pid")!, area);

const uriLines = (text: string) => text.split(/\r?\n/).map((s) => s.trim()).filter(Boolean);

/** The project form's fields as posted. */
const formValues = (k: Console) => ({
  name: k.field("name"),
  description: k.field("description"),
  redirect_uris: k.field("redirect_uris"),
  post_logout_redirect_uris: k.field("post_logout_redirect_uris"),
});

function ProjectForm(
  p: { k: Console; values: Record<string, string>; problem?: Problem | null; create?: boolean },
) {
  return (
    <>
      <Field name="name" label="Name" value={p.values.name} required problem={p.problem} />
      <Field
        name="description"
        label="Description"
        value={p.values.description}
        problem={p.problem}
        textarea
      />
      <Field
        name="redirect_uris"
        label="Redirect URIs"
        value={p.values.redirect_uris}
        problem={p.problem}
        textarea
        hint="One per line; https, or http on localhost. Matched byte for byte."
      />
      <Field
        name="post_logout_redirect_uris"
        label="Post-logout redirect URIs"
        value={p.values.post_logout_redirect_uris}
        problem={p.problem}
        textarea
        hint="Where /logout may send the browser afterwards: one per line, with the rules of redirect URIs."
      />
    </>
  );
}

export function registerProjectPages(app: App) {
  app.get(
    "/console",
    signedIn(app, async (k) => {
      try {
        const me = await k.me();
        const target = k.session.projectId === SYSTEM_PROJECT_ID && me.permissions.includes("projects:read")
          ? "/console/projects"
          : projectPath(k.session.projectId);
        return k.c.redirect(target, 303);
      } catch (err) {
        return refusedPage(k, err);
      }
    }),
  );

  app.get(
    "/console/projects",
    signedIn(app, async (k) => {
      const q = listQuery(k);
      let page: Page<Project>;
      let me: Me;
      try {
        me = await k.me();
        page = await k.get<Page<Project>>(`/api/v1/projects?${q}`);
      } catch (err) {
        return refusedPage(k, err);
      }
      const notice = k.c.req.query("done") ? "Saved." : null;
      return html(k.c, (nonce) => (
        <Layout nonce={nonce} title="Projects" k={k} operator tab="projects">
          <h1>Projects</h1>
          <Alert notice={notice} />
          {me.permissions.includes("projects:create") && (
            <a class="button" href="/console/projects/new">Create project</a>
          )}
          <SearchBox query={q} label="Search projects by name" />
          <div class="table-wrap">
            <table>
              <caption class="hint">Projects, {page.pagination.total} in all</caption>
              <thead>
                <tr>
                  <SortTh query={q} field="name" label="Name and ID" />
                  <th scope="col" class="wide">Description</th>
                  <th scope="col">State</th>
                  <SortTh query={q} field="created_at" label="Created" class="wide" />
                </tr>
              </thead>
              <tbody>
                {page.data.map((p) => (
                  <tr>
                    <td>
                      <a href={projectPath(p.id)}>{p.name}</a>{" "}
                      {p.is_system && <span class="badge">operators</span>}
                      <span class="sub">
                        <CopyId id={p.id} label={`id of ${p.name}`} />
                      </span>
                    </td>
                    <td class="wide">{p.description ?? ""}</td>
                    <td>
                      <Active on={p.is_active} />
                    </td>
                    <td class="wide">
                      <Time at={p.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager query={q} page={page} noun="projects" />
        </Layout>
      ));
    }),
  );

  const newProjectPage = async (k: Console, values: Record<string, string>, problem: Problem | null) => {
    await k.me().catch(() => null); // only for the header's name: the page is shown without it
    return html(k.c, (nonce) => (
      <Layout nonce={nonce} title="Create project" k={k} operator tab="projects">
        <h1>Create project</h1>
        <Alert problem={problem} />
        <form method="post" action="/console/projects/new">
          <Csrf k={k} back="/console/projects/new" />
          <ProjectForm k={k} values={values} problem={problem} create />
          <button type="submit">Create project</button>
        </form>
      </Layout>
    ), problem ? 400 : 200);
  };

  app.get("/console/projects/new", signedIn(app, (k) => newProjectPage(k, {}, null)));

  app.post(
    "/console/projects/new",
    signedIn(app, async (k) => {
      const values = formValues(k);
      const res = await k.api<Project & { admin_client: { client_id: string; client_secret: string } }>(
        "POST",
        "/api/v1/projects",
        {
          name: values.name,
          description: values.description || null,
          redirect_uris: uriLines(values.redirect_uris),
          post_logout_redirect_uris: uriLines(values.post_logout_redirect_uris),
        },
      );
      if (!res.ok) return newProjectPage(k, values, problemOf(res));
      const created = res.body;
      return html(k.c, (nonce) => (
        <Layout nonce={nonce} title="Project created" k={k} operator tab="projects">
          <h1>Project “{created.name}” created</h1>
          <SecretOnce
            label="The project's admin client"
            id={created.admin_client.client_id}
            secret={created.admin_client.client_secret}
          />
          <p>
            <a href={projectPath(created.id)}>Go to the project</a>
          </p>
        </Layout>
      ));
    }),
  );

  const home = async (k: Console, problem: Problem | null, values?: Record<string, string>) => {
    let s: Scope;
    try {
      s = await scopeOf(k, pid(k));
    } catch (err) {
      return refusedPage(k, err);
    }
    const p = s.project;
    // At a glance: how many of each the project has, where the user may read them.
    const glance = await Promise.all(GLANCE.map(async ([area, many, one]) => {
      const res = await k.api<Page<unknown>>("GET", `${projectApi(p.id, area)}?page_size=1`);
      const total = res.ok ? res.body.pagination.total : null;
      return { area, label: total === 1 ? one : many, total };
    }));
    const v = values ?? {
      name: p.name,
      description: p.description ?? "",
      redirect_uris: p.redirect_uris.join("\n"),
      post_logout_redirect_uris: p.post_logout_redirect_uris.join("\n"),
    };
    const notice = k.c.req.query("done") ? "Saved." : null;
    const path = projectPath(p.id);
    return html(
      k.c,
      (nonce) => (
        <Layout nonce={nonce} title={p.name} k={k} project={p} tab="home" operator={s.operator}>
          <h1>{p.name}</h1>
          <Alert problem={problem} notice={notice} />
          <dl class="facts card">
            <dt>Project ID</dt>
            <dd>
              <CopyId id={p.id} label="project id" />
            </dd>
            <dt>State</dt>
            <dd>
              <Active on={p.is_active} />
              {p.is_system ? " · the system project, where operators sign in" : ""}
            </dd>
            {p.description && (
              <>
                <dt>Description</dt>
                <dd>{p.description}</dd>
              </>
            )}
            <dt>Console sign-in</dt>
            <dd>
              <CopyId id={`/console/signin?project=${p.id}`} label="sign-in path" />
            </dd>
            {p.created_at && (
              <>
                <dt>Created</dt>
                <dd>
                  <Time at={p.created_at} />
                </dd>
              </>
            )}
          </dl>
          <ul class="glance" aria-label="At a glance">
            {glance.filter((g) => g.total !== null).map((g) => (
              <li key={g.area}>
                <a href={`${path}/${g.area}`}>
                  <strong>{g.total}</strong> {g.label}
                </a>
              </li>
            ))}
          </ul>
          {s.can("projects:update")
            ? (
              <form method="post" action={path}>
                <h2>Settings</h2>
                <Csrf k={k} back={path} />
                <ProjectForm k={k} values={v} problem={problem} />
                <button type="submit">Save settings</button>
              </form>
            )
            : (
              <>
                <h2>Redirect URIs</h2>
                <ul>{p.redirect_uris.map((u) => <li key={u}>{u}</li>)}</ul>
                <h2>Post-logout redirect URIs</h2>
                <ul>{p.post_logout_redirect_uris.map((u) => <li key={u}>{u}</li>)}</ul>
              </>
            )}
          {s.operator && !p.is_system && (
            <form method="post" action={`${path}/active`}>
              <h2>State</h2>
              <Csrf k={k} back={path} />
              <input type="hidden" name="is_active" value={p.is_active ? "false" : "true"} />
              <button type="submit" class={p.is_active ? "danger" : undefined}>
                {p.is_active ? "Deactivate project" : "Activate project"}
              </button>
            </form>
          )}
        </Layout>
      ),
      problem ? 400 : 200,
    );
  };

  app.get("/console/projects/:pid", signedIn(app, (k) => home(k, null)));

  app.post(
    "/console/projects/:pid",
    signedIn(app, async (k) => {
      const values = formValues(k);
      const res = await k.api("PUT", projectApi(pid(k)), {
        name: values.name,
        description: values.description || null,
        redirect_uris: uriLines(values.redirect_uris),
        post_logout_redirect_uris: uriLines(values.post_logout_redirect_uris),
      });
      if (!res.ok) return home(k, problemOf(res), values);
      return k.c.redirect(`${projectPath(pid(k))}?done=1`, 303);
    }),
  );

  app.post(
    "/console/projects/:pid/active",
    signedIn(app, async (k) => {
      const path = projectApi(pid(k));
      const current = await k.api<Project>("GET", path);
      if (!current.ok) return home(k, problemOf(current));
      const res = await k.api("PUT", path, {
        name: current.body.name,
        is_active: k.field("is_active") === "true",
      });
      if (!res.ok) return home(k, problemOf(res));
      return k.c.redirect(`${projectPath(pid(k))}?done=1`, 303);
    }),
  );
}
