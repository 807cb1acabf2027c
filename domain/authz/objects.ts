/**
 * Objects of a resource: the application's own ids, registered so that roles can be granted on them, in a
 * hierarchy (a parent of the same resource, no cycles, at most 32 levels). Writes to one resource's hierarchy
 * take turns (db/authz/objects.ts, `lockHierarchy`); a batch is all or nothing.
 */
import { retryRead, type Sql, transaction, type Tx } from "../../db/connection.ts";
import {
  deleteSubtree,
  depthsOf,
  findObject,
  findObjectsResource,
  hasChildren,
  insertObjects,
  isInSubtree,
  lockHierarchy,
  lockOrganizationsShared,
  moveObject,
  type NewObject,
  type NewPath,
  objectListStatement,
  type ObjectsResource,
  organizationRolePermissionIds,
  pathsOf,
  subtreeOf,
  updateObjectRow,
} from "../../db/authz/objects.ts";
import type { PageOf } from "../../openapi/fields.ts";
import {
  type CreateObjectRequest,
  MAX_OBJECT_DEPTH,
  type ObjectListQuery,
  type ObjectRecord,
  type UpdateObjectRequest,
} from "../../openapi/objects.ts";
import { diff, record, sourceOf } from "../audit/audit.ts";
import { AppError, type ErrorDetail } from "../shared/errors.ts";
import { type JsonText, listPage } from "./lists.ts";
import { endGrantsOf, requireMovable } from "./object_grants.ts";
import { requireCovered } from "./coverage.ts";
import type { Principal } from "../shared/principal.ts";

/** At most this many grants are listed in a move's event (`grants_now_reaching_count` says how many reach). */
const MAX_LISTED = 1000;

/** The resource whose objects are written: 404 when it is not the project's; default resources have none. */
async function writableResource(tx: Sql, projectId: string, resourceId: string): Promise<ObjectsResource> {
  const resource = await findObjectsResource(tx, projectId, resourceId);
  if (!resource) throw new AppError("resource_not_found");
  if (resource.is_default) {
    throw new AppError("default_resource_immutable", {
      description: "default resources have no objects: their permissions drive the admin API project-wide",
    });
  }
  return resource;
}

async function readableResource(sql: Sql, projectId: string, resourceId: string): Promise<void> {
  if (!(await retryRead(() => findObjectsResource(sql, projectId, resourceId)))) {
    throw new AppError("resource_not_found");
  }
}

function invalid(details: ErrorDetail[], description?: string): AppError {
  return new AppError("invalid_params", { description, details });
}

/**
 * Placing objects of a resource in an organization, moving them between organizations or out of one gives (or
 * takes) the organization roles' permissions of that resource on them, as a grant would: the caller must hold
 * every permission of the resource that an organization role of the project holds (403 naming them).
 */
async function requirePlaceable(
  tx: Sql,
  caller: Principal,
  projectId: string,
  resourceId: string,
  field: string,
): Promise<void> {
  const permissionIds = await organizationRolePermissionIds(tx, projectId, resourceId);
  if (permissionIds.length === 0) return;
  await requireCovered(
    tx,
    caller,
    projectId,
    { permissionIds },
    field,
    "placing an object in an organization",
  );
}

/**
 * Each item's `organization_id`, when it names one, must be an organization of the project (400 naming
 * `at(i)`); they are held until the transaction ends, so none is deleted before the objects name it.
 */
async function requireOrganizations(
  tx: Sql,
  projectId: string,
  items: { organization_id?: string | null }[],
  at: (i: number) => string,
): Promise<void> {
  const named = [...new Set(items.map((o) => o.organization_id).filter((id): id is string => !!id))];
  if (named.length === 0) return;
  const found = await lockOrganizationsShared(tx, projectId, named);
  const bad: ErrorDetail[] = [];
  items.forEach((o, i) => {
    if (o.organization_id && !found.has(o.organization_id)) {
      bad.push({ field: at(i), issue: "is not an organization of this project" });
    }
  });
  if (bad.length > 0) {
    throw invalid(bad.slice(0, 100), "an organization_id is not an organization of this project");
  }
}

/**
 * The rows and paths of a batch, parents before children, checked: ids unique in the batch and new in the
 * resource (409 `object_already_exists`), each parent an object of the resource or of the batch, no cycle
 * within the batch, at most 32 levels. `at(i)` names item i's field in `details`.
 */
