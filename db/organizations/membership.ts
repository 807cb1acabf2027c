/** Whether a user belongs to an organization now: what the sign-in, the token endpoint and the claims ask. */
import type { Sql } from "../connection.ts";

/**
 * An organization of the project (its name), and whether the user is a member of it (and since when, to the
 * millisecond, as tokens are stamped); undefined when unknown.
 */
export async function findMembership(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<{ name: string; member: boolean; since: Date | null } | undefined> {
  const [row] = await sql<{ name: string; since: Date | null }[]>`
    select o.name, (select date_trunc('milliseconds', m.created_at) from organization_members m
                    where m.organization_id = o.id and m.user_id = ${userId}) as since
    from organizations o where o.project_id = ${projectId} and o.id = ${organizationId}`;
  return row && { name: row.name, member: row.since !== null, since: row.since };
}

/** An organization's name, when it is one of the project's. */
export async function findOrganizationName(
  sql: Sql,
  projectId: string,
  organizationId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ name: string }[]>`
    select name from organizations where project_id = ${projectId} and id = ${organizationId}`;
  return row?.name;
}

/**
 * Makes the user a member, with each organization's default roles, of the organizations `candidates` (a query of
 * `organization_id`s of the project) names that the user is not a member of yet, in one statement; those joined,
 * with the roles given.
 */
function joinWithDefaultRoles(
  sql: Sql,
  projectId: string,
  userId: string,
  candidates: ReturnType<Sql>,
): Promise<{ organization_id: string; role_ids: string[] }[]> {
  return sql<{ organization_id: string; role_ids: string[] }[]>`
    with o as (${candidates}),
    m as (
      insert into organization_members (project_id, organization_id, user_id)
      select ${projectId}, o.organization_id, ${userId} from o
      where not exists (select from organization_members x
                        where x.organization_id = o.organization_id and x.user_id = ${userId})
      on conflict do nothing
      returning organization_id
    ),
    r as (
      insert into organization_member_roles (project_id, organization_id, user_id, role_id)
      select ${projectId}, m.organization_id, ${userId}, dr.role_id
      from m join organization_default_roles dr on dr.organization_id = m.organization_id
      returning organization_id, role_id
    )
    select m.organization_id,
           array(select r.role_id from r where r.organization_id = m.organization_id
                 order by r.role_id collate "C") as role_ids
    from m`;
}

/**
 * Joins the user to each organization of the project that holds `domain` and lets users join by it (unless a
 * member already): the organizations joined, with the roles.
 */
export async function joinDomainOrganizations(
  sql: Sql,
  projectId: string,
  userId: string,
  domain: string,
): Promise<{ organization_id: string; role_ids: string[] }[]> {
  return await joinWithDefaultRoles(
    sql,
    projectId,
    userId,
    sql`select d.organization_id from organization_domains d
        join organizations org on org.project_id = d.project_id and org.id = d.organization_id
        where d.project_id = ${projectId} and d.domain = ${domain} and org.join_by_domain`,
  );
}

/** The user's address when it is verified (and the user active), else undefined. */
export async function findVerifiedEmail(
  sql: Sql,
  projectId: string,
  userId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ email: string }[]>`
    select email from users
    where project_id = ${projectId} and id = ${userId} and email_verified and is_active and email is not null`;
  return row?.email;
}

/** An organization's second-factor policy (`inherit`, `optional`, `required`); undefined when unknown. */
export async function findOrganizationMfa(
  sql: Sql,
  projectId: string,
  organizationId: string,
): Promise<"inherit" | "optional" | "required" | undefined> {
  const [row] = await sql<{ mfa: "inherit" | "optional" | "required" }[]>`
    select mfa from organizations where project_id = ${projectId} and id = ${organizationId}`;
  return row?.mfa;
}

/** Joins the user to the organization with its default roles; the roles given, or undefined when a member. */
export async function joinOrganization(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<string[] | undefined> {
  const [joined] = await joinWithDefaultRoles(
    sql,
    projectId,
    userId,
    sql`select o.id as organization_id from organizations o
        where o.project_id = ${projectId} and o.id = ${organizationId}`,
  );
  return joined?.role_ids;
}

/** Whether the organization holds this email domain. */
export async function organizationHasDomain(
  sql: Sql,
  projectId: string,
  organizationId: string,
  domain: string,
): Promise<boolean> {
  const rows = await sql`
    select 1 from organization_domains
    where project_id = ${projectId} and organization_id = ${organizationId} and domain = ${domain}`;
  return rows.length > 0;
}
