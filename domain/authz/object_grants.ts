/**
 * Roles on objects: a grant gives a user or a client one role's permissions of the object's resource on that
 * object and all its descendants, until `expires_at` (the database's clock decides). Least privilege: a caller
 * grants, and revokes, only a role whose permissions on that resource it covers.
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import { findObject } from "../../db/authz/objects.ts";
import {
  deleteExpiredGrants,
  deleteGrantRow,
  deleteGrantsOf,
  findGrant,
  findResourceByCode,
  findSubject,
  grantListStatement,
  grantsNewlyReaching,
  type GrantsOf,
  insertGrant,
  type ReachingGrant,
  rolePermissionsOn,
} from "../../db/authz/object_grants.ts";
import { lockRoleShared } from "../../db/authz/roles.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type { CreateGrantRequest, Grant, GrantListQuery } from "../../openapi/objects.ts";
import { record, sourceOf, SYSTEM } from "../audit/audit.ts";
import { requireCovered } from "./coverage.ts";
import { conditionProblem, problemText } from "./conditions.ts";
import { refuseOrganizationRole } from "./role_scopes.ts";
import { AppError } from "../shared/errors.ts";
import { newId } from "../shared/ids.ts";
import { type JsonText, listPage } from "./lists.ts";
import type { Principal } from "../shared/principal.ts";

/** What an event says of a grant: who, which role, on what, until when. */
function detailsOf(g: Grant): Record<string, unknown> {
  return {
    subject: g.subject,
    role_id: g.role_id,
    resource_id: g.object.resource_id,
    object_id: g.object.id,
    expires_at: g.expires_at,
    condition: g.condition,
  };
}

/** What ended a grant along with it: the user, client, role, object or resource deleted. */
export type GrantCause = { type: "user" | "client" | "role" | "object" | "resource"; id: string };

/**
 * Ends the grants that deleting `cause` would otherwise cascade to, in the caller's transaction, each with
 * its `grant.deleted` event (and so its webhooks), shaped as a revocation's with `details.cause`. Called
 * before the row that they hang on is deleted; how many ended.
 */
export async function endGrantsOf(
  tx: Sql,
  caller: Principal,
  projectId: string,
  of: GrantsOf,
  cause: GrantCause,
): Promise<number> {
  const ended = await deleteGrantsOf(tx, projectId, of);
  const source = sourceOf(caller);
  for (const g of ended) {
    await record(tx, {
      projectId,
      type: "grant.deleted",
      source,
      target: { type: "grant", id: g.id },
      details: {
        subject: g.subject,
        role_id: g.role_id,
        resource_id: g.resource_id,
        object_id: g.object_id,
        expires_at: g.expires_at,
        condition: g.condition,
        cause,
      },
    });
  }
  return ended.length;
}

/**
 * Grants the role on the object. 404 for an unknown resource code, object or role; 400 for a subject that is
 * not a user or client of the project, or an `expires_at` not in the future; 403 unless the caller covers the
 * role's permissions of that resource. One transaction with its `grant.created` event.
 */
export async function createGrant(
  sql: Sql,
  caller: Principal,
  projectId: string,
  input: CreateGrantRequest,
): Promise<Grant> {
  const id = newId();
  return await transaction(sql, async (tx) => {
    const problem = input.condition != null ? conditionProblem(input.condition) : null;
    if (problem) {
      throw new AppError("invalid_params", {
        details: [{ field: "condition", issue: problemText(input.condition!, problem) }],
      });
    }
    const resource = await findResourceByCode(tx, projectId, input.object.type);
    if (!resource) {
      throw new AppError("resource_not_found", {
        details: [{ field: "object.type", issue: "no resource of the project has this code" }],
      });
    }
    if (!(await findObject(tx, projectId, resource.id, input.object.id))) {
      throw new AppError("object_not_found", {
        details: [{ field: "object.id", issue: `no object of ${resource.code} has this id` }],
      });
    }
    const scope = await lockRoleShared(tx, projectId, input.role_id);
    if (scope === undefined) {
      throw new AppError("role_not_found", { details: [{ field: "role_id", issue: "no such role" }] });
    }
    refuseOrganizationRole(scope, "role_id");
    const subjectId = await findSubject(tx, projectId, input.subject.type, input.subject.id);
    if (subjectId === undefined) {
      throw new AppError("invalid_params", {
        description: `the subject is not a ${input.subject.type} of this project`,
        details: [{ field: "subject.id", issue: `no ${input.subject.type} of this project has this id` }],
      });
    }
    const permissionIds = await rolePermissionsOn(tx, input.role_id, resource.id);
    await requireCovered(tx, caller, projectId, { permissionIds }, "role_id", "granting this role");
    const actor = sourceOf(caller).actor;
    const inserted = await insertGrant(tx, {
      project_id: projectId,
      id,
      user_id: input.subject.type === "user" ? subjectId : null,
      client_id: input.subject.type === "client" ? subjectId : null,
      role_id: input.role_id,
      resource_id: resource.id,
      object_id: input.object.id,
      expires_at: input.expires_at ?? null,
      condition: input.condition ?? null,
      created_by_type: actor.type,
      created_by_id: actor.id,
    });
    if (!inserted) {
      throw new AppError("invalid_params", {
        description: "expires_at must be in the future",
        details: [{ field: "expires_at", issue: "not in the future (by the service's clock)" }],
      });
    }
    const grant = (await findGrant(tx, projectId, id))!;
    await record(tx, {
      projectId,
      type: "grant.created",
      source: sourceOf(caller),
      target: { type: "grant", id },
      details: detailsOf(grant),
    });
    return grant;
  });
}

