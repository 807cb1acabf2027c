/** Queries on roles and their permission grants; a role row is the API's `Role`. */
import type { Role, RoleListQuery, RoleScope } from "../../openapi/roles.ts";
import { fixed, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, type PageStatement, pageStatement, type Params } from "../lists.ts";

const COLUMNS = `ro.id, ro.project_id, ro.code, ro.name, ro.description, ro.scope,
      array(select rp.permission_id from role_permissions rp where rp.role_id = ro.id order by rp.permission_id)
        as permission_ids,
      coalesce((select json_agg(json_build_object('permission_id', rp.permission_id, 'expression', rp.condition)
                                order by rp.permission_id)
                from role_permissions rp where rp.role_id = ro.id and rp.condition is not null), '[]') as conditions,
      ${timestampsText("ro")}`;
const columns = (sql: Sql) => fixed(sql, COLUMNS);

export async function insertRole(
  sql: Sql,
  r: {
    project_id: string;
    id: string;
    code: string;
    name: string;
    description: string | null;
    /** Default `project`. */
    scope?: RoleScope;
  },
): Promise<void> {
  await sql`insert into roles ${sql(r)}`;
}

export async function updateRoleRow(
  sql: Sql,
  projectId: string,
  roleId: string,
  r: { code: string; name: string; description: string | null },
): Promise<boolean> {
  const rows = await sql`
    update roles set code = ${r.code}, name = ${r.name}, description = ${r.description}, updated_at = now()
    where project_id = ${projectId} and id = ${roleId} returning id`;
  return rows.length === 1;
}

/** Replaces the role's grants with exactly these permissions, each with its condition (by permission id) or none. */
export async function setRolePermissions(
  sql: Sql,
  projectId: string,
  roleId: string,
  ids: string[],
  conditions: ReadonlyMap<string, string>,
): Promise<void> {
  await sql`delete from role_permissions where role_id = ${roleId}`;
  if (ids.length === 0) return;
  await sql`insert into role_permissions ${
    sql(ids.map((permission_id) => ({
      project_id: projectId,
      role_id: roleId,
      permission_id,
      condition: conditions.get(permission_id) ?? null,
    })))
  }`;
}

/** The role's scope, or undefined when it is not one of the project's. */
export async function roleScopeOf(
  sql: Sql,
  projectId: string,
  roleId: string,
): Promise<RoleScope | undefined> {
  const [row] = await sql<{ scope: RoleScope }[]>`
    select scope from roles where project_id = ${projectId} and id = ${roleId}`;
  return row?.scope;
}

/** The role; `lock` holds it for the rest of the transaction. */
export async function findRole(
  sql: Sql,
  projectId: string,
  roleId: string,
  opts: { lock?: boolean } = {},
): Promise<Role | undefined> {
  const [row] = await sql<Role[]>`
    select ${columns(sql)} from roles ro where ro.project_id = ${projectId} and ro.id = ${roleId}
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

/**
 * The role's scope (undefined: no such role in the project), holding the role (`for share`) for the rest of the
 * transaction: its permissions cannot change (an update locks the role `for update`) between a coverage check
 * and the write that relies on it.
 */
export async function lockRoleShared(
  sql: Sql,
  projectId: string,
  roleId: string,
): Promise<RoleScope | undefined> {
  const [row] = await sql<{ scope: RoleScope }[]>`
    select scope from roles where project_id = ${projectId} and id = ${roleId} for share`;
  return row?.scope;
}

/** The scope of each of these roles of the project (absent: not a role of the project), held `for share`. */
export async function lockRolesShared(
  sql: Sql,
  projectId: string,
  roleIds: string[],
): Promise<Map<string, RoleScope>> {
  if (roleIds.length === 0) return new Map();
  const rows = await sql<{ id: string; scope: RoleScope }[]>`
    select id, scope from roles where project_id = ${projectId} and id = any(${roleIds}::text[])
    order by id for share`;
  return new Map(rows.map((r) => [r.id, r.scope]));
}

/** The list's statement: one source for the list and for the read the gate attaches. */
export function roleListStatement(projectId: string, q: RoleListQuery): PageStatement {
  const params: Params = [projectId];
  let where = "where ro.project_id = $1";
  if (q.search) {
    const like = `$${params.push(containsPattern(q.search))}`;
    where += ` and (ro.code ilike ${like} or ro.name ilike ${like} or ro.description ilike ${like})`;
  }
  if (q.scope !== undefined) where += ` and ro.scope = $${params.push(q.scope)}`;
  return pageStatement({ table: "roles", alias: "ro" }, { columns: COLUMNS }, where, params, q);
}

/** How many users have the role. */
export async function countRoleUsers(sql: Sql, projectId: string, roleId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from users where project_id = ${projectId} and role_id = ${roleId}`;
  return row.n;
}

/** Gives every user with role `from` the role `to`; returns how many moved. */
export async function moveRoleUsers(sql: Sql, projectId: string, from: string, to: string): Promise<number> {
  const rows = await sql`
    update users set role_id = ${to}, updated_at = now()
    where project_id = ${projectId} and role_id = ${from} returning id`;
  return rows.length;
}

/** Deletes the role; its grants go with it (role_permissions cascade). */
export async function deleteRoleRow(sql: Sql, projectId: string, roleId: string): Promise<void> {
  await sql`delete from roles where project_id = ${projectId} and id = ${roleId}`;
}
