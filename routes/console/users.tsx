/** Console pages of a project's users: create, edit, role, activate or deactivate, set a password. */
import type { Role } from "../../openapi/roles.ts";
import type { User } from "../../openapi/users.ts";
import type { App } from "../env.ts";
import { DeleteLink } from "./deletion.tsx";
import {
  Active,
  Alert,
  CopyId,
  Csrf,
  Field,
  Layout,
  type Page,
  type Problem,
  problemOf,
  SortTh,
  Time,
} from "./layout.tsx";
import { areaApi, projectApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { allResources } from "./resources.tsx";
import { ApiRefusal, type Console, findIn, html, signedIn } from "./session.ts";
import { registerAreaList } from "./area_list.tsx";

const api = (k: Console) => areaApi(k, "users");
type Values = Record<"display_name" | "email" | "external_user_id" | "role_id" | "password", string> & {
  is_active: boolean;
};

async function rolesOf(k: Console, projectId: string): Promise<Role[]> {
  const page = await k.get<Page<Role>>(
    `${projectApi(projectId, "roles")}?page_size=100&sort_by=name&sort_dir=asc`,
  );
  return page.data;
}

/**
 * The `resource:permission` codes the user holds now, by AuthZEN action search on each resource of the project.
 * AuthZEN answers about the token's own project: null where the console's token cannot ask (another project's
 * page, or no `access:evaluate`).
 */
async function effectivePermissions(k: Console, s: Scope, user: User): Promise<string[] | null> {
  if (k.session.projectId !== s.project.id || !s.can("access:evaluate")) return null;
  try {
    const codes: string[] = [];
    for (const r of await allResources(k, s.project.id)) {
      for (let token = "";;) {
        const found = await k.api<{ page: { next_token: string }; results: { name: string }[] }>(
          "POST",
          "/access/v1/search/action",
          {
            subject: { type: "user", id: user.id },
            resource: { type: r.code, id: "*" },
            page: { limit: 1000, ...(token ? { token } : {}) },
          },
        );
        if (!found.ok) return null;
        codes.push(...found.body.results.map((a) => `${r.code}:${a.name}`));
        token = found.body.page.next_token;
        if (!token) break;
      }
    }
    return codes;
  } catch (err) {
    if (err instanceof ApiRefusal) return null;
    throw err;
  }
}

/**
 * The user's effective permissions: as AuthZEN's action search answers them where the console's token may ask
 * (its own project, with `access:evaluate`), else as the admin API reports them through the user's role.
 */
function Effective(p: { codes: string[] | null; held: string[] | undefined; role: Role | undefined }) {
  const codes = p.codes ?? p.held;
  if (!codes) return null;
  return (
    <section aria-labelledby="effective-heading">
      <h2 id="effective-heading">Effective permissions</h2>
      <p class="hint">
        {p.codes
          ? "What the user may do now (AuthZEN action search, as an application asking would be answered)."
          : `What the user holds now through ${
            p.role ? `the role ${p.role.name}` : "their role"
          }. AuthZEN's own answer (action search) is shown in the project's own console, to a user holding ` +
            "access:evaluate."}
      </p>
      {codes.length === 0
        ? <p>None: the user may do nothing now{p.role ? "" : " (no role)"}.</p>
        : (
          <ul class="perms" id="permission-list">
            {codes.map((c) => <li key={c}>{c}</li>)}
          </ul>
        )}
    </section>
  );
}

/** What the user page says after mailing a link (`?mailed=`). */
const MAILED: Record<string, string> = {
  "password-reset": "A password reset link is on its way.",
  invitation: "A new invitation is on its way.",
  verification: "A verification link is on its way.",
};

/** Mail the user a link: a password reset, the invitation again (no password yet), a verification. */
function MailActions(p: { k: Console; user: User; action: string }) {
  const ops: [string, string][] = [
    ["password-reset", "Mail a password reset link"],
    ...(p.user.pending_email || !p.user.email_verified
      ? [["verification", "Mail a verification link"] as [string, string]]
      : []),
  ];
  return (
    <section aria-labelledby="mail-heading">
      <h2 id="mail-heading">Mail</h2>
      <p>Links go to {p.user.pending_email ?? p.user.email} and work once (see docs/email.md).</p>
      {ops.map(([op, label]) => (
        <form method="post" action={`${p.action}/mail/${op}`}>
          <Csrf k={p.k} back={p.action} />
          <button type="submit">{label}</button>
        </form>
      ))}
      <form method="post" action={`${p.action}/mail/invitation`}>
        <Csrf k={p.k} back={p.action} />
        <button type="submit">Send the invitation again (users without a password)</button>
      </form>
    </section>
  );
}

export function registerUserPages(app: App) {
  registerAreaList<User>(app, {
    area: "users",
    title: "Users",
    noun: "user",
    searchLabel: "Search users by name or email",
    head: (q) => (
      <>
        <SortTh query={q} field="display_name" label="Name" />
        <SortTh query={q} field="email" label="Email or external id" />
        <SortTh query={q} field="is_active" label="State" class="wide" />
      </>
    ),
    row: (u, href) => (
      <>
        <td>
          <a href={href}>{u.display_name}</a>
          <span class="sub">
            <CopyId id={u.id} label={`user id of ${u.display_name}`} />
          </span>
        </td>
        <td>
          {u.email ?? u.external_user_id}
          {u.email ? <span class="sub">{u.email_verified ? "verified" : "not verified"}</span> : ""}
        </td>
        <td class="wide">
          <Active on={u.is_active} />
        </td>
      </>
    ),
  });

  const editPage = async (k: Console, user: User | null, values: Values | null, problem: Problem | null) => {
    let s: Scope, roles: Role[];
    try {
      s = await scopeOf(k, k.c.req.param("pid")!);
      roles = await rolesOf(k, s.project.id);
    } catch (err) {
      return refusedPage(k, err);
    }
    const effective = user ? await effectivePermissions(k, s, user) : null;
    const v: Values = values ?? {
      display_name: user?.display_name ?? "",
      email: user?.email ?? "",
      external_user_id: user?.external_user_id ?? "",
      role_id: user?.role_id ?? "",
      password: "",
      is_active: user?.is_active ?? true,
    };
    const base = `${projectPath(s.project.id)}/users`;
    const action = user ? `${base}/${encodeURIComponent(user.id)}` : `${base}/new`;
    const readonly = !s.can(user ? "users:update" : "users:create");
    const title = user ? `User ${user.display_name}` : "Create user";
    const roleError = problem?.fields["role_id"];
    const role = user?.role_id ? roles.find((r) => r.id === user.role_id) : undefined;
    return html(
      k.c,
      (nonce) => (
        <Layout nonce={nonce} title={title} k={k} project={s.project} tab="users" operator={s.operator}>
          <h1>{title}</h1>
          <Alert problem={problem} notice={user ? MAILED[k.c.req.query("mailed") ?? ""] : null} />
          {user && (
            <dl class="facts card">
              <dt>User id</dt>
              <dd>
                <CopyId id={user.id} label="user id" />
              </dd>
              <dt>Role</dt>
              <dd>
                {role
                  ? (
                    <a href={`${projectPath(s.project.id)}/roles/${encodeURIComponent(role.id)}`}>
                      {role.name}
                    </a>
                  )
                  : "none"}
              </dd>
              <dt>State</dt>
              <dd>
                <Active on={user.is_active} />
              </dd>
              <dt>Email</dt>
              <dd>
                {user.email
                  ? `${user.email} (${user.email_verified ? "verified" : "not verified"})${
                    user.pending_email ? `, changing to ${user.pending_email} once that is verified` : ""
                  }`
                  : "none"}
              </dd>
              <dt>Created</dt>
              <dd>
                <Time at={user.created_at} />
              </dd>
              <dt>Sessions</dt>
              <dd>
                <a href={`${action}/sessions`}>Sessions of {user.display_name}</a>
              </dd>
              <dt>Grants</dt>
              <dd>
                <a href={`${action}/grants`}>Roles of {user.display_name} on objects</a>
              </dd>
            </dl>
          )}
          {user && <Effective codes={effective} held={user.permissions} role={role} />}
          <h2>Profile</h2>
          <form method="post" action={action}>
            <Csrf k={k} back={action} />
            <Field
              name="display_name"
              label="Display name"
              value={v.display_name}
              required
              problem={problem}
            />
            <Field
              name="email"
              label="Email"
              type="email"
              value={v.email}
              problem={problem}
              hint="A managed user signs in with email and password."
            />
            <Field
              name="external_user_id"
              label="External user id"
              value={v.external_user_id}
              problem={problem}
              hint="An external user is known by your application's id."
            />
            <label for="f-role_id">Role</label>
            <select
              id="f-role_id"
              name="role_id"
              aria-describedby={roleError ? "f-role_id-error" : undefined}
            >
              <option value="">No role</option>
              {roles.map((r) => (
                <option value={r.id} selected={r.id === v.role_id}>{r.name} ({r.code})</option>
              ))}
            </select>
            {roleError && <p class="field-error" id="f-role_id-error">{roleError}</p>}
            <Field
              name="password"
              label={user ? "Set a new password" : "Password"}
              type="password"
              autocomplete="new-password"
              value=""
              problem={problem}
              hint={user
                ? "Leave empty to keep the current one; a new one ends the user's sessions."
                : "At least 8 characters; required with an email."}
            />
            <p class="check">
              <input type="checkbox" id="f-is_active" name="is_active" value="true" checked={v.is_active} />
              {" "}
              <label for="f-is_active">
                Active (unchecked: the user cannot sign in and their sessions end)
              </label>
            </p>
            {!readonly && <button type="submit">{user ? "Save user" : "Create user"}</button>}
          </form>
          {user && user.email && user.is_active && !readonly && (
            <MailActions k={k} user={user} action={action} />
          )}
          {user && <DeleteLink s={s} area="users" id={user.id} />}
        </Layout>
      ),
      problem ? 400 : 200,
    );
  };

  const values = (k: Console): Values => ({
    display_name: k.field("display_name"),
    email: k.field("email"),
    external_user_id: k.field("external_user_id"),
    role_id: k.field("role_id"),
    password: k.list("password")[0] ?? "",
    is_active: k.field("is_active") === "true",
  });
  const body = (v: Values, create: boolean) => ({
    display_name: v.display_name,
    email: v.email || null,
    external_user_id: v.external_user_id || null,
    role_id: v.role_id || null,
    is_active: v.is_active,
    ...(v.password || create ? { password: v.password || null } : {}),
  });

  app.get("/console/projects/:pid/users/new", signedIn(app, (k) => editPage(k, null, null, null)));
  app.post(
    "/console/projects/:pid/users/new",
    signedIn(app, async (k) => {
      const v = values(k);
      const res = await k.api("POST", api(k), body(v, true));
      if (!res.ok) return editPage(k, null, { ...v, password: "" }, problemOf(res));
      return k.c.redirect(`${projectPath(k.c.req.param("pid")!)}/users?done=1`, 303);
    }),
  );
  app.get(
    "/console/projects/:pid/users/:uid",
    signedIn(app, async (k) => {
      const res = await k.api<User>(
        "GET",
        `${api(k)}/${encodeURIComponent(k.c.req.param("uid")!)}?include_permissions=true`,
      );
      if (res.status === 404) return k.notFound();
      if (!res.ok) return refusedPage(k, new ApiRefusal(res));
      return editPage(k, res.body, null, null);
    }),
  );
  app.post(
    "/console/projects/:pid/users/:uid/mail/:op{password-reset|invitation|verification}",
    signedIn(app, async (k) => {
      const uid = k.c.req.param("uid")!;
      const op = k.c.req.param("op")!;
      const res = await k.api("POST", `${api(k)}/${encodeURIComponent(uid)}/${op}`);
      if (!res.ok) {
        // The refusal is what the page tells; the record beside it only when it can still be read.
        const current = await findIn<User>(k, api(k), uid).catch(() => null);
        return editPage(k, current, null, problemOf(res));
      }
      return k.c.redirect(
        `${projectPath(k.c.req.param("pid")!)}/users/${encodeURIComponent(uid)}?mailed=${op}`,
        303,
      );
    }),
  );
  app.post(
    "/console/projects/:pid/users/:uid",
    signedIn(app, async (k) => {
      const v = values(k);
      const res = await k.api(
        "PUT",
        `${api(k)}/${encodeURIComponent(k.c.req.param("uid")!)}`,
        body(v, false),
      );
      if (!res.ok) {
        // The refusal is what the page tells; the record beside it only when it can still be read.
        const current = await findIn<User>(k, api(k), k.c.req.param("uid")!).catch(() => null);
        return editPage(k, current, { ...v, password: "" }, problemOf(res));
      }
      return k.c.redirect(`${projectPath(k.c.req.param("pid")!)}/users?done=1`, 303);
    }),
  );
}
