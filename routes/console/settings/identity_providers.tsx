/**
 * Console pages of a project's upstream identity providers (OpenID Connect): the list, create (from a preset or
 * an issuer), a provider's page with its redirect URI to register upstream, update, activate or deactivate, and
 * delete after a confirmation; a provider may be an organization's own sign-in. All through the admin API as the
 * signed-in user (`…/identity-providers`), so its permissions, discovery check and audit apply; the client secret
 * is write-only and never shown back.
 */
import type { IdentityProvider } from "../../../openapi/identity_providers.ts";
import type { Organization } from "../../../openapi/organizations.ts";
import type { Role } from "../../../openapi/roles.ts";
import type { App } from "../../env.ts";
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
  problemOf,
  Time,
} from "../layout.tsx";
import { areaApi, pid, projectPath, recordNow, refusedPage, type Scope, scopeOf } from "../projects.tsx";
import { ApiRefusal, type Console, findIn, html, signedIn } from "../session.ts";
import { RoleSelect, rolesOf } from "./role_select.tsx";
import { organizationsOf } from "../organizations/kit.tsx";

const api = (k: Console) => areaApi(k, "identity-providers");
const base = (k: Console) => `${projectPath(pid(k))}/identity-providers`;
const iid = (k: Console) => k.c.req.param("iid")!;

type Values = {
  preset: string;
  tenant_id: string;
  display_name: string;
  issuer: string;
  client_id: string;
  client_secret: string;
  remove_secret: boolean;
  scopes: string;
  jit_provisioning: boolean;
  link_by_verified_email: boolean;
  default_role_id: string;
  organization_id: string;
  is_active: boolean;
};

const valuesOf = (p: IdentityProvider | null): Values => ({
  preset: p?.preset ?? "",
  tenant_id: "",
  display_name: p?.display_name ?? "",
  issuer: p?.issuer ?? "",
  client_id: p?.client_id ?? "",
  client_secret: "",
  remove_secret: false,
  scopes: (p?.scopes ?? ["openid", "email", "profile"]).join(" "),
  jit_provisioning: p?.jit_provisioning ?? false,
  link_by_verified_email: p?.link_by_verified_email ?? false,
  default_role_id: p?.default_role_id ?? "",
  organization_id: p?.organization_id ?? "",
  is_active: p?.is_active ?? true,
});

const posted = (k: Console): Values => ({
  preset: k.field("preset"),
  tenant_id: k.field("tenant_id"),
  display_name: k.field("display_name"),
  issuer: k.field("issuer"),
  client_id: k.field("client_id"),
  client_secret: k.field("client_secret"),
  remove_secret: k.field("remove_secret") === "true",
  scopes: k.field("scopes"),
  jit_provisioning: k.field("jit_provisioning") === "true",
  link_by_verified_email: k.field("link_by_verified_email") === "true",
  default_role_id: k.field("default_role_id"),
  organization_id: k.field("organization_id"),
  is_active: k.field("is_active") === "true",
});

/** The fields both requests share; an empty text is left out, so the API's default or current value holds. */
const common = (v: Values) => ({
  client_id: v.client_id,
  scopes: v.scopes ? v.scopes.split(/\s+/).filter(Boolean) : undefined,
  jit_provisioning: v.jit_provisioning,
  link_by_verified_email: v.link_by_verified_email,
  default_role_id: v.default_role_id || null,
  organization_id: v.organization_id || null,
  is_active: v.is_active,
});

const createBody = (v: Values) => ({
  kind: "oidc",
  preset: v.preset || undefined,
  tenant_id: v.tenant_id || undefined,
  display_name: v.display_name || undefined,
  issuer: v.issuer || undefined,
  client_secret: v.client_secret || undefined,
  ...common(v),
});

const updateBody = (v: Values) => ({
  display_name: v.display_name,
  issuer: v.issuer,
  client_secret: v.remove_secret ? null : v.client_secret || undefined,
  ...common(v),
});

