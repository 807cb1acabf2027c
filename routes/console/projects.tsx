/** Console pages of projects: the operators' list (search, create with the admin client's secret shown once), a project's overview with its settings. */
import type { AdminPermission } from "../../domain/authz/defaults.ts";
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
import { ApiRefusal, type Console, findIn, html, type Me, signedIn } from "./session.ts";
import { keepOnce, type Once, takeOnce } from "../../domain/console/shown_once.ts";

/** What a project page knows: the project, whether the user is an operator, and what the user may do there. */
export type Scope = { project: Project; operator: boolean; can: (permission: AdminPermission) => boolean };

/** Whether the signed-in user's role holds a default resource's permission (a misspelt one does not compile). */
const holds = (me: Me, permission: AdminPermission) => me.permissions.includes(permission);

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
    signup: "off",
    client_metadata_documents: "off",
    default_role_id: null,
    branding: { display_name: null, primary_color: null, terms_url: null, privacy_url: null, logo_url: null },
    is_system: projectId === SYSTEM_PROJECT_ID,
    created_at: "",
    updated_at: "",
  };
  const operator = k.session.projectId === SYSTEM_PROJECT_ID && holds(me, "projects:create");
  const own = k.session.projectId === projectId;
  // In their own project a user sees what their role allows; operators act on every project (the API decides).
  const can = (permission: AdminPermission) => own ? holds(me, permission) : operator;
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

/** A record's page: the record read from its list's path, 404 when it is gone, the refusal when it may not be read. */
export async function showRecord<T extends { id: string }>(
  k: Console,
  listPath: string,
  id: string,
  render: (found: T) => Response | Promise<Response>,
): Promise<Response> {
  try {
    const found = await findIn<T>(k, listPath, id);
    return found ? await render(found) : k.notFound();
  } catch (err) {
    return refusedPage(k, err);
  }
}

/** After a refused write, the record as it is now for the page beside the refusal; null when it cannot be read. */
export const recordNow = <T extends { id: string }>(k: Console, listPath: string, id: string) =>
  findIn<T>(k, listPath, id).catch(() => null); // the refusal is what the page tells

export const pid = (k: Console) => k.c.req.param("pid")!;

export const projectPath = (id: string) => `/console/projects/${encodeURIComponent(id)}`;

/** The admin API's path of a project, or of one of its areas (`roles`, `users`, …). */
export const projectApi = (id: string, area?: string) =>
  `/api/v1/projects/${encodeURIComponent(id)}${area ? `/${area}` : ""}`;

/** The admin API's path of an area of the project the console page shows (its `pid` parameter). */
export const areaApi = (k: Console, area: string) => projectApi(k.c.req.param("pid")!, area);

/** A textarea's URIs, one a line (blank lines and surrounding spaces dropped). */
export const uriLines = (text: string) => text.split(/\r?\n/).map((s) => s.trim()).filter(Boolean);

/** The project form's fields as posted. */
export const formValues = (k: Console) => ({
  name: k.field("name"),
  description: k.field("description"),
  redirect_uris: k.field("redirect_uris"),
  post_logout_redirect_uris: k.field("post_logout_redirect_uris"),
});

/** The API's body of a project, from the form's fields. */
export const projectBody = (values: Record<string, string>) => ({
  name: values.name,
  description: values.description || null,
  redirect_uris: uriLines(values.redirect_uris),
  post_logout_redirect_uris: uriLines(values.post_logout_redirect_uris),
});

export function ProjectForm(
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

/** /console: operators go to the projects, everyone else to their own project. */
async function toStart(k: Console) {
  try {
    const me = await k.me();
    const target = k.session.projectId === SYSTEM_PROJECT_ID && holds(me, "projects:read")
      ? "/console/projects"
      : projectPath(k.session.projectId);
    return k.c.redirect(target, 303);
  } catch (err) {
    return refusedPage(k, err);
  }
}

function ProjectRow(p: { p: Project }) {
  return (
    <tr>
      <td>
        <a href={projectPath(p.p.id)}>{p.p.name}</a> {p.p.is_system && <span class="badge">operators</span>}
        <span class="sub">
          <CopyId id={p.p.id} label={`id of ${p.p.name}`} />
        </span>
      </td>
      <td class="wide">{p.p.description ?? ""}</td>
      <td>
        <Active on={p.p.is_active} />
      </td>
      <td class="wide">
        <Time at={p.p.created_at} />
      </td>
    </tr>
  );
}

function ProjectsTable(p: { q: URLSearchParams; page: Page<Project> }) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="hint">Projects, {p.page.pagination.total} in all</caption>
        <thead>
          <tr>
            <SortTh query={p.q} field="name" label="Name and ID" />
            <th scope="col" class="wide">Description</th>
            <th scope="col">State</th>
            <SortTh query={p.q} field="created_at" label="Created" class="wide" />
          </tr>
        </thead>
        <tbody>
          {p.page.data.map((project) => <ProjectRow key={project.id} p={project} />)}
        </tbody>
      </table>
    </div>
  );
}

