/** Console pages of a project's resources and their permissions (the permission list edited in place). */
import type { Resource } from "../../openapi/resources.ts";
import type { App } from "../env.ts";
import { DeleteLink } from "./deletion.tsx";
import { Alert, CopyId, Csrf, Field, Layout, type Page, type Problem, problemOf, SortTh } from "./layout.tsx";
import {
  areaApi,
  projectApi,
  projectPath,
  recordNow,
  refusedPage,
  type Scope,
  scopeOf,
  showRecord,
} from "./projects.tsx";
import { type Console, html, signedIn } from "./session.ts";
import { registerAreaList } from "./area_list.tsx";

const api = (k: Console) => areaApi(k, "resources");

/** Every resource of the project, for the permission checklists. */
export async function allResources(k: Console, projectId: string): Promise<Resource[]> {
  const out: Resource[] = [];
  for (let n = 1;; n++) {
    const page = await k.get<Page<Resource>>(
      `${projectApi(projectId, "resources")}?page_size=100&page_num=${n}&sort_by=code&sort_dir=asc`,
    );
    out.push(...page.data);
    if (n * 100 >= page.pagination.total) return out;
  }
}

type Values = {
  name: string;
  code: string;
  description: string;
  indicator: string;
  perms: { code: string; name: string }[];
};

/** Rows of permission code and name; blank rows add, cleared rows remove. */
function PermissionRows(
  p: { perms: { code: string; name: string }[]; problem: Problem | null; readonly: boolean },
) {
  const rows = p.readonly ? p.perms : [...p.perms, ...Array(3).fill({ code: "", name: "" })];
  return (
    <fieldset>
      <legend>
        Permissions{p.readonly ? "" : " (clear a row to remove it; fill a blank row to add one)"}
      </legend>
      {p.problem?.fields["permissions"] && <p class="field-error">{p.problem.fields["permissions"]}</p>}
      {rows.map((perm, i) => {
        const err = p.problem?.fields[`permissions.${i}.code`] ?? p.problem?.fields[`permissions.${i}.name`];
        return (
          <div class="perm-row">
            <div>
              <label for={`perm-code-${i}`}>Code {i + 1}</label>
              <input
                id={`perm-code-${i}`}
                name="perm_code"
                value={perm.code}
                readonly={p.readonly}
                aria-invalid={err ? "true" : undefined}
                aria-describedby={err ? `perm-err-${i}` : undefined}
              />
            </div>
            <div>
              <label for={`perm-name-${i}`}>Name {i + 1}</label>
              <input id={`perm-name-${i}`} name="perm_name" value={perm.name} readonly={p.readonly} />
            </div>
            {err && <p class="field-error" id={`perm-err-${i}`}>{err}</p>}
          </div>
        );
      })}
    </fieldset>
  );
}

function formValues(k: Console): Values {
  const codes = k.list("perm_code");
  const names = k.list("perm_name");
  const perms = codes.map((code, i) => ({ code: code.trim(), name: (names[i] ?? "").trim() }))
    .filter((p) => p.code || p.name);
  return {
    name: k.field("name"),
    code: k.field("code"),
    description: k.field("description"),
    indicator: k.field("indicator").trim(),
    perms,
  };
}

const body = (v: Values) => ({
  name: v.name,
  code: v.code,
  description: v.description || null,
  indicator: v.indicator || null,
  permissions: v.perms.map((p) => ({ code: p.code, name: p.name || p.code })),
});

function registerResourceList(app: App) {
  registerAreaList<Resource>(app, {
    area: "resources",
    title: "Resources",
    noun: "resource",
    searchLabel: "Search resources",
    head: (q) => (
      <>
        <SortTh query={q} field="name" label="Name" />
        <SortTh query={q} field="code" label="Code" />
        <th scope="col" class="wide">Permissions</th>
      </>
    ),
    row: (r, href) => (
      <>
        <td>
          <a href={href}>{r.name}</a> {r.is_default && <span class="badge">default</span>}
        </td>
        <td>
          <code>{r.code}</code>
        </td>
        <td class="wide">{r.permissions.map((p) => p.code).join(", ")}</td>
      </>
    ),
  });
}

/** The resource's id, and (but for a default resource) the link to its objects. */
function ResourceFacts(p: { resource: Resource; base: string }) {
  const { resource } = p;
  return (
    <>
      <p class="hint">
        Resource id <CopyId id={resource.id} label="resource id" />
        {resource.is_default ? " · a default resource: read-only." : ""}
      </p>
      {!resource.is_default && (
        <p>
          <a href={`${p.base}/${encodeURIComponent(resource.id)}/objects`}>Objects of {resource.name}</a>{" "}
          <span class="hint">(a tree; roles are granted on them)</span>
        </p>
      )}
    </>
  );
}

