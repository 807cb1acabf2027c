/** Queries on resources and their permissions. */
import type { Sql } from "./connection.ts";
import { containsPattern, offsetOf, type Page, pageOf, type Sort } from "./lists.ts";

export type NewPermission = { id: string; name: string; code: string; description: string | null };
export type NewResource = {
  id: string;
  name: string;
  code: string;
  description: string | null;
  is_default: boolean;
  permissions: NewPermission[];
};

export type PermissionRow = {
  id: string;
  resource_id: string;
  name: string;
  code: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
};

export type ResourceRow = {
  id: string;
  project_id: string;
  name: string;
  code: string;
  description: string | null;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
};

const columns = (sql: Sql) =>
  sql`r.id, r.project_id, r.name, r.code, r.description, r.is_default, r.created_at, r.updated_at`;

/** Inserts resources and their permissions with two statements, whatever their number. */
export async function insertResources(sql: Sql, projectId: string, resources: NewResource[]): Promise<void> {
  if (resources.length === 0) return;
  await sql`insert into resources ${
    sql(
      resources.map((r) => ({
        project_id: projectId,
        id: r.id,
        name: r.name,
        code: r.code,
        description: r.description,
        is_default: r.is_default,
      })),
    )
  }`;
  await insertPermissions(
    sql,
    projectId,
    resources.flatMap((r) => r.permissions.map((p) => ({ ...p, resource_id: r.id }))),
  );
}

export async function insertPermissions(
  sql: Sql,
  projectId: string,
  permissions: (NewPermission & { resource_id: string })[],
): Promise<void> {
  if (permissions.length === 0) return;
  await sql`insert into permissions ${
    sql(permissions.map((p) => ({
      project_id: projectId,
      id: p.id,
      resource_id: p.resource_id,
      name: p.name,
      code: p.code,
      description: p.description,
    })))
  }`;
}

/** The resource, locked for the rest of the transaction so that concurrent updates apply one after another. */
export async function findResourceForUpdate(
  sql: Sql,
  projectId: string,
  resourceId: string,
): Promise<ResourceRow | undefined> {
  const [row] = await sql<ResourceRow[]>`
    select ${
    columns(sql)
  } from resources r where r.project_id = ${projectId} and r.id = ${resourceId} for update`;
  return row;
}

export async function updateResourceRow(
  sql: Sql,
  resourceId: string,
  r: { name: string; code: string; description: string | null },
): Promise<void> {
  await sql`
    update resources set name = ${r.name}, code = ${r.code}, description = ${r.description}, updated_at = now()
    where id = ${resourceId}`;
}

export async function updatePermissionRows(
  sql: Sql,
  permissions: { id: string; code: string; name: string; description: string | null }[],
): Promise<void> {
  if (permissions.length === 0) return;
  const ids = permissions.map((p) => p.id);
  const codes = permissions.map((p) => p.code);
  const names = permissions.map((p) => p.name);
  const descriptions = permissions.map((p) => p.description);
  await sql`
    update permissions p set code = v.code, name = v.name, description = v.description, updated_at = now()
    from unnest(${ids}::text[], ${codes}::text[], ${names}::text[], ${descriptions}::text[])
      as v (id, code, name, description)
    where p.id = v.id and (p.code, p.name, p.description) is distinct from (v.code, v.name, v.description)`;
}

/** Deletes permissions; their grants to roles and clients go with them (foreign keys cascade). */
export async function deletePermissions(sql: Sql, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`delete from permissions where id = any(${ids})`;
}

export async function listPermissionsOf(sql: Sql, resourceIds: string[]): Promise<PermissionRow[]> {
  if (resourceIds.length === 0) return [];
  return await sql<PermissionRow[]>`
    select id, resource_id, name, code, description, created_at, updated_at
    from permissions where resource_id = any(${resourceIds})
    order by lower(code), id`;
}

export async function findResource(
  sql: Sql,
  projectId: string,
  resourceId: string,
): Promise<ResourceRow | undefined> {
  const [row] = await sql<ResourceRow[]>`
    select ${columns(sql)} from resources r where r.project_id = ${projectId} and r.id = ${resourceId}`;
  return row;
}

export type ResourceSortField = "name" | "code" | "created_at" | "updated_at";

export function listResources(
  sql: Sql,
  projectId: string,
  q: Page & Sort<ResourceSortField> & { search?: string; is_default?: boolean },
): Promise<{ rows: ResourceRow[]; total: number }> {
  const like = q.search ? containsPattern(q.search) : null;
  const where = sql`
    where r.project_id = ${projectId}
    ${q.is_default === undefined ? sql`` : sql`and r.is_default = ${q.is_default}`}
    ${
    like === null ? sql`` : sql`and (
      r.name ilike ${like} or r.code ilike ${like} or r.description ilike ${like}
      or exists (
        select 1 from permissions p where p.resource_id = r.id
          and (p.name ilike ${like} or p.code ilike ${like} or p.description ilike ${like})
      )
    )`
  }`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return pageOf(
    sql<(ResourceRow & { total_count: number })[]>`
      select ${columns(sql)}, count(*) over ()::int as total_count from resources r ${where}
      order by ${sql("r." + q.sort_by)} ${dir}, r.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from resources r ${where}`,
  );
}

/** Of the given permission ids, those that are not permissions of the project. */
export async function missingPermissionIds(sql: Sql, projectId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = await sql<{ id: string }[]>`
    select id from permissions where project_id = ${projectId} and id = any(${ids})`;
  const have = new Set(found.map((r) => r.id));
  return ids.filter((id) => !have.has(id));
}
