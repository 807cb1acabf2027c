/** Queries on clients and their direct permission grants. */
import type { Sql } from "./connection.ts";
import { containsPattern, offsetOf, type Page, pageOf, type Sort } from "./lists.ts";

export type ClientRow = {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  is_active: boolean;
  is_admin: boolean;
  permission_ids: string[];
  created_at: Date;
  updated_at: Date;
};

const columns = (sql: Sql) =>
  sql`c.id, c.project_id, c.name, c.description, c.is_active, c.is_admin, c.created_at, c.updated_at,
      array(select cp.permission_id from client_permissions cp where cp.client_id = c.id order by cp.permission_id)
        as permission_ids`;

export async function insertClient(
  sql: Sql,
  c: {
    project_id: string;
    id: string;
    name: string;
    description: string | null;
    secret_hash: Uint8Array;
    is_active?: boolean;
    is_admin?: boolean;
  },
): Promise<void> {
  await sql`
    insert into clients (project_id, id, name, description, secret_hash, is_active, is_admin)
    values (${c.project_id}, ${c.id}, ${c.name}, ${c.description}, ${c.secret_hash}, ${c.is_active ?? true},
            ${c.is_admin ?? false})`;
}

/** Grants every permission of the project's default resources (the project's admin client). */
export async function grantDefaultPermissions(sql: Sql, projectId: string, clientId: string): Promise<void> {
  await sql`
    insert into client_permissions (project_id, client_id, permission_id)
    select p.project_id, ${clientId}, p.id
    from permissions p join resources r on r.id = p.resource_id
    where p.project_id = ${projectId} and r.is_default`;
}

export async function findClient(
  sql: Sql,
  projectId: string,
  clientId: string,
  opts: { lock?: boolean } = {},
): Promise<ClientRow | undefined> {
  const [row] = await sql<ClientRow[]>`
    select ${columns(sql)} from clients c where c.project_id = ${projectId} and c.id = ${clientId}
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

export async function updateClientSecret(
  sql: Sql,
  projectId: string,
  clientId: string,
  secretHash: Uint8Array,
): Promise<boolean> {
  const rows = await sql`
    update clients set secret_hash = ${secretHash}, tokens_valid_after = now(), updated_at = now()
    where project_id = ${projectId} and id = ${clientId}
    returning id`;
  return rows.length === 1;
}

export type ClientCredentialsRow = {
  id: string;
  project_id: string;
  secret_hash: Uint8Array;
  is_active: boolean;
  project_is_active: boolean;
};

/** What the token endpoint needs to authenticate a client, in one query. */
export async function findClientCredentials(
  sql: Sql,
  clientId: string,
): Promise<ClientCredentialsRow | undefined> {
  const [row] = await sql<ClientCredentialsRow[]>`
    select c.id, c.project_id, c.secret_hash, c.is_active, p.is_active as project_is_active
    from clients c join projects p on p.id = c.project_id
    where c.id = ${clientId}`;
  return row;
}

export async function updateClientRow(
  sql: Sql,
  projectId: string,
  clientId: string,
  c: { name: string; description: string | null; is_active: boolean },
): Promise<boolean> {
  const rows = await sql`
    update clients set name = ${c.name}, description = ${c.description}, is_active = ${c.is_active},
      tokens_valid_after = case when is_active and not ${c.is_active} then now() else tokens_valid_after end,
      updated_at = now()
    where project_id = ${projectId} and id = ${clientId} returning id`;
  return rows.length === 1;
}

/** Replaces the client's direct grants with exactly these permissions. */
export async function setClientPermissions(
  sql: Sql,
  projectId: string,
  clientId: string,
  ids: string[],
): Promise<void> {
  await sql`delete from client_permissions where client_id = ${clientId}`;
  if (ids.length === 0) return;
  await sql`insert into client_permissions ${
    sql(ids.map((permission_id) => ({ project_id: projectId, client_id: clientId, permission_id })))
  }`;
}

export type ClientSortField = "name" | "is_active" | "created_at" | "updated_at";

export function listClients(
  sql: Sql,
  projectId: string,
  q: Page & Sort<ClientSortField> & { search?: string; is_active?: boolean },
): Promise<{ rows: ClientRow[]; total: number }> {
  const where = sql`
    where c.project_id = ${projectId}
    ${q.search ? sql`and c.name ilike ${containsPattern(q.search)}` : sql``}
    ${q.is_active === undefined ? sql`` : sql`and c.is_active = ${q.is_active}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return pageOf(
    sql<(ClientRow & { total_count: number })[]>`
      select ${columns(sql)}, count(*) over ()::int as total_count from clients c ${where}
      order by ${sql("c." + q.sort_by)} ${dir}, c.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from clients c ${where}`,
  );
}
