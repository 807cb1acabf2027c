/** SCIM tokens of clients (db/migrations/0036_scim_tokens.sql): only their SHA-256 is stored. */
import { isoText } from "../columns.ts";
import type { Sql } from "../connection.ts";

export type ScimTokenRow = {
  id: string;
  project_id: string;
  client_id: string;
  description: string | null;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
};

const COLUMNS = `t.id, t.project_id, t.client_id, t.description, ${isoText("t.created_at")} as created_at,
  ${isoText("t.expires_at")} as expires_at, ${isoText("t.last_used_at")} as last_used_at`;

export async function insertScimToken(
  sql: Sql,
  t: {
    project_id: string;
    id: string;
    client_id: string;
    token_hash: Uint8Array;
    description: string | null;
  },
  expiresInDays: number | null,
): Promise<ScimTokenRow> {
  const [row] = await sql.unsafe<ScimTokenRow[]>(
    `insert into scim_tokens as t (project_id, id, client_id, token_hash, description, expires_at)
     values ($1, $2, $3, $4, $5, case when $6::int is null then null else now() + make_interval(days => $6::int) end)
     returning ${COLUMNS}`,
    [t.project_id, t.id, t.client_id, t.token_hash, t.description, expiresInDays],
  );
  return row;
}

/** The client's tokens, the newest first. */
export async function listScimTokens(sql: Sql, projectId: string, clientId: string): Promise<ScimTokenRow[]> {
  return await sql.unsafe<ScimTokenRow[]>(
    `select ${COLUMNS} from scim_tokens t where t.project_id = $1 and t.client_id = $2
     order by t.created_at desc, t.id desc`,
    [projectId, clientId],
  );
}

export async function deleteScimToken(
  sql: Sql,
  projectId: string,
  clientId: string,
  tokenId: string,
): Promise<ScimTokenRow | undefined> {
  const [row] = await sql.unsafe<ScimTokenRow[]>(
    `delete from scim_tokens t where t.project_id = $1 and t.client_id = $2 and t.id = $3 returning ${COLUMNS}`,
    [projectId, clientId, tokenId],
  );
  return row;
}

export type ScimTokenGate = {
  id: string;
  client_id: string;
  is_admin: boolean;
  decision_reasons: boolean;
  /** Whether the client holds the default resource's permission now. */
  allowed: boolean;
};

/**
 * The token by its hash when it is live for the project: not expired, its client and project active, and made
 * after the client's and the project's last cutoff (a rotated secret, a deactivation). Whether its client holds
 * `resource:code` now. Marks it used, at most once a minute, in the same statement.
 */
export async function findLiveScimToken(
  sql: Sql,
  tokenHash: Uint8Array,
  projectId: string,
  permission: { resource: string; code: string },
): Promise<ScimTokenGate | undefined> {
  const [row] = await sql.unsafe<ScimTokenGate[]>(
    `with hit as (
       select t.id, t.client_id, c.is_admin, c.decision_reasons, t.last_used_at,
              exists (select 1 from resources r
                      join permissions pe on pe.resource_id = r.id and lower(pe.code) = $4::text
                      join client_permissions g on g.client_id = c.id and g.permission_id = pe.id
                      where r.project_id = p.id and lower(r.code) = $3::text and r.is_default) as allowed
       from scim_tokens t
       join projects p on p.id = t.project_id
       join clients c on c.project_id = t.project_id and c.id = t.client_id
       where t.token_hash = $1 and t.project_id = $2::text and p.is_active and c.is_active
         and (t.expires_at is null or t.expires_at > now())
         and (c.tokens_valid_after is null or t.created_at > c.tokens_valid_after)
         and (p.tokens_valid_after is null or t.created_at > p.tokens_valid_after)
     ), used as (
       update scim_tokens set last_used_at = now()
       where id in (select id from hit where last_used_at is null or last_used_at < now() - interval '1 minute')
     )
     select id, client_id, is_admin, decision_reasons, allowed from hit`,
    [tokenHash, projectId, permission.resource, permission.code],
  );
  return row;
}
