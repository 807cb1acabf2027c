/** Checks on permission ids given to roles and clients. */
import type { Sql } from "../db/connection.ts";
import { missingPermissionIds } from "../db/resources.ts";
import { AppError } from "./errors.ts";

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
