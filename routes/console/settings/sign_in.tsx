/**
 * Console page of a project's sign-in settings: the second-factor policy (`mfa`), whether addresses must be
 * verified (`require_verified_email`), self-service sign-up (`signup`) and the role it gives (`default_role_id`), and
 * which applications identified by a URL may ask for access (`client_metadata_documents`). Saved through the admin API's
 * `PUT /api/v1/projects/{id}` as the signed-in user, so its permission, coverage rules and audit apply.
 */
import type { Project } from "../../../openapi/projects.ts";
import type { App } from "../../env.ts";
import { Alert, Csrf, Field, Layout, type Problem, problemOf } from "../layout.tsx";
import { pid, projectApi, projectPath, refusedPage, type Scope, scopeOf } from "../projects.tsx";
import { type Console, html, signedIn } from "../session.ts";
import type { Role } from "../../../openapi/roles.ts";
import { RoleSelect, rolesOf } from "./role_select.tsx";

type Values = {
  mfa: string;
  require_verified_email: boolean;
  signup: string;
  domains: string;
  default_role_id: string;
  url_clients: string;
  hosts: string;
};

const MFA: [Project["mfa"], string][] = [
  ["off", "Off: never ask for a second factor"],
  ["optional", "Optional: ask users who enrolled one (the default)"],
  ["required", "Required: users without one enrol right after their password"],
];

const SIGNUP: [string, string][] = [
  ["off", "Off: no “Create an account” link"],
  ["open", "Open: anyone may create an account"],
  ["domains", "Only addresses of these domains"],
];

const URL_CLIENTS: [string, string][] = [
  ["off", "Off: only registered clients (the default)"],
  ["any", "Any host: agents such as MCP clients sign in by the URL of their metadata document"],
  ["hosts", "Only documents on these hosts"],
];

function urlClientsBody(v: Values) {
  return v.url_clients === "hosts" ? { hosts: listOf(v.hosts) } : v.url_clients;
}

/** One radio button a choice, as the sign-in settings' choices show them. */
function Radios(p: { name: string; options: [string, string][]; value: string }) {
  return (
    <>
      {p.options.map(([value, label]) => (
        <p class="check" key={value}>
          <input
            type="radio"
            id={`f-${p.name}-${value}`}
            name={p.name}
            value={value}
            checked={p.value === value}
          />{" "}
          <label for={`f-${p.name}-${value}`}>{label}</label>
        </p>
      ))}
    </>
  );
}

/** A textarea's entries: one a line (or comma-separated), trimmed, without empty ones. */
const listOf = (text: string) => text.split(/[\r\n,]+/).map((d) => d.trim()).filter(Boolean);

const valuesOf = (p: Project): Values => ({
  mfa: p.mfa,
  require_verified_email: p.require_verified_email,
  signup: typeof p.signup === "string" ? p.signup : "domains",
  domains: typeof p.signup === "string" ? "" : p.signup.domains.join("\n"),
  default_role_id: p.default_role_id ?? "",
  url_clients: typeof p.client_metadata_documents === "string" ? p.client_metadata_documents : "hosts",
  hosts: typeof p.client_metadata_documents === "string" ? "" : p.client_metadata_documents.hosts.join("\n"),
});

const posted = (k: Console): Values => ({
  mfa: k.field("mfa"),
  require_verified_email: k.field("require_verified_email") === "true",
  signup: k.field("signup") || "off",
  domains: k.field("domains"),
  default_role_id: k.field("default_role_id"),
  url_clients: k.field("url_clients") || "off",
  hosts: k.field("hosts"),
});

function UrlClientsChoice(p: { v: Values; problem: Problem | null }) {
  const error = p.problem?.fields["client_metadata_documents"];
  return (
    <fieldset aria-describedby={error ? "f-url_clients-error" : undefined}>
      <legend>Applications identified by a URL</legend>
      <p class="hint">
        Agents (MCP clients) name themselves by the https URL of a metadata document when they ask for one of
        this project's APIs. They always show the user the consent page; each is listed among the clients on
        its first use, where it can be blocked.
      </p>
      <Radios name="url_clients" options={URL_CLIENTS} value={p.v.url_clients} />
      <Field
        name="hosts"
        label="Allowed hosts"
        value={p.v.hosts}
        textarea
        plain
        hint="One a line, such as agents.example.com: the host of the document's URL, exactly."
      />
      {error && <p class="field-error" id="f-url_clients-error">{error}</p>}
    </fieldset>
  );
}

