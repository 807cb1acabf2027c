/**
 * Console pages of a project's roles: their scope (a user's project role, or an organization role held by the
 * members of an organization), and their permissions as a checklist grouped by resource.
 */
import type { Resource } from "../../openapi/resources.ts";
import type { Role, RoleScope } from "../../openapi/roles.ts";
import type { App } from "../env.ts";
import { DeleteLink } from "./deletion.tsx";
import { Alert, CopyId, Csrf, Field, Layout, plural, type Problem, problemOf, SortTh } from "./layout.tsx";
import {
  areaApi,
  projectPath,
  recordNow,
  refusedPage,
  type Scope,
  scopeOf,
  showRecord,
} from "./projects.tsx";
import { allResources } from "./resources.tsx";
import { type Console, html, signedIn } from "./session.ts";
import { registerAreaList } from "./area_list.tsx";

type PermissionProps = {
  resources: Resource[];
  checked: string[];
  readonly?: boolean;
  /** A role's page: each permission's condition (CEL) beside it, by permission id, and its error if refused. */
  conditions?: { text: Record<string, string>; errors: Record<string, string> };
};

/** One fieldset of checkboxes per resource with permissions. */
function ResourceChecks(p: PermissionProps) {
  return (
    <>
      {p.resources.filter((r) => r.permissions.length > 0).map((r) => (
        <fieldset>
          <legend>{r.name} ({r.code})</legend>
          {r.permissions.map((perm) => (
            <span class="check">
              <input
                type="checkbox"
                id={`perm-${perm.id}`}
                name="permission_ids"
                value={perm.id}
                checked={p.checked.includes(perm.id)}
                disabled={p.readonly}
              />{" "}
              <label for={`perm-${perm.id}`}>{`${r.code}:${perm.code}`} — {perm.name}</label>
              {p.conditions && <ConditionInput id={perm.id} code={`${r.code}:${perm.code}`} {...p} />}
            </span>
          ))}
        </fieldset>
      ))}
    </>
  );
}

/** A permission's condition on a role's page: a CEL expression, empty for none (docs/authzen.md § Conditions). */
function ConditionInput(p: PermissionProps & { id: string; code: string }) {
  const error = p.conditions!.errors[p.id];
  const id = `cond-${p.id}`;
  return (
    <span class="condition">
      <label for={id}>Condition on {p.code} (CEL, optional)</label>
      <input
        type="text"
        id={id}
        name={`condition.${p.id}`}
        value={p.conditions!.text[p.id] ?? ""}
        placeholder="resource.properties.owner == subject.id"
        maxlength={1000}
        disabled={p.readonly}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
      />
      {error && <span class="field-error" id={`${id}-error`}>{error}</span>}
    </span>
  );
}

/**
 * Checkboxes of every permission of the project, one group per resource: the application's own resources first,
 * then the admin API's (the default resources) folded in a group of their own, open only when one of them is
 * already checked, so that an application's role is not given an admin permission by accident.
 */
export function PermissionChecklist(
  p: PermissionProps & { problem: Problem | null },
) {
  const error = p.problem?.fields["permission_ids"];
  const own = p.resources.filter((r) => !r.is_default);
  const admin = p.resources.filter((r) => r.is_default && r.permissions.length > 0);
  const adminChecked = admin.some((r) => r.permissions.some((perm) => p.checked.includes(perm.id)));
  const adminCount = admin.reduce((n, r) => n + r.permissions.length, 0);
  return (
    <fieldset aria-describedby={error ? "perm-error" : undefined}>
      <legend>Permissions</legend>
      {error && <p class="field-error" id="perm-error">{error}</p>}
      {own.some((r) => r.permissions.length > 0)
        ? (
          <ResourceChecks
            resources={own}
            checked={p.checked}
            readonly={p.readonly}
            conditions={p.conditions}
          />
        )
        : <p class="hint">The application has no permissions of its own yet.</p>}
      {admin.length > 0 && (
        <details class="admin-permissions" open={adminChecked}>
          <summary>
            Admin API permissions ({plural(adminCount, "permission")}): to manage this project through the
            admin API, not for the application's own users
          </summary>
          <ResourceChecks
            resources={admin}
            checked={p.checked}
            readonly={p.readonly}
            conditions={p.conditions}
          />
        </details>
      )}
    </fieldset>
  );
}

