/**
 * An organization's page in the console: its facts, the form of its name, description, domains, second-factor
 * policy and properties (joining by domain and its default roles where the API has them), and deleting it after
 * a confirmation that says what goes with it. All through the admin API (`PATCH`/`DELETE …/organizations/{id}`).
 */
import type { IdentityProvider } from "../../../openapi/identity_providers.ts";
import type { Organization } from "../../../openapi/organizations.ts";
import type { Role } from "../../../openapi/roles.ts";
import type { App } from "../../env.ts";
import {
  Active,
  Check,
  CopyId,
  Csrf,
  Field,
  type Page,
  parsedProperties,
  plural,
  type Problem,
  problemOf,
  PropertiesField,
  propertiesText,
  Time,
} from "../layout.tsx";
import { areaApi, pid, projectPath, refusedPage } from "../projects.tsx";
import { ApiRefusal, type Console, html, signedIn } from "../session.ts";
import {
  domainLines,
  DOMAINS_HINT,
  enc,
  noticeOf,
  organizationRoles,
  orgApi,
  OrgFrame,
  orgPath,
  orgsPath,
  type Place,
  placeOf,
  RoleChecks,
  RoleNames,
  withPlace,
} from "./kit.tsx";

/**
 * Joining by domain (`join_by_domain`, `default_role_ids`): read only where the API answers with them, so the
 * page neither shows nor sends what this version of the API does not know.
 */
type Joining = { join_by_domain?: boolean; default_role_ids?: string[] };
const joiningOf = (org: Organization): Joining => org as Joining;
const hasJoining = (org: Organization) => typeof joiningOf(org).join_by_domain === "boolean";

const MFA: Record<Organization["mfa"], string> = {
  inherit: "as the project's policy",
  optional: "optional",
  required: "required",
};

type Values = {
  name: string;
  description: string;
  domains: string;
  mfa: string;
  properties: string;
  join_by_domain: boolean;
  default_role_ids: string[];
};

const valuesOf = (org: Organization): Values => ({
  name: org.name,
  description: org.description ?? "",
  domains: org.domains.join("\n"),
  mfa: org.mfa,
  properties: propertiesText(org.properties),
  join_by_domain: joiningOf(org).join_by_domain ?? false,
  default_role_ids: joiningOf(org).default_role_ids ?? [],
});

const posted = (k: Console): Values => ({
  name: k.field("name"),
  description: k.field("description"),
  domains: k.field("domains"),
  mfa: k.field("mfa"),
  properties: k.field("properties"),
  join_by_domain: k.field("join_by_domain") === "true",
  default_role_ids: k.list("default_role_ids"),
});

/** How many members and pending invitations, where the user may read them (null otherwise). */
async function countsOf(k: Console) {
  const count = async (path: string) => {
    const res = await k.api<Page<unknown>>("GET", path);
    return res.ok ? res.body.pagination.total : null;
  };
  const [members, pending] = await Promise.all([
    count(`${orgApi(k)}/members?page_size=1`),
    count(`${orgApi(k)}/invitations?page_size=1&status=pending`),
  ]);
  return { members, pending };
}

type Counts = Awaited<ReturnType<typeof countsOf>>;

/** The identity providers that are the organization's own sign-in; null where the user may not read them. */
async function providersOf(k: Console, org: Organization): Promise<IdentityProvider[] | null> {
  const res = await k.api<Page<IdentityProvider>>(
    "GET",
    `${areaApi(k, "identity-providers")}?page_size=100&sort_by=display_name&sort_dir=asc`,
  );
  return res.ok ? res.body.data.filter((idp) => idp.organization_id === org.id) : null;
}

/** The organization's own sign-in: its upstream providers, linked, and where to add one. */
function OwnSignIn(p: { place: Place; providers: IdentityProvider[] | null }) {
  if (p.providers === null) return null;
  const { s, org } = p.place;
  const base = `${projectPath(s.project.id)}/identity-providers`;
  return (
    <section aria-labelledby="sign-in-heading">
      <h2 id="sign-in-heading">Its own sign-in</h2>
      {p.providers.length === 0
        ? <p>No identity provider of its own: its members sign in as the project's users do.</p>
        : (
          <ul id="organization-providers">
            {p.providers.map((idp) => (
              <li key={idp.id}>
                <a href={`${base}/${enc(idp.id)}`}>{idp.display_name}</a> <Active on={idp.is_active} />
              </li>
            ))}
          </ul>
        )}
      <p class="hint">
        A sign-in to the organization goes straight to its own provider, and whoever signs in through it
        becomes a member.
      </p>
      {s.can("identity_providers:create") && (
        <a class="button secondary" href={`${base}/new?organization_id=${enc(org.id)}`}>
          Add an identity provider for {org.name}
        </a>
      )}
    </section>
  );
}

