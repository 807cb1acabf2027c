/**
 * Console pages of a project's clients: create and rotate (the secret shown once), activate or deactivate,
 * permissions, and SCIM tokens (scim_tokens.tsx; each shown once).
 */
import type { Client, DecisionClaim, ScimToken } from "../../openapi/clients.ts";
import type { Resource } from "../../openapi/resources.ts";
import type { App } from "../env.ts";
import { DeleteLink } from "./deletion.tsx";
import {
  Active,
  Alert,
  Check,
  CopyId,
  Csrf,
  Field,
  Layout,
  parsedProperties,
  type Problem,
  problemOf,
  PropertiesField,
  propertiesText,
  SecretOnce,
  SortTh,
  Time,
} from "./layout.tsx";
import {
  areaApi,
  projectPath,
  recordNow,
  refusedPage,
  type Scope,
  scopeOf,
  showRecord,
  uriLines,
} from "./projects.tsx";
import { allResources } from "./resources.tsx";
import { PermissionChecklist } from "./roles.tsx";
import { type Console, findIn, html, signedIn } from "./session.ts";
import { registerAreaList } from "./area_list.tsx";
import { keepOnce, type Once, takeOnce } from "../../domain/console/shown_once.ts";
import { ScimTokens, scimTokensOf } from "./scim_tokens.tsx";

const api = (k: Console) => areaApi(k, "clients");
type Method = Client["token_endpoint_auth_method"];
type Values = {
  name: string;
  description: string;
  is_active: boolean;
  /** Another party's application: its users see a consent page (domain/signin/consent.ts). */
  third_party: boolean;
  /** May use the device authorization grant (RFC 8628). */
  device_grant: boolean;
  decision_reasons: boolean;
  permission_ids: string[];
  /** As posted: the API refuses anything but a method it knows. */
  token_endpoint_auth_method: string;
  /** One URI a line, as the textareas hold them. */
  redirect_uris: string;
  post_logout_redirect_uris: string;
  /** The JSON textarea's text. */
  properties: string;
  /** One decision claim a line, `claim resource_type action`, as the textarea holds them. */
  decision_claims: string;
};

/** A client's type as OAuth names it (RFC 6749 §2.1), from its authentication method at the token endpoint. */
const METHODS: Record<Method, { type: string; says: string }> = {
  none: {
    type: "public",
    says: "Public (none): logins prove themselves with PKCE; the secret (HTTP Basic) serves only the " +
      "client_credentials grant, when the client acts as itself",
  },
  client_secret_basic: {
    type: "confidential",
    says: "Confidential (client_secret_basic): HTTP Basic with the secret",
  },
};

export function ClientType(p: { method: Method }) {
  return (
    <>
      <span class="badge">{METHODS[p.method].type}</span> <code>{p.method}</code>
    </>
  );
}

function registerClientList(app: App) {
  registerAreaList<Client>(app, {
    area: "clients",
    title: "Clients",
    noun: "client",
    searchLabel: "Search clients by name",
    head: (q) => (
      <>
        <SortTh query={q} field="name" label="Name and client id" />
        <th scope="col">Type and authentication</th>
        <SortTh query={q} field="is_active" label="State" class="wide" />
      </>
    ),
    row: (cl, href) => (
      <>
        <td>
          <a href={href}>{cl.name}</a> {cl.is_admin && <span class="badge">admin</span>}
          {cl.metadata_url && <span class="badge">by URL</span>}
          <span class="sub">
            <CopyId id={cl.metadata_url ?? cl.id} label={`client id of ${cl.name}`} />
          </span>
        </td>
        <td>
          <ClientType method={cl.token_endpoint_auth_method} />
        </td>
        <td class="wide">
          <Active on={cl.is_active} />
        </td>
      </>
    ),
  });
}

