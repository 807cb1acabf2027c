/**
 * §4.13: the token's user (or the account page's) updates their own profile. What decides how they sign in — a
 * new password, another email address (the way to a password reset) — needs fresh proof first
 * (domain/factors/proof.ts): the current password when the user has one, else a code of an existing factor or,
 * on the account page, a sign-in again at their provider. A stolen access token alone cannot take the account
 * over. A password change mails the user a notice.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import { permissionCodes } from "../../db/authz/principals.ts";
import { endSessions } from "../../db/oauth/sessions.ts";
import { findUser, updateUserRow } from "../../db/accounts/users.ts";
import type { CurrentUser, UpdateCurrentUserRequest } from "../../openapi/users.ts";
import { diff, record, sourceOf } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import { keepOrClear } from "../shared/updates.ts";
import { hashPassword } from "../accounts/passwords.ts";
import { type Principal, requireUser } from "../shared/principal.ts";
import type { LinkSettings } from "../accounts/account_links.ts";
import { emailChange, mailEmailChange } from "../accounts/email_changes.ts";
import { normalizeEmail } from "../accounts/emails.ts";
import { requireFreeEmail } from "../accounts/users.ts";
import { mailNotice } from "../accounts/notices.ts";
import { type FactorActor, type MfaSettings, requireFreshProof, tokenActor } from "../factors/proof.ts";

const currentPasswordIssue = (issue: string) =>
  new AppError("invalid_params", { details: [{ field: "current_password", issue }] });

/**
 * An omitted avatar keeps it, null or "" removes it; an empty or omitted password keeps it, and a new one ends
 * the user's other sessions (not this one). `actor`: the account page's, which may be freshly proven.
 */
export async function updateCurrentUser(
  sql: Sql,
  principal: Principal,
  input: UpdateCurrentUserRequest,
  s: { mfa: MfaSettings; mail?: LinkSettings },
  actor: FactorActor = tokenActor(principal),
): Promise<CurrentUser> {
  const { projectId, userId, sessionId } = requireUser(principal);
  const found = await findUser(sql, projectId, userId, { withPasswordHash: true });
  if (!found) throw new AppError("user_not_found");
  const email = normalizeEmail(input.email)!;
  const changesEmail = email !== found.email && email !== found.pending_email;
  const before = input.password || changesEmail
    ? await requireFreshProof(sql, s.mfa, actor, input, "to change the password or the email")
    : found;
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  const row = await transaction(sql, async (tx) => {
    const current = await findUser(tx, projectId, userId, { lock: true, withPasswordHash: true });
    if (!current) throw new AppError("user_not_found");
    // Changed by another request since it was checked: the current password given is no longer current.
    if (current.password_hash !== before.password_hash) throw currentPasswordIssue("is wrong");
    const change = emailChange(current, email);
    if (change.pending_email !== current.pending_email) await requireFreeEmail(tx, projectId, userId, change);
    const updated = await updateUserRow(tx, projectId, userId, {
      display_name: input.display_name,
      avatar_url: keepOrClear(input.avatar_url, current.avatar_url),
      external_user_id: current.external_user_id,
      email: change.email,
      email_verified: change.email_verified,
      pending_email: change.pending_email,
      role_id: current.role_id,
      is_active: current.is_active,
      password_hash: passwordHash,
    });
    if (passwordHash) await endSessions(tx, { userId, except: sessionId });
    if (s.mail) await mailEmailChange(tx, s.mail, projectId, userId, change, sourceOf(principal));
    if (passwordHash) {
      await mailNotice(tx, {
        projectId,
        userId,
        kind: current.password_hash ? "password_changed" : "password_set",
        source: sourceOf(principal),
        publicUrl: s.mfa.publicUrl,
      });
    }
    const { password_hash: _, ...previous } = current;
    await record(tx, {
      projectId,
      type: "user.updated",
      source: sourceOf(principal),
      target: { type: "user", id: userId },
      changes: diff(previous, updated!, passwordHash ? ["password"] : []),
    });
    return updated!;
  });
  return { ...row, permissions: await permissionCodes(sql, { userId: row.id }) };
}
