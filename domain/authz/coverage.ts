/**
 * Least privilege ("you cannot grant permissions you do not hold", as Kubernetes RBAC puts it). A caller
 * covers every permission of a project when it is that project's admin client, or an operator of the system
 * project: its admin client, or a principal holding every permission of the system project's default
 * resources. Any other caller covers exactly the permissions it holds now. A caller grants only what it
 * covers, and changes only principals (and roles and resources, whose changes reach every holder) whose
 * permissions it covers.
 */
import type { Sql } from "../../db/connection.ts";
import { type Holder, uncoveredCodes } from "../../db/authz/principals.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import type { AdminPermission } from "./defaults.ts";
import { AppError } from "../shared/errors.ts";
import { type Principal, subjectOf } from "../shared/principal.ts";

/** Whose permissions the caller must cover; codes name the default resources' permissions. */
export type Wanted = Exclude<Holder, { codes: readonly string[] }> | { codes: readonly AdminPermission[] };

/**
 * Whether the caller covers every permission of `projectId`, including those of resources created later:
 * the project's admin client, or an operator of the system project (which administers every project).
 * An operator holds every permission of the system project's default resources (the admin API's); custom
 * resources of the system project do not count, or whoever may create one could demote every operator.
 */
export async function coversAll(sql: Sql, caller: Principal, projectId: string): Promise<boolean> {
  if (caller.isAdmin && (caller.projectId === projectId || caller.isSystem)) return true;
  if (!caller.isSystem) return false;
  const missing = await uncoveredCodes(sql, SYSTEM_PROJECT_ID, { defaultResources: true }, subjectOf(caller));
  return missing.length === 0;
}

/** The codes among `wanted`'s permissions in `projectId` that the caller does not cover. */
export async function uncovered(
  sql: Sql,
  caller: Principal,
  projectId: string,
  wanted: Wanted,
): Promise<string[]> {
  if (await coversAll(sql, caller, projectId)) return [];
  // A token of another project (a system-project token acting on a project) holds none of its permissions.
  if (caller.projectId !== projectId) {
    return await uncoveredCodes(sql, projectId, wanted, { permissionIds: [] });
  }
  return await uncoveredCodes(sql, projectId, wanted, subjectOf(caller));
}

/**
 * 403 `insufficient_permission` unless the caller covers every permission of `wanted`. `field` names what the
 * request was doing (`permission_ids` for a grant, `role_id` for a user's role, `user_id` for a target).
 * A refused grant names the codes the caller lacks; a refusal to act on a target does not, since the caller
 * may not be allowed to read what the target holds.
 */
export async function requireCovered(
  sql: Sql,
  caller: Principal,
  projectId: string,
  wanted: Wanted,
  field: string,
  what: string,
  opts: { nameCodes: boolean } = { nameCodes: true },
): Promise<void> {
  const missing = await uncovered(sql, caller, projectId, wanted);
  if (missing.length === 0) return;
  if (!opts.nameCodes) {
    throw new AppError("insufficient_permission", {
      description: `${what} needs every permission it holds, and the caller does not hold them all`,
      details: [{ field, issue: "holds permissions the caller does not hold" }],
    });
  }
  throw new AppError("insufficient_permission", {
    description: `${what} needs permissions the caller does not hold: ${missing.join(", ")}`,
    details: missing.map((code) => ({ field, issue: `the caller does not hold ${code}` })),
  });
}

/** 403 unless the caller covers every permission of the project (its admin client, or an operator). */
export async function requireCoversAll(
  sql: Sql,
  caller: Principal,
  projectId: string,
  field: string,
  what: string,
): Promise<void> {
  if (await coversAll(sql, caller, projectId)) return;
  throw new AppError("insufficient_permission", {
    description: `${what} is reserved to the project's admin client and the system project's operators`,
    details: [{ field, issue: "only a caller that covers every permission of the project may change it" }],
  });
}