function ClientFacts(p: { client: Client }) {
  const { client } = p;
  return (
    <dl class="facts card">
      <dt>Client id</dt>
      <dd>
        <CopyId id={client.metadata_url ?? client.id} label="client id" />
      </dd>
      {client.metadata_url && (
        <>
          <dt>Known by</dt>
          <dd>
            the metadata document at its client id, which decides its name and redirect URIs; recorded on its
            first use <Time at={client.created_at} />, last used{" "}
            <Time at={client.last_used_at} />. Block it by making it inactive.
          </dd>
        </>
      )}
      <dt>Type</dt>
      <dd>
        <ClientType method={client.token_endpoint_auth_method} />
        {client.is_admin
          ? " · as the project's admin client it acts as itself: client_credentials with HTTP Basic " +
            "(client_secret_basic)"
          : ""}
      </dd>
      <dt>State</dt>
      <dd>
        <Active on={client.is_active} />
        {client.is_admin ? " · the project's admin client" : ""}
      </dd>
      <dt>Updated</dt>
      <dd>
        <Time at={client.updated_at} />
      </dd>
    </dl>
  );
}

/** The choice of the client's type, as its authentication method at the token endpoint. */
function MethodSelect(p: { value: string; problem: Problem | null; readonly: boolean }) {
  const error = p.problem?.fields["token_endpoint_auth_method"];
  return (
    <>
      <label for="f-token_endpoint_auth_method">Type and authentication at the token endpoint</label>
      <p class="hint" id="f-token_endpoint_auth_method-hint">
        A browser or mobile app that cannot keep a secret is public; a server is confidential. Client
        credentials always need HTTP Basic with the secret.
      </p>
      <select
        id="f-token_endpoint_auth_method"
        name="token_endpoint_auth_method"
        disabled={p.readonly}
        aria-describedby={[
          "f-token_endpoint_auth_method-hint",
          error ? "f-token_endpoint_auth_method-error" : "",
        ].filter(Boolean).join(" ")}
      >
        {(Object.keys(METHODS) as Method[]).map((m) => (
          <option key={m} value={m} selected={m === p.value}>{METHODS[m].says}</option>
        ))}
      </select>
      {error && (
        <p class="field-error" id="f-token_endpoint_auth_method-error">
          {error}
        </p>
      )}
    </>
  );
}

/** The client's own redirect lists; empty, the project's apply (domain/projects/redirect_uris.ts). */
function RedirectFields(p: { v: Values; problem: Problem | null }) {
  return (
    <>
      <Field
        name="redirect_uris"
        label="Redirect URIs of this client"
        value={p.v.redirect_uris}
        problem={p.problem}
        textarea
        hint={"One per line; https, or http on localhost. Matched byte for byte. When this list has any, " +
          "only these are accepted for this client; empty, the project's redirect URIs apply."}
      />
      <Field
        name="post_logout_redirect_uris"
        label="Post-logout redirect URIs of this client"
        value={p.v.post_logout_redirect_uris}
        problem={p.problem}
        textarea
        hint={"Where /logout may send the browser after this client's sign-out, one per line. Empty: the " +
          "project's post-logout redirect URIs apply."}
      />
    </>
  );
}

type Form = {
  k: Console;
  client: Client | null;
  v: Values;
  resources: Resource[];
  problem: Problem | null;
  action: string;
  readonly: boolean;
};

function ClientForm(p: Form) {
  const { v, problem } = p;
  return (
    <form method="post" action={p.action}>
      <Csrf k={p.k} back={p.action} />
      <Field name="name" label="Name" value={v.name} required problem={problem} />
      <Field name="description" label="Description" value={v.description} problem={problem} />
      <MethodSelect value={v.token_endpoint_auth_method} problem={problem} readonly={p.readonly} />
      <Check
        name="is_active"
        label="Active (unchecked: its tokens are refused from the next request on)"
        checked={v.is_active}
      />
      <Check
        name="third_party"
        label="Third-party application (its users are asked for their consent before its first sign-in)"
        checked={v.third_party}
      />
      <Check
        name="device_grant"
        label="Device grant (a CLI or TV shows a code that its user enters at /device; RFC 8628)"
        checked={v.device_grant}
      />
      <Check
        name="decision_reasons"
        label="Reasons in its decisions (context.reason_admin in the AuthZEN answers it asks for)"
        checked={v.decision_reasons}
      />
      <RedirectFields v={v} problem={problem} />
      <Field
        name="decision_claims"
        label="Claims from decisions"
        value={v.decision_claims}
        problem={problem}
        textarea
        hint={"Up to 3 lines of claim name, resource code and permission code, e.g. “deletable record delete”: " +
          "its users' access and ID tokens then carry the ids of the objects they may do that on (at most 100, " +
          "claims_truncated naming the claims cut). Setting them needs access:search."}
      />
      <PropertiesField value={v.properties} problem={problem} />
      <PermissionChecklist
        resources={p.resources}
        checked={v.permission_ids}
        problem={problem}
        readonly={p.readonly}
      />
      {!p.readonly && <button type="submit">{p.client ? "Save client" : "Create client"}</button>}
    </form>
  );
}

