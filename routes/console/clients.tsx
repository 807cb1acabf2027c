/** Console pages of a project's clients: create and rotate (the secret shown once), activate or deactivate, permissions. */
import type { Client } from "../../openapi/clients.ts";
import type { Resource } from "../../openapi/resources.ts";
import type { App } from "../env.ts";
import { DeleteLink } from "./deletion.tsx";
import {
  Active,
  Alert,
  CopyId,
  Csrf,
  Field,
  Layout,
  type Problem,
  problemOf,
  SecretOnce,
  SortTh,
  Time,
} from "./layout.tsx";
import { areaApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { allResources } from "./resources.tsx";
import { PermissionChecklist } from "./roles.tsx";
import { type Console, findIn, html, signedIn } from "./session.ts";
import { registerAreaList } from "./area_list.tsx";

const api = (k: Console) => areaApi(k, "clients");
type Method = Client["token_endpoint_auth_method"];
type Values = {
  name: string;
  description: string;
  is_active: boolean;
  permission_ids: string[];
  /** As posted: the API refuses anything but a method it knows. */
  token_endpoint_auth_method: string;
};

/** A client's type as OAuth names it (RFC 6749 §2.1), from its authentication method at the token endpoint. */
const METHODS: Record<Method, { type: string; says: string }> = {
  none: {
    type: "public",
    says: "Public (none): no secret; logins prove themselves with PKCE",
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

export function registerClientPages(app: App) {
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
          <span class="sub">
            <CopyId id={cl.id} label={`client id of ${cl.name}`} />
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

  const editPage = async (
    k: Console,
    client: Client | null,
    values: Values | null,
    problem: Problem | null,
    secret?: { id: string; secret: string },
  ) => {
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
      permission_ids: client?.permission_ids ?? [],
      token_endpoint_auth_method: client?.token_endpoint_auth_method ?? "none",
    };
    const base = `${projectPath(s.project.id)}/clients`;
    const action = client ? `${base}/${encodeURIComponent(client.id)}` : `${base}/new`;
    const readonly = !s.can(client ? "clients:update" : "clients:create");
    const title = client ? `Client ${client.name}` : "Create client";
    return html(
      k.c,
      (nonce) => (
        <Layout nonce={nonce} title={title} k={k} project={s.project} tab="clients" operator={s.operator}>
          <h1>{title}</h1>
          <Alert problem={problem} notice={k.c.req.query("done") ? "Saved." : null} />
          {secret && <SecretOnce label="The client's credentials" id={secret.id} secret={secret.secret} />}
          {client && (
            <dl class="facts card">
              <dt>Client id</dt>
              <dd>
                <CopyId id={client.id} label="client id" />
              </dd>
              <dt>Type</dt>
              <dd>
                <ClientType method={client.token_endpoint_auth_method} />
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
          )}
          <form method="post" action={action}>
            <Csrf k={k} back={action} />
            <Field name="name" label="Name" value={v.name} required problem={problem} />
            <Field name="description" label="Description" value={v.description} problem={problem} />
            <label for="f-token_endpoint_auth_method">Type and authentication at the token endpoint</label>
            <p class="hint" id="f-token_endpoint_auth_method-hint">
              A browser or mobile app that cannot keep a secret is public; a server is confidential. Client
              credentials always need HTTP Basic with the secret.
            </p>
            <select
              id="f-token_endpoint_auth_method"
              name="token_endpoint_auth_method"
              disabled={readonly}
              aria-describedby={[
                "f-token_endpoint_auth_method-hint",
                problem?.fields["token_endpoint_auth_method"] ? "f-token_endpoint_auth_method-error" : "",
              ].filter(Boolean).join(" ")}
            >
              {(Object.keys(METHODS) as Method[]).map((m) => (
                <option value={m} selected={m === v.token_endpoint_auth_method}>{METHODS[m].says}</option>
              ))}
            </select>
            {problem?.fields["token_endpoint_auth_method"] && (
              <p class="field-error" id="f-token_endpoint_auth_method-error">
                {problem.fields["token_endpoint_auth_method"]}
              </p>
            )}
            <p class="check">
              <input type="checkbox" id="f-is_active" name="is_active" value="true" checked={v.is_active} />
              {" "}
              <label for="f-is_active">
                Active (unchecked: its tokens are refused from the next request on)
              </label>
            </p>
            <PermissionChecklist
              resources={resources}
              checked={v.permission_ids}
              problem={problem}
              readonly={readonly}
            />
            {!readonly && <button type="submit">{client ? "Save client" : "Create client"}</button>}
          </form>
          {client && !readonly && (
            <form method="post" action={`${action}/secret`}>
              <h2>Secret</h2>
              <Csrf k={k} back={action} />
              <p class="hint">A new secret replaces the current one; tokens issued before are refused.</p>
              <button type="submit" class="danger">Rotate secret</button>
            </form>
          )}
          {client && <DeleteLink s={s} area="clients" id={client.id} show={!client.is_admin} />}
        </Layout>
      ),
      problem ? 400 : 200,
    );
  };

  const values = (k: Console): Values => ({
    name: k.field("name"),
    description: k.field("description"),
    is_active: k.field("is_active") === "true",
    permission_ids: k.list("permission_ids"),
    token_endpoint_auth_method: k.field("token_endpoint_auth_method") || "none",
  });
  const body = (v: Values) => ({ ...v, description: v.description || null });
  const cid = (k: Console) => k.c.req.param("cid")!;

  app.get("/console/projects/:pid/clients/new", signedIn(app, (k) => editPage(k, null, null, null)));
  app.post(
    "/console/projects/:pid/clients/new",
    signedIn(app, async (k) => {
      const v = values(k);
      const res = await k.api<Client & { client_secret: string }>("POST", api(k), body(v));
      if (!res.ok) return editPage(k, null, v, problemOf(res));
      return editPage(k, res.body, null, null, { id: res.body.id, secret: res.body.client_secret });
    }),
  );
  app.get(
    "/console/projects/:pid/clients/:cid",
    signedIn(app, async (k) => {
      try {
        const found = await findIn<Client>(k, api(k), cid(k));
        return found ? editPage(k, found, null, null) : k.notFound();
      } catch (err) {
        return refusedPage(k, err);
      }
    }),
  );
  app.post(
    "/console/projects/:pid/clients/:cid",
    signedIn(app, async (k) => {
      const v = values(k);
      const res = await k.api("PUT", `${api(k)}/${encodeURIComponent(cid(k))}`, body(v));
      if (!res.ok) {
        // The refusal is what the page tells; the record beside it only when it can still be read.
        const current = await findIn<Client>(k, api(k), cid(k)).catch(() => null);
        return editPage(k, current, v, problemOf(res));
      }
      return k.c.redirect(
        `${projectPath(k.c.req.param("pid")!)}/clients/${encodeURIComponent(cid(k))}?done=1`,
        303,
      );
    }),
  );
  app.post(
    "/console/projects/:pid/clients/:cid/secret",
    signedIn(app, async (k) => {
      const res = await k.api<Client & { client_secret: string }>(
        "POST",
        `${api(k)}/${encodeURIComponent(cid(k))}/secret`,
      );
      // The refusal is what the page tells; the record beside it only when it can still be read.
      const current = await findIn<Client>(k, api(k), cid(k)).catch(() => null);
      if (!res.ok) return editPage(k, current, null, problemOf(res));
      return editPage(k, current, null, null, { id: res.body.id, secret: res.body.client_secret });
    }),
  );
}