function Facts(p: { place: Place; counts: Counts; roles: Role[] }) {
  const { org, s } = p.place;
  const base = orgPath(s.project.id, org.id);
  const joining = joiningOf(org);
  return (
    <dl class="facts card">
      <dt>Organization id</dt>
      <dd>
        <CopyId id={org.id} label="organization id" />
      </dd>
      <dt>Domains</dt>
      <dd>{org.domains.length ? org.domains.map((d) => <code key={d}>{d}</code>) : "none"}</dd>
      <dt>Second factor</dt>
      <dd>{MFA[org.mfa]}</dd>
      {hasJoining(org) && (
        <>
          <dt>Joining by domain</dt>
          <dd>
            {joining.join_by_domain ? "on, with " : "off"}
            {joining.join_by_domain && (
              <RoleNames ids={joining.default_role_ids ?? []} roles={p.roles} projectId={s.project.id} />
            )}
          </dd>
        </>
      )}
      {p.counts.members !== null && (
        <>
          <dt>Members</dt>
          <dd>
            <a href={`${base}/members`}>{plural(p.counts.members, "member")}</a>
          </dd>
        </>
      )}
      {p.counts.pending !== null && (
        <>
          <dt>Invitations</dt>
          <dd>
            <a href={`${base}/invitations`}>{plural(p.counts.pending, "pending invitation")}</a>
          </dd>
        </>
      )}
      <dt>Created</dt>
      <dd>
        <Time at={org.created_at} />
      </dd>
    </dl>
  );
}

function MfaSelect(p: { value: string; problem: Problem | null }) {
  const error = p.problem?.fields["mfa"];
  return (
    <div>
      <label for="f-mfa">Second factor for its members</label>
      <p class="hint" id="f-mfa-hint">
        Changing it needs every permission of the project: the project's admin client or an operator.
      </p>
      <select
        id="f-mfa"
        name="mfa"
        aria-describedby={error ? "f-mfa-hint f-mfa-error" : "f-mfa-hint"}
        aria-invalid={error ? "true" : undefined}
      >
        <option value="inherit" selected={p.value === "inherit"}>As the project's policy (inherit)</option>
        <option value="optional" selected={p.value === "optional"}>Optional</option>
        <option value="required" selected={p.value === "required"}>Required</option>
      </select>
      {error && <p class="field-error" id="f-mfa-error">{error}</p>}
    </div>
  );
}

type FormProps = {
  k: Console;
  place: Place;
  v: Values;
  roles: Role[];
  problem: Problem | null;
  readonly: boolean;
};

function OrganizationForm(p: FormProps) {
  const { v, problem, place } = p;
  const action = orgPath(place.s.project.id, place.org.id);
  return (
    <form method="post" action={action}>
      <Csrf k={p.k} back={action} />
      <fieldset class="bare" disabled={p.readonly}>
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
        <MfaSelect value={v.mfa} problem={problem} />
        {hasJoining(place.org) && (
          <>
            <Check
              name="join_by_domain"
              label="A user who signs in with a verified address of these domains joins the organization"
              checked={v.join_by_domain}
            />
            <RoleChecks
              roles={p.roles}
              checked={v.default_role_ids}
              problem={problem}
              prefix="default"
              name="default_role_ids"
              legend="Roles of members who join by domain"
            />
          </>
        )}
        <PropertiesField value={v.properties} problem={problem} />
        {!p.readonly && <button type="submit">Save organization</button>}
      </fieldset>
    </form>
  );
}

const NOTICES = { created: "The organization was created.", saved: "Saved." };

