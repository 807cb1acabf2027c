/** Roles: a code, a name and the permissions a user with the role holds. */
import { type Sql, transaction } from "../db/connection.ts";
import { findRole, insertRole, roleListStatement, setRolePermissions, updateRoleRow } from "../db/roles.ts";
import type { PageOf } from "../openapi/fields.ts";
import type { CreateRoleRequest, Role, RoleListQuery, UpdateRoleRequest } from "../openapi/roles.ts";
import { diff, record, sourceOf } from "./audit.ts";
import { AppError } from "./errors.ts";
import type { Attached, AttachedRead } from "./gate.ts";
import { type JsonText, listPage } from "./pages.ts";
import { newId } from "./ids.ts";
import { requireCovered } from "./coverage.ts";
import { checkPermissionIds, grantablePermissionIds, requireGrantable } from "./permissions.ts";
import type { Principal } from "./principal.ts";
import { keepOrClear } from "./updates.ts";

/** Creates a role holding only permissions the caller covers. */
export async function createRole(
  sql: Sql,
  caller: Principal,
  projectId: string,
  input: CreateRoleRequest,
): Promise<Role> {
  const id = newId();
  return await transaction(sql, async (tx) => {
    const permissionIds = await grantablePermissionIds(tx, caller, projectId, input.permission_ids ?? []);
    await insertRole(tx, {
      project_id: projectId,
      id,
      code: input.code,
      name: input.name,
      description: input.description || null,
    });
    await setRolePermissions(tx, projectId, id, permissionIds);
    const role = (await findRole(tx, projectId, id))!;
    await record(tx, {
      projectId,
      type: "role.created",
      source: sourceOf(caller),
      target: { type: "role", id },
    });
    return role;
  });
}

/**
 * Updates the role; given `permission_ids` replace its grants, omitted ones leave them. Changing them acts on
 * every user with the role, so the caller must cover what the role holds now (or it could strip a role above
 * it, and then act on its users) and every permission it is given.
 */
export async function updateRole(
  sql: Sql,
  caller: Principal,
  projectId: string,
  roleId: string,
  input: UpdateRoleRequest,
): Promise<Role> {
  return await transaction(sql, async (tx) => {
    const current = await findRole(tx, projectId, roleId, { lock: true });
    if (!current) throw new AppError("role_not_found");
    let permissionIds: string[] | undefined;
    if (input.permission_ids !== undefined) {
      // Unknown ids are 404 before any 403.
      permissionIds = await checkPermissionIds(tx, projectId, input.permission_ids);
      await requireCovered(tx, caller, projectId, { roleId }, "role_id", "changing this role's permissions", {
        nameCodes: false,
      });
      await requireGrantable(tx, caller, projectId, permissionIds);
    }
    await updateRoleRow(tx, projectId, roleId, {
      code: input.code,
      name: input.name,
      description: keepOrClear(input.description, current.description),
    });
    if (permissionIds) await setRolePermissions(tx, projectId, roleId, permissionIds);
    const role = (await findRole(tx, projectId, roleId))!;
    await record(tx, {
      projectId,
      type: "role.updated",
      source: sourceOf(caller),
      target: { type: "role", id: roleId },
      changes: diff(current, role),
    });
    return role;
  });
}

/** `listRoles`'s read, for the gate to send with its statement (routes/operation.ts, `reads`). */
export function roleListRead(projectId: string, q: RoleListQuery): AttachedRead {
  return roleListStatement(projectId, q);
}

/** A page of the project's roles; from `attached` when the gate read it already. */
export async function listRoles(
  sql: Sql,
  projectId: string,
  q: RoleListQuery,
  attached?: Attached,
): Promise<JsonText<PageOf<Role>>> {
  return await listPage<Role>(sql, roleListStatement(projectId, q), attached);
}
