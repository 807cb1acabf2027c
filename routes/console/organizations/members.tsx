/**
 * Console pages of an organization's members: the list with their organization roles (search, a role's members,
 * paging), adding a user of the project by email or id with roles, a member's page to change their roles or
 * remove them. All through the admin API (`…/organizations/{id}/members`), so least privilege applies: giving or
 * taking a role needs its permissions, and a refusal is shown in the API's words.
 */
import type { OrganizationMember } from "../../../openapi/organizations.ts";
import type { Role } from "../../../openapi/roles.ts";
import type { User } from "../../../openapi/users.ts";
import type { App } from "../../env.ts";
import {
  CopyId,
  Csrf,
  Field,
  listQuery,
  type Page,
  Pager,
  type Problem,
  SearchBox,
  SortTh,
  Time,
} from "../layout.tsx";
import { areaApi, projectPath, refusedPage } from "../projects.tsx";
import { ApiRefusal, type Console, html, signedIn } from "../session.ts";
import {
  enc,
  noticeOf,
  organizationRoles,
  orgApi,
  OrgFrame,
  orgPath,
  type Place,
  type Refused,
  refusedBy,
  RoleChecks,
  RoleNames,
  withPlace,
} from "./kit.tsx";

const uid = (k: Console) => k.c.req.param("uid")!;
const membersApi = (k: Console) => `${orgApi(k)}/members`;
const membersPath = (place: Place) => `${orgPath(place.s.project.id, place.org.id)}/members`;

const NOTICES: Record<string, string> = {
  added: "The member was added.",
  saved: "The member's roles were saved.",
  removed: "The member was removed.",
};

type AddValues = { user: string; role_ids: string[] };

