/**
 * What the organization pages share (not a page): where an organization is, in the console and in the admin API,
 * its frame (crumbs, heading, the Details · Members · Invitations navigation), a refused form's problem and
 * status, the choice of organization roles as checkboxes (a role the list does not hold kept by its id), and the
 * choice of an organization that the object and identity provider pages use too.
 */
import type { Child } from "hono/jsx";
import type { Organization } from "../../../openapi/organizations.ts";
import type { Role } from "../../../openapi/roles.ts";
import { Alert, type ApiAnswer, Layout, type Page, type Problem, problemOf } from "../layout.tsx";
import { areaApi, pid, projectPath, refusedPage, type Scope, scopeOf } from "../projects.tsx";
import { type Console, findIn } from "../session.ts";

export const enc = encodeURIComponent;
export const oid = (k: Console) => k.c.req.param("oid")!;

/** The console's path of the project's organizations, or of one of them. */
export const orgsPath = (projectId: string) => `${projectPath(projectId)}/organizations`;
export const orgPath = (projectId: string, organizationId: string) =>
  `${orgsPath(projectId)}/${enc(organizationId)}`;

/** The admin API's path of the page's organizations, or of the page's organization (its `oid`). */
export const orgsApi = (k: Console) => areaApi(k, "organizations");
export const orgApi = (k: Console) => `${orgsApi(k)}/${enc(oid(k))}`;

/** A textarea's domains: one a line (or separated by spaces or commas), blanks dropped. */
export const domainLines = (text: string) => text.split(/[\s,]+/).map((d) => d.trim()).filter(Boolean);

export const DOMAINS_HINT =
  "Email domains of the organization's members, one a line (acme.com). A public mail " +
  "domain (gmail.com, outlook.com, …) or one another organization of the project holds is refused.";

/** Where an organization page stands: the project and what the user may do there, and the organization. */
export type Place = { s: Scope; org: Organization };

/** The page's project and organization; a refusal's page, or 404, as the response instead. */
export async function placeOf(k: Console): Promise<Place | Response> {
  let s: Scope, org: Organization | null;
  try {
    [s, org] = await Promise.all([scopeOf(k, pid(k)), findIn<Organization>(k, orgsApi(k), oid(k))]);
  } catch (err) {
    return refusedPage(k, err);
  }
  return org ? { s, org } : k.notFound();
}

/** A handler of an organization's page, given where it stands (or the refusal's page, or 404). */
export const withPlace = (then: (k: Console, place: Place) => Promise<Response>) => async (k: Console) => {
  const place = await placeOf(k);
  return place instanceof Response ? place : await then(k, place);
};

/** A refused form: the problem in plain words, and the page's status (403, 409, else 400). */
export type Refused = { problem: Problem; status: 400 | 403 | 409 };

export const refusedBy = (res: ApiAnswer): Refused => ({
  problem: problemOf(res),
  status: res.status === 403 ? 403 : res.status === 409 ? 409 : 400,
});

/** The project's organization roles by name (the first 100); none when the user may not read roles. */
export async function organizationRoles(k: Console): Promise<Role[]> {
  const res = await k.api<Page<Role>>(
    "GET",
    `${areaApi(k, "roles")}?scope=organization&page_size=100&sort_by=name&sort_dir=asc`,
  );
  return res.ok ? res.body.data : [];
}

/** Role ids as names, each linked to its role; an id the list does not hold stays an id. */
export function RoleNames(p: { ids: string[]; roles: Role[]; projectId: string }) {
  if (p.ids.length === 0) return <span class="hint">no roles</span>;
  return (
    <>
      {p.ids.map((id, i) => {
        const role = p.roles.find((r) => r.id === id);
        return (
          <>
            {i > 0 ? ", " : ""}
            {role
              ? <a href={`${projectPath(p.projectId)}/roles/${enc(id)}`}>{role.name}</a>
              : <code>{id}</code>}
          </>
        );
      })}
    </>
  );
}

/**
 * Checkboxes of the organization roles, sent as `name` (the API's `role_ids` by default): the roles the list
 * holds, then any checked one it does not (kept by id, so that saving does not take it away unseen).
 */
