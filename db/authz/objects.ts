/** Queries on the objects of a resource and their closure table (`object_paths`, migration 0012). */
import type { Properties } from "../../openapi/fields.ts";
import type { ObjectListQuery, ObjectRecord } from "../../openapi/objects.ts";
import { fixed, timestampsText } from "../columns.ts";
import type { Sql } from "../connection.ts";
import { containsPattern, type PageStatement, pageStatement, type Params } from "../lists.ts";

const COLUMNS =
  `o.id, o.project_id, o.resource_id, o.name, o.parent_id, o.depth, o.properties, o.organization_id, ${
    timestampsText("o")
  }`;
const columns = (sql: Sql) => fixed(sql, COLUMNS);

export type ObjectsResource = { id: string; code: string; is_default: boolean };

/** The resource of the project whose objects are asked for. */
export async function findObjectsResource(
  sql: Sql,
  projectId: string,
  resourceId: string,
): Promise<ObjectsResource | undefined> {
  const [row] = await sql<ObjectsResource[]>`
    select id, code, is_default from resources where project_id = ${projectId} and id = ${resourceId}`;
  return row;
}

/**
 * Serializes the writes to one resource's hierarchy for the rest of the transaction (two moves at once could
 * otherwise make a cycle that neither sees, and a child's paths be written from its parent's old ones).
 */
export async function lockHierarchy(sql: Sql, resourceId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${"objects:" + resourceId}, 0))`;
}

/** The depth of each of these objects of the resource that exists. */
export async function depthsOf(sql: Sql, resourceId: string, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<{ id: string; depth: number }[]>`
    select id, depth from objects where resource_id = ${resourceId} and id = any(${ids}::text[])`;
  return new Map(rows.map((r) => [r.id, r.depth]));
}

/** The ancestors (the object itself included, at depth 0) of each of these objects. */
export async function pathsOf(
  sql: Sql,
  resourceId: string,
  ids: string[],
): Promise<Map<string, { ancestor: string; depth: number }[]>> {
  const out = new Map<string, { ancestor: string; depth: number }[]>();
  if (ids.length === 0) return out;
  const rows = await sql<{ object_id: string; ancestor_id: string; depth: number }[]>`
    select object_id, ancestor_id, depth from object_paths
    where resource_id = ${resourceId} and object_id = any(${ids}::text[])`;
  for (const r of rows) {
    const list = out.get(r.object_id) ?? [];
    list.push({ ancestor: r.ancestor_id, depth: r.depth });
    out.set(r.object_id, list);
  }
  return out;
}

export type NewObject = {
  id: string;
  name: string | null;
  parent_id: string | null;
  depth: number;
  properties: Properties;
  organization_id: string | null;
};
export type NewPath = { object: string; ancestor: string; depth: number };

/** Inserts objects (parents before children) and their paths: two statements, whatever their number. */
export async function insertObjects(
  sql: Sql,
  projectId: string,
  resourceId: string,
  objects: NewObject[],
  paths: NewPath[],
): Promise<ObjectRecord[]> {
  const rows = await sql<ObjectRecord[]>`
    with ins as (
      insert into objects (project_id, resource_id, id, name, parent_id, depth, properties, organization_id)
      select ${projectId}, ${resourceId}, x.id, x.name, x.parent_id, x.depth, x.properties::jsonb, x.organization_id
      from unnest(${objects.map((o) => o.id)}::text[], ${objects.map((o) => o.name)}::text[],
                  ${objects.map((o) => o.parent_id)}::text[], ${objects.map((o) => o.depth)}::int[],
                  ${objects.map((o) => JSON.stringify(o.properties))}::text[],
                  ${objects.map((o) => o.organization_id)}::text[])
        with ordinality as x (id, name, parent_id, depth, properties, organization_id, n)
      order by x.n
      returning *
    )
    select ${columns(sql)} from ins o`;
  await sql`
    insert into object_paths (resource_id, object_id, ancestor_id, depth)
    select ${resourceId}, x.o, x.a, x.d
    from unnest(${paths.map((p) => p.object)}::text[], ${paths.map((p) => p.ancestor)}::text[],
                ${paths.map((p) => p.depth)}::int[]) as x (o, a, d)`;
  // Each ancestor's subtree grows by its new descendants; the resource's count by the new objects.
  const grown = new Map<string, number>();
  for (const p of paths) if (p.depth > 0) grown.set(p.ancestor, (grown.get(p.ancestor) ?? 0) + 1);
  if (grown.size > 0) {
    await sql`
      update objects o set size = o.size + x.n
      from unnest(${[...grown.keys()]}::text[], ${[...grown.values()]}::int[]) as x (id, n)
      where o.resource_id = ${resourceId} and o.id = x.id`;
  }
  await countObjects(sql, resourceId, objects.length);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return objects.map((o) => byId.get(o.id)!);
}

/** Adds `n` (negative: removes) to the resource's count of objects. */
async function countObjects(sql: Sql, resourceId: string, n: number): Promise<void> {
  await sql`
    insert into object_counts (resource_id, n) values (${resourceId}, ${n})
    on conflict (resource_id) do update set n = object_counts.n + excluded.n`;
}

/** Adds `n` to the size of every ancestor of the object (not the object itself). */
async function growAncestors(sql: Sql, resourceId: string, objectId: string, n: number): Promise<void> {
  await sql`
    update objects o set size = o.size + ${n}
    from object_paths p
    where p.resource_id = ${resourceId} and p.object_id = ${objectId} and p.ancestor_id <> ${objectId}
      and o.resource_id = ${resourceId} and o.id = p.ancestor_id`;
}

/** The size of the object's subtree, itself included. */
async function sizeOf(sql: Sql, resourceId: string, objectId: string): Promise<number> {
  const [row] = await sql<{ size: number }[]>`
    select size from objects where resource_id = ${resourceId} and id = ${objectId}`;
  return row?.size ?? 0;
}

/**
 * Which of these ids are organizations of the project, each held (`for key share`) for the rest of the
 * transaction so that none is deleted before the write that names it.
 */
export async function lockOrganizationsShared(
  sql: Sql,
  projectId: string,
  ids: string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql<{ id: string }[]>`
    select id from organizations where project_id = ${projectId} and id = any(${ids}::text[])
    order by id for key share`;
  return new Set(rows.map((r) => r.id));
}

/** One object; `lock` holds it for the rest of the transaction. */
export async function findObject(
  sql: Sql,
  projectId: string,
  resourceId: string,
  objectId: string,
  opts: { lock?: boolean } = {},
): Promise<ObjectRecord | undefined> {
  const [row] = await sql<ObjectRecord[]>`
    select ${columns(sql)} from objects o
    where o.project_id = ${projectId} and o.resource_id = ${resourceId} and o.id = ${objectId}
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

