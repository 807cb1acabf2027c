/**
 * Console pages that delete a resource, role, user or client: a confirmation page that says what goes with
 * the record (and, for a role that users have, which role they move to), then the admin API's DELETE.
 */
import type { Role } from "../../openapi/roles.ts";
import type { App } from "../env.ts";
import { Alert, Csrf, Layout, type Page, plural, type Problem, problemOf } from "./layout.tsx";
import { areaApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { type Console, findIn, html, signedIn } from "./session.ts";

type Area = "resources" | "roles" | "users" | "clients";
type Named = { id: string; name?: string; display_name?: string; code?: string; is_default?: boolean };

/** What goes with each kind of record, as the confirmation page says it. */
const CONSEQUENCES: Record<Area, { noun: string; goes: string[] }> = {
  resources: {
    noun: "resource",
    goes: [
      "its permissions, which leave every role and client that holds them: their holders lose them on their " +
      "next request",
    ],
  },
  roles: {
    noun: "role",
    goes: ["its permissions, from every user who has it (they move to the role you choose below)"],
  },
  users: {
    noun: "user",
    goes: [
      "their sessions and single sign-on sessions: their tokens are refused from their next request",
      "their email and external id, which a new user may then take",
    ],
  },
  clients: {
    noun: "client",
    goes: ["its secret and its permissions: its tokens are refused from its next request", "its sessions"],
  },
};

const nameOf = (r: Named) => r.display_name ?? r.name ?? r.id;

/** Every project role but `except`, for the reassignment choice (users hold project roles only). */
async function otherRoles(k: Console, except: string): Promise<Role[]> {
  const out: Role[] = [];
  for (let n = 1;; n++) {
    const page = await k.get<Page<Role>>(
      `${areaApi(k, "roles")}?scope=project&page_size=100&page_num=${n}&sort_by=name&sort_dir=asc`,
    );
    out.push(...page.data.filter((r) => r.id !== except));
    if (n * 100 >= page.pagination.total) return out;
  }
}

/** How many users have the role (one page of one user is enough to know). */
async function roleUsers(k: Console, roleId: string): Promise<number> {
  const page = await k.get<Page<unknown>>(
    `${areaApi(k, "users")}?page_size=1&role_id=${encodeURIComponent(roleId)}`,
  );
  return page.pagination.total;
}

/** What the confirmation page knows: the record, and for a role that users have, how many and the other roles. */
type Target = { s: Scope; record: Named; users: number; roles: Role[] };

async function targetOf(k: Console, area: Area): Promise<Target | Response> {
  let s: Scope, record: Named | null, roles: Role[] = [], users = 0;
  const id = k.c.req.param("id")!;
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    record = await findIn<Named>(k, areaApi(k, area), id);
    if (record && area === "roles") {
      users = await roleUsers(k, id);
      if (users > 0) roles = await otherRoles(k, id);
    }
  } catch (err) {
    return refusedPage(k, err);
  }
  if (!record) return k.notFound();
  return { s, record, users, roles };
}

/** Why the record cannot be deleted here, or null. */
function blockedOf(area: Area, t: Target): string | null {
  const what = CONSEQUENCES[area];
  return t.record.is_default
    ? "Default resources are read-only and cannot be deleted."
    : !t.s.can(`${area}:delete`)
    ? `Deleting a ${what.noun} needs the ${area}:delete permission.`
    : area === "roles" && t.users > 0 && t.roles.length === 0
    ? "Users have this role and there is no other role to move them to: create one first."
    : null;
}

type Confirm = Target & { k: Console; area: Area; back: string };

function ConfirmForm(p: Confirm) {
  const { users } = p;
  return (
    <form method="post" action={`${p.back}/delete`}>
      <Csrf k={p.k} back={`${p.back}/delete`} />
      {p.area === "roles" && users > 0 && (
        <p>
          <label for="reassign_role_id">
            {plural(users, "user")} {users === 1 ? "has" : "have"} this role. Move them to
          </label>{" "}
          <select id="reassign_role_id" name="reassign_role_id" required>
            {p.roles.map((r) => <option key={r.id} value={r.id}>{r.name} ({r.code})</option>)}
          </select>
        </p>
      )}
      <button type="submit" class="danger">Delete {CONSEQUENCES[p.area].noun}</button>{" "}
      <a href={p.back}>Cancel</a>
    </form>
  );
}

function ConfirmPage(p: Confirm & { nonce: string; problem: Problem | null }) {
  const { k, s, area, record } = p;
  const what = CONSEQUENCES[area];
  const title = `Delete ${what.noun} ${nameOf(record)}`;
  const blocked = blockedOf(area, p);
  return (
    <Layout nonce={p.nonce} title={title} k={k} project={s.project} tab={area} operator={s.operator}>
      <h1>{title}</h1>
      <Alert problem={p.problem} />
      <p>
        This deletes the {what.noun} <strong>{nameOf(record)}</strong>
        {record.code
          ? (
            <>
              {" "}(<code>{record.code}</code>)
            </>
          )
          : ""} for good. With it go:
      </p>
      <ul>
        {what.goes.map((g) => <li key={g}>{g}</li>)}
      </ul>
      <p>The audit trail keeps its last state.</p>
      {blocked ? <p role="alert">{blocked}</p> : <ConfirmForm {...p} />}
    </Layout>
  );
}

/** The confirmation page of deleting a record of an area. */
async function confirmPage(area: Area, k: Console, problem: Problem | null) {
  const target = await targetOf(k, area);
  if (target instanceof Response) return target;
  const id = k.c.req.param("id")!;
  const back = `${projectPath(target.s.project.id)}/${area}/${encodeURIComponent(id)}`;
  const props = { ...target, k, area, back, problem };
  return html(k.c, (nonce) => <ConfirmPage nonce={nonce} {...props} />, problem ? 409 : 200);
}

async function deleteRecord(area: Area, k: Console) {
  const id = encodeURIComponent(k.c.req.param("id")!);
  const reassign = area === "roles" ? k.field("reassign_role_id") : "";
  const query = reassign ? `?${new URLSearchParams({ reassign_role_id: reassign })}` : "";
  const res = await k.api("DELETE", `${areaApi(k, area)}/${id}${query}`);
  if (!res.ok) return confirmPage(area, k, problemOf(res));
  return k.c.redirect(`${projectPath(k.c.req.param("pid")!)}/${area}?deleted=1`, 303);
}

export function registerDeletionPages(app: App) {
  for (const area of ["resources", "roles", "users", "clients"] as const) {
    const path = `/console/projects/:pid/${area}/:id/delete`;
    app.get(path, signedIn(app, (k) => confirmPage(area, k, null)));
    app.post(path, signedIn(app, (k) => deleteRecord(area, k)));
  }
}

/** The link on a record's page to its confirmation page, for those who may delete it. */
export function DeleteLink(p: { s: Scope; area: Area; id: string; show?: boolean }) {
  if (p.show === false || !p.s.can(`${p.area}:delete`)) return null;
  const href = `${projectPath(p.s.project.id)}/${p.area}/${encodeURIComponent(p.id)}/delete`;
  return (
    <p>
      <a href={href} class="danger-link">Delete this {CONSEQUENCES[p.area].noun}…</a>
    </p>
  );
}
