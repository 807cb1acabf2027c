/**
 * The last operator stays: deleting, deactivating or demoting (giving a role, or changing or deleting a role,
 * so that it no longer holds every system permission) the last active user of the system project whose role
 * holds every system permission is refused (409 `last_operator`). Every such change takes the operators' lock
 * first and holds their rows, so two changes at once cannot each leave the other's operator as the last.
 */
import { listOperators } from "../../db/accounts/users.ts";
import type { Sql } from "../../db/connection.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import { AppError } from "../shared/errors.ts";

/**
 * Call first in a transaction that may demote a user of `projectId` (before any row lock, so that the
 * operators' lock is always taken first); run what it returns once the change is written, with the request's
 * field that made it: it throws 409 `last_operator` (the transaction then rolls back) when operators existed
 * and none remains. Outside the system project it does nothing.
 */
export async function guardOperators(tx: Sql, projectId: string): Promise<(field: string) => Promise<void>> {
  if (projectId !== SYSTEM_PROJECT_ID) return async () => {};
  const before = await listOperators(tx, projectId, { lock: true });
  return async (field) => {
    if (before.length === 0 || (await listOperators(tx, projectId)).length > 0) return;
    throw new AppError("last_operator", {
      description: before.length === 1
        ? `user ${before[0]} is the last active operator of the system project: promote another one first`
        : "this change would leave the system project without an active operator: promote another one first",
      details: [{ field, issue: "would leave no active user whose role holds every system permission" }],
    });
  };
}