const api = (k: Console) => areaApi(k, "roles");
type Values = {
  /** Chosen when the role is created; never changed. */
  scope: RoleScope;
  code: string;
  name: string;
  description: string;
  permission_ids: string[];
  /** Each checked permission's condition, by id (empty: none). */
  conditions: Record<string, string>;
};

function registerRoleList(app: App) {
  registerAreaList<Role>(app, {
    area: "roles",
    title: "Roles",
    noun: "role",
    searchLabel: "Search roles",
    head: (q) => (
      <>
        <SortTh query={q} field="name" label="Name" />
        <SortTh query={q} field="code" label="Code" />
        <th scope="col">Scope</th>
        <th scope="col" class="wide">Permissions</th>
      </>
    ),
    row: (r, href) => (
      <>
        <td>
          <a href={href}>{r.name}</a>
        </td>
        <td>
          <code>{r.code}</code>
        </td>
        <td>{r.scope}</td>
        <td class="wide">{plural(r.permission_ids.length, "permission")}</td>
      </>
    ),
  });
}

const SCOPES: Record<RoleScope, string> = {
  project: "project (a user's role across the project, or granted on an object)",
  organization: "organization (held by members of an organization, in that organization only)",
};

/** The scope of a new role: set once, when it is created. */
function ScopeSelect(p: { value: RoleScope; problem: Problem | null }) {
  const error = p.problem?.fields["scope"];
  return (
    <>
      <label for="f-scope">Scope</label>
      <p class="hint" id="f-scope-hint">Set when the role is created; it never changes.</p>
      <select
        id="f-scope"
        name="scope"
        aria-describedby={error ? "f-scope-hint f-scope-error" : "f-scope-hint"}
      >
        {(["project", "organization"] as const).map((s) => (
          <option key={s} value={s} selected={s === p.value}>{SCOPES[s]}</option>
        ))}
      </select>
      {error && <p class="field-error" id="f-scope-error">{error}</p>}
    </>
  );
}

type RolePageProps = {
  nonce: string;
  k: Console;
  s: Scope;
  role: Role | null;
  v: Values;
  resources: Resource[];
  problem: Problem | null;
  action: string;
  readonly: boolean;
  title: string;
};

function RolePage(p: RolePageProps) {
  const { k, s, role, v, problem } = p;
  return (
    <Layout nonce={p.nonce} title={p.title} k={k} project={s.project} tab="roles" operator={s.operator}>
      <h1>{p.title}</h1>
      <Alert problem={problem} />
      {role && (
        <p class="hint">
          Role id <CopyId id={role.id} label="role id" />
        </p>
      )}
      <form method="post" action={p.action}>
        <Csrf k={k} back={p.action} />
        <Field name="name" label="Name" value={v.name} required problem={problem} />
        <Field name="code" label="Code" value={v.code} required problem={problem} />
        <Field name="description" label="Description" value={v.description} problem={problem} />
        {role ? <p>Scope: {SCOPES[role.scope]}</p> : <ScopeSelect value={v.scope} problem={problem} />}
        <PermissionChecklist
          resources={p.resources}
          checked={v.permission_ids}
          problem={problem}
          readonly={p.readonly}
          conditions={{ text: v.conditions, errors: conditionErrors(v, problem) }}
        />
        {!p.readonly && <button type="submit">{role ? "Save role" : "Create role"}</button>}
      </form>
      {role && <DeleteLink s={s} area="roles" id={role.id} />}
    </Layout>
  );
}

