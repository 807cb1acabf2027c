/** The bearer-token gate's one query: is the token's subject live, and does it hold the permission? */
import type { Sql } from "./connection.ts";

export type GateRow = { path_project_exists: boolean | null; allowed: boolean };

/**
 * One round trip per admin request. A row comes back only when the token's project, its client and (for a
 * user token) its session and user are active and the token was not revoked.
 */
export async function findLivePrincipal(
  sql: Sql,
  t: {
    projectId: string;
    clientId: string;
    jti: string;
    pathProjectId: string | null;
    resource: string;
    permission: string;
  },
): Promise<GateRow | undefined> {
  const [row] = await sql<GateRow[]>`
    select
      ${
    t.pathProjectId === null
      ? sql`null::boolean`
      : sql`exists (select 1 from projects where id = ${t.pathProjectId})`
  }
        as path_project_exists,
      exists (
        select 1
        from client_permissions cp
        join permissions pe on pe.id = cp.permission_id
        join resources r on r.id = pe.resource_id
        where cp.client_id = c.id and r.is_default and r.code = ${t.resource} and pe.code = ${t.permission}
      ) as allowed
    from projects p
    join clients c on c.project_id = p.id and c.id = ${t.clientId}
    where p.id = ${t.projectId} and p.is_active and c.is_active
      and not exists (select 1 from revoked_access_tokens x where x.jti = ${t.jti})`;
  return row;
}