async function planBatch(
  tx: Tx,
  resourceId: string,
  items: CreateObjectRequest[],
  at: (i: number, field: string) => string,
): Promise<{ objects: NewObject[]; paths: NewPath[] }> {
  const index = new Map<string, number>();
  const repeated: ErrorDetail[] = [];
  items.forEach((o, i) => {
    const first = index.get(o.id);
    if (first !== undefined) repeated.push({ field: at(i, "id"), issue: `repeats ${at(first, "id")}` });
    else index.set(o.id, i);
  });
  if (repeated.length > 0) throw invalid(repeated, "an id appears twice in the batch");
  const existing = await depthsOf(tx, resourceId, items.map((o) => o.id));
  if (existing.size > 0) {
    throw new AppError("object_already_exists", {
      details: items.filter((o) => existing.has(o.id)).slice(0, 100)
        .map((o) => ({
          field: at(index.get(o.id)!, "id"),
          issue: `an object ${o.id} exists in this resource`,
        })),
    });
  }
  const outside = [
    ...new Set(items.map((o) => o.parent_id).filter((p): p is string => !!p && !index.has(p))),
  ];
  const outsidePaths = await pathsOf(tx, resourceId, outside);
  const bad: ErrorDetail[] = [];
  items.forEach((o, i) => {
    if (o.parent_id && !index.has(o.parent_id) && !outsidePaths.has(o.parent_id)) {
      bad.push({ field: at(i, "parent_id"), issue: "no object of this resource has this id" });
    }
  });
  if (bad.length > 0) throw invalid(bad.slice(0, 100), "a parent is not an object of this resource");
  // Each item's ancestors, itself included; an item is settled once its parent is (a walk without recursion).
  const paths = new Map<string, { ancestor: string; depth: number }[]>();
  const order: number[] = [];
  const state = new Uint8Array(items.length); // 0 new, 1 on the walk's stack, 2 settled
  for (let start = 0; start < items.length; start++) {
    const stack: number[] = [];
    let i: number | undefined = start;
    while (i !== undefined && state[i] === 0) {
      state[i] = 1;
      stack.push(i);
      const p: string | null | undefined = items[i].parent_id;
      i = p ? index.get(p) : undefined;
      if (i !== undefined && state[i] === 1) {
        throw invalid([{ field: at(i, "parent_id"), issue: "makes a cycle within the batch" }]);
      }
    }
    for (const j of stack.reverse()) {
      const o = items[j];
      const above = o.parent_id ? (paths.get(o.parent_id) ?? outsidePaths.get(o.parent_id)!) : [];
      const mine = [
        { ancestor: o.id, depth: 0 },
        ...above.map((a) => ({ ancestor: a.ancestor, depth: a.depth + 1 })),
      ];
      if (mine.length > MAX_OBJECT_DEPTH) {
        throw invalid([{ field: at(j, "parent_id"), issue: `deeper than ${MAX_OBJECT_DEPTH} levels` }]);
      }
      paths.set(o.id, mine);
      state[j] = 2;
      order.push(j);
    }
  }
  const objects = order.map((j) => {
    const o = items[j];
    return {
      id: o.id,
      name: o.name || null,
      parent_id: o.parent_id || null,
      depth: paths.get(o.id)!.length,
      properties: o.properties ?? {},
      organization_id: o.organization_id || null,
    };
  });
  const newPaths = objects.flatMap((o) =>
    paths.get(o.id)!.map((p) => ({ object: o.id, ancestor: p.ancestor, depth: p.depth }))
  );
  return { objects, paths: newPaths };
}

/** Creates objects of the resource, all or none, in one transaction with one audit event; in the request's order. */
export async function createObjects(
  sql: Sql,
  caller: Principal,
  projectId: string,
  resourceId: string,
  items: CreateObjectRequest[],
  opts: { batch: boolean },
): Promise<ObjectRecord[]> {
  const at = opts.batch ? (i: number, f: string) => `objects.${i}.${f}` : (_: number, f: string) => f;
  return await transaction(sql, async (tx) => {
    await writableResource(tx, projectId, resourceId);
    await lockHierarchy(tx, resourceId);
    const plan = await planBatch(tx, resourceId, items, at);
    await requireOrganizations(tx, projectId, items, (i) => at(i, "organization_id"));
    const placed = items.findIndex((o) => !!o.organization_id);
    if (placed >= 0) await requirePlaceable(tx, caller, projectId, resourceId, at(placed, "organization_id"));
    const created = await insertObjects(tx, projectId, resourceId, plan.objects, plan.paths);
    const byId = new Map(created.map((o) => [o.id, o]));
    await record(tx, {
      projectId,
      type: "object.created",
      source: sourceOf(caller),
      target: opts.batch ? { type: "resource", id: resourceId } : { type: "object", id: items[0].id },
      details: opts.batch ? { resource_id: resourceId, count: items.length } : { resource_id: resourceId },
    });
    return items.map((o) => byId.get(o.id)!);
  });
}

/** One object. */
export async function getObject(
  sql: Sql,
  projectId: string,
  resourceId: string,
  objectId: string,
): Promise<ObjectRecord> {
  const found = await retryRead(() => findObject(sql, projectId, resourceId, objectId));
  if (found) return found;
  await readableResource(sql, projectId, resourceId);
  throw new AppError("object_not_found");
}

/** A page of the resource's objects. */
export async function listObjects(
  sql: Sql,
  projectId: string,
  resourceId: string,
  q: ObjectListQuery,
): Promise<JsonText<PageOf<ObjectRecord>>> {
  await readableResource(sql, projectId, resourceId);
  return await listPage<ObjectRecord>(sql, objectListStatement(projectId, resourceId, q));
}

