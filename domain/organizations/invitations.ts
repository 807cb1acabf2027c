/**
 * Invitations to join an organization (docs/organizations.md § Invitations): an admin invites an address with
 * organization roles; the mail's link (256 random bits, only its SHA-256 kept) works once, until it expires. The
 * invited person accepts on the service's page: a user of the project with that address, verified, joins at
 * once; without one, the page creates the user (the link proves the mailbox) with the password chosen there.
 * Each change and its audit event, and its mail, are written in one transaction.
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import { insertUser } from "../../db/accounts/users.ts";
import {
  acceptInvitationRow,
  findInvitation,
  findInvitationLink,
  insertInvitation,
  type InvitationLink,
  listInvitationRows,
  renewInvitation,
  revokeInvitationRow,
} from "../../db/organizations/invitations.ts";
import { findMember, insertMember, setMemberRoles } from "../../db/organizations/members.ts";
import { findOrganization } from "../../db/organizations/organizations.ts";
import { findProjectName } from "../../db/events/mail.ts";
import type { PageOf } from "../../openapi/fields.ts";
import {
  type CreateInvitationRequest,
  type Invitation,
  INVITATION_TTL_DEFAULT,
  type InvitationListQuery,
} from "../../openapi/organizations.ts";
import { record, sourceOf, userSource } from "../audit/audit.ts";
import { normalizeEmail } from "../accounts/emails.ts";
import { hashPassword, passwordIssue } from "../accounts/passwords.ts";
import { queueMail } from "../events/mail.ts";
import { duration } from "../events/mail_templates.ts";
import type { KeyVault } from "../keys/key_vault.ts";
import { AppError } from "../shared/errors.ts";
import { newId, newSecret } from "../shared/ids.ts";
import type { Principal, RequestInfo } from "../shared/principal.ts";
import { hashSecret } from "../shared/secrets.ts";
import { organizationRoles, requireGivable } from "./members.ts";

/** Where a link's page is: the service's own. */
export const INVITATION_PATH = "/authorize/invitation";

export type InvitationSettings = { publicUrl: string; vault: KeyVault | null };

/**
 * The organization (held until the transaction ends: `for update`, so that two invitations to one address take
 * turns) and its project's name; else 404.
 */
async function requireOpenOrganization(sql: Sql, projectId: string, organizationId: string) {
  const organization = await findOrganization(sql, projectId, organizationId, { lock: "update" });
  if (!organization) throw new AppError("organization_not_found");
  const project = await findProjectName(sql, projectId);
  return { name: organization.name, project_name: project?.name ?? "" };
}

/** The mail of an invitation's link, queued in the caller's transaction. */
async function mailInvitation(
  tx: Sql,
  s: InvitationSettings,
  i: { projectId: string; projectName: string; organizationName: string; email: string; ttl: number },
  token: string,
): Promise<void> {
  await queueMail(tx, s.vault, {
    projectId: i.projectId,
    kind: "organization_invitation",
    to: i.email,
    userId: null,
    fields: {
      project: i.projectName,
      name: i.email,
      organization: i.organizationName,
      valid_for: duration(i.ttl),
    },
    link: `${s.publicUrl}${INVITATION_PATH}?token=${token}`,
  });
}

/**
 * Invites an address with organization roles (each one the caller covers) and mails the link. 409
 * `member_already_exists` when a user with the address is a member already; an open invitation to the address
 * is replaced.
 */
export async function createInvitation(
  sql: Sql,
  s: InvitationSettings,
  caller: Principal,
  projectId: string,
  organizationId: string,
  input: CreateInvitationRequest,
): Promise<Invitation> {
  const email = normalizeEmail(input.email);
  if (!email) {
    throw new AppError("invalid_params", { details: [{ field: "email", issue: "must be a valid email" }] });
  }
  const token = newSecret();
  const ttl = input.expires_in ?? INVITATION_TTL_DEFAULT;
  return await transaction(sql, async (tx) => {
    const organization = await requireOpenOrganization(tx, projectId, organizationId);
    const roleIds = await organizationRoles(tx, projectId, input.role_ids ?? []);
    await requireGivable(tx, caller, projectId, roleIds, input.role_ids ?? []);
    const [member] = await tx<{ user_id: string }[]>`
      select m.user_id from organization_members m join users u on u.project_id = m.project_id and u.id = m.user_id
      where m.project_id = ${projectId} and m.organization_id = ${organizationId} and u.email = ${email}`;
    if (member) {
      throw new AppError("member_already_exists", {
        description: "a user with this address is a member of the organization already",
        details: [{ field: "email", issue: "belongs to a member of this organization" }],
      });
    }
    const { invitation, replaced } = await insertInvitation(tx, {
      project_id: projectId,
      id: newId(),
      organization_id: organizationId,
      email,
      role_ids: [...roleIds].sort(),
      token_hash: hashSecret(token),
      ttl_seconds: ttl,
    });
    await mailInvitation(tx, s, {
      projectId,
      projectName: organization.project_name,
      organizationName: organization.name,
      email,
      ttl,
    }, token);
    await record(tx, {
      projectId,
      type: "organization.invitation_sent",
      source: sourceOf(caller),
      target: { type: "organization", id: organizationId },
      details: {
        invitation_id: invitation.id,
        email,
        role_ids: invitation.role_ids,
        ...(replaced ? { replaced_invitation_id: replaced } : {}),
      },
    });
    return invitation;
  });
}

