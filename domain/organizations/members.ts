/**
 * An organization's members: users of the project, each with the organization roles (roles of `scope:
 * "organization"`) they hold there. Least privilege holds as for a user's project role: whoever gives a member a
 * role, or takes one away, must cover the role's permissions (domain/authz/coverage.ts).
 */
import { retryRead, type Sql, transaction, type Tx } from "../../db/connection.ts";
import { findUser, lockUserShared } from "../../db/accounts/users.ts";
import { lockRolesShared } from "../../db/authz/roles.ts";
import {
  deleteMemberRow,
  findMember,
  insertMember,
  listMemberRows,
  listUserOrganizationRows,
  setMemberRoles,
} from "../../db/organizations/members.ts";
import { findOrganization } from "../../db/organizations/organizations.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type {
  AddMemberRequest,
  MemberListQuery,
  OrganizationMember,
  UpdateMemberRequest,
  UserOrganization,
  UserOrganizationListQuery,
} from "../../openapi/organizations.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { requireCovered } from "../authz/coverage.ts";
import { AppError, type ErrorDetail } from "../shared/errors.ts";
import type { Principal } from "../shared/principal.ts";

/**
 * The organization, held (`for share`) for the rest of a transaction: it is not deleted, nor its members' roles
 * counted for its deletion, before this change commits. 404 `organization_not_found` when not the project's.
 */
async function requireOrganization(tx: Tx, projectId: string, organizationId: string): Promise<void> {
  if (!(await findOrganization(tx, projectId, organizationId, { lock: "share" }))) {
    throw new AppError("organization_not_found");
  }
}

/**
 * The role ids given, without repeats, each an organization role of the project (400 `invalid_params` naming
 * `role_ids.<index>` otherwise), held `for share` until the transaction ends so that their permissions stay put.
 */
export async function organizationRoles(
  tx: Tx,
  projectId: string,
  given: string[],
  field = "role_ids",
): Promise<string[]> {
  const unique = [...new Set(given)];
  const scopes = await lockRolesShared(tx, projectId, unique);
  const details: ErrorDetail[] = [];
  const reported = new Set<string>();
  given.forEach((id, i) => {
    if (reported.has(id)) return;
    const scope = scopes.get(id);
    if (scope === "organization") return;
    reported.add(id);
    details.push({
      field: `${field}.${i}`,
      issue: scope === undefined
        ? "is not a role of this project"
        : "is a project role, not an organization role",
    });
  });
  if (details.length > 0) {
    throw new AppError("invalid_params", {
      description: "a member holds organization roles of the project only",
      details,
    });
  }
  return unique;
}

/** 403 unless the caller covers each role it gives (naming the codes it lacks, and the role's place in `sent`). */
export async function requireGivable(
  tx: Tx,
  caller: Principal,
  projectId: string,
  given: string[],
  sent: string[],
  field = "role_ids",
) {
  for (const roleId of given) {
    await requireCovered(
      tx,
      caller,
      projectId,
      { roleId },
      `${field}.${sent.indexOf(roleId)}`,
      "giving this organization role",
    );
  }
}

/** 403 unless the caller covers each role it takes away (held `for share` first). */
export async function requireRemovable(tx: Tx, caller: Principal, projectId: string, taken: string[]) {
  await lockRolesShared(tx, projectId, taken);
  for (const roleId of taken) {
    await requireCovered(
      tx,
      caller,
      projectId,
      { roleId },
      "role_ids",
      "taking away this organization role",
      {
        nameCodes: false,
      },
    );
  }
}

