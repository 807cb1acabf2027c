/** The API a resource indicator (RFC 8707) names, and what a token's subject holds of it. */
import type { Sql } from "../connection.ts";

export type IndicatorTarget = {
  project_id: string;
  resource_id: string;
  /** The codes of all the resource's permissions. */
  codes: string[];
  /** The codes of the resource's permissions that the subject holds (a client directly, a user by its role). */
  held: string[];
};

/** The resource whose indicator is exactly `indicator`, and the subject's permission codes on it; or undefined. */
export async function findIndicatorTarget(
  sql: Sql,
  indicator: string,
  subject: { clientId: string } | { userId: string },
): Promise<IndicatorTarget | undefined> {
  const held = "clientId" in subject
    ? sql`select pe.code from client_permissions g join permissions pe on pe.id = g.permission_id
          where g.client_id = ${subject.clientId} and pe.resource_id = r.id`
    : sql`select pe.code from role_permissions g join permissions pe on pe.id = g.permission_id
          where g.role_id = (select role_id from users where id = ${subject.userId}) and pe.resource_id = r.id`;
  const [row] = await sql<IndicatorTarget[]>`
    select r.project_id, r.id as resource_id,
           array(select code from permissions where resource_id = r.id order by code collate "C") as codes,
           coalesce(array(select code from (${held}) h order by code collate "C"), '{}') as held
    from resources r where r.indicator = ${indicator}`;
  return row;
}

/** The project whose resource has this indicator (a token's `aud`), or undefined. */
export async function findIndicatorProject(sql: Sql, indicator: string): Promise<string | undefined> {
  const [row] = await sql<
    { project_id: string }[]
  >`select project_id from resources where indicator = ${indicator}`;
  return row?.project_id;
}