/** The invitation, or 404 (`organization_not_found`, `invitation_not_found`). */
export async function getInvitation(
  sql: Sql,
  projectId: string,
  organizationId: string,
  id: string,
): Promise<Invitation> {
  const found = await retryRead(() => findInvitation(sql, projectId, organizationId, id));
  if (found) return found;
  await readableOrganization(sql, projectId, organizationId);
  throw new AppError("invitation_not_found");
}

async function readableOrganization(sql: Sql, projectId: string, organizationId: string): Promise<void> {
  if (!(await retryRead(() => findOrganization(sql, projectId, organizationId)))) {
    throw new AppError("organization_not_found");
  }
}

export async function listInvitations(
  sql: Sql,
  projectId: string,
  organizationId: string,
  q: InvitationListQuery,
): Promise<PageOf<Invitation>> {
  await readableOrganization(sql, projectId, organizationId);
  return await retryRead(() => listInvitationRows(sql, projectId, organizationId, q));
}

/** 409 `invitation_not_pending` for an invitation accepted or revoked (an expired one may be sent again). */
const notPending = (i: Invitation) =>
  new AppError("invitation_not_pending", { description: `the invitation is ${i.status}` });

/**
 * Mails an open invitation again with a new link (the old one stops working), as long again as first asked. The
 * caller must still cover its roles.
 */
export async function resendInvitation(
  sql: Sql,
  s: InvitationSettings,
  caller: Principal,
  projectId: string,
  organizationId: string,
  id: string,
): Promise<Invitation> {
  const token = newSecret();
  return await transaction(sql, async (tx) => {
    const organization = await requireOpenOrganization(tx, projectId, organizationId);
    const current = await findInvitation(tx, projectId, organizationId, id, { lock: true });
    if (!current) throw new AppError("invitation_not_found");
    if (current.status === "accepted" || current.status === "revoked") throw notPending(current);
    await requireGivable(tx, caller, projectId, current.role_ids, current.role_ids);
    const renewed = (await renewInvitation(tx, projectId, organizationId, id, hashSecret(token)))!;
    const ttl = Math.round((Date.parse(renewed.expires_at) - Date.parse(renewed.last_sent_at)) / 1000);
    await mailInvitation(tx, s, {
      projectId,
      projectName: organization.project_name,
      organizationName: organization.name,
      email: renewed.email,
      ttl,
    }, token);
    await record(tx, {
      projectId,
      type: "organization.invitation_resent",
      source: sourceOf(caller),
      target: { type: "organization", id: organizationId },
      details: { invitation_id: id, email: renewed.email, sent_count: renewed.sent_count },
    });
    return renewed;
  });
}

/** Revokes an open invitation: its link stops working. 409 `invitation_not_pending` when accepted or revoked. */
export async function revokeInvitation(
  sql: Sql,
  caller: Principal,
  projectId: string,
  organizationId: string,
  id: string,
): Promise<Invitation> {
  return await transaction(sql, async (tx) => {
    await requireOpenOrganization(tx, projectId, organizationId);
    const current = await findInvitation(tx, projectId, organizationId, id, { lock: true });
    if (!current) throw new AppError("invitation_not_found");
    if (current.status === "accepted" || current.status === "revoked") throw notPending(current);
    const revoked = (await revokeInvitationRow(tx, projectId, organizationId, id))!;
    await record(tx, {
      projectId,
      type: "organization.invitation_revoked",
      source: sourceOf(caller),
      target: { type: "organization", id: organizationId },
      details: { invitation_id: id, email: revoked.email },
    });
    return revoked;
  });
}

/**
 * What the page of a link shows:
 * - `join`: a user of the project with the address, verified and active, joins with one button;
 * - `create`: no user has the address: the page asks for a name and a password;
 * - `member`: that user is a member already (the invitation is accepted as it is);
 * - `unverified`: a user has the address but it is not verified (anyone may have typed it): they must sign in
 *   and confirm it first, so that the link never joins someone else's account;
 * - `inactive`: that user, or the project, is deactivated;
 * - `stale`: accepted, revoked or expired; `unknown`: no such link.
 */
export type InvitationState =
  | { state: "join" | "create" | "member" | "unverified" | "inactive"; link: InvitationLink }
  | { state: "stale"; link: InvitationLink }
  | { state: "unknown" };

export async function invitationState(sql: Sql, token: string): Promise<InvitationState> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return { state: "unknown" };
  const link = await retryRead(() => findInvitationLink(sql, hashSecret(token)));
  if (!link) return { state: "unknown" };
  if (link.status !== "pending") return { state: "stale", link };
  if (!link.project_active || link.user_active === false) return { state: "inactive", link };
  if (link.user_id === null) return { state: "create", link };
  // Unverified first: an account someone made with the address is never given the invitation's roles.
  if (!link.user_email_verified) return { state: "unverified", link };
  return { state: link.member ? "member" : "join", link };
}

