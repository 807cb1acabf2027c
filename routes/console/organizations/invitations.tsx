/**
 * Console pages of an organization's invitations: the list with each one's status (filtered by status, searched
 * by address, paged), inviting an address with organization roles, and Resend and Revoke. The mail goes through
 * the outbox; its link is never shown here (docs/organizations.md § Invitations).
 */
import type { Invitation } from "../../../openapi/organizations.ts";
import type { Role } from "../../../openapi/roles.ts";
import type { App } from "../../env.ts";
import {
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
import { refusedPage } from "../projects.tsx";
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

const invitationsApi = (k: Console) => `${orgApi(k)}/invitations`;
const invitationsPath = (place: Place) => `${orgPath(place.s.project.id, place.org.id)}/invitations`;

const NOTICES: Record<string, string> = {
  sent: "The invitation is on its way.",
  resent: "The invitation was mailed again, with a new link.",
  revoked: "The invitation was revoked: its link no longer works.",
};

const STATUSES = ["pending", "accepted", "revoked", "expired"] as const;
const BADGE: Record<Invitation["status"], string> = {
  pending: "badge",
  accepted: "badge on",
  revoked: "badge off",
  expired: "badge off",
};

/** How long the link works, in days, as the form offers it. */
const DAYS = [1, 3, 7, 14, 30];

type InviteValues = { email: string; role_ids: string[]; days: string };

/** Resend and Revoke, for an invitation still open (pending, or expired: a resend gives it a new link). */
function Actions(p: { k: Console; place: Place; i: Invitation }) {
  if (p.i.status !== "pending" && p.i.status !== "expired") return null;
  const base = `${invitationsPath(p.place)}/${enc(p.i.id)}`;
  const back = invitationsPath(p.place);
  return (
    <>
      <form method="post" action={`${base}/resend`}>
        <Csrf k={p.k} back={back} />
        <button type="submit" class="secondary" aria-label={`Resend the invitation to ${p.i.email}`}>
          Resend
        </button>
      </form>
      <form method="post" action={`${base}/revoke`}>
        <Csrf k={p.k} back={back} />
        <button type="submit" class="danger" aria-label={`Revoke the invitation to ${p.i.email}`}>
          Revoke
        </button>
      </form>
    </>
  );
}

function InvitationsTable(
  p: {
    k: Console;
    place: Place;
    page: Page<Invitation>;
    roles: Role[];
    q: URLSearchParams;
    editable: boolean;
  },
) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Address</th>
            <th scope="col">Status</th>
            <th scope="col" class="wide">Roles</th>
            <SortTh query={p.q} field="expires_at" label="Link expires" class="wide" />
            <th scope="col" class="wide">Sent</th>
            {p.editable && <th scope="col">Action</th>}
          </tr>
        </thead>
        <tbody>
          {p.page.data.map((i) => (
            <tr key={i.id}>
              <td>{i.email}</td>
              <td>
                <span class={BADGE[i.status]}>{i.status}</span>
                {i.accepted_at && (
                  <span class="sub">
                    <Time at={i.accepted_at} />
                  </span>
                )}
              </td>
              <td class="wide">
                <RoleNames ids={i.role_ids} roles={p.roles} projectId={p.place.s.project.id} />
              </td>
              <td class="wide">
                <Time at={i.expires_at} />
              </td>
              <td class="wide">
                {i.sent_count === 1 ? "once" : `${i.sent_count} times`}, last <Time at={i.last_sent_at} />
              </td>
              {p.editable && (
                <td>
                  <Actions k={p.k} place={p.place} i={i} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function StatusFilter(p: { value: string }) {
  return (
    <div>
      <label for="f-status">Status</label>
      <select id="f-status" name="status">
        <option value="" selected={!p.value}>Any status</option>
        {STATUSES.map((s) => <option key={s} value={s} selected={s === p.value}>{s}</option>)}
      </select>
    </div>
  );
}

function InviteForm(
  p: { k: Console; place: Place; roles: Role[]; v: InviteValues; problem: Problem | null },
) {
  const error = p.problem?.fields["expires_in"];
  return (
    <form method="post" action={`${invitationsPath(p.place)}/new`}>
      <h2>Invite an address</h2>
      <Csrf k={p.k} back={invitationsPath(p.place)} />
      <Field
        name="email"
        label="Email address"
        type="email"
        value={p.v.email}
        required
        problem={p.problem}
        hint={"The mail's link works once: it joins the user with this address, or creates one. A new " +
          "invitation to an address with one still open replaces it."}
      />
      <RoleChecks roles={p.roles} checked={p.v.role_ids} problem={p.problem} prefix="invite" />
      <label for="f-days">The link works for</label>
      <select id="f-days" name="days">
        {DAYS.map((d) => (
          <option key={d} value={String(d)} selected={String(d) === p.v.days}>
            {d === 1 ? "1 day" : `${d} days`}
          </option>
        ))}
      </select>
      {error && <p class="field-error">{error}</p>}
      <button type="submit">Send invitation</button>
    </form>
  );
}

async function invitationsPage(k: Console, place: Place, v: InviteValues | null, refused: Refused | null) {
  const q = listQuery(k, ["status"]);
  const [res, roles] = await Promise.all([
    k.api<Page<Invitation>>("GET", `${invitationsApi(k)}?${q}`),
    organizationRoles(k),
  ]);
  if (!res.ok) return refusedPage(k, new ApiRefusal(res));
  const editable = place.s.can("organizations:update");
  const values = v ?? { email: "", role_ids: [], days: "7" };
  const problem = refused?.problem ?? null;
  return html(
    k.c,
    (nonce) => (
      <OrgFrame
        nonce={nonce}
        k={k}
        place={place}
        section="invitations"
        title={`Invitations to ${place.org.name}`}
        problem={problem}
        notice={noticeOf(k, NOTICES)}
      >
        <SearchBox query={q} label="Search invitations by address">
          <StatusFilter value={q.get("status") ?? ""} />
        </SearchBox>
        {res.body.data.length === 0
          ? <p class="card">No invitations{q.get("search") || q.get("status") ? " found" : " yet"}.</p>
          : <InvitationsTable k={k} place={place} page={res.body} roles={roles} q={q} editable={editable} />}
        <Pager query={q} page={res.body} noun="invitation" />
        {editable && <InviteForm k={k} place={place} roles={roles} v={values} problem={problem} />}
      </OrgFrame>
    ),
    refused?.status ?? 200,
  );
}

const invite = withPlace(async (k, place) => {
  const v = { email: k.field("email"), role_ids: k.list("role_ids"), days: k.field("days") || "7" };
  const days = Number(v.days);
  const res = await k.api("POST", invitationsApi(k), {
    email: v.email,
    role_ids: v.role_ids,
    ...(Number.isInteger(days) && days > 0 ? { expires_in: days * 86_400 } : {}),
  });
  if (!res.ok) return invitationsPage(k, place, v, refusedBy(res));
  return k.c.redirect(`${invitationsPath(place)}?done=sent`, 303);
});

/** Resend or revoke one invitation, then back to the list; a refusal on the list, in the API's words. */
const act = (op: "resend" | "revoke") =>
  withPlace(async (k, place) => {
    const path = `${invitationsApi(k)}/${enc(k.c.req.param("iid")!)}`;
    const res = op === "resend" ? await k.api("POST", `${path}/resend`) : await k.api("DELETE", path);
    if (!res.ok) return invitationsPage(k, place, null, refusedBy(res));
    return k.c.redirect(`${invitationsPath(place)}?done=${op === "resend" ? "resent" : "revoked"}`, 303);
  });

export function registerInvitationPages(app: App) {
  const path = "/console/projects/:pid/organizations/:oid/invitations";
  app.get(path, signedIn(app, withPlace((k, place) => invitationsPage(k, place, null, null))));
  app.post(`${path}/new`, signedIn(app, invite));
  app.post(`${path}/:iid/resend`, signedIn(app, act("resend")));
  app.post(`${path}/:iid/revoke`, signedIn(app, act("revoke")));
}