/** The operators' list of projects. */
async function listProjects(k: Console) {
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
      {holds(me, "projects:create") && <a class="button" href="/console/projects/new">Create project</a>}
      <SearchBox query={q} label="Search projects by name" />
      <ProjectsTable q={q} page={page} />
      <Pager query={q} page={page} noun="project" />
    </Layout>
  ));
}

async function newProjectPage(k: Console, values: Record<string, string>, problem: Problem | null) {
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
}

const showNewProject = (k: Console) => newProjectPage(k, {}, null);

type Created = Project & { admin_client: { client_id: string; client_secret: string } };

/** Where a client's secret is rotated: its page, or the project's clients when its id is not known here. */
const rotateHref = (projectId: string, clientId: string | null) =>
  `${projectPath(projectId)}/clients${clientId ? `/${encodeURIComponent(clientId)}` : ""}`;

/** The project just created, with its admin client's secret shown once; a reload says it was shown. */
function CreatedPage(p: { nonce: string; k: Console; project: { id: string; name: string }; once: Once }) {
  const { once, project } = p;
  return (
    <Layout nonce={p.nonce} title="Project created" k={p.k} operator tab="projects">
      <h1>Project “{project.name}” created</h1>
      {once.state === "fresh"
        ? (
          <SecretOnce
            label="The project's admin client"
            id={once.credentials.id}
            secret={once.credentials.secret}
          />
        )
        : (
          <p class="notice" id="secret-shown">
            The admin client's secret was shown once, when the project was created, and is not shown again. If
            it was not stored,{" "}
            <a href={rotateHref(project.id, once.state === "shown" ? once.id : null)}>
              rotate the admin client's secret
            </a>{" "}
            for a new one.
          </p>
        )}
      <p>
        <a href={projectPath(project.id)}>Go to the project</a>
      </p>
    </Layout>
  );
}

/** Creates the project, then redirects to its created page (a reload there creates nothing). */
async function createProject(k: Console) {
  const values = formValues(k);
  const res = await k.api<Created>("POST", "/api/v1/projects", projectBody(values));
  if (!res.ok) return newProjectPage(k, values, problemOf(res));
  const { id, admin_client } = res.body;
  const { sql, keys } = k.c.get("deps");
  const key = await keepOnce(sql, keys.vault, k.session.secret, {
    id: admin_client.client_id,
    secret: admin_client.client_secret,
  });
  return k.c.redirect(`${projectPath(id)}/created?once=${encodeURIComponent(key)}`, 303);
}

async function showCreated(k: Console) {
  const id = pid(k);
  const read = await k.api<Project>("GET", projectApi(id));
  if (!read.ok) return refusedPage(k, new ApiRefusal(read));
  await k.me().catch(() => null); // only for the header's name
  const { sql, keys } = k.c.get("deps");
  const once = await takeOnce(sql, keys.vault, k.session.secret, k.c.req.query("once"));
  const project = { id, name: read.body.name };
  return html(k.c, (nonce) => <CreatedPage nonce={nonce} k={k} project={project} once={once} />);
}

/** The start page, the projects' list and creating a project (a project's own pages: project_home.tsx). */
export function registerProjectPages(app: App) {
  app.get("/console", signedIn(app, toStart));
  app.get("/console/projects", signedIn(app, listProjects));
  app.get("/console/projects/new", signedIn(app, showNewProject));
  app.post("/console/projects/new", signedIn(app, createProject));
  app.get("/console/projects/:pid/created", signedIn(app, showCreated));
}