export function RoleChecks(p: {
  roles: Role[];
  checked: string[];
  problem: Problem | null;
  /** Distinguishes the checkboxes of several forms on one page. */
  prefix: string;
  legend?: string;
  name?: string;
  disabled?: boolean;
}) {
  const name = p.name ?? "role_ids";
  const error = p.problem?.fields[name];
  const unknown = p.checked.filter((id) => !p.roles.some((r) => r.id === id));
  const choices: [string, string][] = [
    ...p.roles.map((r): [string, string] => [r.id, `${r.name} (${r.code})`]),
    ...unknown.map((id): [string, string] => [id, id]),
  ];
  const errorId = `${p.prefix}-${name}-error`;
  return (
    <fieldset disabled={p.disabled} aria-describedby={error ? errorId : undefined}>
      <legend>{p.legend ?? "Organization roles"}</legend>
      {error && <p class="field-error" id={errorId}>{error}</p>}
      {choices.length === 0 && (
        <p class="hint">
          The project has no organization roles yet (or you may not read its roles): create one on the Roles
          page with the scope "organization".
        </p>
      )}
      {choices.map(([id, label]) => (
        <span class="check" key={id}>
          <input
            type="checkbox"
            id={`${p.prefix}-${id}`}
            name={name}
            value={id}
            checked={p.checked.includes(id)}
          />{" "}
          <label for={`${p.prefix}-${id}`}>{label}</label>
        </span>
      ))}
    </fieldset>
  );
}

/** The project's organizations by name (the first 100); none when the user may not read them. */
export async function organizationsOf(k: Console): Promise<Organization[]> {
  const res = await k.api<Page<Organization>>(
    "GET",
    `${areaApi(k, "organizations")}?page_size=100&sort_by=name&sort_dir=asc`,
  );
  return res.ok ? res.body.data : [];
}

/**
 * The organization a record belongs to (an object's `organization_id`): none (the project's) or one of the list;
 * one the list lacks is kept by its id. Nothing when the project has no organization the user may read.
 */
export function OrganizationChoice(p: {
  value: string;
  organizations: Organization[];
  problem: Problem | null;
  hint?: string;
  label?: string;
  /** The select's id, when one page has two. */
  id?: string;
}) {
  if (p.organizations.length === 0 && !p.value) return null;
  const error = p.problem?.fields["organization_id"];
  const known = p.organizations.some((o) => o.id === p.value);
  const id = p.id ?? "f-organization_id";
  const described = [p.hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <div>
      <label for={id}>{p.label ?? "Organization"}</label>
      {p.hint && <p class="hint" id={`${id}-hint`}>{p.hint}</p>}
      <select id={id} name="organization_id" aria-describedby={described || undefined}>
        <option value="" selected={!p.value}>None: the project's</option>
        {!known && p.value && <option value={p.value} selected>{p.value}</option>}
        {p.organizations.map((o) => (
          <option key={o.id} value={o.id} selected={o.id === p.value}>{o.name}</option>
        ))}
      </select>
      {error && <p class="field-error" id={`${id}-error`}>{error}</p>}
    </div>
  );
}

export type Section = "details" | "members" | "invitations";

/** The frame of an organization's pages: crumbs, heading, its three sections, the notice or refusal. */
export function OrgFrame(p: {
  nonce: string;
  k: Console;
  place: Place;
  section: Section;
  title: string;
  problem?: Problem | null;
  notice?: string | null;
  children?: Child;
}) {
  const { s, org } = p.place;
  const base = orgPath(s.project.id, org.id);
  const sections: [Section, string, string][] = [
    ["details", "Details", base],
    ["members", "Members", `${base}/members`],
    ["invitations", "Invitations", `${base}/invitations`],
  ];
  return (
    <Layout
      nonce={p.nonce}
      title={p.title}
      k={p.k}
      project={s.project}
      tab="organizations"
      operator={s.operator}
    >
      <p class="crumbs">
        <a href={orgsPath(s.project.id)}>Organizations</a> ›
      </p>
      <h1>{p.title}</h1>
      <nav class="tabs sub" aria-label={`Organization ${org.name}`}>
        <ul>
          {sections.map(([section, label, href]) => (
            <li key={section}>
              <a href={href} aria-current={section === p.section ? "page" : undefined}>{label}</a>
            </li>
          ))}
        </ul>
      </nav>
      <Alert problem={p.problem} notice={p.problem ? null : p.notice} />
      {p.children}
    </Layout>
  );
}

/** A notice named by the page's `?done=`, or null. */
export const noticeOf = (k: Console, notices: Record<string, string>) =>
  notices[k.c.req.query("done") ?? ""] ?? null;
