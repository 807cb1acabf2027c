/**
 * Email changes and verification at login: a verified address stays until its replacement is verified, every
 * change mails the new address a link and the old one a notice; a project with `require_verified_email` refuses
 * the login of an unverified user with a page that mails the link (domain/accounts/account_links.ts makes the links).
 */
import { type Sql, transaction } from "../../db/connection.ts";
import { findMailUser, holdForVerification, unverifiedUserOf } from "../../db/events/mail.ts";
import { countAttempt } from "../../db/shared/throttle.ts";
import { issueLink, type LinkSettings, RESET_THROTTLE } from "./account_links.ts";
import type { Source } from "../audit/audit.ts";
import { queueMail } from "../events/mail.ts";

/** What an email change stores, and which mails it sends. */
export type EmailChange = {
  email: string | null;
  email_verified: boolean;
  pending_email: string | null;
  /** The address to mail a verification link to. */
  verify: string | null;
  /** The old address, told of the change. */
  notify: string | null;
};

/**
 * How a requested email applies. A verified address stays until the new one is verified (it waits in
 * `pending_email`); an unverified one is replaced at once, unverified. Either way the new address gets a
 * verification link and the old one a notice. `asserted` (an admin's `email_verified: true`) applies it verified,
 * the pending address too (a SCIM directory setting the address that waits for its link).
 */
export function emailChange(
  current: { email: string | null; email_verified: boolean; pending_email: string | null },
  requested: string | null,
  asserted?: boolean,
): EmailChange {
  const keep = { verify: null, notify: null };
  if (
    requested === current.email ||
    (requested !== null && requested === current.pending_email && asserted !== true)
  ) {
    return {
      ...keep,
      email: current.email,
      email_verified: asserted ?? current.email_verified,
      pending_email: current.pending_email,
    };
  }
  if (requested === null) return { ...keep, email: null, email_verified: false, pending_email: null };
  if (asserted === true) {
    return {
      email: requested,
      email_verified: true,
      pending_email: null,
      verify: null,
      notify: current.email,
    };
  }
  if (current.email !== null && current.email_verified) {
    return {
      email: current.email,
      email_verified: true,
      pending_email: requested,
      verify: requested,
      notify: current.email,
    };
  }
  return {
    email: requested,
    email_verified: false,
    pending_email: null,
    verify: requested,
    notify: current.email,
  };
}

/** The mails of an email change, in the caller's transaction (after the user's row is written). */
export async function mailEmailChange(
  tx: Sql,
  s: LinkSettings,
  projectId: string,
  userId: string,
  change: EmailChange,
  source: Source,
): Promise<void> {
  if (!change.verify && !change.notify) return;
  const user = await findMailUser(tx, projectId, userId);
  if (!user || !user.is_active) return;
  if (change.verify) await issueLink(tx, s, { ...user, email: change.verify }, "email_verification", source);
  if (change.notify) {
    await queueMail(tx, s.vault, {
      projectId,
      kind: "email_changed",
      to: change.notify,
      userId,
      fields: {
        project: user.project_name,
        name: user.display_name,
        new_email: change.verify ?? user.email ?? "",
        pending: change.pending_email ? "yes" : "no",
      },
      link: null,
    });
  }
}

/**
 * A login refused for an unverified address: mails the user the verification link, at most 3 per 15 minutes
 * (beyond, nothing is sent and the answer is the same). Returns the address it goes to.
 */
export async function resendForLogin(
  sql: Sql,
  s: LinkSettings,
  requestId: string,
  request: { ip: string | null; user_agent: string | null; id: string },
): Promise<string | null> {
  const user = await unverifiedUserOf(sql, requestId);
  if (!user || !user.email || user.email_verified || !user.is_active) return null;
  const wait = await countAttempt(
    sql,
    `verify:account:${user.project_id}:${user.id}`,
    RESET_THROTTLE.account,
  );
  if (wait === null) {
    await transaction(sql, async (tx) => {
      await issueLink(tx, s, { ...user, email: user.email! }, "email_verification", {
        actor: { type: "user", id: user.id, token_jti: null },
        request,
      });
    });
  }
  return user.email;
}

/** Marks the login page: its user must verify their address before signing in. */
export async function requireVerification(sql: Sql, requestId: string, userId: string): Promise<void> {
  await holdForVerification(sql, requestId, userId);
}

/** The user a login page is held for (its address still unverified, the user active), or null. */
export async function heldForVerification(
  sql: Sql,
  requestId: string,
): Promise<{ userId: string; email: string | null } | null> {
  const user = await unverifiedUserOf(sql, requestId);
  if (!user || user.email_verified || !user.is_active) return null;
  return { userId: user.id, email: user.email };
}