function PresetFields(p: { v: Values; problem: Problem | null }) {
  const error = p.problem?.fields["preset"];
  return (
    <>
      <label for="f-preset">Preset (optional)</label>
      <p class="hint" id="f-preset-hint">A preset fills in the issuer and the button's label.</p>
      <select id="f-preset" name="preset" aria-describedby="f-preset-hint">
        <option value="" selected={!p.v.preset}>None: give the issuer below</option>
        <option value="google" selected={p.v.preset === "google"}>Google</option>
        <option value="microsoft_entra_id" selected={p.v.preset === "microsoft_entra_id"}>
          Microsoft Entra ID (with the tenant id)
        </option>
      </select>
      {error && <p class="field-error">{error}</p>}
      <Field name="tenant_id" label="Tenant id (Microsoft only)" value={p.v.tenant_id} problem={p.problem} />
    </>
  );
}

/** Whose sign-in the provider is: the project's, or one organization's own (one the list lacks kept by id). */
function OrganizationSelect(p: { value: string; organizations: Organization[]; problem: Problem | null }) {
  const error = p.problem?.fields["organization_id"];
  const known = p.organizations.some((o) => o.id === p.value);
  return (
    <div>
      <label for="f-organization_id">Whose sign-in</label>
      <p class="hint" id="f-organization_id-hint">
        An organization's own provider shows only on sign-ins to that organization, and whoever signs in
        through it becomes a member (docs/organizations.md).
      </p>
      <select
        id="f-organization_id"
        name="organization_id"
        aria-describedby={error ? "f-organization_id-hint f-organization_id-error" : "f-organization_id-hint"}
      >
        <option value="" selected={!p.value}>The project's (every sign-in)</option>
        {!known && p.value && <option value={p.value} selected>Organization {p.value}</option>}
        {p.organizations.map((o) => (
          <option key={o.id} value={o.id} selected={o.id === p.value}>Organization {o.name}</option>
        ))}
      </select>
      {error && <p class="field-error" id="f-organization_id-error">{error}</p>}
    </div>
  );
}

type FormProps = {
  k: Console;
  provider: IdentityProvider | null;
  v: Values;
  roles: Role[];
  organizations: Organization[];
  problem: Problem | null;
  action: string;
  readonly: boolean;
};

function ProviderForm(p: FormProps) {
  const { v, problem, provider } = p;
  const f = (name: keyof Values) => ({ name, value: String(v[name]), problem });
  return (
    <form method="post" action={p.action}>
      <Csrf k={p.k} back={p.action} />
      <fieldset disabled={p.readonly}>
        <legend>OpenID Connect provider</legend>
        {!provider && <PresetFields v={v} problem={problem} />}
        <Field {...f("display_name")} label="Button label" required={!!provider} />
        <Field {...f("issuer")} label="Issuer" type="url" required={!!provider} hint={ISSUER_HINT} />
        <Field {...f("client_id")} label="Client id at the provider" required />
        <Field
          name="client_secret"
          label="Client secret at the provider"
          type="password"
          autocomplete="new-password"
          problem={problem}
          hint={provider?.has_client_secret
            ? "A secret is set; it is never shown. Leave empty to keep it, or type a new one."
            : "Never shown back. Without one the service signs in as a public client (PKCE only)."}
        />
        {provider?.has_client_secret && (
          <Check name="remove_secret" label="Remove the secret" checked={v.remove_secret} />
        )}
        <Field {...f("scopes")} label="Scopes" required hint="Separated by spaces; must include openid." />
        <Check
          name="jit_provisioning"
          label="Create a user at the first sign-in of an unknown account"
          checked={v.jit_provisioning}
        />
        <Check
          name="link_by_verified_email"
          label="Link to the user with the same address when both sides say it is verified"
          checked={v.link_by_verified_email}
        />
        <RoleSelect
          value={v.default_role_id}
          roles={p.roles}
          problem={problem}
          label="Role of users created at sign-in"
        />
        <OrganizationSelect value={v.organization_id} organizations={p.organizations} problem={problem} />
        <Check name="is_active" label="Active (its button shows on the login page)" checked={v.is_active} />
        {!p.readonly && <button type="submit">{provider ? "Save provider" : "Create provider"}</button>}
      </fieldset>
    </form>
  );
}

const ISSUER_HINT =
  "Its discovery document is fetched and checked when saved. https (http on loopback only).";

function Facts(p: { idp: IdentityProvider }) {
  const { idp } = p;
  return (
    <dl class="facts card">
      <dt>Provider id</dt>
      <dd>
        <CopyId id={idp.id} label="provider id" />
      </dd>
      <dt>Redirect URI to register at the provider</dt>
      <dd>
        <CopyId id={idp.redirect_uri} label="redirect URI" />
      </dd>
      <dt>State</dt>
      <dd>
        <Active on={idp.is_active} />
      </dd>
      <dt>Client secret</dt>
      <dd>{idp.has_client_secret ? "set (never shown)" : "none (public client, PKCE)"}</dd>
      <dt>Discovery checked</dt>
      <dd>
        <Time at={idp.metadata_fetched_at} />
      </dd>
    </dl>
  );
}

