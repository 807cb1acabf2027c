/**
 * Membership as the sign-in and the token endpoint need it (docs/organizations.md § Tokens): a user token of an
 * organization is issued only to a member, and is live only while the user is one (db/authz/principals.ts).
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { findMfaPolicy } from "../../db/projects/projects.ts";
import {
  findMembership,
  findOrganizationMfa,
  findOrganizationName,
  findVerifiedEmail,
  joinDomainOrganizations,
  joinOrganization,
  organizationHasDomain,
} from "../../db/organizations/membership.ts";
import { record, userSource } from "../audit/audit.ts";
import { isPublicMailDomain } from "./public_domains.ts";
import { AppError } from "../shared/errors.ts";

export { findMembership };

/** Whether the organization is one of the project's (in the caller's transaction: no retry). */
export async function isOrganizationOf(
  sql: Sql,
  projectId: string,
  organizationId: string,
): Promise<boolean> {
  return (await findOrganizationName(sql, projectId, organizationId)) !== undefined;
}

/**
 * At the token endpoint: the organization's name when the user is a member of it now, else 400 `access_denied`
 * (the user is not, or no longer, a member; or the organization was deleted). `notAfter`: a membership begun
 * after it does not count (a refresh token of an organization issued before the user was removed and added
 * again belongs to the membership that ended).
 */
export async function requireMembership(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
  notAfter?: Date,
): Promise<string> {
  const m = await findMembership(sql, projectId, organizationId, userId);
  if (!m?.member || (notAfter !== undefined && m.since! > notAfter)) {
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

type Policy = "off" | "optional" | "required";
const STRICTNESS: Policy[] = ["off", "optional", "required"];

/**
 * The second-factor policy of a sign-in, live: the project's `mfa`, made stricter (never weaker) by the
 * organization the user signs in to: `optional` asks a user who has a factor for its code even where the
 * project is `off`, `required` makes every member enrol one; `inherit` keeps the project's.
 */
export async function signInMfaPolicy(
  sql: Sql,
  projectId: string,
  organizationId: string | null | undefined,
): Promise<Policy> {
  const projectPolicy = await findMfaPolicy(sql, projectId) ?? "off";
  if (!organizationId) return projectPolicy;
  const own = await findOrganizationMfa(sql, projectId, organizationId);
  if (own === undefined || own === "inherit") return projectPolicy;
  return STRICTNESS[Math.max(STRICTNESS.indexOf(projectPolicy), STRICTNESS.indexOf(own))];
}

/**
 * Joining by domain (docs/organizations.md § Joining by domain): a user signing in with a verified address of a
 * domain of an organization that lets users join by it becomes a member, with its default roles, in the
 * transaction of the sign-in's code; `organization.member_added` with `how: "domain"` for each. Never through a
 * public mail domain (none can be an organization's; checked again here in case the list grew since).
 */
export async function joinByDomain(tx: Sql, projectId: string, userId: string): Promise<void> {
  const email = await findVerifiedEmail(tx, projectId, userId);
  const domain = email?.slice(email.lastIndexOf("@") + 1).toLowerCase();
  if (!domain || isPublicMailDomain(domain)) return;
  for (const joined of await joinDomainOrganizations(tx, projectId, userId, domain)) {
    await record(tx, {
      projectId,
      type: "organization.member_added",
      source: userSource(userId, null),
      target: { type: "organization", id: joined.organization_id },
      details: { user_id: userId, role_ids: joined.role_ids, how: "domain", domain },
    });
  }
}

/**
 * Just in time: a user who signed in through an organization's own identity provider is a member of it, with its
 * default roles (`organization.member_added` with `how: "jit"` and the provider), unless one already.
 */
export async function joinThroughProvider(
  sql: Sql,
  p: { projectId: string; organizationId: string; userId: string; providerId: string; request: RequestInfo },
): Promise<void> {
  await transaction(sql, async (tx) => {
    const roleIds = await joinOrganization(tx, p.projectId, p.organizationId, p.userId);
    if (roleIds === undefined) return;
    await record(tx, {
      projectId: p.projectId,
      type: "organization.member_added",
      source: userSource(p.userId, p.request),
      target: { type: "organization", id: p.organizationId },
      details: { user_id: p.userId, role_ids: roleIds, how: "jit", provider_id: p.providerId },
    });
  });
}

/** Whether the address's domain is one of the organization's (an organization's own provider vouches for those). */
export async function organizationHoldsAddress(
  sql: Sql,
  projectId: string,
  organizationId: string,
  email: string,
): Promise<boolean> {
  const domain = email.slice(email.lastIndexOf("@") + 1).trim().toLowerCase();
  return await retryRead(() => organizationHasDomain(sql, projectId, organizationId, domain));
}