/**
 * Renames or moves the object, or replaces its properties (omitted: kept). A move takes its descendants along: never under itself or one of them (a
 * cycle), never deeper than 32 levels for the deepest of them. A move never widens access silently: when grants
 * of the new ancestors would reach the subtree, the caller needs what creating them would need
 * (`requireMovable`), and the event lists them (`details.grants_now_reaching`).
 */
export async function updateObject(
  sql: Sql,
  caller: Principal,
  projectId: string,
  resourceId: string,
  objectId: string,
  input: UpdateObjectRequest,
): Promise<ObjectRecord> {
  return await transaction(sql, async (tx) => {
    await writableResource(tx, projectId, resourceId);
    await lockHierarchy(tx, resourceId);
    const current = await findObject(tx, projectId, resourceId, objectId, { lock: true });
    if (!current) throw new AppError("object_not_found");
    const parentId = input.parent_id === undefined ? current.parent_id : input.parent_id;
    let reaching: Awaited<ReturnType<typeof requireMovable>> | undefined;
    if (parentId !== current.parent_id) {
      let parent: { id: string; depth: number } | null = null;
      if (parentId !== null) {
        const depth = (await depthsOf(tx, resourceId, [parentId])).get(parentId);
        if (depth === undefined) {
          throw invalid([{ field: "parent_id", issue: "no object of this resource has this id" }]);
        }
        if (await isInSubtree(tx, resourceId, objectId, parentId)) {
          throw invalid([{
            field: "parent_id",
            issue: "is the object itself or one of its descendants (a cycle)",
          }]);
        }
        parent = { id: parentId, depth };
      }
      const { below } = await subtreeOf(tx, resourceId, objectId);
      const newDepth = parent === null ? 1 : parent.depth + 1;
      if (newDepth + below > MAX_OBJECT_DEPTH) {
        throw invalid([{
          field: "parent_id",
          issue: `the object's subtree would reach ${newDepth + below} levels (at most ${MAX_OBJECT_DEPTH})`,
        }]);
      }
      reaching = parent === null
        ? []
        : await requireMovable(tx, caller, projectId, resourceId, objectId, parent.id);
      // Its organization may be its new ancestors' (an object without one of its own belongs to the nearest).
      await requirePlaceable(tx, caller, projectId, resourceId, "parent_id");
      await moveObject(tx, resourceId, objectId, parent, current.depth);
    }
    const name = input.name === undefined ? current.name : (input.name || null);
    const properties = input.properties ?? current.properties;
    const organizationId = input.organization_id === undefined
      ? current.organization_id
      : (input.organization_id || null);
    if (organizationId !== current.organization_id) {
      await requireOrganizations(
        tx,
        projectId,
        [{ organization_id: organizationId }],
        () => "organization_id",
      );
      await requirePlaceable(tx, caller, projectId, resourceId, "organization_id");
    }
    await updateObjectRow(tx, resourceId, objectId, {
      name,
      parent_id: parentId,
      properties,
      organization_id: organizationId,
    });
    const updated = (await findObject(tx, projectId, resourceId, objectId))!;
    await record(tx, {
      projectId,
      type: "object.updated",
      source: sourceOf(caller),
      target: { type: "object", id: objectId },
      changes: diff(
        {
          name: current.name,
          parent_id: current.parent_id,
          properties: current.properties,
          organization_id: current.organization_id,
        },
        {
          name: updated.name,
          parent_id: updated.parent_id,
          properties: updated.properties,
          organization_id: updated.organization_id,
        },
      ),
      details: {
        resource_id: resourceId,
        ...(reaching ? { grants_now_reaching: reaching.slice(0, MAX_LISTED) } : {}),
        ...(reaching && reaching.length > MAX_LISTED ? { grants_now_reaching_count: reaching.length } : {}),
      },
    });
    return updated;
  });
}

/**
 * Deletes the object with its grants; with `cascade`, its descendants and theirs too, else an object with
 * children is refused (409 `object_has_children`).
 */
export async function deleteObject(
  sql: Sql,
  caller: Principal,
  projectId: string,
  resourceId: string,
  objectId: string,
  cascade: boolean,
): Promise<void> {
  await transaction(sql, async (tx) => {
    await writableResource(tx, projectId, resourceId);
    await lockHierarchy(tx, resourceId);
    const current = await findObject(tx, projectId, resourceId, objectId, { lock: true });
    if (!current) throw new AppError("object_not_found");
    if (!cascade && await hasChildren(tx, resourceId, objectId)) {
      throw new AppError("object_has_children", {
        details: [{ field: "cascade", issue: "the object has children: delete them, or pass cascade=true" }],
      });
    }
    const grants = await endGrantsOf(tx, caller, projectId, { resourceId, subtreeOf: objectId }, {
      type: "object",
      id: objectId,
    });
    const gone = await deleteSubtree(tx, resourceId, objectId);
    await record(tx, {
      projectId,
      type: "object.deleted",
      source: sourceOf(caller),
      target: { type: "object", id: objectId },
      changes: diff({
        name: current.name,
        parent_id: current.parent_id,
        properties: current.properties,
        organization_id: current.organization_id,
      }, {}),
      details: {
        resource_id: resourceId,
        objects_deleted: gone.objects,
        grants_deleted: grants + gone.grants,
      },
    });
  });
}
