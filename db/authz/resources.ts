/** Queries on resources and their permissions; a resource row (with its permissions) is the API's `Resource`. */
import type { Permission, Resource, ResourceListQuery } from "../../openapi/resources.ts";
import { fixed } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, type PageStatement, pageStatement, type Params } from "../lists.ts";

/** A permission to insert: the API's `Permission` without what the database sets. */
export type NewPermission = Pick<Permission, "id" | "name" | "code" | "description">;
/** A resource to insert, with its permissions. */
export type NewResource = Pick<Resource, "id" | "name" | "code" | "description" | "is_default"> & {
  indicator?: string | null;
  permissions: NewPermission[];
};

/**
 * The resource `r` as the API's JSON, with its permissions sorted by code: the document the database keeps
 * (migration 0011), or, for a row written before it that the job has not reached yet, the same computed now.
 */
const DOCUMENT = "coalesce(r.doc, resource_document(r))";
const document = (sql: Sql) => fixed(sql, DOCUMENT);

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
        indicator: r.indicator ?? null,
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

export async function updateResourceRow(
  sql: Sql,
  resourceId: string,
  r: { name: string; code: string; description: string | null; indicator: string | null },
): Promise<void> {
  await sql`
    update resources set name = ${r.name}, code = ${r.code}, description = ${r.description},
      indicator = ${r.indicator}, updated_at = now()
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

/** The ids and codes of a resource's permissions, to match an update's by code. */
export async function listPermissionCodes(
  sql: Sql,
  resourceId: string,
): Promise<{ id: string; code: string }[]> {
  return await sql<{ id: string; code: string }[]>`
    select id, code from permissions where resource_id = ${resourceId}`;
}

/** The resource; `lock` holds it for the rest of the transaction, so that concurrent updates queue. */
export async function findResource(
  sql: Sql,
  projectId: string,
  resourceId: string,
  opts: { lock?: boolean } = {},
): Promise<Resource | undefined> {
  const [row] = await sql<{ json: string }[]>`
    select ${
    document(sql)
  } as json from resources r where r.project_id = ${projectId} and r.id = ${resourceId}
    ${opts.lock ? sql`for update` : sql``}`;
  return row && JSON.parse(row.json);
}

/** The list's statement: one source for the list and for the read the gate attaches. */
export function resourceListStatement(projectId: string, q: ResourceListQuery): PageStatement {
  const params: Params = [projectId];
  let where = "where r.project_id = $1";
  if (q.is_default !== undefined) where += ` and r.is_default = $${params.push(q.is_default)}`;
  if (q.search) {
    const like = `$${params.push(containsPattern(q.search))}`;
    where += ` and (
      r.name ilike ${like} or r.code ilike ${like} or r.description ilike ${like}
      or exists (
        select 1 from permissions p where p.resource_id = r.id
          and (p.name ilike ${like} or p.code ilike ${like} or p.description ilike ${like})
      ))`;
  }
  return pageStatement({ table: "resources", alias: "r" }, { json: DOCUMENT }, where, params, q);
}

/** Of the given permission ids, those that are not permissions of the project. */
export async function missingPermissionIds(sql: Sql, projectId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = await sql<{ id: string }[]>`
    select id from permissions where project_id = ${projectId} and id = any(${ids})`;
  const have = new Set(found.map((r) => r.id));
  return ids.filter((id) => !have.has(id));
}

type DefaultPermission = { code: string; name: string; description: string };

/**
 * Adds a default resource to every project lacking it (or to `onlyProject`), and its permissions to every
 * such default resource lacking them (`systemPermissions` in the system project only). Ids are random UUIDs.
 * Returns the projects whose own, non-default resource already has the code.
 */
export async function insertMissingDefault(
  sql: Sql,
  d: {
    code: string;
    name: string;
    description: string;
    onlyProject: string | null;
    permissions: DefaultPermission[];
    systemPermissions: DefaultPermission[];
    systemProjectId: string;
  },
): Promise<string[]> {
  const scope = d.onlyProject === null ? sql`true` : sql`p.id = ${d.onlyProject}`;
  await sql`
    insert into resources (project_id, id, name, code, description, is_default)
    select p.id, gen_random_uuid()::text, ${d.name}, ${d.code}, ${d.description}, true from projects p
    where ${scope} and not exists (
      select 1 from resources r where r.project_id = p.id and lower(r.code) = lower(${d.code}))`;
  const add = async (perms: DefaultPermission[], where: ReturnType<Sql>) => {
    if (perms.length === 0) return;
    await sql`
      insert into permissions (project_id, id, resource_id, name, code, description)
      select r.project_id, gen_random_uuid()::text, r.id, v.name, v.code, v.description
      from resources r
      cross join unnest(${perms.map((p) => p.code)}::text[], ${perms.map((p) => p.name)}::text[],
                        ${perms.map((p) => p.description)}::text[]) as v (code, name, description)
      where r.is_default and r.code = ${d.code} and ${where}
        and not exists (select 1 from permissions pe where pe.resource_id = r.id and lower(pe.code) = lower(v.code))`;
  };
  await add(d.permissions, sql`true`);
  await add(d.systemPermissions, sql`r.project_id = ${d.systemProjectId}`);
  const clashes = await sql<{ project_id: string }[]>`
    select r.project_id from resources r join projects p on p.id = r.project_id
    where ${scope} and lower(r.code) = lower(${d.code}) and not r.is_default`;
  return clashes.map((r) => r.project_id);
}

/**
 * The project's roles that hold every default permission without a condition: in the system project, the roles
 * that make their users operators (db/accounts/users.ts listOperators).
 */
export async function rolesHoldingEveryDefault(sql: Sql, projectId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select ro.id from roles ro
    where ro.project_id = ${projectId} and ro.scope = 'project'
      and not exists (
        select 1 from permissions pe join resources r on r.id = pe.resource_id
        where pe.project_id = ${projectId} and r.is_default
          and not exists (select 1 from role_permissions rp
                          where rp.role_id = ro.id and rp.permission_id = pe.id and rp.condition is null))`;
  return rows.map((r) => r.id);
}

