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

/**
 * A token's subject: a client on its own, or a user; for a user through a client that needs consent
 * (`consentOf`, that client's ID), only what the user consented to that client of the resource counts as held.
 * A user signed in to an organization (`organizationId`) also holds what their organization roles there hold.
 */
export type IndicatorSubject = { clientId: string } | {
  userId: string;
  consentOf?: string;
  organizationId?: string | null;
};

/** The resource whose indicator is exactly `indicator`, and the subject's permission codes on it; or undefined. */
export async function findIndicatorTarget(
  sql: Sql,
  indicator: string,
  subject: IndicatorSubject,
): Promise<IndicatorTarget | undefined> {
  const consented = "userId" in subject && subject.consentOf !== undefined
    ? sql`and pe.code = any(coalesce((select c.permissions from consents c
            where c.project_id = r.project_id and c.user_id = ${subject.userId}
              and c.client_id = ${subject.consentOf} and c.resource_id = r.id), '{}'))`
    : sql``;
  const held = "clientId" in subject
    ? sql`select pe.code from client_permissions g join permissions pe on pe.id = g.permission_id
          where g.client_id = ${subject.clientId} and pe.resource_id = r.id`
    : sql`select pe.code from permissions pe
          where pe.resource_id = r.id and pe.id in (
            select g.permission_id from role_permissions g
            where g.role_id = (select role_id from users where id = ${subject.userId}) and g.condition is null
            ${
      subject.organizationId
        ? sql`union all
            select g.permission_id from organization_member_roles mr
            join role_permissions g on g.role_id = mr.role_id
            where mr.organization_id = ${subject.organizationId} and mr.user_id = ${subject.userId}
              and g.condition is null`
        : sql``
    })
          ${consented}`;
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
