/** Resources and their permissions: create together, update matched by code, list with permissions. */
import { type Sql, transaction } from "../db/connection.ts";
import type { Page, Sort } from "../db/lists.ts";
import {
  deletePermissions,
  findResource,
  findResourceForUpdate,
  insertPermissions,
  insertResources,
  listPermissionsOf,
  listResources as listResourceRows,
  type PermissionRow,
  type ResourceRow,
  type ResourceSortField,
  updatePermissionRows,
  updateResourceRow,
} from "../db/resources.ts";
import { AppError } from "./errors.ts";
import { newId } from "./ids.ts";
import { type PageOut, pageResult } from "./pages.ts";

export type PermissionInput = { name: string; code: string; description?: string | null };
export type ResourceInput = {
  name: string;
  code: string;
  description?: string | null;
  permissions?: PermissionInput[];
};

export type PermissionRecord = {
  id: string;
  name: string;
  code: string;
  description: string | null;
  created_at: string;
  updated_at: string;
};

export type ResourceRecord = {
  id: string;
  project_id: string;
  name: string;
  code: string;
  description: string | null;
  is_default: boolean;
  permissions: PermissionRecord[];
  created_at: string;
  updated_at: string;
};

function permissionRecord(p: PermissionRow): PermissionRecord {
  return {
    id: p.id,
    name: p.name,
    code: p.code,
    description: p.description,
    created_at: p.created_at.toISOString(),
    updated_at: p.updated_at.toISOString(),
  };
}

function resourceRecord(r: ResourceRow, permissions: PermissionRow[]): ResourceRecord {
  return {
    id: r.id,
    project_id: r.project_id,
    name: r.name,
    code: r.code,
    description: r.description,
    is_default: r.is_default,
    permissions: permissions.map(permissionRecord),
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

async function loadResource(sql: Sql, projectId: string, resourceId: string): Promise<ResourceRecord> {
  const row = await findResource(sql, projectId, resourceId);
  return resourceRecord(row!, await listPermissionsOf(sql, [resourceId]));
}

export async function createResource(
  sql: Sql,
  projectId: string,
  input: ResourceInput,
): Promise<ResourceRecord> {
  const id = newId();
  return await transaction(sql, async (tx) => {
    await insertResources(tx, projectId, [{
      id,
      name: input.name,
      code: input.code,
      description: input.description || null,
      is_default: false,
      permissions: (input.permissions ?? []).map((p) => ({
        id: newId(),
        name: p.name,
        code: p.code,
        description: p.description || null,
      })),
    }]);
    return await loadResource(tx, projectId, id);
  });
}

/**
 * Updates the resource; given `permissions` are matched by code (case-insensitively): a kept code keeps its
 * id and every grant on it, a new code is created, a code left out is deleted with its grants. Omitted
 * `permissions` leave them as they are. Default resources are read-only.
 */
export async function updateResource(
  sql: Sql,
  projectId: string,
  resourceId: string,
  input: ResourceInput,
): Promise<ResourceRecord> {
  return await transaction(sql, async (tx) => {
    const current = await findResourceForUpdate(tx, projectId, resourceId);
    if (!current) throw new AppError("resource_not_found");
    if (current.is_default) throw new AppError("default_resource_immutable");
    await updateResourceRow(tx, resourceId, {
      name: input.name,
      code: input.code,
      description: input.description === undefined ? current.description : input.description || null,
    });
    if (input.permissions !== undefined) {
      const existing = new Map(
        (await listPermissionsOf(tx, [resourceId])).map((p) => [p.code.toLowerCase(), p]),
      );
      const given = new Map(input.permissions.map((p) => [p.code.toLowerCase(), p]));
      await deletePermissions(tx, [...existing].filter(([code]) => !given.has(code)).map(([, p]) => p.id));
      // A kept permission keeps its id and takes the given spelling of its code, name and description.
      await updatePermissionRows(
        tx,
        [...given].filter(([code]) => existing.has(code)).map(([code, p]) => ({
          id: existing.get(code)!.id,
          code: p.code,
          name: p.name,
          description: p.description || null,
        })),
      );
      await insertPermissions(
        tx,
        projectId,
        [...given].filter(([code]) => !existing.has(code)).map(([, p]) => ({
          id: newId(),
          resource_id: resourceId,
          name: p.name,
          code: p.code,
          description: p.description || null,
        })),
      );
    }
    return await loadResource(tx, projectId, resourceId);
  });
}

export async function listResources(
  sql: Sql,
  projectId: string,
  q: Page & Sort<ResourceSortField> & { search?: string; is_default?: boolean },
): Promise<PageOut<ResourceRecord>> {
  const page = await listResourceRows(sql, projectId, q);
  const permissions = await listPermissionsOf(sql, page.rows.map((r) => r.id));
  const byResource = Map.groupBy(permissions, (p) => p.resource_id);
  return pageResult(q, page, (r) => resourceRecord(r, byResource.get(r.id) ?? []));
}
