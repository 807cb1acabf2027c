/** Resources and their permissions: create together, update matched by code, list with permissions. */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  deletePermissions,
  deleteResourceRow,
  findResource,
  insertPermissions,
  insertResources,
  listPermissionCodes,
  resourceListStatement,
  updatePermissionRows,
  updateResourceRow,
} from "../../db/authz/resources.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type {
  CreateResourceRequest,
  Resource,
  ResourceListQuery,
  UpdateResourceRequest,
} from "../../openapi/resources.ts";
import { diff, record, sourceOf } from "../audit/audit.ts";
import { requireCovered } from "./coverage.ts";
import { endGrantsOf } from "./object_grants.ts";
import { AppError } from "../shared/errors.ts";
import type { Attached, AttachedRead } from "./gate.ts";
import { type JsonText, listPage } from "./lists.ts";
import type { Principal } from "../shared/principal.ts";
import { newId } from "../shared/ids.ts";
import { keepOrClear } from "../shared/updates.ts";

type PermissionInput = NonNullable<CreateResourceRequest["permissions"]>[number];

/** A given permission's stored fields: an empty description is none. */
function permissionFields(p: PermissionInput) {
  return { name: p.name, code: p.code, description: p.description || null };
}

export async function createResource(
  sql: Sql,
  caller: Principal,
  projectId: string,
  input: CreateResourceRequest,
): Promise<Resource> {
  const id = newId();
  return await transaction(sql, async (tx) => {
    await insertResources(tx, projectId, [{
      id,
      name: input.name,
      code: input.code,
      description: input.description || null,
      indicator: input.indicator ?? null,
      is_default: false,
      permissions: (input.permissions ?? []).map((p) => ({ id: newId(), ...permissionFields(p) })),
    }]);
    await record(tx, {
      projectId,
      type: "resource.created",
      source: sourceOf(caller),
      target: { type: "resource", id },
    });
    return (await findResource(tx, projectId, id))!;
  });
}

/**
 * Updates the resource; given `permissions` are matched by code (case-insensitively): a kept code keeps its
 * id and every grant on it, a new code is created, a code left out is deleted with its grants. Omitted
 * `permissions` leave them as they are. Default resources are read-only. A new code, or a new list of
 * permissions, changes what every holder of them may do (`billing:read` renamed is a grant of something
 * else), and so does a new indicator (which tokens act on this API), so they need a caller that covers the
 * resource's permissions; a name or description does not.
 */
export async function updateResource(
  sql: Sql,
  caller: Principal,
  projectId: string,
  resourceId: string,
  input: UpdateResourceRequest,
): Promise<Resource> {
  return await transaction(sql, async (tx) => {
    const current = await findResource(tx, projectId, resourceId, { lock: true });
    if (!current) throw new AppError("resource_not_found");
    if (current.is_default) throw new AppError("default_resource_immutable");
    const indicator = input.indicator === undefined ? current.indicator : input.indicator;
    if (input.code !== current.code || input.permissions !== undefined || indicator !== current.indicator) {
      await requireCovered(
        tx,
        caller,
        projectId,
        { permissionIds: current.permissions.map((p) => p.id) },
        "resource_id",
        "changing this resource's code, indicator or permissions",
        { nameCodes: false },
      );
    }
    await updateResourceRow(tx, resourceId, {
      name: input.name,
      code: input.code,
      description: keepOrClear(input.description, current.description),
      indicator,
    });
    if (input.permissions !== undefined) {
      const existing = new Map(
        (await listPermissionCodes(tx, resourceId)).map((p) => [p.code.toLowerCase(), p]),
      );
      const given = new Map(input.permissions.map((p) => [p.code.toLowerCase(), p]));
      await deletePermissions(tx, [...existing].filter(([code]) => !given.has(code)).map(([, p]) => p.id));
      // A kept permission keeps its id and takes the given spelling of its code, name and description.
      await updatePermissionRows(
        tx,
        [...given].filter(([code]) => existing.has(code)).map(([code, p]) => ({
          id: existing.get(code)!.id,
          ...permissionFields(p),
        })),
      );
      await insertPermissions(
        tx,
        projectId,
        [...given].filter(([code]) => !existing.has(code)).map(([, p]) => ({
          id: newId(),
          resource_id: resourceId,
          ...permissionFields(p),
        })),
      );
    }
    const resource = (await findResource(tx, projectId, resourceId))!;
    await record(tx, {
      projectId,
      type: "resource.updated",
      source: sourceOf(caller),
      target: { type: "resource", id: resourceId },
      changes: diff(current, resource),
    });
    return resource;
  });
}

/** `listResources`'s read, for the gate to send with its statement (routes/api/operation.ts, `reads`). */
export function resourceListRead(projectId: string, q: ResourceListQuery): AttachedRead {
  return resourceListStatement(projectId, q);
}

/** A page of the project's resources; from `attached` when the gate read it already. */
export async function listResources(
  sql: Sql,
  projectId: string,
  q: ResourceListQuery,
  attached?: Attached,
): Promise<JsonText<PageOf<Resource>>> {
  return await listPage<Resource>(sql, resourceListStatement(projectId, q), attached);
}

/** One resource with its permissions, as the list shows it. */
export async function getResource(sql: Sql, projectId: string, resourceId: string): Promise<Resource> {
  const resource = await retryRead(() => findResource(sql, projectId, resourceId));
  if (!resource) throw new AppError("resource_not_found");
  return resource;
}

/**
 * Deletes the resource with its permissions, which leave every role and client that held them (what those
 * holders may do changes on their next request). The caller must cover the resource's permissions, as for a
 * change of them; default resources are read-only.
 */
export async function deleteResource(
  sql: Sql,
  caller: Principal,
  projectId: string,
  resourceId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const current = await findResource(tx, projectId, resourceId, { lock: true });
    if (!current) throw new AppError("resource_not_found");
    if (current.is_default) throw new AppError("default_resource_immutable");
    await requireCovered(
      tx,
      caller,
      projectId,
      { permissionIds: current.permissions.map((p) => p.id) },
      "resource_id",
      "deleting this resource",
      { nameCodes: false },
    );
    await endGrantsOf(tx, caller, projectId, { resourceId }, { type: "resource", id: resourceId });
    await deleteResourceRow(tx, projectId, resourceId);
    await record(tx, {
      projectId,
      type: "resource.deleted",
      source: sourceOf(caller),
      target: { type: "resource", id: resourceId },
      changes: diff(current, {}),
    });
  });
}