async function detailsPage(k: Console, place: Place, values: Values | null, problem: Problem | null) {
  const [counts, roles, providers] = await Promise.all([
    countsOf(k),
    organizationRoles(k),
    providersOf(k, place.org),
  ]);
  const { s, org } = place;
  const readonly = !s.can("organizations:update");
  const v = values ?? valuesOf(org);
  const form = { k, place, v, roles, problem, readonly };
  return html(
    k.c,
    (nonce) => (
      <OrgFrame
        nonce={nonce}
        k={k}
        place={place}
        section="details"
        title={`Organization ${org.name}`}
        problem={problem}
        notice={noticeOf(k, NOTICES)}
      >
        {org.description && <p>{org.description}</p>}
        <Facts place={place} counts={counts} roles={roles} />
        <OrganizationForm {...form} />
        <OwnSignIn place={place} providers={providers} />
        {readonly && (
          <p class="hint">You may read this organization; changing it needs organizations:update.</p>
        )}
        {s.can("organizations:delete") && (
          <p>
            <a class="danger-link" href={`${orgPath(s.project.id, org.id)}/delete`}>
              Delete this organization…
            </a>
          </p>
        )}
      </OrgFrame>
    ),
    problem ? 400 : 200,
  );
}

const showOrganization = withPlace((k, place) => detailsPage(k, place, null, null));

/** `PATCH` with every field of the form; joining by domain only where the API has it. */
const saveOrganization = withPlace(async (k, place) => {
  const v = posted(k);
  const properties = parsedProperties(v.properties);
  if ("problem" in properties) return detailsPage(k, place, v, properties.problem);
  const res = await k.api<Organization>("PATCH", orgApi(k), {
    name: v.name,
    description: v.description || null,
    domains: domainLines(v.domains),
    mfa: v.mfa,
    properties: properties.value,
    ...(hasJoining(place.org)
      ? { join_by_domain: v.join_by_domain, default_role_ids: v.default_role_ids }
      : {}),
  });
  if (!res.ok) {
    if (res.status === 404) return k.notFound();
    return detailsPage(k, place, v, problemOf(res));
  }
  return k.c.redirect(`${orgPath(pid(k), place.org.id)}?done=saved`, 303);
});

function ConfirmDelete(
  p: { nonce: string; k: Console; place: Place; counts: Counts; problem: Problem | null },
) {
  const { s, org } = p.place;
  const back = orgPath(s.project.id, org.id);
  const members = p.counts.members;
  return (
    <OrgFrame
      nonce={p.nonce}
      k={p.k}
      place={p.place}
      section="details"
      title={`Delete organization ${org.name}`}
      problem={p.problem}
    >
      <p>
        This deletes the organization <strong>{org.name}</strong> for good. With it go:
      </p>
      <ul>
        <li>
          its members{members === null ? "" : ` (${plural(members, "member")})`}{" "}
          and their roles there: their tokens of this organization are refused from their next request; the
          users stay in the project
        </li>
        <li>its invitations: their links stop working</li>
        <li>its own identity providers, if it has any: its company's sign-in through them ends</li>
        <li>its domains, which another organization may then take</li>
      </ul>
      <p>
        Its objects stay, the project's. Deleting it needs every permission of the roles its members hold. The
        audit trail keeps its last state.
      </p>
      {s.can("organizations:delete")
        ? (
          <form method="post" action={`${back}/delete`}>
            <Csrf k={p.k} back={`${back}/delete`} />
            <button type="submit" class="danger">Delete organization</button> <a href={back}>Cancel</a>
          </form>
        )
        : <p role="alert">Deleting an organization needs the organizations:delete permission.</p>}
    </OrgFrame>
  );
}

async function confirmPage(k: Console, place: Place, problem: Problem | null) {
  const counts = await countsOf(k);
  return html(
    k.c,
    (nonce) => <ConfirmDelete nonce={nonce} k={k} place={place} counts={counts} problem={problem} />,
    problem ? 403 : 200,
  );
}

const showDelete = withPlace((k, place) => confirmPage(k, place, null));

async function deleteOrganization(k: Console) {
  const res = await k.api("DELETE", orgApi(k));
  if (!res.ok && res.status !== 404) {
    const place = await placeOf(k);
    if (place instanceof Response) return refusedPage(k, new ApiRefusal(res));
    return confirmPage(k, place, problemOf(res));
  }
  return k.c.redirect(`${orgsPath(pid(k))}?deleted=1`, 303);
}

export function registerOrganizationPage(app: App) {
  const path = "/console/projects/:pid/organizations/:oid";
  app.get(path, signedIn(app, showOrganization));
  app.post(path, signedIn(app, saveOrganization));
  app.get(`${path}/delete`, signedIn(app, showDelete));
  app.post(`${path}/delete`, signedIn(app, deleteOrganization));
}
