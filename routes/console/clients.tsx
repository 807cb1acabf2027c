/** Console pages of a project's clients: create and rotate (the secret shown once), activate or deactivate, permissions. */
import type { Client } from "../../openapi/clients.ts";
import type { Resource } from "../../openapi/resources.ts";
import type { App } from "../env.ts";
import { DeleteLink } from "./deletion.tsx";
import {
  Active,
  Alert,
  Csrf,
  Field,
  Layout,
  type Problem,
  problemOf,
  SecretOnce,
  SortTh,
} from "./layout.tsx";
import { areaApi, projectPath, refusedPage, type Scope, scopeOf } from "./projects.tsx";
import { allResources, findIn } from "./resources.tsx";
import { PermissionChecklist } from "./roles.tsx";
import { type Console, html, signedIn } from "./session.ts";
import { registerAreaList } from "./area_list.tsx";

const api = (k: Console) => areaApi(k, "clients");
type Values = { name: string; description: string; is_active: boolean; permission_ids: string[] };

export function registerClientPages(app: App) {
  registerAreaList<Client>(app, {
    area: "clients",
    title: "Clients",
    noun: "client",
    searchLabel: "Search clients by name",
    head: (q) => (
      <>
        <SortTh query={q} field="name" label="Name" />
        <SortTh query={q} field="is_active" label="State" />
        <th scope="col" class="wide">Client id</th>
      </>
    ),
    row: (cl, href) => (
      <>
        <td>
          <a href={href}>{cl.name}</a> {cl.is_admin && <span class="badge">admin</span>}
        </td>
        <td>
          <Active on={cl.is_active} />
        </td>
        <td class="wide">
          <code>{cl.id}</code>
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
          <form method="post" action={action}>
            <Csrf k={k} back={action} />
            <Field name="name" label="Name" value={v.name} required problem={problem} />
            <Field name="description" label="Description" value={v.description} problem={problem} />
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
      const current = await findIn<Client>(k, api(k), cid(k)).catch(() => null);
      if (!res.ok) return editPage(k, current, null, problemOf(res));
      return editPage(k, current, null, null, { id: res.body.id, secret: res.body.client_secret });
    }),
  );
}