function ActiveForm(p: { k: Console; idp: IdentityProvider; action: string }) {
  return (
    <form method="post" action={`${p.action}/active`}>
      <Csrf k={p.k} back={p.action} />
      <input type="hidden" name="is_active" value={p.idp.is_active ? "false" : "true"} />
      <button type="submit" class="secondary">{p.idp.is_active ? "Deactivate" : "Activate"}</button>
    </form>
  );
}

async function editPage(
  k: Console,
  idp: IdentityProvider | null,
  values: Values | null,
  problem: Problem | null,
) {
  let s: Scope, roles: Role[], organizations: Organization[];
  try {
    s = await scopeOf(k, pid(k));
    [roles, organizations] = await Promise.all([rolesOf(k), organizationsOf(k)]);
  } catch (err) {
    return refusedPage(k, err);
  }
  const action = idp ? `${base(k)}/${encodeURIComponent(idp.id)}` : `${base(k)}/new`;
  const readonly = !s.can(idp ? "identity_providers:update" : "identity_providers:create");
  const title = idp ? `Identity provider ${idp.display_name}` : "Add identity provider";
  // A new provider for an organization: its page links here with `?organization_id=`.
  const v = values ??
    { ...valuesOf(idp), ...(idp ? {} : { organization_id: k.c.req.query("organization_id") ?? "" }) };
  const form = { k, provider: idp, v, roles, organizations, problem, action, readonly };
  return html(
    k.c,
    (nonce) => (
      <Layout
        nonce={nonce}
        title={title}
        k={k}
        project={s.project}
        tab="identity-providers"
        operator={s.operator}
      >
        <p class="crumbs">
          <a href={base(k)}>Identity providers</a> ›
        </p>
        <h1>{title}</h1>
        <Alert problem={problem} notice={k.c.req.query("done") ? "Saved." : null} />
        {idp && <Facts idp={idp} />}
        {idp && !readonly && <ActiveForm k={k} idp={idp} action={action} />}
        <ProviderForm {...form} />
        {readonly && <p class="hint">You may read this provider; changing it needs another permission.</p>}
        {idp && s.can("identity_providers:delete") && (
          <p>
            <a class="danger-link" href={`${action}/delete`}>Delete provider…</a>
          </p>
        )}
      </Layout>
    ),
    problem ? 400 : 200,
  );
}

