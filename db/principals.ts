/** The bearer-token gate's one query: is the token's subject live, and does it hold the permission? */
import type { Sql } from "./connection.ts";

export type GateRow = { path_project_exists: boolean | null; allowed: boolean };

export type GateQuery = {
  projectId: string;
  clientId: string;
  subject: string;
  /** Present on user tokens only. */
  sessionId?: string;
  jti: string;
  /** When the token was signed (from its UUIDv7 jti, to the millisecond). */
  issuedAt: Date;
  pathProjectId: string | null;
  /** A default resource's permission, or null when a live token is all the operation needs. */
  permission: { resource: string; code: string } | null;
};

/**
 * One round trip per request. A row comes back only when the token's project and client are active, the
 * token was not revoked, and, for a user token, its session is live and its user active. `allowed` says
 * whether the subject holds the permission: a client directly, a user through the role.
 */
export async function findLivePrincipal(sql: Sql, t: GateQuery): Promise<GateRow | undefined> {
  const pathProject = t.pathProjectId === null
    ? sql`null::boolean`
    : sql`exists (select 1 from projects where id = ${t.pathProjectId})`;
  const permissionMatches = t.permission === null
    ? sql`true`
    : sql`r.is_default and r.code = ${t.permission.resource} and pe.code = ${t.permission.code}`;
  // Revoked by jti, or issued before its client or project was deactivated or the client's secret rotated.
  const notRevoked = sql`not exists (select 1 from revoked_access_tokens x where x.jti = ${t.jti})
    and (c.tokens_valid_after is null or ${t.issuedAt} > c.tokens_valid_after)
    and (p.tokens_valid_after is null or ${t.issuedAt} > p.tokens_valid_after)`;

  if (t.sessionId === undefined) {
    // A client-credentials token: the client is the subject.
    if (t.subject !== t.clientId) return undefined;
    const [row] = await sql<GateRow[]>`
      select ${pathProject} as path_project_exists,
        ${
      t.permission === null ? sql`true` : sql`exists (
          select 1 from client_permissions g
          join permissions pe on pe.id = g.permission_id
          join resources r on r.id = pe.resource_id
          where g.client_id = c.id and ${permissionMatches}
        )`
    } as allowed
      from projects p
      join clients c on c.project_id = p.id and c.id = ${t.clientId}
      where p.id = ${t.projectId} and p.is_active and c.is_active and ${notRevoked}`;
    return row;
  }
  const [row] = await sql<GateRow[]>`
    select ${pathProject} as path_project_exists,
      ${
    t.permission === null ? sql`true` : sql`exists (
        select 1 from role_permissions g
        join permissions pe on pe.id = g.permission_id
        join resources r on r.id = pe.resource_id
        where g.role_id = u.role_id and ${permissionMatches}
      )`
  } as allowed
    from projects p
    join clients c on c.project_id = p.id and c.id = ${t.clientId}
    join sessions s on s.project_id = p.id and s.id = ${t.sessionId} and s.client_id = c.id
    join users u on u.project_id = p.id and u.id = s.user_id and u.id = ${t.subject}
    where p.id = ${t.projectId} and p.is_active and c.is_active and u.is_active
      and s.revoked_at is null and s.expires_at > now() and ${notRevoked}`;
  return row;
}