type ResourcePageProps = {
  nonce: string;
  k: Console;
  s: Scope;
  resource: Resource | null;
  v: Values;
  problem: Problem | null;
  base: string;
  action: string;
  readonly: boolean;
  title: string;
};

function ResourcePage(p: ResourcePageProps) {
  const { k, s, resource, v, problem } = p;
  return (
    <Layout nonce={p.nonce} title={p.title} k={k} project={s.project} tab="resources" operator={s.operator}>
      <h1>{p.title}</h1>
      <Alert problem={problem} notice={k.c.req.query("done") ? "Saved." : null} />
      {resource && <ResourceFacts resource={resource} base={p.base} />}
      <form method="post" action={p.action}>
        <Csrf k={k} back={p.action} />
        <Field name="name" label="Name" value={v.name} required problem={problem} />
        <Field
          name="code"
          label="Code"
          value={v.code}
          required
          problem={problem}
          hint="Letters, digits, dash and underscore."
        />
        <Field name="description" label="Description" value={v.description} problem={problem} />
        <Field
          name="indicator"
          label="API indicator"
          value={v.indicator}
          type="url"
          problem={problem}
          hint="When this resource is an API (an MCP server, say): its URL, such as https://api.example.com/mcp. Tokens asked for it (resource=…) carry it as aud, and its permission codes as scope."
        />
        <PermissionRows perms={v.perms} problem={problem} readonly={p.readonly} />
        {!p.readonly && <button type="submit">{resource ? "Save resource" : "Create resource"}</button>}
      </form>
      {resource && <DeleteLink s={s} area="resources" id={resource.id} show={!resource.is_default} />}
    </Layout>
  );
}

async function editPage(
  k: Console,
  resource: Resource | null,
  values: Values | null,
  problem: Problem | null,
) {
  let s: Scope;
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
  } catch (err) {
    return refusedPage(k, err);
  }
  const v = values ?? (resource
    ? {
      name: resource.name,
      code: resource.code,
      description: resource.description ?? "",
      indicator: resource.indicator ?? "",
      perms: resource.permissions.map((p) => ({ code: p.code, name: p.name })),
    }
    : { name: "", code: "", description: "", indicator: "", perms: [] });
  const base = `${projectPath(s.project.id)}/resources`;
  const action = resource ? `${base}/${encodeURIComponent(resource.id)}` : `${base}/new`;
  const readonly = resource?.is_default || !s.can(resource ? "resources:update" : "resources:create");
  const title = resource ? `Resource ${resource.name}` : "Create resource";
  const page = { k, s, resource, v, problem, base, action, readonly, title };
  return html(k.c, (nonce) => <ResourcePage nonce={nonce} {...page} />, problem ? 400 : 200);
}

const rid = (k: Console) => k.c.req.param("rid")!;
const resourcesPath = (k: Console) => `${projectPath(k.c.req.param("pid")!)}/resources`;

const showNewResource = (k: Console) => editPage(k, null, null, null);

async function createResource(k: Console) {
  const v = formValues(k);
  const res = await k.api<Resource>("POST", api(k), body(v));
  if (!res.ok) return editPage(k, null, v, problemOf(res));
  return k.c.redirect(`${resourcesPath(k)}?done=1`, 303);
}

async function showResource(k: Console) {
  return await showRecord<Resource>(k, api(k), rid(k), (found) => editPage(k, found, null, null));
}

async function saveResource(k: Console) {
  const path = `${api(k)}/${encodeURIComponent(rid(k))}`;
  const v = formValues(k);
  const res = await k.api<Resource>("PUT", path, body(v));
  if (!res.ok) {
    const current = await recordNow<Resource>(k, api(k), rid(k));
    return editPage(k, current, v, problemOf(res));
  }
  return k.c.redirect(`${resourcesPath(k)}?done=1`, 303);
}

export function registerResourcePages(app: App) {
  registerResourceList(app);
  app.get("/console/projects/:pid/resources/new", signedIn(app, showNewResource));
  app.post("/console/projects/:pid/resources/new", signedIn(app, createResource));
  app.get("/console/projects/:pid/resources/:rid", signedIn(app, showResource));
  app.post("/console/projects/:pid/resources/:rid", signedIn(app, saveResource));
}