async function editPage(k: Console, role: Role | null, values: Values | null, problem: Problem | null) {
  let s: Scope, resources: Resource[];
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    resources = await allResources(k, s.project.id);
  } catch (err) {
    return refusedPage(k, err);
  }
  const v = values ??
    (role
      ? {
        scope: role.scope,
        code: role.code,
        name: role.name,
        description: role.description ?? "",
        permission_ids: role.permission_ids,
        conditions: Object.fromEntries(role.conditions.map((c) => [c.permission_id, c.expression])),
      }
      : {
        scope: "project" as const,
        code: "",
        name: "",
        description: "",
        permission_ids: [],
        conditions: {},
      });
  const base = `${projectPath(s.project.id)}/roles`;
  const action = role ? `${base}/${encodeURIComponent(role.id)}` : `${base}/new`;
  const readonly = !s.can(role ? "roles:update" : "roles:create");
  const title = role ? `Role ${role.name}` : "Create role";
  const page = { k, s, role, v, resources, problem, action, readonly, title };
  return html(k.c, (nonce) => <RolePage nonce={nonce} {...page} />, problem ? 400 : 200);
}

function values(k: Console): Values {
  const permissionIds = k.list("permission_ids");
  const conditions: Record<string, string> = {};
  for (const id of permissionIds) {
    const text = k.field(`condition.${id}`).trim();
    if (text) conditions[id] = text;
  }
  return {
    scope: k.field("scope") === "organization" ? "organization" : "project",
    code: k.field("code"),
    name: k.field("name"),
    description: k.field("description"),
    permission_ids: permissionIds,
    conditions,
  };
}

/** The API's `conditions`, in the order of the checked permissions (the order errors are named by). */
const conditionList = (v: Values) =>
  v.permission_ids.filter((id) => id in v.conditions).map((id) => ({
    permission_id: id,
    expression: v.conditions[id],
  }));

/** The API's errors on `conditions.<i>.…`, by the permission they are about. */
function conditionErrors(v: Values, problem: Problem | null): Record<string, string> {
  const out: Record<string, string> = {};
  conditionList(v).forEach((c, i) => {
    const issue = problem?.fields[`conditions.${i}.expression`] ??
      problem?.fields[`conditions.${i}.permission_id`];
    if (issue) out[c.permission_id] = issue;
  });
  return out;
}

const body = (v: Values) => ({
  code: v.code,
  name: v.name,
  description: v.description || null,
  permission_ids: v.permission_ids,
  conditions: conditionList(v),
});
const rid = (k: Console) => k.c.req.param("rid")!;
const rolesPath = (k: Console) => `${projectPath(k.c.req.param("pid")!)}/roles`;

const showNewRole = (k: Console) => editPage(k, null, null, null);

async function createRole(k: Console) {
  const v = values(k);
  const res = await k.api("POST", api(k), { ...body(v), scope: v.scope });
  if (!res.ok) return editPage(k, null, v, problemOf(res));
  return k.c.redirect(`${rolesPath(k)}?done=1`, 303);
}

async function showRole(k: Console) {
  return await showRecord<Role>(k, api(k), rid(k), (found) => editPage(k, found, null, null));
}

async function saveRole(k: Console) {
  const v = values(k);
  const res = await k.api("PUT", `${api(k)}/${encodeURIComponent(rid(k))}`, body(v));
  if (!res.ok) {
    const current = await recordNow<Role>(k, api(k), rid(k));
    return editPage(k, current, v, problemOf(res));
  }
  return k.c.redirect(`${rolesPath(k)}?done=1`, 303);
}

export function registerRolePages(app: App) {
  registerRoleList(app);
  app.get("/console/projects/:pid/roles/new", signedIn(app, showNewRole));
  app.post("/console/projects/:pid/roles/new", signedIn(app, createRole));
  app.get("/console/projects/:pid/roles/:rid", signedIn(app, showRole));
  app.post("/console/projects/:pid/roles/:rid", signedIn(app, saveRole));
}
