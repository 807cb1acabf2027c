/** Tokens issued by token exchange (RFC 8693): one row each, which the gate reads to decide them live. */
import type { Sql } from "../connection.ts";
import { delegatedPermissionIds } from "../authz/principals.ts";

export type DelegatedRow = {
  subject_type: "user" | "client";
  subject_id: string;
  subject_client_id: string;
  session_id: string | null;
  subject_issued_at: Date;
  actors: string[];
  ancestors: string[];
  /** A user subject's organization (`org_id`), or null. */
  organization_id: string | null;
};

/** A token of an exchange as its row says, with what it was asked for (null: all of the intersection). */
export type DelegatedToken = DelegatedRow & { permission_ids: string[] | null; resource_id: string | null };

/** The row of a token of an exchange, by its jti. */
export async function findDelegatedToken(sql: Sql, jti: string): Promise<DelegatedToken | undefined> {
  const [row] = await sql<DelegatedToken[]>`
    select subject_type, subject_id, subject_client_id, session_id, subject_issued_at, actors, ancestors,
           permission_ids, resource_id, organization_id
    from delegated_tokens where jti = ${jti}`;
  return row;
}

/**
 * Whether the exchange may go on: none of `actors` was stopped by the user for tokens issued up to
 * `subjectIssuedAt` (a stop counts for the tokens the user had then), and the `may_act` the subject client names
 * now, if any, is the exchanging client.
 */
export async function exchangeBlock(
  sql: Sql,
  t: {
    projectId: string;
    userId: string | null;
    subjectClientId: string;
    actors: string[];
    subjectIssuedAt: Date;
  },
): Promise<{ stopped: string | null; may_act: string | null }> {
  const [row] = await sql<{ stopped: string | null; may_act: string | null }[]>`
    select (select s.client_id from delegation_stops s
            where s.project_id = ${t.projectId} and s.user_id = ${t.userId} and s.client_id = any(${t.actors}::text[])
              and s.stopped_at >= ${t.subjectIssuedAt} limit 1) as stopped,
           (select c.may_act from clients c where c.project_id = ${t.projectId} and c.id = ${t.subjectClientId})
             as may_act`;
  return row;
}

/** Ends every live token exchanged in which the client acts (its delegation was turned off); how many. */
export async function revokeTokensOfActor(sql: Sql, projectId: string, clientId: string): Promise<number> {
  const rows = await sql`
    update delegated_tokens set revoked_at = now()
    where project_id = ${projectId} and ${clientId} = any(actors) and revoked_at is null and expires_at > now()
    returning jti`;
  return rows.length;
}

export async function insertDelegatedToken(
  sql: Sql,
  t: DelegatedRow & {
    project_id: string;
    jti: string;
    permission_ids: string[] | null;
    resource_id: string | null;
    expires_at: number;
  },
): Promise<void> {
  await sql`
    insert into delegated_tokens (project_id, jti, subject_type, subject_id, subject_client_id, session_id,
                                  subject_issued_at, actors, ancestors, permission_ids, resource_id, expires_at,
                                  organization_id)
    values (${t.project_id}, ${t.jti}, ${t.subject_type}, ${t.subject_id}, ${t.subject_client_id}, ${t.session_id},
            ${t.subject_issued_at}, ${t.actors}, ${t.ancestors}, ${t.permission_ids}, ${t.resource_id},
            to_timestamp(${t.expires_at}), ${t.organization_id})`;
}

/** A permission of the project: its id, its resource, and its `resource:permission` code. */
export type ExchangeablePermission = { id: string; resource_id: string; permission: string; code: string };

/**
 * The permissions a token of an exchange may hold, now: those the subject holds (a user through the role, and in
 * an organization through their organization roles there, of the application's resources; a client directly)
 * that every actor's delegation has. With `resourceId`, only that API's.
 */
