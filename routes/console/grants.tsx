/**
 * Console pages of a user's grants: the roles they hold on objects with their expiry, the form to grant a role
 * on an object (optionally until a UTC date and time), and Revoke (also used by the object browser's grants).
 */
import type { Grant } from "../../openapi/objects.ts";
import type { Resource } from "../../openapi/resources.ts";
import type { Role } from "../../openapi/roles.ts";
import type { User } from "../../openapi/users.ts";
import type { App } from "../env.ts";
import { Alert, Csrf, Field, Layout, type Page, Pager, type Problem, problemOf } from "./layout.tsx";
import { browserPath, enc, Expiry, NOTICES, RevokeButton, rolesById } from "./objects.tsx";
import { areaApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { allResources } from "./resources.tsx";
import { ApiRefusal, type Console, findIn, html, signedIn } from "./session.ts";

type GrantValues = { role_id: string; resource: string; object: string; expires: string; condition: string };

type GrantsProps = {
  k: Console;
  s: Scope;
  grants: Grant[];
  roles: Map<string, Role>;
  resources: Resource[];
  self: string;
};

function GrantRow(p: GrantsProps & { g: Grant; byCode: Map<string, Resource> }) {
  const { s, g } = p;
  return (
    <tr>
      <td>
        <a href={browserPath(s.project.id, g.object.resource_id, g.object.id)}>
          <code>{g.object.id}</code>
        </a>
        <span class="sub">{p.byCode.get(g.object.type)?.name ?? g.object.type}</span>
      </td>
      <td>{p.roles.get(g.role_id)?.name ?? g.role_id}</td>
      <td>
        <Expiry grant={g} />
      </td>
      <td>{g.condition ? <code>{g.condition}</code> : "—"}</td>
      {s.can("grants:delete") && (
        <td>
          <RevokeButton k={p.k} back={p.self} grant={g} label={`Revoke the grant on ${g.object.id}`} />
        </td>
      )}
    </tr>
  );
}

function GrantsTable(p: GrantsProps) {
  const byCode = new Map(p.resources.map((r) => [r.code, r]));
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Object</th>
            <th scope="col">Role</th>
            <th scope="col">Expires</th>
            <th scope="col">Condition</th>
            {p.s.can("grants:delete") && <th scope="col">Action</th>}
          </tr>
        </thead>
        <tbody>
          {p.grants.map((g) => <GrantRow key={g.id} {...p} g={g} byCode={byCode} />)}
        </tbody>
      </table>
    </div>
  );
}

/** The form to grant the user a role on an object, optionally until a UTC date and time. */
function GrantForm(p: GrantsProps & { v: GrantValues; problem: Problem | null }) {
  const { v, problem } = p;
  return (
    <form method="post" action={`${p.self}/new`}>
      <h2>Grant a role on an object</h2>
      <Csrf k={p.k} back={p.self} />
      <div>
        <label for="f-role">Role</label>
        <select id="f-role" name="role_id" required>
          {[...p.roles.values()].filter((r) => r.scope === "project").map((r) => (
            <option key={r.id} value={r.id} selected={r.id === v.role_id}>{`${r.name} (${r.code})`}</option>
          ))}
        </select>
        {problem?.fields["role_id"] && <p class="field-error">{problem.fields["role_id"]}</p>}
      </div>
      <div>
        <label for="f-resource">Resource</label>
        <select id="f-resource" name="resource" required>
          {p.resources.map((r) => (
            <option key={r.code} value={r.code} selected={r.code === v.resource}>{r.name}</option>
          ))}
        </select>
        {problem?.fields["object"] && <p class="field-error">{problem.fields["object"]}</p>}
      </div>
      <Field
        name="object"
        label="Object id"
        apiField="object.id"
        value={v.object}
        required
        problem={problem}
      />
      <Field
        name="expires"
        label="Expires (UTC)"
        type="datetime-local"
        apiField="expires_at"
        value={v.expires}
        problem={problem}
        hint="Empty: never."
      />
      <Field
        name="condition"
        label="Condition (CEL)"
        value={v.condition}
        problem={problem}
        hint="Empty: none. Else the grant gives its permissions only when this is true, for example resource.properties.status != 'archived' (docs/authzen.md § Conditions)."
      />
      <button type="submit">Grant</button>
    </form>
  );
}

type GrantsPageProps = GrantsProps & {
  nonce: string;
  user: User;
  page: Page<Grant>;
  v: GrantValues;
  problem: Problem | null;
  notice: string | null;
};

