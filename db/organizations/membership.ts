/** Whether a user belongs to an organization now: what the sign-in, the token endpoint and the claims ask. */
import type { Sql } from "../connection.ts";

/** An organization of the project (its name), and whether the user is a member of it; undefined when unknown. */
export async function findMembership(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<{ name: string; member: boolean } | undefined> {
  const [row] = await sql<{ name: string; member: boolean }[]>`
    select o.name, exists (select from organization_members m
                           where m.organization_id = o.id and m.user_id = ${userId}) as member
    from organizations o where o.project_id = ${projectId} and o.id = ${organizationId}`;
  return row;
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
