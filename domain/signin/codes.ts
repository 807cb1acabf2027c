/**
 * The one way an authorization code is written: every sign-in path (a password, a passkey, a second factor, a
 * single sign-on session, an upstream provider) ends here, so that no path skips what a code needs.
 */
import type { Sql } from "../../db/connection.ts";
import { insertAuthorizationCode } from "../../db/oauth/sessions.ts";
import { checkSignInPolicy } from "../accounts/signin_policy.ts";
import { requireConsent } from "./consent.ts";
import { findMembership, joinByDomain } from "../organizations/membership.ts";
import { NotAMember } from "./page_errors.ts";

export { NotAMember };

/**
 * Writes an authorization code, in the caller's transaction, once the project's policy allows the user to sign
 * in (domain/accounts/signin_policy.ts) and, for a third-party client, the user's consent covers what is asked
 * (domain/signin/consent.ts), and, for a sign-in to an organization, the user is a member of it (a user with a
 * verified address of an organization's domain joins it first, when it lets users join by domain): EmailNotVerified,
 * ConsentRequired or NotAMember otherwise, and the caller's transaction rolls back.
 */
export async function mintAuthorizationCode(
  tx: Sql,
  c: Parameters<typeof insertAuthorizationCode>[1],
): Promise<void> {
  await checkSignInPolicy(tx, c.project_id, c.user_id);
  await joinByDomain(tx, c.project_id, c.user_id);
  if (c.organization_id) {
    const m = await findMembership(tx, c.project_id, c.organization_id, c.user_id);
    if (!m?.member) throw new NotAMember(m?.name ?? "this organization");
  }
  await requireConsent(tx, c);
  await insertAuthorizationCode(tx, c);
}
