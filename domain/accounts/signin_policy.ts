/**
 * The project's sign-in policy, in one place: `mintAuthorizationCode` (domain/signin/codes.ts), the only way an
 * authorization code is written, asks `checkSignInPolicy`, which refuses the code of a user whose address is not
 * verified in a project with
 * `require_verified_email`, whatever the way in (a password, a passkey, a single sign-on session, an upstream
 * provider). The sign-in paths also ask `requireSignInPolicy` as soon as they know the user, so that such a
 * user is stopped before a second step rather than after it; the check at the code is what no path can skip.
 */
import type { Sql } from "../../db/connection.ts";
import { findSignInUser } from "../../db/accounts/users.ts";
import { record, userSource } from "../audit/audit.ts";
import type { RequestInfo } from "../shared/principal.ts";

/** A sign-in stopped because the project wants the user's address verified first (the page offers a link). */
export class EmailNotVerified extends Error {
  constructor(readonly userId: string, readonly email: string | null) {
    super("the project requires a verified email address before signing in");
  }
}

/** The rule itself, for a user row at hand: the project requires a verified address and this one is not. */
export const mustVerifyFirst = (user: { require_verified_email: boolean; email_verified: boolean }) =>
  user.require_verified_email && !user.email_verified;

/** Throws EmailNotVerified when the project's policy stops this user's sign-in; records nothing. */
export async function checkSignInPolicy(sql: Sql, projectId: string, userId: string): Promise<void> {
  const user = await findSignInUser(sql, projectId, userId);
  if (user && mustVerifyFirst(user)) throw new EmailNotVerified(user.id, user.email);
}

/** A sign-in the policy stopped: `login.failed` with `reason: "email_not_verified"` (and what the path adds). */
export async function recordStopped(
  sql: Sql,
  login: { projectId: string; clientId: string; userId: string; request: RequestInfo },
  details: Record<string, unknown> = {},
): Promise<void> {
  await record(sql, {
    projectId: login.projectId,
    type: "login.failed",
    source: userSource(login.userId, login.request),
    target: { type: "user", id: login.userId },
    details: { client_id: login.clientId, reason: "email_not_verified", ...details },
  });
}

/** The policy checked as a sign-in path knows its user: a refusal is recorded, then thrown (EmailNotVerified). */
export async function requireSignInPolicy(
  sql: Sql,
  login: { projectId: string; clientId: string; userId: string; request: RequestInfo },
  details: Record<string, unknown> = {},
): Promise<void> {
  try {
    await checkSignInPolicy(sql, login.projectId, login.userId);
  } catch (err) {
    if (err instanceof EmailNotVerified) await recordStopped(sql, login, details);
    throw err;
  }
}