/** The list's statement. */
export function objectListStatement(
  projectId: string,
  resourceId: string,
  q: ObjectListQuery,
): PageStatement {
  const params: Params = [projectId, resourceId];
  let where = "where o.project_id = $1 and o.resource_id = $2";
  if (q.parent_id !== undefined) where += ` and o.parent_id = $${params.push(q.parent_id)}`;
  if (q.top_level) where += " and o.parent_id is null";
  if (q.organization_id !== undefined) where += ` and o.organization_id = $${params.push(q.organization_id)}`;
  if (q.search) {
    const like = `$${params.push(containsPattern(q.search))}`;
    where += ` and (o.id ilike ${like} or o.name ilike ${like})`;
  }
  return pageStatement({ table: "objects", alias: "o" }, { columns: COLUMNS }, where, params, q);
}

/** The subtree under `objectId` (itself at 0): its size and its deepest level below it. */
export async function subtreeOf(
  sql: Sql,
  resourceId: string,
  objectId: string,
): Promise<{ size: number; below: number }> {
  const [row] = await sql<{ size: number; below: number }[]>`
    select count(*)::int as size, coalesce(max(depth), 0)::int as below from object_paths
    where resource_id = ${resourceId} and ancestor_id = ${objectId}`;
  return row;
}

/** Whether `candidate` is `objectId` or one of its descendants. */
export async function isInSubtree(
  sql: Sql,
  resourceId: string,
  objectId: string,
  candidate: string,
): Promise<boolean> {
  const rows = await sql`
    select 1 from object_paths
    where resource_id = ${resourceId} and object_id = ${candidate} and ancestor_id = ${objectId}`;
  return rows.length === 1;
}

