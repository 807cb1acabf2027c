/**
 * Console pages of a resource's objects as a tree (one level at a time, with the path to it and the grants on
 * the object shown, to revoke; each object's properties and organization), and what grants.tsx shares.
 * Everything goes through the admin API as the signed-in user.
 */
import type { Grant, ObjectRecord } from "../../openapi/objects.ts";
import type { Organization } from "../../openapi/organizations.ts";
import type { Resource } from "../../openapi/resources.ts";
import type { Role } from "../../openapi/roles.ts";
import type { App } from "../env.ts";
import {
  Alert,
  CopyId,
  Csrf,
  Field,
  Layout,
  type Page,
  Pager,
  parsedProperties,
  type Problem,
  problemOf,
  PropertiesField,
  propertiesText,
  Time,
} from "./layout.tsx";
import { areaApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { ApiRefusal, type Console, findIn, html, signedIn } from "./session.ts";
import { OrganizationChoice, organizationsOf } from "./organizations/kit.tsx";

export const enc = encodeURIComponent;
const rid = (k: Console) => k.c.req.param("rid")!;
const objectsApi = (k: Console) => `${areaApi(k, "resources")}/${enc(rid(k))}/objects`;
export const browserPath = (projectId: string, resourceId: string, at?: string | null) =>
  `${projectPath(projectId)}/resources/${enc(resourceId)}/objects${at ? `?at=${enc(at)}` : ""}`;

export const NOTICES: Record<string, string> = {
  added: "The object was added.",
  saved: "The object's properties were saved.",
  deleted: "The object was deleted.",
  granted: "The role was granted.",
  revoked: "The grant was revoked.",
};

/** A grant's expiry: never, a time, or "expired" with the time. */
export function Expiry(p: { grant: Grant }) {
  if (p.grant.expires_at === null) return <span>never</span>;
  return (
    <>
      {p.grant.is_expired && <span class="badge">expired</span>} <Time at={p.grant.expires_at} />
    </>
  );
}

export function RevokeButton(p: { k: Console; back: string; grant: Grant; label: string }) {
  return (
    <form method="post" action={`${projectPath(p.grant.project_id)}/grants/${enc(p.grant.id)}/revoke`}>
      <Csrf k={p.k} back={p.back} />
      <button type="submit" class="danger" aria-label={p.label}>Revoke</button>
    </form>
  );
}

export async function rolesById(k: Console): Promise<Map<string, Role>> {
  const res = await k.api<Page<Role>>(
    "GET",
    `${areaApi(k, "roles")}?page_size=100&sort_by=name&sort_dir=asc`,
  );
  return new Map(res.ok ? res.body.data.map((r) => [r.id, r]) : []);
}

/** Where the browser stands: the project, the resource, the object at `at` and the path to it. */
type Place = { s: Scope; resource: Resource; current: ObjectRecord | null; trail: ObjectRecord[] };

async function placeOf(k: Console, at: string | null): Promise<Place | Response> {
  let s: Scope, resource: Resource | null, current: ObjectRecord | null = null;
  const trail: ObjectRecord[] = [];
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    resource = await findIn<Resource>(k, areaApi(k, "resources"), rid(k));
    if (!resource) return k.notFound();
    if (at) {
      current = await findIn<ObjectRecord>(k, objectsApi(k), at);
      if (!current) return k.notFound();
      // The path up to the top: at most 32 levels.
      for (let o: ObjectRecord | null = current; o?.parent_id;) {
        o = await findIn<ObjectRecord>(k, objectsApi(k), o.parent_id);
        if (o) trail.unshift(o);
      }
    }
  } catch (err) {
    return refusedPage(k, err);
  }
  return { s, resource, current, trail };
}