function RotateForm(p: { k: Console; action: string }) {
  return (
    <form method="post" action={`${p.action}/secret`}>
      <h2>Secret</h2>
      <Csrf k={p.k} back={p.action} />
      <p class="hint">A new secret replaces the current one; tokens issued before are refused.</p>
      <button type="submit" class="danger">Rotate secret</button>
    </form>
  );
}

function SecretNotice(p: { once: Once }) {
  if (p.once.state === "fresh") {
    return (
      <SecretOnce
        label="The client's credentials"
        id={p.once.credentials.id}
        secret={p.once.credentials.secret}
      />
    );
  }
  return (
    <p class="notice" id="secret-shown">
      The client's secret was shown once and is not shown again. If it was not stored, rotate it below for a
      new one.
    </p>
  );
}

type Extras = { once?: Once; scimOnce?: Once; scimTokens?: ScimToken[] | null };

function ClientPage(p: Form & Extras & { nonce: string; s: Scope; title: string }) {
  const { k, s, client } = p;
  return (
    <Layout nonce={p.nonce} title={p.title} k={k} project={s.project} tab="clients" operator={s.operator}>
      <h1>{p.title}</h1>
      <Alert problem={p.problem} notice={k.c.req.query("done") ? "Saved." : null} />
      {p.once && <SecretNotice once={p.once} />}
      {client && <ClientFacts client={client} />}
      <ClientForm {...p} />
      {client && !p.readonly && !client.metadata_url && <RotateForm k={k} action={p.action} />}
      {client && p.scimTokens && (
        <ScimTokens
          k={k}
          action={p.action}
          tokens={p.scimTokens}
          readonly={p.readonly}
          once={p.scimOnce}
          problem={p.problem}
        />
      )}
      {client && <DeleteLink s={s} area="clients" id={client.id} show={!client.is_admin} />}
    </Layout>
  );
}

async function editPage(
  k: Console,
  client: Client | null,
  values: Values | null,
  problem: Problem | null,
  extras: Pick<Extras, "once" | "scimOnce"> = {},
) {
  let s: Scope, resources: Resource[];
  try {
    s = await scopeOf(k, k.c.req.param("pid")!);
    resources = await allResources(k, s.project.id);
  } catch (err) {
    return refusedPage(k, err);
  }
  const v = values ?? {
    name: client?.name ?? "",
    description: client?.description ?? "",
    is_active: client?.is_active ?? true,
    third_party: client?.third_party ?? false,
    device_grant: client?.device_grant ?? false,
    decision_reasons: client?.decision_reasons ?? true,
    permission_ids: client?.permission_ids ?? [],
    token_endpoint_auth_method: client?.token_endpoint_auth_method ?? "none",
    redirect_uris: (client?.redirect_uris ?? []).join("\n"),
    post_logout_redirect_uris: (client?.post_logout_redirect_uris ?? []).join("\n"),
    properties: propertiesText(client?.properties),
    decision_claims: claimLines(client?.decision_claims ?? []),
  };
  const base = `${projectPath(s.project.id)}/clients`;
  const action = client ? `${base}/${encodeURIComponent(client.id)}` : `${base}/new`;
  const readonly = !s.can(client ? "clients:update" : "clients:create");
  const title = client ? `Client ${client.name}` : "Create client";
  // A client of a metadata document has no credentials, so no SCIM token either.
  const scimTokens = client && !client.metadata_url ? await scimTokensOf(k, client.id) : null;
  const page = { k, s, client, v, resources, problem, action, readonly, title, ...extras, scimTokens };
  return html(k.c, (nonce) => <ClientPage nonce={nonce} {...page} />, problem ? 400 : 200);
}