/**
 * Moves the object (and its subtree) under `parent` (or to the top): the subtree's links to its old ancestors
 * go, links to the new parent's ancestors come, and each object's depth moves by the same amount.
 */
export async function moveObject(
  sql: Sql,
  resourceId: string,
  objectId: string,
  parent: { id: string; depth: number } | null,
  oldDepth: number,
): Promise<void> {
  const newDepth = parent === null ? 1 : parent.depth + 1;
  const size = await sizeOf(sql, resourceId, objectId);
  await growAncestors(sql, resourceId, objectId, -size);
  await sql`
    delete from object_paths p
    using object_paths s
    where s.resource_id = ${resourceId} and s.ancestor_id = ${objectId}
      and p.resource_id = ${resourceId} and p.object_id = s.object_id
      and p.ancestor_id not in (select object_id from object_paths
                                where resource_id = ${resourceId} and ancestor_id = ${objectId})`;
  if (parent !== null) {
    await sql`
      insert into object_paths (resource_id, object_id, ancestor_id, depth)
      select ${resourceId}, s.object_id, a.ancestor_id, a.depth + s.depth + 1
      from object_paths s
      cross join (select ancestor_id, depth from object_paths
                  where resource_id = ${resourceId} and object_id = ${parent.id}) a
      where s.resource_id = ${resourceId} and s.ancestor_id = ${objectId}`;
  }
  await growAncestors(sql, resourceId, objectId, size);
  await sql`
    update objects o set depth = o.depth + ${newDepth - oldDepth}
    from object_paths s
    where s.resource_id = ${resourceId} and s.ancestor_id = ${objectId}
      and o.resource_id = ${resourceId} and o.id = s.object_id`;
}

export async function updateObjectRow(
  sql: Sql,
  resourceId: string,
  objectId: string,
  r: {
    name: string | null;
    parent_id: string | null;
    properties: Properties;
    organization_id: string | null;
  },
): Promise<void> {
  await sql`
    update objects set name = ${r.name}, parent_id = ${r.parent_id},
      properties = ${sql.json(r.properties)}, organization_id = ${r.organization_id}, updated_at = now()
    where resource_id = ${resourceId} and id = ${objectId}`;
}

/** How many children the object has (at most 1 counted: whether it has any). */
export async function hasChildren(sql: Sql, resourceId: string, objectId: string): Promise<boolean> {
  const rows = await sql`
    select 1 from objects where resource_id = ${resourceId} and parent_id = ${objectId} limit 1`;
  return rows.length === 1;
}

/** Deletes the object and its subtree, with their grants; how many objects and grants went. */
export async function deleteSubtree(
  sql: Sql,
  resourceId: string,
  objectId: string,
): Promise<{ objects: number; grants: number }> {
  const size = await sizeOf(sql, resourceId, objectId);
  await growAncestors(sql, resourceId, objectId, -size);
  await countObjects(sql, resourceId, -size);
  const [row] = await sql<{ objects: number; grants: number }[]>`
    with s as (
      select object_id from object_paths where resource_id = ${resourceId} and ancestor_id = ${objectId}
    ),
    g as (
      delete from object_grants where resource_id = ${resourceId} and object_id in (select object_id from s)
      returning 1
    ),
    o as (
      delete from objects where resource_id = ${resourceId} and id in (select object_id from s)
      returning 1
    )
    select (select count(*) from o)::int as objects, (select count(*) from g)::int as grants`;
  return row;
}

/**
 * The permissions of a resource that organization roles of the project hold: what placing one of its objects in
 * an organization (or out of one) gives (or takes from) that organization's members.
 */
export async function organizationRolePermissionIds(
  sql: Sql,
  projectId: string,
  resourceId: string,
): Promise<string[]> {
  const rows = await sql<{ permission_id: string }[]>`
    select distinct rp.permission_id from role_permissions rp
    join roles r on r.project_id = rp.project_id and r.id = rp.role_id
    join permissions pe on pe.id = rp.permission_id
    where rp.project_id = ${projectId} and r.scope = 'organization' and pe.resource_id = ${resourceId}`;
  return rows.map((r) => r.permission_id);
}