function signupBody(v: Values) {
  return v.signup === "domains" ? { domains: listOf(v.domains) } : v.signup;
}

function SignupChoice(p: { v: Values; roles: Role[]; problem: Problem | null }) {
  const error = p.problem?.fields["signup"];
  return (
    <fieldset aria-describedby={error ? "f-signup-error" : undefined}>
      <legend>Self-service sign-up</legend>
      <Radios name="signup" options={SIGNUP} value={p.v.signup} />
      <Field
        name="domains"
        label="Allowed domains"
        value={p.v.domains}
        textarea
        plain
        hint="One a line, such as example.com: the part of the address after its last @, exactly."
      />
      {error && <p class="field-error" id="f-signup-error">{error}</p>}
      <RoleSelect
        value={p.v.default_role_id}
        roles={p.roles}
        problem={p.problem}
        label="Role of new accounts"
        hint="What a user who signs up may do. Users from an identity provider get that provider's role."
      />
    </fieldset>
  );
}

function SettingsForm(
  p: { k: Console; v: Values; roles: Role[]; problem: Problem | null; action: string; readonly: boolean },
) {
  const { v, problem } = p;
  const mfaError = problem?.fields["mfa"];
  return (
    <form method="post" action={p.action}>
      <Csrf k={p.k} back={p.action} />
      <fieldset disabled={p.readonly}>
        <legend>Sign-in</legend>
        <label for="f-mfa">Second factor</label>
        <select id="f-mfa" name="mfa" aria-describedby={mfaError ? "f-mfa-error" : undefined}>
          {MFA.map(([value, label]) => (
            <option key={value} value={value} selected={v.mfa === value}>{label}</option>
          ))}
        </select>
        {mfaError && <p class="field-error" id="f-mfa-error">{mfaError}</p>}
        <p class="check">
          <input
            type="checkbox"
            id="f-require_verified_email"
            name="require_verified_email"
            value="true"
            checked={v.require_verified_email}
          />{" "}
          <label for="f-require_verified_email">
            Require a verified email address (unverified users are offered a verification link instead)
          </label>
        </p>
        <SignupChoice v={v} roles={p.roles} problem={problem} />
        <UrlClientsChoice v={v} problem={problem} />
        {!p.readonly && <button type="submit">Save sign-in settings</button>}
      </fieldset>
      {p.readonly && <p class="hint">You may read these settings; changing them needs projects:update.</p>}
    </form>
  );
}

async function page(k: Console, values: Values | null, problem: Problem | null) {
  let s: Scope, roles: Role[];
  try {
    s = await scopeOf(k, pid(k));
    roles = await rolesOf(k);
  } catch (err) {
    return refusedPage(k, err);
  }
  const v = values ?? valuesOf(s.project);
  const action = `${projectPath(s.project.id)}/sign-in`;
  // Without projects:read the page knows only the project's id: nothing to show, nothing to save.
  const readonly = !s.can("projects:update") || !s.project.created_at;
  return html(
    k.c,
    (nonce) => (
      <Layout
        nonce={nonce}
        title="Sign-in settings"
        k={k}
        project={s.project}
        tab="sign-in"
        operator={s.operator}
      >
        <h1>Sign-in settings</h1>
        <Alert problem={problem} notice={k.c.req.query("done") ? "Saved." : null} />
        <SettingsForm k={k} v={v} roles={roles} problem={problem} action={action} readonly={readonly} />
      </Layout>
    ),
    problem ? 400 : 200,
  );
}

const showSettings = (k: Console) => page(k, null, null);

async function saveSettings(k: Console) {
  const v = posted(k);
  let s: Scope;
  try {
    s = await scopeOf(k, pid(k));
  } catch (err) {
    return refusedPage(k, err);
  }
  if (!s.project.created_at) return page(k, v, { message: "You may not read this project.", fields: {} });
  const res = await k.api("PUT", projectApi(s.project.id), {
    name: s.project.name,
    mfa: v.mfa,
    require_verified_email: v.require_verified_email,
    signup: signupBody(v),
    client_metadata_documents: urlClientsBody(v),
    default_role_id: v.default_role_id || null,
  });
  if (!res.ok) return page(k, v, problemOf(res));
  return k.c.redirect(`${projectPath(s.project.id)}/sign-in?done=1`, 303);
}

export function registerSignInSettings(app: App) {
  app.get("/console/projects/:pid/sign-in", signedIn(app, showSettings));
  app.post("/console/projects/:pid/sign-in", signedIn(app, saveSettings));
}