const values = (k: Console): Values => ({
  name: k.field("name"),
  description: k.field("description"),
  is_active: k.field("is_active") === "true",
  third_party: k.field("third_party") === "true",
  device_grant: k.field("device_grant") === "true",
  decision_reasons: k.field("decision_reasons") === "true",
  permission_ids: k.list("permission_ids"),
  token_endpoint_auth_method: k.field("token_endpoint_auth_method") || "none",
  redirect_uris: k.field("redirect_uris"),
  post_logout_redirect_uris: k.field("post_logout_redirect_uris"),
  properties: k.field("properties"),
  decision_claims: k.field("decision_claims"),
});
const body = (v: Values, properties: unknown, decision_claims: DecisionClaim[]) => ({
  ...v,
  description: v.description || null,
  redirect_uris: uriLines(v.redirect_uris),
  post_logout_redirect_uris: uriLines(v.post_logout_redirect_uris),
  properties,
  decision_claims,
});

const claimLines = (claims: DecisionClaim[]) =>
  claims.map((c) => `${c.claim} ${c.resource_type} ${c.action}`).join("\n");

/** The textarea's lines as decision claims (the API checks the rest), or the problem of a line not of 3 words. */
function parsedClaims(text: string): { value: DecisionClaim[] } | { problem: Problem } {
  const lines = text.split("\n").map((l) => l.trim()).filter(Boolean);
  const value: DecisionClaim[] = [];
  for (const [i, line] of lines.entries()) {
    const words = line.split(/\s+/);
    if (words.length !== 3) {
      const issue = `line ${i + 1} is not “claim resource_type action” (three words)`;
      return {
        problem: { message: `Some fields need attention: ${issue}.`, fields: { decision_claims: issue } },
      };
    }
    value.push({ claim: words[0], resource_type: words[1], action: words[2] });
  }
  return { value };
}

/** The form's JSON and lines as the API's values, or the first problem with them. */
function parsedForm(v: Values): { value: ReturnType<typeof body> } | { problem: Problem } {
  const properties = parsedProperties(v.properties);
  if ("problem" in properties) return properties;
  const claims = parsedClaims(v.decision_claims);
  if ("problem" in claims) return claims;
  return { value: body(v, properties.value, claims.value) };
}
const cid = (k: Console) => k.c.req.param("cid")!;

const showNewClient = (k: Console) => editPage(k, null, null, null);

async function createClient(k: Console) {
  const v = values(k);
  const parsed = parsedForm(v);
  if ("problem" in parsed) return editPage(k, null, v, parsed.problem);
  const res = await k.api<Client & { client_secret: string }>("POST", api(k), parsed.value);
  if (!res.ok) return editPage(k, null, v, problemOf(res));
  return await toSecret(k, res.body.id, res.body.client_secret);
}

/** After a create or a rotation: the secret kept for this session, and the client's page to show it once. */
async function toSecret(k: Console, id: string, secret: string) {
  const { sql, keys } = k.c.get("deps");
  const key = await keepOnce(sql, keys.vault, k.session.secret, { id, secret });
  const page = `${projectPath(k.c.req.param("pid")!)}/clients/${encodeURIComponent(id)}`;
  return k.c.redirect(`${page}?once=${encodeURIComponent(key)}`, 303);
}

