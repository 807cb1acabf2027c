/** Roles: a code, a name and the permissions a user with the role holds. */
import { type Sql, transaction } from "../db/connection.ts";
import type { Page, Sort } from "../db/lists.ts";
import {
  findRole,
  insertRole,
  listRoles as listRoleRows,
  type RoleRow,
  type RoleSortField,
  setRolePermissions,
  updateRoleRow,
} from "../db/roles.ts";
import { AppError } from "./errors.ts";
import { newId } from "./ids.ts";
import { type PageOut, pageResult } from "./pages.ts";
import { checkPermissionIds } from "./permissions.ts";

export type RoleInput = {
  code: string;
  name: string;
  description?: string | null;
  permission_ids?: string[];
};

export type RoleRecord = {
  id: string;
  project_id: string;
  code: string;
  name: string;
  description: string | null;
  permission_ids: string[];
  created_at: string;
  updated_at: string;
};

function roleRecord(r: RoleRow): RoleRecord {
  return {
    id: r.id,
    project_id: r.project_id,
    code: r.code,
    name: r.name,
    description: r.description,
    permission_ids: r.permission_ids,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export async function createRole(sql: Sql, projectId: string, input: RoleInput): Promise<RoleRecord> {
  const id = newId();
  return await transaction(sql, async (tx) => {
    const permissionIds = await checkPermissionIds(tx, projectId, input.permission_ids ?? []);
    await insertRole(tx, {
      project_id: projectId,
      id,
      code: input.code,
      name: input.name,
      description: input.description || null,
    });
    await setRolePermissions(tx, projectId, id, permissionIds);
    return roleRecord((await findRole(tx, projectId, id))!);
  });
}

/** Updates the role; given `permission_ids` replace its grants, omitted ones leave them. */
export async function updateRole(
  sql: Sql,
  projectId: string,
  roleId: string,
  input: RoleInput,
): Promise<RoleRecord> {
  return await transaction(sql, async (tx) => {
    const current = await findRole(tx, projectId, roleId, { lock: true });
    if (!current) throw new AppError("role_not_found");
    const permissionIds = input.permission_ids === undefined
      ? undefined
      : await checkPermissionIds(tx, projectId, input.permission_ids);
    await updateRoleRow(tx, projectId, roleId, {
      code: input.code,
      name: input.name,
      description: input.description === undefined ? current.description : input.description || null,
    });
    if (permissionIds) await setRolePermissions(tx, projectId, roleId, permissionIds);
    return roleRecord((await findRole(tx, projectId, roleId))!);
  });
}

export async function listRoles(
  sql: Sql,
  projectId: string,
  q: Page & Sort<RoleSortField> & { search?: string },
): Promise<PageOut<RoleRecord>> {
  return pageResult(q, await listRoleRows(sql, projectId, q), roleRecord);
}