function GrantsPage(p: GrantsPageProps) {
  const { k, s, user, problem } = p;
  const title = `Grants of ${user.display_name}`;
  return (
    <Layout nonce={p.nonce} title={title} k={k} project={s.project} tab="users" operator={s.operator}>
      <p class="crumbs">
        <a href={`${projectPath(s.project.id)}/users`}>Users</a> ›{" "}
        <a href={`${projectPath(s.project.id)}/users/${enc(user.id)}`}>{user.display_name}</a> ›
      </p>
      <h1>{title}</h1>
      <Alert problem={problem} notice={problem ? null : p.notice} />
      <p class="hint">
        A grant gives a role's permissions of one resource on one object and everything inside it, until it
        expires. The user's own role holds across the whole project.
      </p>
      {p.grants.length === 0 ? <p>No grants.</p> : <GrantsTable {...p} />}
      <Pager query={new URLSearchParams()} page={p.page} noun="grant" />
      {s.can("grants:create") && <GrantForm {...p} />}
    </Layout>
  );
}

/** A user's grants (live and expired), and the form to grant a role on an object. */
async function userGrants(k: Console, problem: Problem | null, values?: GrantValues) {
  let s: Scope, user: User | null, resources: Resource[];
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    user = await findIn<User>(k, areaApi(k, "users"), k.c.req.param("uid")!);
    if (!user) return k.notFound();
    resources = (await allResources(k, s.project.id)).filter((r) => !r.is_default);
  } catch (err) {
    return refusedPage(k, err);
  }
  const url = new URL(k.c.req.url);
  const q = new URLSearchParams({
    subject_type: "user",
    subject_id: user.id,
    include_expired: "true",
    page_size: "50",
  });
  const n = url.searchParams.get("page_num");
  if (n) q.set("page_num", n);
  const res = await k.api<Page<Grant>>("GET", `${areaApi(k, "grants")}?${q}`);
  if (!res.ok) return refusedPage(k, new ApiRefusal(res));
  const roles = await rolesById(k);
  const page = res.body;
  const self = `${projectPath(s.project.id)}/users/${enc(user.id)}/grants`;
  const v = values ??
    { role_id: "", resource: resources[0]?.code ?? "", object: "", expires: "", condition: "" };
  const notice = NOTICES[url.searchParams.get("done") ?? ""] ?? null;
  const props = { k, s, user, page, grants: page.data, roles, resources, self, v, problem, notice };
  return html(k.c, (nonce) => <GrantsPage nonce={nonce} {...props} />, problem ? 400 : 200);
}

const showGrants = (k: Console) => userGrants(k, null);

async function grant(k: Console) {
  const v = {
    role_id: k.field("role_id"),
    resource: k.field("resource"),
    object: k.field("object"),
    expires: k.field("expires"),
    condition: k.field("condition").trim(),
  };
  // A datetime-local value has no zone: the form says UTC.
  const expires = v.expires ? `${v.expires.length === 16 ? `${v.expires}:00` : v.expires}Z` : null;
  const res = await k.api("POST", areaApi(k, "grants"), {
    subject: { type: "user", id: k.c.req.param("uid") },
    role_id: v.role_id,
    object: { type: v.resource, id: v.object },
    expires_at: expires,
    condition: v.condition || null,
  });
  if (!res.ok) return userGrants(k, problemOf(res), v);
  return k.c.redirect(
    `${projectPath(k.c.req.param("pid")!)}/users/${enc(k.c.req.param("uid")!)}/grants?done=granted`,
    303,
  );
}

/** Revokes a grant (from a user's grants or the object browser), then back to the page it was on. */
async function revokeGrant(k: Console) {
  const res = await k.api("DELETE", `${areaApi(k, "grants")}/${enc(k.c.req.param("gid")!)}`);
  const back = k.next;
  if (!res.ok) {
    const problem = problemOf(res);
    return html(k.c, (nonce) => (
      <Layout nonce={nonce} title="Not revoked" k={k}>
        <h1>Not revoked</h1>
        <Alert problem={problem} />
        <p>
          <a href={back}>Back</a>
        </p>
      </Layout>
    ), res.status === 404 ? 404 : 403);
  }
  return k.c.redirect(`${back}${back.includes("?") ? "&" : "?"}done=revoked`, 303);
}

export function registerGrantPages(app: App) {
  app.get("/console/projects/:pid/users/:uid/grants", signedIn(app, showGrants));
  app.post("/console/projects/:pid/users/:uid/grants/new", signedIn(app, grant));
  app.post("/console/projects/:pid/grants/:gid/revoke", signedIn(app, revokeGrant));
}