export async function getGrant(sql: Sql, projectId: string, grantId: string): Promise<Grant> {
  const grant = await retryRead(() => findGrant(sql, projectId, grantId));
  if (!grant) throw new AppError("grant_not_found");
  return grant;
}

export async function listGrants(
  sql: Sql,
  projectId: string,
  q: GrantListQuery,
): Promise<JsonText<PageOf<Grant>>> {
  return await listPage<Grant>(sql, grantListStatement(projectId, q));
}

/**
 * Revokes the grant: its subject loses what it gave on the next request. The caller must cover the role's
 * permissions of the object's resource, as to give it (a narrower admin cannot strip a wider one's grants).
 */
export async function deleteGrant(
  sql: Sql,
  caller: Principal,
  projectId: string,
  grantId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const grant = await findGrant(tx, projectId, grantId, { lock: true });
    if (!grant) throw new AppError("grant_not_found");
    const permissionIds = await rolePermissionsOn(tx, grant.role_id, grant.object.resource_id);
    await requireCovered(tx, caller, projectId, { permissionIds }, "grant_id", "revoking this grant", {
      nameCodes: false,
    });
    await deleteGrantRow(tx, projectId, grantId);
    await record(tx, {
      projectId,
      type: "grant.deleted",
      source: sourceOf(caller),
      target: { type: "grant", id: grantId },
      details: detailsOf(grant),
    });
  });
}

/**
 * What moving an object under `parentId` needs when grants of its new ancestors would reach it and its
 * descendants: what creating those grants would need, `grants:create` and covering each such role's permissions
 * of the resource (403 `insufficient_permission`, `details` on `parent_id`). The grants that would newly reach
 * the subtree (none reaching it before), for the `object.updated` event; each role is held until the
 * transaction ends, so its permissions stay as checked.
 */
export async function requireMovable(
  tx: Sql,
  caller: Principal,
  projectId: string,
  resourceId: string,
  objectId: string,
  parentId: string,
): Promise<ReachingGrant[]> {
  const reaching = await grantsNewlyReaching(tx, resourceId, objectId, parentId);
  if (reaching.length === 0) return reaching;
  const what = `moving the object under ${parentId}, where ${reaching.length} grant` +
    `${reaching.length === 1 ? "" : "s"} would reach it,`;
  await requireCovered(tx, caller, projectId, { codes: ["grants:create"] }, "parent_id", what);
  for (const roleId of new Set(reaching.map((g) => g.role_id))) {
    await lockRoleShared(tx, projectId, roleId);
    const permissionIds = await rolePermissionsOn(tx, roleId, resourceId);
    await requireCovered(tx, caller, projectId, { permissionIds }, "parent_id", `${what} of role ${roleId}`);
  }
  return reaching;
}

/**
 * The leased purge (jobs.ts): grants expired more than `retentionDays` ago go, each with its `grant.expired`
 * event in the same transaction, a thousand to a transaction. Until then an expired grant decides nothing but
 * is still listed (`include_expired`) and named by `grant_expired` reasons. How many went.
 */
export async function purgeExpiredGrants(
  sql: Sql,
  retentionDays: number,
  signal?: AbortSignal,
): Promise<number> {
  let total = 0;
  for (;;) {
    if (signal?.aborted) return total;
    const n = await transaction(sql, async (tx) => {
      const gone = await deleteExpiredGrants(tx, retentionDays, 1000);
      for (const g of gone) {
        await record(tx, {
          projectId: g.project_id,
          type: "grant.expired",
          source: SYSTEM,
          target: { type: "grant", id: g.id },
          details: {
            subject: { type: g.subject_type, id: g.subject_id },
            role_id: g.role_id,
            resource_id: g.resource_id,
            object_id: g.object_id,
            expires_at: g.expires_at,
            condition: g.condition,
          },
        });
      }
      return gone.length;
    });
    total += n;
    if (n < 1000) return total;
  }
}