export async function exchangeablePermissions(
  sql: Sql,
  projectId: string,
  subject: { userId: string } | { clientId: string },
  actors: string[],
  resourceId: string | null,
  organizationId: string | null = null,
): Promise<ExchangeablePermission[]> {
  const held = "userId" in subject
    ? sql`select rp.permission_id from role_permissions rp join users u
            on u.project_id = rp.project_id and u.role_id = rp.role_id
          where u.project_id = ${projectId} and u.id = ${subject.userId} and rp.condition is null
          ${
      organizationId === null ? sql`` : sql`union all
          select rp.permission_id from organization_member_roles mr
          join role_permissions rp on rp.role_id = mr.role_id
          join permissions ope on ope.id = rp.permission_id
          join resources ore on ore.id = ope.resource_id and not ore.is_default
          where mr.project_id = ${projectId} and mr.organization_id = ${organizationId}
            and mr.user_id = ${subject.userId} and rp.condition is null`
    }`
    : sql`select permission_id from client_permissions where project_id = ${projectId} and client_id = ${subject.clientId}`;
  return await sql<ExchangeablePermission[]>`
    select pe.id, pe.resource_id, pe.code as permission, r.code || ':' || pe.code as code
    from permissions pe join resources r on r.id = pe.resource_id
    where pe.project_id = ${projectId} and pe.id in (${held})
      ${resourceId === null ? sql`` : sql`and pe.resource_id = ${resourceId}`}
      and not exists (select from unnest(${actors}::text[]) a (id) where not exists (
            select from client_delegations d where d.client_id = a.id and d.permission_id = pe.id))
    order by (r.code || ':' || pe.code) collate "C"`;
}

/**
 * What a token of an exchange holds now (for introspection and coverage): its subject's holdings within every
 * actor's delegation and what it asked for, as `resource:permission` codes with their resource.
 */
export async function delegatedPermissions(sql: Sql, jti: string): Promise<ExchangeablePermission[]> {
  return await sql<ExchangeablePermission[]>`
    select pe.id, pe.resource_id, pe.code as permission, r.code || ':' || pe.code as code
    from permissions pe join resources r on r.id = pe.resource_id
    where pe.id in (${delegatedPermissionIds(sql, jti)})
    order by (r.code || ':' || pe.code) collate "C"`;
}

/** An agent acting for a user now: a client first in the chain of live tokens exchanged for the user. */
export type ActingAgent = { client_id: string; client_name: string; tokens: number; last_at: string };

/** The agents holding live tokens of exchanges for the user, the latest first. */
export async function listActingAgents(sql: Sql, projectId: string, userId: string): Promise<ActingAgent[]> {
  return await sql<ActingAgent[]>`
    select c.id as client_id, c.name as client_name, count(*)::int as tokens,
           to_char(max(dt.created_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last_at
    from delegated_tokens dt join clients c on c.project_id = dt.project_id and c.id = dt.actors[1]
    where dt.project_id = ${projectId} and dt.subject_type = 'user' and dt.subject_id = ${userId}
      and dt.revoked_at is null and dt.expires_at > now()
    group by c.id, c.name
    order by max(dt.created_at) desc`;
}

/**
 * Ends every live token exchanged for the user in whose chain the client acts (as the latest actor or an earlier
 * one); how many it ended.
 */
export async function revokeActingAgent(
  sql: Sql,
  projectId: string,
  userId: string,
  clientId: string,
): Promise<number> {
  const rows = await sql`
    update delegated_tokens set revoked_at = now()
    where project_id = ${projectId} and subject_type = 'user' and subject_id = ${userId}
      and ${clientId} = any(actors) and revoked_at is null and expires_at > now()
    returning jti`;
  // And no token the user holds now is exchanged by it again (db/oauth/delegated_tokens.ts `exchangeBlock`).
  await sql`
    insert into delegation_stops (project_id, user_id, client_id) values (${projectId}, ${userId}, ${clientId})
    on conflict (project_id, user_id, client_id) do update set stopped_at = clock_timestamp()`;
  return rows.length;
}