/** The invitation could not be accepted at the moment it was tried (accepted meanwhile, say). */
export class InvitationUnusable extends Error {
  constructor() {
    super("the invitation is accepted, revoked or expired");
  }
}

/** The form's problems when a new user is created from an invitation. */
export type AcceptErrors = Partial<Record<"name" | "password" | "password_repeat", string>>;

/**
 * Accepts a link's invitation, in one transaction: the invitation is spent (of concurrent acceptances one
 * wins), the user created when none has the address (`form` then holds the name and password, checked first:
 * `{ errors }`), and the user made a member with the invitation's roles that are still organization roles (a
 * member already keeps theirs, the invitation's added). Events: `user.created` (`how: "invitation"`),
 * `organization.member_added` or `organization.member_updated`, `organization.invitation_accepted`.
 */
export async function acceptInvitation(
  sql: Sql,
  token: string,
  form: { name: string; password: string; password_repeat: string } | null,
  request: RequestInfo,
): Promise<{ userId: string; link: InvitationLink } | { errors: AcceptErrors }> {
  const state = await invitationState(sql, token);
  if (state.state === "stale" || state.state === "unknown") throw new InvitationUnusable();
  const { link } = state;
  if (state.state === "unverified" || state.state === "inactive") throw new InvitationUnusable();
  let passwordHash: string | null = null;
  if (state.state === "create") {
    const errors: AcceptErrors = {};
    const name = form?.name.trim() ?? "";
    if (name === "") errors.name = "Enter your name.";
    else if (name.length > 50) errors.name = "Use at most 50 characters.";
    const issue = passwordIssue(form?.password ?? "", link.email);
    if (issue) errors.password = issue;
    else if (form?.password !== form?.password_repeat) errors.password_repeat = "The passwords differ.";
    if (Object.keys(errors).length > 0) return { errors };
    passwordHash = await hashPassword(form!.password);
  }
  const userId = await transaction(sql, async (tx) => {
    // The address's user now, held: the one the page was shown for, still active and verified (else the page
    // was stale, or the account changed since).
    const [holder] = await tx<{ id: string; is_active: boolean; email_verified: boolean }[]>`
      select id, is_active, email_verified from users
      where project_id = ${link.project_id} and email = ${link.email} for update`;
    if ((holder?.id ?? null) !== link.user_id || (holder && (!holder.is_active || !holder.email_verified))) {
      throw new InvitationUnusable();
    }
    // Spent first, as one statement: of concurrent acceptances one goes on, the others wait and find it spent.
    const userId = link.user_id ?? newId();
    const spent = await acceptInvitationRow(tx, hashSecret(token), userId);
    if (!spent) throw new InvitationUnusable();
    if (link.user_id === null) {
      // A sign-up with the address at the same moment wins: this page is then stale.
      const user = await insertUser(tx, {
        project_id: link.project_id,
        id: userId,
        display_name: form!.name.trim(),
        avatar_url: null,
        external_user_id: null,
        email: link.email,
        email_verified: true,
        pending_email: null,
        role_id: null,
        is_active: true,
        password_hash: passwordHash,
      }).catch((err) => {
        const taken = (err as { constraint_name?: string }).constraint_name === "users__project_id_email";
        throw taken ? new InvitationUnusable() : err;
      });
      await record(tx, {
        projectId: link.project_id,
        type: "user.created",
        source: userSource(userId, request),
        target: { type: "user", id: user.id },
        details: { how: "invitation", email: link.email, invitation_id: link.id, role_id: null },
      });
    }
    const current = await findMember(tx, link.project_id, link.organization_id, userId, { lock: true });
    const source = userSource(userId, request);
    const target = { type: "organization", id: link.organization_id };
    if (!current) {
      await insertMember(tx, link.project_id, link.organization_id, userId);
      await setMemberRoles(tx, link.project_id, link.organization_id, userId, spent.role_ids);
      await record(tx, {
        projectId: link.project_id,
        type: "organization.member_added",
        source,
        target,
        details: { user_id: userId, role_ids: spent.role_ids, how: "invitation", invitation_id: link.id },
      });
    } else {
      const roleIds = [...new Set([...current.role_ids, ...spent.role_ids])].sort();
      if (roleIds.length !== current.role_ids.length) {
        await setMemberRoles(tx, link.project_id, link.organization_id, userId, roleIds);
        await record(tx, {
          projectId: link.project_id,
          type: "organization.member_updated",
          source,
          target,
          changes: { role_ids: { before: current.role_ids, after: roleIds } },
          details: { user_id: userId, how: "invitation", invitation_id: link.id },
        });
      }
    }
    await record(tx, {
      projectId: link.project_id,
      type: "organization.invitation_accepted",
      source,
      target,
      details: { invitation_id: link.id, email: link.email, user_id: userId },
    });
    return userId;
  });
  return { userId, link };
}