function ProvidersTable(p: { base: string; list: IdentityProvider[]; organizations: Organization[] }) {
  const orgs = `${projectPath(p.list[0]?.project_id ?? "")}/organizations`;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Button label</th>
            <th scope="col" class="wide">Issuer</th>
            <th scope="col" class="wide">Sign-in of</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {p.list.map((idp) => (
            <tr key={idp.id}>
              <td>
                <a href={`${p.base}/${encodeURIComponent(idp.id)}`}>{idp.display_name}</a>
              </td>
              <td class="wide">
                <code>{idp.issuer}</code>
              </td>
              <td class="wide">
                {idp.organization_id
                  ? (
                    <a href={`${orgs}/${encodeURIComponent(idp.organization_id)}`}>
                      {p.organizations.find((o) => o.id === idp.organization_id)?.name ?? idp.organization_id}
                    </a>
                  )
                  : "the project"}
              </td>
              <td>
                <Active on={idp.is_active} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

async function listProviders(k: Console) {
  let s: Scope, page: Page<IdentityProvider>, organizations: Organization[];
  try {
    s = await scopeOf(k, pid(k));
    [page, organizations] = await Promise.all([
      k.get<Page<IdentityProvider>>(`${api(k)}?page_size=100&sort_by=display_name&sort_dir=asc`),
      organizationsOf(k),
    ]);
  } catch (err) {
    return refusedPage(k, err);
  }
  const notice = k.c.req.query("deleted") ? "Deleted." : null;
  return html(
    k.c,
    (nonce) => (
      <Layout
        nonce={nonce}
        title="Identity providers"
        k={k}
        project={s.project}
        tab="identity-providers"
        operator={s.operator}
      >
        <h1>Identity providers</h1>
        <Alert notice={notice} />
        <p class="hint">
          Upstream OpenID Connect providers: each active one is a button on the project's login page.
        </p>
        {s.can("identity_providers:create") && (
          <a class="button" href={`${base(k)}/new`}>Add identity provider</a>
        )}
        {page.data.length === 0
          ? <p class="card">No identity providers yet.</p>
          : <ProvidersTable base={base(k)} list={page.data} organizations={organizations} />}
      </Layout>
    ),
  );
}

async function createProvider(k: Console) {
  const v = posted(k);
  const res = await k.api<IdentityProvider>("POST", api(k), createBody(v));
  if (!res.ok) return editPage(k, null, v, problemOf(res));
  return k.c.redirect(`${base(k)}/${encodeURIComponent(res.body.id)}?done=1`, 303);
}

async function withProvider(k: Console, then: (idp: IdentityProvider) => Promise<Response>) {
  let idp: IdentityProvider | null;
  try {
    idp = await findIn<IdentityProvider>(k, api(k), iid(k));
  } catch (err) {
    return refusedPage(k, err);
  }
  return idp ? await then(idp) : k.notFound();
}

async function saveProvider(k: Console) {
  const v = posted(k);
  const res = await k.api("PUT", `${api(k)}/${encodeURIComponent(iid(k))}`, updateBody(v));
  if (!res.ok) return editPage(k, await recordNow<IdentityProvider>(k, api(k), iid(k)), v, problemOf(res));
  return k.c.redirect(`${base(k)}/${encodeURIComponent(iid(k))}?done=1`, 303);
}

/** Activate or deactivate: the provider as it is, with its state flipped. */
const setActive = (k: Console) =>
  withProvider(k, async (idp) => {
    const v = { ...valuesOf(idp), is_active: k.field("is_active") === "true" };
    const res = await k.api("PUT", `${api(k)}/${encodeURIComponent(idp.id)}`, updateBody(v));
    if (!res.ok) return editPage(k, idp, null, problemOf(res));
    return k.c.redirect(`${base(k)}/${encodeURIComponent(idp.id)}?done=1`, 303);
  });

const confirmDelete = (k: Console) =>
  withProvider(k, async (idp) => {
    const s = await scopeOf(k, pid(k)).catch((err) => err);
    if (!("project" in s)) return refusedPage(k, s);
    const action = `${base(k)}/${encodeURIComponent(idp.id)}`;
    return html(
      k.c,
      (nonce) => (
        <Layout
          nonce={nonce}
          title="Delete identity provider"
          k={k}
          project={s.project}
          tab="identity-providers"
          operator={s.operator}
        >
          <h1>Delete identity provider {idp.display_name}?</h1>
          <p>
            Its button leaves the login page and the identities linked through it go with it; users keep their
            other ways to sign in. This cannot be undone.
          </p>
          <form method="post" action={`${action}/delete`}>
            <Csrf k={k} back={action} />
            <button type="submit" class="danger">Delete provider</button> <a href={action}>Cancel</a>
          </form>
        </Layout>
      ),
    );
  });

async function deleteProvider(k: Console) {
  const res = await k.api("DELETE", `${api(k)}/${encodeURIComponent(iid(k))}`);
  if (!res.ok && res.status !== 404) {
    const idp = await recordNow<IdentityProvider>(k, api(k), iid(k));
    if (!idp) return refusedPage(k, new ApiRefusal(res));
    return editPage(k, idp, null, problemOf(res));
  }
  return k.c.redirect(`${base(k)}?deleted=1`, 303);
}

export function registerIdentityProviderPages(app: App) {
  const path = "/console/projects/:pid/identity-providers";
  app.get(path, signedIn(app, listProviders));
  app.get(`${path}/new`, signedIn(app, (k) => editPage(k, null, null, null)));
  app.post(`${path}/new`, signedIn(app, createProvider));
  app.get(`${path}/:iid`, signedIn(app, (k) => withProvider(k, (idp) => editPage(k, idp, null, null))));
  app.post(`${path}/:iid`, signedIn(app, saveProvider));
  app.post(`${path}/:iid/active`, signedIn(app, setActive));
  app.get(`${path}/:iid/delete`, signedIn(app, confirmDelete));
  app.post(`${path}/:iid/delete`, signedIn(app, deleteProvider));
}
