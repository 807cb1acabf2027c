/** Checks on permission ids given to roles and clients. */
import type { Sql } from "../../db/connection.ts";
import { missingPermissionIds } from "../../db/authz/resources.ts";
import { requireCovered } from "./coverage.ts";
import { AppError } from "../shared/errors.ts";
import type { Principal } from "../shared/principal.ts";

/** Returns the ids without repeats; throws some_permissions_not_found naming those not in the project. */
export async function checkPermissionIds(sql: Sql, projectId: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  const missing = await missingPermissionIds(sql, projectId, unique);
  if (missing.length > 0) {
    throw new AppError("some_permissions_not_found", {
      description: `some of the given permission ids do not exist in this project: ${missing.join(", ")}`,
      details: missing.map((id) => ({
        field: "permission_ids",
        issue: `no permission ${id} in this project`,
      })),
    });
  }
  return unique;
}

/** 403 `insufficient_permission`, naming the codes, unless the caller covers every one of these permissions. */
export async function requireGrantable(sql: Sql, caller: Principal, projectId: string, ids: string[]) {
  await requireCovered(
    sql,
    caller,
    projectId,
    { permissionIds: ids },
    "permission_ids",
    "granting these permissions",
  );
}

/**
 * The ids to grant, without repeats: 404 `some_permissions_not_found` for ids that are not the project's, then
 * 403 `insufficient_permission` naming those the caller does not cover.
 */
export async function grantablePermissionIds(
  sql: Sql,
  caller: Principal,
  projectId: string,
  ids: string[],
): Promise<string[]> {
  const unique = await checkPermissionIds(sql, projectId, ids);
  await requireGrantable(sql, caller, projectId, unique);
  return unique;
}