async function showClient(k: Console) {
  const key = k.c.req.query("once");
  const { sql, keys } = k.c.get("deps");
  // Read before the page: the secret is spent by this read, whichever instance kept it.
  const once = key === undefined ? undefined : await takeOnce(sql, keys.vault, k.session.secret, key);
  const scimKey = k.c.req.query("scim_once");
  const scimOnce = scimKey === undefined
    ? undefined
    : await takeOnce(sql, keys.vault, k.session.secret, scimKey);
  return await showRecord<Client>(
    k,
    api(k),
    cid(k),
    (found) => editPage(k, found, null, null, { once, scimOnce }),
  );
}

async function saveClient(k: Console) {
  const v = values(k);
  const parsed = parsedForm(v);
  if ("problem" in parsed) return editPage(k, await recordNow<Client>(k, api(k), cid(k)), v, parsed.problem);
  const res = await k.api("PUT", `${api(k)}/${encodeURIComponent(cid(k))}`, parsed.value);
  if (!res.ok) {
    const current = await recordNow<Client>(k, api(k), cid(k));
    return editPage(k, current, v, problemOf(res));
  }
  return k.c.redirect(
    `${projectPath(k.c.req.param("pid")!)}/clients/${encodeURIComponent(cid(k))}?done=1`,
    303,
  );
}

async function rotateSecret(k: Console) {
  const res = await k.api<Client & { client_secret: string }>(
    "POST",
    `${api(k)}/${encodeURIComponent(cid(k))}/secret`,
  );
  if (res.ok) return await toSecret(k, res.body.id, res.body.client_secret);
  // The refusal is what the page tells; the record beside it only when it can still be read.
  const current = await findIn<Client>(k, api(k), cid(k)).catch(() => null);
  return editPage(k, current, null, problemOf(res));
}

/** Makes a SCIM token of the client and shows it once on the client's page (post, redirect, get). */
async function makeScimToken(k: Console) {
  const days = k.field("scim_expires_in_days").trim();
  const res = await k.api<ScimToken & { token: string }>(
    "POST",
    `${api(k)}/${encodeURIComponent(cid(k))}/scim-tokens`,
    {
      description: k.field("scim_description").trim() || null,
      expires_in_days: days === "" ? null : Number(days),
    },
  );
  if (!res.ok) {
    const current = await findIn<Client>(k, api(k), cid(k)).catch(() => null);
    return editPage(k, current, null, problemOf(res));
  }
  const { sql, keys } = k.c.get("deps");
  const key = await keepOnce(sql, keys.vault, k.session.secret, { id: res.body.id, secret: res.body.token });
  const page = `${projectPath(k.c.req.param("pid")!)}/clients/${encodeURIComponent(cid(k))}`;
  return k.c.redirect(`${page}?scim_once=${encodeURIComponent(key)}#scim-tokens`, 303);
}

async function revokeScimToken(k: Console) {
  const res = await k.api(
    "DELETE",
    `${api(k)}/${encodeURIComponent(cid(k))}/scim-tokens/${encodeURIComponent(k.c.req.param("tid")!)}`,
  );
  if (!res.ok) {
    const current = await findIn<Client>(k, api(k), cid(k)).catch(() => null);
    return editPage(k, current, null, problemOf(res));
  }
  const page = `${projectPath(k.c.req.param("pid")!)}/clients/${encodeURIComponent(cid(k))}`;
  return k.c.redirect(`${page}?done=1#scim-tokens`, 303);
}

export function registerClientPages(app: App) {
  registerClientList(app);
  app.get("/console/projects/:pid/clients/new", signedIn(app, showNewClient));
  app.post("/console/projects/:pid/clients/new", signedIn(app, createClient));
  app.get("/console/projects/:pid/clients/:cid", signedIn(app, showClient));
  app.post("/console/projects/:pid/clients/:cid", signedIn(app, saveClient));
  app.post("/console/projects/:pid/clients/:cid/secret", signedIn(app, rotateSecret));
  app.post("/console/projects/:pid/clients/:cid/scim-tokens", signedIn(app, makeScimToken));
  app.post("/console/projects/:pid/clients/:cid/scim-tokens/:tid/revoke", signedIn(app, revokeScimToken));
}