/** The member, or 404: `organization_not_found` or `member_not_found`. */
export async function getMember(
  sql: Sql,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<OrganizationMember> {
  const found = await retryRead(() => findMember(sql, projectId, organizationId, userId));
  if (found) return found;
  await readableOrganization(sql, projectId, organizationId);
  throw new AppError("member_not_found");
}

async function readableOrganization(sql: Sql, projectId: string, organizationId: string): Promise<void> {
  if (!(await retryRead(() => findOrganization(sql, projectId, organizationId)))) {
    throw new AppError("organization_not_found");
  }
}

export async function listMembers(
  sql: Sql,
  projectId: string,
  organizationId: string,
  q: MemberListQuery,
): Promise<PageOf<OrganizationMember>> {
  await readableOrganization(sql, projectId, organizationId);
  return await retryRead(() => listMemberRows(sql, projectId, organizationId, q));
}

/** Adds a user of the project to the organization with these organization roles. */
export async function addMember(
  sql: Sql,
  caller: Principal,
  projectId: string,
  organizationId: string,
  input: AddMemberRequest,
): Promise<OrganizationMember> {
  return await transaction(sql, async (tx) => {
    await requireOrganization(tx, projectId, organizationId);
    if (!(await lockUserShared(tx, projectId, input.user_id))) {
      throw new AppError("invalid_params", {
        description: "the user is not a user of this project",
        details: [{ field: "user_id", issue: "is not a user of this project" }],
      });
    }
    const roleIds = await organizationRoles(tx, projectId, input.role_ids ?? []);
    await requireGivable(tx, caller, projectId, roleIds, input.role_ids ?? []);
    if (await findMember(tx, projectId, organizationId, input.user_id)) {
      throw new AppError("member_already_exists", {
        details: [{ field: "user_id", issue: "is a member of this organization already" }],
      });
    }
    await insertMember(tx, projectId, organizationId, input.user_id);
    await setMemberRoles(tx, projectId, organizationId, input.user_id, roleIds);
    await record(tx, {
      projectId,
      type: "organization.member_added",
      source: sourceOf(caller),
      target: { type: "organization", id: organizationId },
      details: { user_id: input.user_id, role_ids: [...roleIds].sort() },
    });
    return (await findMember(tx, projectId, organizationId, input.user_id))!;
  });
}

/**
 * Replaces the member's roles. The caller must cover each role it gives and each it takes away; the roles
 * the member keeps need not be.
 */
export async function updateMember(
  sql: Sql,
  caller: Principal,
  projectId: string,
  organizationId: string,
  userId: string,
  input: UpdateMemberRequest,
): Promise<OrganizationMember> {
  return await transaction(sql, async (tx) => {
    await requireOrganization(tx, projectId, organizationId);
    const current = await findMember(tx, projectId, organizationId, userId, { lock: true });
    if (!current) throw new AppError("member_not_found");
    const roleIds = await organizationRoles(tx, projectId, input.role_ids);
    const given = roleIds.filter((id) => !current.role_ids.includes(id));
    const taken = current.role_ids.filter((id) => !roleIds.includes(id));
    if (given.length === 0 && taken.length === 0) return current;
    await requireGivable(tx, caller, projectId, given, input.role_ids);
    await requireRemovable(tx, caller, projectId, taken);
    await setMemberRoles(tx, projectId, organizationId, userId, roleIds);
    const updated = (await findMember(tx, projectId, organizationId, userId))!;
    await record(tx, {
      projectId,
      type: "organization.member_updated",
      source: sourceOf(caller),
      target: { type: "organization", id: organizationId },
      changes: { role_ids: { before: current.role_ids, after: updated.role_ids } },
      details: { user_id: userId },
    });
    return updated;
  });
}

/** Removes the member: the caller must cover every role they hold here. */
export async function removeMember(
  sql: Sql,
  caller: Principal,
  projectId: string,
  organizationId: string,
  userId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    await requireOrganization(tx, projectId, organizationId);
    const current = await findMember(tx, projectId, organizationId, userId, { lock: true });
    if (!current) throw new AppError("member_not_found");
    await requireRemovable(tx, caller, projectId, current.role_ids);
    await deleteMemberRow(tx, projectId, organizationId, userId);
    await record(tx, {
      projectId,
      type: "organization.member_removed",
      source: sourceOf(caller),
      target: { type: "organization", id: organizationId },
      details: { user_id: userId, role_ids: current.role_ids },
    });
  });
}

/** The organizations the user belongs to, with their roles in each; 404 `user_not_found` for another project's. */
export async function listUserOrganizations(
  sql: Sql,
  projectId: string,
  userId: string,
  q: UserOrganizationListQuery,
): Promise<PageOf<UserOrganization>> {
  if (!(await retryRead(() => findUser(sql, projectId, userId)))) throw new AppError("user_not_found");
  return await retryRead(() => listUserOrganizationRows(sql, projectId, userId, q));
}
