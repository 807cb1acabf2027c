/**
 * Membership as the sign-in and the token endpoint need it (docs/organizations.md § Tokens): a user token of an
 * organization is issued only to a member, and is live only while the user is one (db/authz/principals.ts).
 */
import { retryRead, type Sql } from "../../db/connection.ts";
import { findMembership, findOrganizationName } from "../../db/organizations/membership.ts";
import { AppError } from "../shared/errors.ts";

export { findMembership };

/**
 * At the token endpoint: the organization's name when the user is a member of it now, else 400 `access_denied`
 * (the user is not, or no longer, a member; or the organization was deleted).
 */
export async function requireMembership(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<string> {
  const m = await findMembership(sql, projectId, organizationId, userId);
  if (!m?.member) {
    throw new AppError("access_denied", {
      description: m
        ? "the user is not a member of the organization"
        : "the organization is not one of the project's",
    });
  }
  return m.name;
}

/** The organization's name for a token's `org_id`, read live (introspection, userinfo); null when deleted. */
export async function organizationNameOf(
  sql: Sql,
  projectId: string,
  organizationId: string,
): Promise<string | null> {
  return await retryRead(() => findOrganizationName(sql, projectId, organizationId)) ?? null;
}
