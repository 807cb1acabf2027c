/** Roles: a code, a name and the permissions a user with the role holds. */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  countRoleUsers,
  deleteRoleRow,
  findRole,
  insertRole,
  lockRoleShared,
  moveRoleUsers,
  roleListStatement,
  roleScopeOf,
  setRolePermissions,
  updateRoleRow,
} from "../../db/authz/roles.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type { CreateRoleRequest, Role, RoleListQuery, UpdateRoleRequest } from "../../openapi/roles.ts";
import { diff, record, sourceOf } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import type { Attached, AttachedRead } from "./gate.ts";
import { type JsonText, listPage } from "./lists.ts";
import { newId } from "../shared/ids.ts";
import { requireCovered } from "./coverage.ts";
import { endGrantsOf } from "./object_grants.ts";
import { checkPermissionIds, grantablePermissionIds, requireGrantable } from "./permissions.ts";
import type { Principal } from "../shared/principal.ts";
import { keepOrClear } from "../shared/updates.ts";
import { guardOperators } from "./operators.ts";
import { conditionProblem, problemText } from "./conditions.ts";
import { refuseOrganizationRole } from "./role_scopes.ts";

/**
 * A role given by default (a provider's or the project's `default_role_id`) must be one of the project's, and a
 * project role (not an organization's): 400 `invalid_params` naming `field` otherwise. Who may give it is the
 * caller's rule to check.
 */
export async function requireProjectRole(
  sql: Sql,
  projectId: string,
  roleId: string,
  field: string,
): Promise<void> {
  const scope = await roleScopeOf(sql, projectId, roleId);
  if (scope === undefined) {
    throw new AppError("invalid_params", { details: [{ field, issue: "is not a role of this project" }] });
  }
  refuseOrganizationRole(scope, field);
}

/**
 * A role's conditions by permission id, each checked (400 `invalid_params` naming `conditions.<i>.<field>`): a
 * permission of the role, at most once, with an expression CEL accepts (domain/authz/conditions.ts).
 */
function conditionsOf(
  given: { permission_id: string; expression: string }[],
  permissionIds: readonly string[],
): Map<string, string> {
  const held = new Set(permissionIds);
  const out = new Map<string, string>();
  const details: { field: string; issue: string }[] = [];
  given.forEach((c, i) => {
    if (!held.has(c.permission_id)) {
      details.push({ field: `conditions.${i}.permission_id`, issue: "is not one of the role's permissions" });
    } else if (out.has(c.permission_id)) {
      details.push({ field: `conditions.${i}.permission_id`, issue: "has a condition already" });
    }
    const problem = conditionProblem(c.expression);
    if (problem) {
      details.push({ field: `conditions.${i}.expression`, issue: problemText(c.expression, problem) });
    }
    out.set(c.permission_id, c.expression);
  });
  if (details.length > 0) throw new AppError("invalid_params", { details });
  return out;
}

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
    const conditions = conditionsOf(input.conditions ?? [], permissionIds);
    await insertRole(tx, {
      project_id: projectId,
      id,
      code: input.code,
      name: input.name,
      description: input.description || null,
      scope: input.scope ?? "project",
    });
    await setRolePermissions(tx, projectId, id, permissionIds, conditions);
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
    const operatorsKept = await guardOperators(tx, projectId);
    const current = await findRole(tx, projectId, roleId, { lock: true });
    if (!current) throw new AppError("role_not_found");
    let permissionIds: string[] | undefined;
    let conditions: Map<string, string> | undefined;
    if (input.permission_ids !== undefined || input.conditions !== undefined) {
      // Unknown ids are 404 before any 403.
      permissionIds = input.permission_ids === undefined
        ? current.permission_ids
        : await checkPermissionIds(tx, projectId, input.permission_ids);
      conditions = input.conditions === undefined
        ? new Map(current.conditions.map((c) => [c.permission_id, c.expression]))
        : conditionsOf(input.conditions, permissionIds);
      // Changing the conditions changes what the role's users hold, as changing its permissions does.
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
    if (permissionIds && conditions) {
      await setRolePermissions(tx, projectId, roleId, permissionIds, conditions);
      await operatorsKept("permission_ids");
    }
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

/** `listRoles`'s read, for the gate to send with its statement (routes/api/operation.ts, `reads`). */
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

/** One role, as the list shows it. */
export async function getRole(sql: Sql, projectId: string, roleId: string): Promise<Role> {
  const role = await retryRead(() => findRole(sql, projectId, roleId));
  if (!role) throw new AppError("role_not_found");
  return role;
}

/**
 * Deletes the role. Its users would lose what it grants, so the caller must cover the role's permissions, as
 * for a change of them. A role that users still have is refused (409 `role_in_use`, with how many) unless
 * `reassignRoleId` names another role of the project, which the caller must be able to give (cover its
 * permissions): those users move to it in the same transaction. The role is locked first, so no user can be
 * given it meanwhile (giving a role holds it `for share`).
 */
export async function deleteRole(
  sql: Sql,
  caller: Principal,
  projectId: string,
  roleId: string,
  reassignRoleId?: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const operatorsKept = await guardOperators(tx, projectId);
    const current = await findRole(tx, projectId, roleId, { lock: true });
    if (!current) throw new AppError("role_not_found");
    if (reassignRoleId === roleId) {
      throw new AppError("invalid_params", {
        details: [{ field: "reassign_role_id", issue: "is the role being deleted" }],
      });
    }
    // What exists before who may touch it (404 before 403).
    if (reassignRoleId !== undefined) {
      const scope = await lockRoleShared(tx, projectId, reassignRoleId);
      if (scope === undefined) {
        throw new AppError("role_not_found", {
          description: "the role to reassign the users to does not exist",
          details: [{ field: "reassign_role_id", issue: "no such role in this project" }],
        });
      }
      refuseOrganizationRole(scope, "reassign_role_id");
    }
    await requireCovered(tx, caller, projectId, { roleId }, "role_id", "deleting this role", {
      nameCodes: false,
    });
    const users = await countRoleUsers(tx, projectId, roleId);
    let moved = 0;
    if (users > 0) {
      if (reassignRoleId === undefined) {
        throw new AppError("role_in_use", {
          description: `${users} user${users === 1 ? " has" : "s have"} this role: reassign them with ` +
            "reassign_role_id, or give them another role first",
          details: [{ field: "role_id", issue: `held by ${users} user${users === 1 ? "" : "s"}` }],
        });
      }
      await requireCovered(
        tx,
        caller,
        projectId,
        { roleId: reassignRoleId },
        "reassign_role_id",
        "giving this role",
      );
      moved = await moveRoleUsers(tx, projectId, roleId, reassignRoleId);
    }
    await endGrantsOf(tx, caller, projectId, { roleId }, { type: "role", id: roleId });
    await deleteRoleRow(tx, projectId, roleId);
    await operatorsKept(moved > 0 ? "reassign_role_id" : "role_id");
    await record(tx, {
      projectId,
      type: "role.deleted",
      source: sourceOf(caller),
      target: { type: "role", id: roleId },
      changes: diff(current, {}),
      ...(moved > 0 ? { details: { users_reassigned: moved, reassign_role_id: reassignRoleId } } : {}),
    });
  });
}
