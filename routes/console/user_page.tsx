/**
 * A user's page in the console: facts, effective permissions, the organizations they belong to, the profile form
 * and the mail actions.
 */
import type { Role } from "../../openapi/roles.ts";
import type { User } from "../../openapi/users.ts";
import type { UserOrganization } from "../../openapi/organizations.ts";
import { DeleteLink } from "./deletion.tsx";
import {
  Active,
  Alert,
  Check,
  CopyId,
  Csrf,
  Field,
  Layout,
  type Page,
  type Problem,
  PropertiesField,
  propertiesText,
  Time,
} from "./layout.tsx";
import { projectApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { allResources } from "./resources.tsx";
import { ApiRefusal, type Console, html } from "./session.ts";

export type Values =
  & Record<
    | "display_name"
    | "given_name"
    | "family_name"
    | "email"
    | "external_user_id"
    | "role_id"
    | "password"
    | "properties",
    string
  >
  & {
    is_active: boolean;
  };

/** The project roles a user may be given (an organization role is a member's, never a user's `role_id`). */
async function rolesOf(k: Console, projectId: string): Promise<Role[]> {
  const page = await k.get<Page<Role>>(
    `${projectApi(projectId, "roles")}?scope=project&page_size=100&sort_by=name&sort_dir=asc`,
  );
  return page.data;
}

/** The organizations the user belongs to and the organization roles by id; null where they may not be read. */
async function organizationsOf(k: Console, projectId: string, user: User): Promise<Memberships | null> {
  const [orgs, roles] = await Promise.all([
    k.api<Page<UserOrganization>>(
      "GET",
      `${projectApi(projectId, "users")}/${encodeURIComponent(user.id)}/organizations?page_size=100`,
    ),
    k.api<Page<Role>>("GET", `${projectApi(projectId, "roles")}?scope=organization&page_size=100`),
  ]);
  if (!orgs.ok) return null;
  return { page: orgs.body, roles: new Map(roles.ok ? roles.body.data.map((r) => [r.id, r.name]) : []) };
}

type Memberships = { page: Page<UserOrganization>; roles: Map<string, string> };

/** The user's organizations, each linked to the user's membership there, with their roles in it. */
function Organizations(p: { memberships: Memberships | null; projectId: string; user: User }) {
  if (!p.memberships) return null;
  const { page, roles } = p.memberships;
  const base = `${projectPath(p.projectId)}/organizations`;
  return (
    <section aria-labelledby="organizations-heading">
      <h2 id="organizations-heading">Organizations</h2>
      {page.data.length === 0
        ? <p>{p.user.display_name} belongs to no organization.</p>
        : (
          <ul id="organization-list">
            {page.data.map((o) => (
              <li key={o.organization_id}>
                <a href={`${base}/${encodeURIComponent(o.organization_id)}`}>{o.name}</a>:{" "}
                <a
                  href={`${base}/${encodeURIComponent(o.organization_id)}/members/${
                    encodeURIComponent(p.user.id)
                  }`}
                >
                  {o.role_ids.length ? o.role_ids.map((id) => roles.get(id) ?? id).join(", ") : "no roles"}
                </a>
              </li>
            ))}
          </ul>
        )}
      {page.pagination.total > page.data.length && (
        <p class="hint">The first {page.data.length} of {page.pagination.total} organizations.</p>
      )}
    </section>
  );
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

function UserFacts(p: { user: User; role: Role | undefined; projectId: string; action: string }) {
  const { user, role } = p;
  return (
    <dl class="facts card">
      <dt>User id</dt>
      <dd>
        <CopyId id={user.id} label="user id" />
      </dd>
      <dt>Role</dt>
      <dd>
        {role
          ? (
            <a href={`${projectPath(p.projectId)}/roles/${encodeURIComponent(role.id)}`}>
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
      <dt>Password</dt>
      <dd id="password-scheme">{passwordText(user.password_scheme)}</dd>
      <dt>Created</dt>
      <dd>
        <Time at={user.created_at} />
      </dd>
      <dt>Sessions</dt>
      <dd>
        <a href={`${p.action}/sessions`}>Sessions of {user.display_name}</a>
      </dd>
      <dt>Grants</dt>
      <dd>
        <a href={`${p.action}/grants`}>Roles of {user.display_name} on objects</a>
      </dd>
    </dl>
  );
}

/** What the user's password hash is, in words (never the hash). */
function passwordText(scheme: User["password_scheme"]): string {
  if (scheme === null) return "none";
  if (scheme === "argon2id") return "set (argon2id)";
  return `imported (${scheme}); it becomes argon2id at the user's next sign-in`;
}

function RoleSelect(p: { roles: Role[]; value: string; error: string | undefined }) {
  return (
    <>
      <label for="f-role_id">Role</label>
      <select
        id="f-role_id"
        name="role_id"
        aria-describedby={p.error ? "f-role_id-error" : undefined}
      >
        <option value="">No role</option>
        {p.roles.map((r) => (
          <option key={r.id} value={r.id} selected={r.id === p.value}>{r.name} ({r.code})</option>
        ))}
      </select>
      {p.error && <p class="field-error" id="f-role_id-error">{p.error}</p>}
    </>
  );
}

type Form = {
  k: Console;
  user: User | null;
  v: Values;
  roles: Role[];
  problem: Problem | null;
  action: string;
  readonly: boolean;
};

function ProfileForm(p: Form) {
  const { user, v, problem } = p;
  return (
    <form method="post" action={p.action}>
      <Csrf k={p.k} back={p.action} />
      <Field name="display_name" label="Display name" value={v.display_name} required problem={problem} />
      <Field name="given_name" label="Given name" value={v.given_name} problem={problem} />
      <Field name="family_name" label="Family name" value={v.family_name} problem={problem} />
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
      <RoleSelect roles={p.roles} value={v.role_id} error={problem?.fields["role_id"]} />
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
      <PropertiesField value={v.properties} problem={problem} />
      <Check
        name="is_active"
        label="Active (unchecked: the user cannot sign in and their sessions end)"
        checked={v.is_active}
      />
      {!p.readonly && <button type="submit">{user ? "Save user" : "Create user"}</button>}
    </form>
  );
}

function UserPage(
  p: Form & {
    nonce: string;
    s: Scope;
    effective: string[] | null;
    memberships: Memberships | null;
    title: string;
  },
) {
  const { k, s, user, action } = p;
  const role = user?.role_id ? p.roles.find((r) => r.id === user.role_id) : undefined;
  return (
    <Layout nonce={p.nonce} title={p.title} k={k} project={s.project} tab="users" operator={s.operator}>
      <h1>{p.title}</h1>
      <Alert problem={p.problem} notice={user ? MAILED[k.c.req.query("mailed") ?? ""] : null} />
      {user && <UserFacts user={user} role={role} projectId={s.project.id} action={action} />}
      {user && <Effective codes={p.effective} held={user.permissions} role={role} />}
      {user && <Organizations memberships={p.memberships} projectId={s.project.id} user={user} />}
      <h2>Profile</h2>
      <ProfileForm {...p} />
      {user && user.email && user.is_active && !p.readonly && (
        <MailActions k={k} user={user} action={action} />
      )}
      {user && <DeleteLink s={s} area="users" id={user.id} />}
    </Layout>
  );
}

/** A user's page (or the form to create one), with the values and the problem of a refused form. */
export async function editPage(
  k: Console,
  user: User | null,
  values: Values | null,
  problem: Problem | null,
) {
  let s: Scope, roles: Role[];
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    roles = await rolesOf(k, s.project.id);
  } catch (err) {
    return refusedPage(k, err);
  }
  const [effective, memberships] = user
    ? await Promise.all([effectivePermissions(k, s, user), organizationsOf(k, s.project.id, user)])
    : [null, null];
  const v: Values = values ?? {
    display_name: user?.display_name ?? "",
    given_name: user?.given_name ?? "",
    family_name: user?.family_name ?? "",
    email: user?.email ?? "",
    external_user_id: user?.external_user_id ?? "",
    role_id: user?.role_id ?? "",
    password: "",
    is_active: user?.is_active ?? true,
    properties: propertiesText(user?.properties),
  };
  const base = `${projectPath(s.project.id)}/users`;
  const action = user ? `${base}/${encodeURIComponent(user.id)}` : `${base}/new`;
  const readonly = !s.can(user ? "users:update" : "users:create");
  const title = user ? `User ${user.display_name}` : "Create user";
  const page = { k, s, user, v, roles, effective, memberships, problem, action, readonly, title };
  return html(k.c, (nonce) => <UserPage nonce={nonce} {...page} />, problem ? 400 : 200);
}