function MembersTable(
  p: { place: Place; page: Page<OrganizationMember>; roles: Role[]; q: URLSearchParams },
) {
  const base = membersPath(p.place);
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Organization roles</th>
            <SortTh query={p.q} field="created_at" label="Added" class="wide" />
          </tr>
        </thead>
        <tbody>
          {p.page.data.map((m) => (
            <tr key={m.user_id}>
              <td>
                <a href={`${base}/${enc(m.user_id)}`}>{m.display_name}</a>
                {m.email && <span class="sub">{m.email}</span>}
              </td>
              <td>
                <RoleNames ids={m.role_ids} roles={p.roles} projectId={p.place.s.project.id} />
              </td>
              <td class="wide">
                <Time at={m.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function AddForm(p: { k: Console; place: Place; roles: Role[]; v: AddValues; problem: Problem | null }) {
  const action = `${membersPath(p.place)}/new`;
  return (
    <form method="post" action={action}>
      <h2>Add a member</h2>
      <Csrf k={p.k} back={membersPath(p.place)} />
      <Field
        name="user"
        apiField="user_id"
        label="User (email or user id)"
        value={p.v.user}
        required
        problem={p.problem}
        hint={"A user of this project. Someone without an account yet: invite their address on the " +
          "Invitations page."}
      />
      <RoleChecks roles={p.roles} checked={p.v.role_ids} problem={p.problem} prefix="add" />
      <button type="submit">Add member</button>
    </form>
  );
}

/** A filter of the list by one organization role, beside the search. */
function RoleFilter(p: { roles: Role[]; value: string }) {
  if (p.roles.length === 0) return null;
  return (
    <div>
      <label for="f-role_id">Holding the role</label>
      <select id="f-role_id" name="role_id">
        <option value="" selected={!p.value}>Any role</option>
        {p.roles.map((r) => <option key={r.id} value={r.id} selected={r.id === p.value}>{r.name}</option>)}
      </select>
    </div>
  );
}

async function membersPage(k: Console, place: Place, v: AddValues | null, refused: Refused | null) {
  const problem = refused?.problem ?? null;
  const q = listQuery(k, ["role_id"]);
  const [res, roles] = await Promise.all([
    k.api<Page<OrganizationMember>>("GET", `${membersApi(k)}?${q}`),
    organizationRoles(k),
  ]);
  if (!res.ok) return refusedPage(k, new ApiRefusal(res));
  const { s, org } = place;
  const values = v ?? { user: "", role_ids: [] };
  return html(
    k.c,
    (nonce) => (
      <OrgFrame
        nonce={nonce}
        k={k}
        place={place}
        section="members"
        title={`Members of ${org.name}`}
        problem={problem}
        notice={noticeOf(k, NOTICES)}
      >
        <SearchBox query={q} label="Search members by name or email">
          <RoleFilter roles={roles} value={q.get("role_id") ?? ""} />
        </SearchBox>
        {res.body.data.length === 0
          ? <p class="card">No members{q.get("search") || q.get("role_id") ? " found" : " yet"}.</p>
          : <MembersTable place={place} page={res.body} roles={roles} q={q} />}
        <Pager query={q} page={res.body} noun="member" />
        {s.can("organizations:update") && (
          <AddForm k={k} place={place} roles={roles} v={values} problem={problem} />
        )}
      </OrgFrame>
    ),
    refused?.status ?? 200,
  );
}

/** The user the form names: an id as given; an address, the project's user with it (by the users' search). */
async function userOf(k: Console, text: string): Promise<{ id: string } | { refused: Refused }> {
  if (!text.includes("@")) return { id: text };
  const res = await k.api<Page<User>>(
    "GET",
    `${areaApi(k, "users")}?${new URLSearchParams({ search: text, page_size: "100" })}`,
  );
  if (!res.ok) {
    const { problem, status } = refusedBy(res);
    const fields = { user_id: "finding a user by address needs users:read: give the user id" };
    return { refused: { problem: { ...problem, fields }, status } };
  }
  const found = res.body.data.find((u) => u.email?.toLowerCase() === text.toLowerCase());
  if (found) return { id: found.id };
  return {
    refused: {
      problem: {
        message: "Some fields need attention: no user of this project has this address.",
        fields: { user_id: "no user of this project has this address (invite it on the Invitations page)" },
      },
      status: 400,
    },
  };
}

const addMember = withPlace(async (k, place) => {
  const v = { user: k.field("user"), role_ids: k.list("role_ids") };
  const user = await userOf(k, v.user);
  if ("refused" in user) return membersPage(k, place, v, user.refused);
  const res = await k.api("POST", membersApi(k), { user_id: user.id, role_ids: v.role_ids });
  if (!res.ok) return membersPage(k, place, v, refusedBy(res));
  return k.c.redirect(`${membersPath(place)}?done=added`, 303);
});

function MemberPage(
  p: {
    nonce: string;
    k: Console;
    place: Place;
    member: OrganizationMember;
    roles: Role[];
    checked: string[];
    problem: Problem | null;
  },
) {
  const { k, place, member } = p;
  const { s } = place;
  const action = `${membersPath(place)}/${enc(member.user_id)}`;
  const editable = s.can("organizations:update");
  return (
    <OrgFrame
      nonce={p.nonce}
      k={k}
      place={place}
      section="members"
      title={`${member.display_name} in ${place.org.name}`}
      problem={p.problem}
    >
      <dl class="facts card">
        <dt>User</dt>
        <dd>
          <a href={`${projectPath(s.project.id)}/users/${enc(member.user_id)}`}>{member.display_name}</a>{" "}
          <CopyId id={member.user_id} label="user id" />
        </dd>
        <dt>Email</dt>
        <dd>{member.email ?? "none"}</dd>
        <dt>Organization roles</dt>
        <dd>
          <RoleNames ids={member.role_ids} roles={p.roles} projectId={s.project.id} />
        </dd>
        <dt>Member since</dt>
        <dd>
          <Time at={member.created_at} />
        </dd>
      </dl>
      {editable && (
        <>
          <form method="post" action={action}>
            <h2>Roles in {place.org.name}</h2>
            <Csrf k={k} back={action} />
            <RoleChecks roles={p.roles} checked={p.checked} problem={p.problem} prefix="member" />
            <button type="submit">Save roles</button>
          </form>
          <form method="post" action={`${action}/remove`}>
            <h2>Remove from {place.org.name}</h2>
            <Csrf k={k} back={action} />
            <p class="hint">
              The user stays in the project; their tokens of this organization are refused from their next
              request.
            </p>
            <button type="submit" class="danger">Remove member</button>
          </form>
        </>
      )}
      <p>
        <a href={membersPath(place)}>All members</a>
      </p>
    </OrgFrame>
  );
}

async function memberPage(k: Console, place: Place, checked: string[] | null, refused: Refused | null) {
  const [res, roles] = await Promise.all([
    k.api<OrganizationMember>("GET", `${membersApi(k)}/${enc(uid(k))}`),
    organizationRoles(k),
  ]);
  if (res.status === 404) return k.notFound();
  if (!res.ok) return refusedPage(k, new ApiRefusal(res));
  const member = res.body;
  const props = {
    k,
    place,
    member,
    roles,
    checked: checked ?? member.role_ids,
    problem: refused?.problem ?? null,
  };
  return html(k.c, (nonce) => <MemberPage nonce={nonce} {...props} />, refused?.status ?? 200);
}

const showMember = withPlace((k, place) => memberPage(k, place, null, null));

const saveRoles = withPlace(async (k, place) => {
  const checked = k.list("role_ids");
  const res = await k.api("PUT", `${membersApi(k)}/${enc(uid(k))}`, { role_ids: checked });
  if (res.status === 404) return k.notFound();
  if (!res.ok) return memberPage(k, place, checked, refusedBy(res));
  return k.c.redirect(`${membersPath(place)}?done=saved`, 303);
});

const removeMember = withPlace(async (k, place) => {
  const res = await k.api("DELETE", `${membersApi(k)}/${enc(uid(k))}`);
  if (!res.ok && res.status !== 404) {
    return memberPage(k, place, null, refusedBy(res));
  }
  return k.c.redirect(`${membersPath(place)}?done=removed`, 303);
});

export function registerMemberPages(app: App) {
  const path = "/console/projects/:pid/organizations/:oid/members";
  app.get(path, signedIn(app, withPlace((k, place) => membersPage(k, place, null, null))));
  app.post(`${path}/new`, signedIn(app, addMember));
  app.get(`${path}/:uid`, signedIn(app, showMember));
  app.post(`${path}/:uid`, signedIn(app, saveRoles));
  app.post(`${path}/:uid/remove`, signedIn(app, removeMember));
}