/** The grants on the current object and the roles by id, where the user may read grants. */
async function grantsOf(k: Console, place: Place) {
  let grants: Grant[] = [];
  let roles = new Map<string, Role>();
  const { s, resource, current } = place;
  if (current && s.can("grants:read")) {
    const g = await k.api<Page<Grant>>(
      "GET",
      `${areaApi(k, "grants")}?object_type=${enc(resource.code)}&object_id=${
        enc(current.id)
      }&include_expired=true` +
        "&page_size=100",
    );
    if (g.ok) grants = g.body.data;
    roles = await rolesById(k);
  }
  return { grants, roles };
}

function Crumbs(p: Place) {
  const { s, resource, current } = p;
  return (
    <nav class="crumbs" aria-label="Path">
      <a href={`${projectPath(s.project.id)}/resources/${enc(resource.id)}`}>{resource.name}</a> ›{" "}
      <a href={browserPath(s.project.id, resource.id)}>Objects</a>
      {p.trail.map((o) => (
        <>
          {" › "}
          <a href={browserPath(s.project.id, resource.id, o.id)}>{o.name ?? o.id}</a>
        </>
      ))}
      {current && ` › ${current.name ?? current.id}`}
    </nav>
  );
}

function Tree(p: Place & { objects: ObjectRecord[] }) {
  if (p.objects.length === 0) return <p>No objects here.</p>;
  return (
    <ul class="tree">
      {p.objects.map((o) => (
        <li key={o.id}>
          <a href={browserPath(p.s.project.id, p.resource.id, o.id)}>{o.name ?? o.id}</a>
          {o.name && (
            <span class="sub">
              <code>{o.id}</code>
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}

type Browser = Place & {
  k: Console;
  at: string | null;
  self: string;
  problem: Problem | null;
  values?: { id: string; name: string; organization_id?: string };
  /** The properties textarea's text (and the organization) as posted, when they were refused. */
  properties?: string;
  organization?: string;
  /** The project's organizations, for an object's (none when the user may not read them). */
  organizations: Organization[];
};

const ORGANIZATION_HINT = "Its organization's roles act on it; no other organization's do.";

function AddForm(p: Browser) {
  return (
    <form method="post" action={`${browserPath(p.s.project.id, p.resource.id)}/new`}>
      <h2>{p.current ? "Add an object inside" : "Add an object at the top"}</h2>
      <Csrf k={p.k} back={p.self} />
      {p.at && <input type="hidden" name="parent" value={p.at} />}
      <Field
        name="id"
        label="Object id"
        value={p.values?.id}
        required
        problem={p.problem}
        hint="Your application's id: letters, digits and . _ : / @ - (at most 200)."
      />
      <Field name="name" label="Name" value={p.values?.name} problem={p.problem} />
      <OrganizationChoice
        value={p.values?.organization_id ?? p.current?.organization_id ?? ""}
        organizations={p.organizations}
        problem={p.problem}
        hint={ORGANIZATION_HINT}
      />
      <button type="submit">Add object</button>
    </form>
  );
}

type Grants = { grants: Grant[]; roles: Map<string, Role> };

function ObjectGrantRow(p: Browser & Grants & { g: Grant }) {
  const { s, g } = p;
  return (
    <tr>
      <td>
        {g.subject.type === "user"
          ? (
            <a href={`${projectPath(s.project.id)}/users/${enc(g.subject.id)}/grants`}>
              <code>{g.subject.id}</code>
            </a>
          )
          : <code>{g.subject.id}</code>}
        <span class="sub">{g.subject.type}</span>
      </td>
      <td>{p.roles.get(g.role_id)?.name ?? g.role_id}</td>
      <td class="wide">
        <Expiry grant={g} />
      </td>
      {s.can("grants:delete") && (
        <td>
          <RevokeButton k={p.k} back={p.self} grant={g} label={`Revoke the grant to ${g.subject.id}`} />
        </td>
      )}
    </tr>
  );
}

function ObjectGrants(p: Browser & Grants) {
  if (p.grants.length === 0) return <p>No grants on this object.</p>;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Subject</th>
            <th scope="col">Role</th>
            <th scope="col" class="wide">Expires</th>
            {p.s.can("grants:delete") && <th scope="col">Action</th>}
          </tr>
        </thead>
        <tbody>
          {p.grants.map((g) => <ObjectGrantRow key={g.id} {...p} g={g} />)}
        </tbody>
      </table>
    </div>
  );
}

/** The object's properties, which conditions will read: a JSON textarea, saved whole. */
function PropertiesForm(p: Browser & { current: ObjectRecord }) {
  const editable = p.s.can("objects:update");
  return (
    <form method="post" action={`${browserPath(p.s.project.id, p.resource.id)}/properties`}>
      <h2>Properties</h2>
      <Csrf k={p.k} back={p.self} />
      <input type="hidden" name="object" value={p.current.id} />
      <PropertiesField value={p.properties ?? propertiesText(p.current.properties)} problem={p.problem} />
      <OrganizationChoice
        id="f-object-organization_id"
        label="Organization of this object"
        value={p.organization ?? p.current.organization_id ?? ""}
        organizations={p.organizations}
        problem={p.problem}
        hint={ORGANIZATION_HINT}
      />
      {editable && <button type="submit">Save properties</button>}
    </form>
  );
}

function DeleteForm(p: Browser & { current: ObjectRecord }) {
  return (
    <form method="post" action={`${browserPath(p.s.project.id, p.resource.id)}/delete`}>
      <h2>Delete this object</h2>
      <Csrf k={p.k} back={p.self} />
      <input type="hidden" name="object" value={p.current.id} />
      <p>
        <label>
          <input type="checkbox" name="cascade" value="true" />{" "}
          With everything inside it (otherwise only an object without children is deleted)
        </label>
      </p>
      <p class="hint">Its grants, and those on what is deleted with it, are revoked.</p>
      <button type="submit" class="danger">Delete object</button>
    </form>
  );
}

type BrowserPageProps = Browser & Grants & {
  nonce: string;
  inside: Page<ObjectRecord>;
  title: string;
  notice: string | null;
};

function BrowserPage(p: BrowserPageProps) {
  const { k, s, current, problem } = p;
  const pagerQuery = new URLSearchParams(p.at ? { at: p.at } : {});
  return (
    <Layout nonce={p.nonce} title={p.title} k={k} project={s.project} tab="resources" operator={s.operator}>
      <Crumbs {...p} />
      <h1>{p.title}</h1>
      <Alert problem={problem} notice={problem ? null : p.notice} />
      {current && (
        <p class="hint">
          Object id <CopyId id={current.id} label="object id" /> · level {current.depth} of at most 32
        </p>
      )}
      <h2>{current ? "Inside" : "Top level"}</h2>
      <Tree {...p} objects={p.inside.data} />
      <Pager query={pagerQuery} page={p.inside} noun="object" />
      {s.can("objects:create") && <AddForm {...p} />}
      {current && s.can("grants:read") && (
        <>
          <h2>Grants on this object</h2>
          <p class="hint">A grant here also holds on everything inside.</p>
          <ObjectGrants {...p} />
        </>
      )}
      {current && <PropertiesForm {...p} current={current} />}
      {current && s.can("objects:delete") && <DeleteForm {...p} current={current} />}
    </Layout>
  );
}

/** The resource's objects one level at a time: the path from the top to `at`, its children, its grants. */
async function browser(
  k: Console,
  problem: Problem | null,
  values?: { id: string; name: string; organization_id?: string },
  properties?: string,
  organization?: string,
) {
  const url = new URL(k.c.req.url);
  const at = url.searchParams.get("at") || (k.field("parent") || null);
  const place = await placeOf(k, at);
  if (place instanceof Response) return place;
  const { s, resource, current } = place;
  const q = new URLSearchParams({ page_size: "50", sort_by: "id", sort_dir: "asc" });
  if (at) q.set("parent_id", at);
  else q.set("top_level", "true");
  const n = url.searchParams.get("page_num");
  if (n) q.set("page_num", n);
  const res = await k.api<Page<ObjectRecord>>("GET", `${objectsApi(k)}?${q}`);
  if (!res.ok) return refusedPage(k, new ApiRefusal(res));
  const [{ grants, roles }, organizations] = await Promise.all([grantsOf(k, place), organizationsOf(k)]);
  const self = browserPath(s.project.id, resource.id, at);
  const title = current ? `${resource.name}: ${current.name ?? current.id}` : `Objects of ${resource.name}`;
  const notice = NOTICES[url.searchParams.get("done") ?? ""] ?? null;
  const props = {
    ...place,
    k,
    at,
    self,
    problem,
    values,
    properties,
    organization,
    organizations,
    grants,
    roles,
    inside: res.body,
    title,
    notice,
  };
  return html(k.c, (nonce) => <BrowserPage nonce={nonce} {...props} />, problem ? 400 : 200);
}

async function addObject(k: Console) {
  const values = { id: k.field("id"), name: k.field("name"), organization_id: k.field("organization_id") };
  const parent = k.field("parent") || null;
  const res = await k.api("POST", objectsApi(k), {
    id: values.id,
    name: values.name || null,
    parent_id: parent,
    organization_id: values.organization_id || null,
  });
  if (!res.ok) return browser(k, problemOf(res), values);
  const at = browserPath(k.c.req.param("pid")!, rid(k), parent);
  return k.c.redirect(`${at}${parent ? "&" : "?"}done=added`, 303);
}

async function deleteObject(k: Console) {
  const id = k.field("object");
  // The refusal is what the page tells; the record beside it only when it can still be read.
  const current = await findIn<ObjectRecord>(k, objectsApi(k), id).catch(() => null);
  const cascade = k.field("cascade") === "true" ? "?cascade=true" : "";
  const res = await k.api("DELETE", `${objectsApi(k)}/${enc(id)}${cascade}`);
  if (!res.ok) {
    k.form.parent = id;
    return browser(k, problemOf(res));
  }
  const up = browserPath(k.c.req.param("pid")!, rid(k), current?.parent_id);
  return k.c.redirect(`${up}${current?.parent_id ? "&" : "?"}done=deleted`, 303);
}

/**
 * Replaces the object's properties with the textarea's JSON (not JSON: refused on the form, 400), and sets its
 * organization when the form offered the choice.
 */
async function saveProperties(k: Console) {
  const id = k.field("object");
  const text = k.field("properties");
  const parsed = parsedProperties(text);
  const organization = "organization_id" in k.form ? k.field("organization_id") : undefined;
  const body = {
    properties: "problem" in parsed ? null : parsed.value,
    ...(organization === undefined ? {} : { organization_id: organization || null }),
  };
  const res = "problem" in parsed ? null : await k.api("PUT", `${objectsApi(k)}/${enc(id)}`, body);
  if (res === null || !res.ok) {
    k.form.parent = id;
    return browser(
      k,
      res === null ? (parsed as { problem: Problem }).problem : problemOf(res),
      undefined,
      text,
      organization,
    );
  }
  return k.c.redirect(`${browserPath(k.c.req.param("pid")!, rid(k), id)}&done=saved`, 303);
}

const showObjects = (k: Console) => browser(k, null);

export function registerObjectPages(app: App) {
  app.get("/console/projects/:pid/resources/:rid/objects", signedIn(app, showObjects));
  app.post("/console/projects/:pid/resources/:rid/objects/new", signedIn(app, addObject));
  app.post("/console/projects/:pid/resources/:rid/objects/delete", signedIn(app, deleteObject));
  app.post("/console/projects/:pid/resources/:rid/objects/properties", signedIn(app, saveProperties));
}
