/** Console pages of a project's organizations: the list (search, sorting, paging) and creating one. */
import type { Organization } from "../../../openapi/organizations.ts";
import type { App } from "../../env.ts";
import { registerAreaList } from "../area_list.tsx";
import { Csrf, Field, Layout, type Problem, problemOf, SortTh, Time } from "../layout.tsx";
import { pid, refusedPage, type Scope, scopeOf } from "../projects.tsx";
import { type Console, html, signedIn } from "../session.ts";
import { domainLines, DOMAINS_HINT, orgPath, orgsApi, orgsPath } from "./kit.tsx";

function registerOrganizationList(app: App) {
  registerAreaList<Organization>(app, {
    area: "organizations",
    title: "Organizations",
    noun: "organization",
    searchLabel: "Search organizations by name, description or domain",
    head: (q) => (
      <>
        <SortTh query={q} field="name" label="Name" />
        <th scope="col">Domains</th>
        <SortTh query={q} field="created_at" label="Created" class="wide" />
      </>
    ),
    row: (o, href) => (
      <>
        <td>
          <a href={href}>{o.name}</a>
          {o.description && <span class="sub">{o.description}</span>}
        </td>
        <td>
          {o.domains.length ? o.domains.map((d) => <code key={d}>{d}</code>) : <span class="hint">none</span>}
        </td>
        <td class="wide">
          <Time at={o.created_at} />
        </td>
      </>
    ),
  });
}

type Values = { name: string; description: string; domains: string };

async function newPage(k: Console, v: Values, problem: Problem | null) {
  let s: Scope;
  try {
    s = await scopeOf(k, pid(k));
  } catch (err) {
    return refusedPage(k, err);
  }
  const action = `${orgsPath(s.project.id)}/new`;
  const readonly = !s.can("organizations:create");
  return html(
    k.c,
    (nonce) => (
      <Layout
        nonce={nonce}
        title="Create organization"
        k={k}
        project={s.project}
        tab="organizations"
        operator={s.operator}
      >
        <p class="crumbs">
          <a href={orgsPath(s.project.id)}>Organizations</a> ›
        </p>
        <h1>Create organization</h1>
        {problem && <p class="alert" role="alert" id="form-error">{problem.message}</p>}
        <p class="hint">
          An organization is one customer company of the application: its members hold organization roles in
          it (docs/organizations.md).
        </p>
        <form method="post" action={action}>
          <Csrf k={k} back={action} />
          <fieldset class="bare" disabled={readonly}>
            <Field name="name" label="Name" value={v.name} required problem={problem} />
            <Field name="description" label="Description" value={v.description} problem={problem} textarea />
            <Field
              name="domains"
              label="Domains"
              value={v.domains}
              problem={problem}
              textarea
              hint={DOMAINS_HINT}
            />
            {!readonly && <button type="submit">Create organization</button>}
          </fieldset>
        </form>
        {readonly && <p class="hint">Creating an organization needs the permission organizations:create.</p>}
      </Layout>
    ),
    problem ? 400 : 200,
  );
}

async function createOrganization(k: Console) {
  const v = { name: k.field("name"), description: k.field("description"), domains: k.field("domains") };
  const res = await k.api<Organization>("POST", orgsApi(k), {
    name: v.name,
    description: v.description || null,
    domains: domainLines(v.domains),
  });
  if (!res.ok) return newPage(k, v, problemOf(res));
  return k.c.redirect(`${orgPath(pid(k), res.body.id)}?done=created`, 303);
}

/** Mounted before the organization's own pages: `…/organizations/new` comes before `…/organizations/:oid`. */
export function registerOrganizationListPages(app: App) {
  registerOrganizationList(app);
  app.get(
    "/console/projects/:pid/organizations/new",
    signedIn(app, (k) => newPage(k, { name: "", description: "", domains: "" }, null)),
  );
  app.post("/console/projects/:pid/organizations/new", signedIn(app, createOrganization));
}