/** Gives the roles every default permission of their project that they lack. */
export async function grantRolesDefaults(sql: Sql, projectId: string, roleIds: string[]): Promise<void> {
  if (roleIds.length === 0) return;
  await sql`
    insert into role_permissions (project_id, role_id, permission_id)
    select ${projectId}, ro.id, pe.id
    from unnest(${roleIds}::text[]) as ro (id)
    cross join permissions pe join resources r on r.id = pe.resource_id and r.is_default
    where pe.project_id = ${projectId}
    on conflict do nothing`;
}

/** Grants every project's admin client the default permissions it lacks. */
export async function grantAdminClientsDefaults(sql: Sql): Promise<void> {
  await sql`
    insert into client_permissions (project_id, client_id, permission_id)
    select c.project_id, c.id, pe.id
    from clients c
    join permissions pe on pe.project_id = c.project_id
    join resources r on r.id = pe.resource_id and r.is_default
    where c.is_admin
    on conflict do nothing`;
}

/**
 * Writes the documents of resources that have none (rows from before migration 0011), `batch` rows to a
 * statement, each its own transaction, so that no lock on `resources` is held for long. Returns how many.
 */
export async function fillResourceDocuments(sql: Sql, signal?: AbortSignal, batch = 200): Promise<number> {
  let filled = 0;
  while (!signal?.aborted) {
    // The update fires the trigger that writes the document (the `null` is never stored).
    const rows = await sql`
      update resources set doc = null
      where id in (select id from resources where doc is null limit ${batch} for update skip locked)`;
    filled += rows.count;
    if (rows.count < batch) break;
  }
  return filled;
}

/** Deletes the resource: its permissions go with it, and with them every role's and client's grant of them. */
export async function deleteResourceRow(sql: Sql, projectId: string, resourceId: string): Promise<void> {
  await sql`delete from resources where project_id = ${projectId} and id = ${resourceId}`;
}

/** The project's resources whose codes are among `codes` (case-insensitively), each with its permission codes. */
export async function findResourceCodes(
  sql: Sql,
  projectId: string,
  codes: string[],
): Promise<{ code: string; permission_codes: string[] }[]> {
  if (codes.length === 0) return [];
  return await sql<{ code: string; permission_codes: string[] }[]>`
    select r.code, array(select pe.code from permissions pe where pe.resource_id = r.id) as permission_codes
    from resources r
    where r.project_id = ${projectId} and lower(r.code) = any(${codes.map((c) => c.toLowerCase())}::text[])`;
}
