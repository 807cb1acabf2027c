/** Users of a project: fully managed (email and password) or identified by the calling system's external id. */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import { permissionCodes } from "../../db/authz/principals.ts";
import { lockRoleShared } from "../../db/authz/roles.ts";
import { endSessions } from "../../db/oauth/sessions.ts";
import {
  deleteUserRow,
  findLoginUser,
  findUser,
  findUserByExternalId,
  insertUser,
  updateUserRow,
  userListStatement,
} from "../../db/accounts/users.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type {
  CreateUserRequest,
  CurrentUser,
  UpdateUserRequest,
  User,
  UserListQuery,
} from "../../openapi/users.ts";
import { diff, record, sourceOf, updateType } from "../audit/audit.ts";
import { requireCovered } from "../authz/coverage.ts";
import { endGrantsOf } from "../authz/object_grants.ts";
import { refuseOrganizationRole } from "../authz/role_scopes.ts";
import { AppError } from "../shared/errors.ts";
import type { Attached, AttachedRead } from "../authz/gate.ts";
import { type JsonText, listPage } from "../authz/lists.ts";
import { newId } from "../shared/ids.ts";
import { keepOrClear } from "../shared/updates.ts";
import { hashPassword } from "./passwords.ts";
import { type Principal, requireUser } from "../shared/principal.ts";
import { issueLink, type LinkSettings, sendLink } from "./account_links.ts";
import { emailChange, mailEmailChange } from "./email_changes.ts";
import { mailNotice } from "./notices.ts";
import { guardOperators } from "../authz/operators.ts";
import { normalizeEmail } from "./emails.ts";
import type { LinkPurpose } from "../../db/events/mail.ts";
import { findMailUser } from "../../db/events/mail.ts";

/**
 * A role to give a user must exist (404) and be a project role (an organization role is 400); it is held until
 * the transaction ends, so its permissions stay put.
 */
export async function requireRole(sql: Sql, projectId: string, roleId: string | null): Promise<void> {
  if (roleId === null) return;
  const scope = await lockRoleShared(sql, projectId, roleId);
  if (scope === undefined) throw new AppError("role_not_found");
  refuseOrganizationRole(scope, "role_id");
}

/** The caller must cover the permissions of a role it gives (403 naming the codes it lacks). */
export async function requireGivable(sql: Sql, caller: Principal, projectId: string, roleId: string | null) {
  if (roleId !== null) {
    await requireCovered(sql, caller, projectId, { roleId }, "role_id", "giving this role");
  }
}

export async function createUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  input: CreateUserRequest,
  mail?: LinkSettings,
): Promise<User> {
  // Hash before the transaction: it takes milliseconds and must not hold a connection.
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  return await transaction(sql, async (tx) => {
    const roleId = input.role_id || null;
    await requireRole(tx, projectId, roleId);
    await requireGivable(tx, caller, projectId, roleId);
    const row = await insertUser(tx, {
      project_id: projectId,
      id: newId(),
      display_name: input.display_name,
      given_name: input.given_name || null,
      family_name: input.family_name || null,
      avatar_url: input.avatar_url || null,
      external_user_id: input.external_user_id || null,
      email: normalizeEmail(input.email) || null,
      email_verified: input.email_verified ?? false,
      pending_email: null,
      role_id: roleId,
      is_active: input.is_active ?? true,
      password_hash: passwordHash,
      properties: input.properties ?? {},
    });
    await record(tx, {
      projectId,
      type: "user.created",
      source: sourceOf(caller),
      target: { type: "user", id: row.id },
    });
    // The mails asked for, in the same transaction: written to the outbox with the user, or not at all.
    const purposes: LinkPurpose[] = [
      ...(input.send_invitation ? ["invitation" as const] : []),
      ...(input.send_verification && !input.send_invitation && !row.email_verified
        ? ["email_verification" as const]
        : []),
    ];
    if (purposes.length > 0 && mail && row.email && row.is_active) {
      const user = await findMailUser(tx, projectId, row.id);
      for (const purpose of purposes) {
        await issueLink(tx, mail, { ...user!, email: row.email }, purpose, sourceOf(caller));
      }
    }
    return row;
  });
}

/**
 * Applies an update: `avatar_url`, `external_user_id`, `email` and `role_id` keep their value when
 * omitted and are cleared by null or ""; an empty or omitted password keeps the current one. Deactivating
 * the user or setting a new password ends the user's sessions at once. What decides who the user is or what
 * they may do (password, email, external id, active state, role) changes only when the caller covers the
 * user's permissions; a new role's permissions must be covered too.
 */
export async function updateUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
  input: UpdateUserRequest,
  mail?: LinkSettings,
): Promise<User> {
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  return await transaction(sql, async (tx) => {
    const operatorsKept = await guardOperators(tx, projectId);
    const current = await findUser(tx, projectId, userId, { lock: true });
    if (!current) throw new AppError("user_not_found");
    const roleId = keepOrClear(input.role_id, current.role_id);
    const email = keepOrClear(normalizeEmail(input.email), current.email);
    const externalUserId = keepOrClear(input.external_user_id, current.external_user_id);
    // What exists is checked before who may touch it (404 before 403). The user's current role is held too:
    // a role gaining permissions meanwhile must not let a caller act on a user who now holds more than it.
    if (roleId !== current.role_id) await requireRole(tx, projectId, roleId);
    if (current.role_id !== null) await lockRoleShared(tx, projectId, current.role_id);
    const sensitive = [
      passwordHash !== null && "password",
      email !== current.email && "email",
      externalUserId !== current.external_user_id && "external_user_id",
      input.is_active !== current.is_active && "is_active",
      roleId !== current.role_id && "role_id",
      input.email_verified !== undefined && input.email_verified !== current.email_verified &&
      "email_verified",
    ].filter((f): f is string => f !== false);
    if (caller.userId === userId && (sensitive.includes("password") || sensitive.includes("email"))) {
      // A stolen token must not change the account's password or email without the current password.
      throw new AppError("insufficient_permission", {
        description:
          "a user changes their own password or email with PUT /api/v1/users/current and current_password",
        details: [{ field: "user_id", issue: "is the caller: use PUT /api/v1/users/current" }],
      });
    }
    if (sensitive.length > 0) {
      await requireCovered(
        tx,
        caller,
        projectId,
        { userId },
        "user_id",
        `changing this user's ${sensitive.join(", ")}`,
        {
          nameCodes: false,
        },
      );
    }
    if (roleId !== current.role_id) await requireGivable(tx, caller, projectId, roleId);
    if (email === null && externalUserId === null) {
      throw new AppError("invalid_params", {
        details: [{ field: "external_user_id", issue: "required when the user has no email" }],
      });
    }
    const change = emailChange(current, email, input.email_verified);
    if (change.pending_email !== current.pending_email) await requireFreeEmail(tx, projectId, userId, change);
    const row = await updateUserRow(tx, projectId, userId, {
      display_name: input.display_name,
      given_name: input.given_name === undefined ? undefined : input.given_name || null,
      family_name: input.family_name === undefined ? undefined : input.family_name || null,
      avatar_url: keepOrClear(input.avatar_url, current.avatar_url),
      external_user_id: externalUserId,
      email: change.email,
      email_verified: change.email_verified,
      pending_email: change.pending_email,
      role_id: roleId,
      is_active: input.is_active,
      password_hash: passwordHash,
      properties: input.properties,
    });
    await operatorsKept(input.is_active ? "role_id" : "is_active");
    if (!input.is_active || passwordHash) await endSessions(tx, { userId });
    if (mail) await mailEmailChange(tx, mail, projectId, userId, change, sourceOf(caller));
    if (mail && passwordHash) {
      await mailNotice(tx, {
        projectId,
        userId,
        kind: "password_changed",
        source: sourceOf(caller),
        publicUrl: mail.publicUrl,
        byAdmin: true,
      });
    }
    await record(tx, {
      projectId,
      type: updateType("user", current, row!),
      source: sourceOf(caller),
      target: { type: "user", id: userId },
      changes: diff(current, row!, passwordHash ? ["password"] : []),
    });
    return row!;
  });
}

export async function getExternalUser(
  sql: Sql,
  projectId: string,
  externalUserId: string,
  includePermissions: boolean,
): Promise<User> {
  // An id no user can have (over 100 characters, a NUL byte) is not looked up: it is simply not found.
  const possible = externalUserId.length <= 100 && !externalUserId.includes("\0");
  return await retryRead(async () => {
    const row = possible ? await findUserByExternalId(sql, projectId, externalUserId) : undefined;
    if (!row) {
      throw new AppError("user_not_found", { description: "no user with this external id in this project" });
    }
    if (includePermissions) return { ...row, permissions: await permissionCodes(sql, { userId: row.id }) };
    return row;
  });
}

/** `listUsers`'s read, for the gate to send with its statement (routes/api/operation.ts, `reads`). */
export function userListRead(projectId: string, q: UserListQuery): AttachedRead {
  return userListStatement(projectId, q);
}

/** A page of the project's users; from `attached` when the gate read it already. */
export async function listUsers(
  sql: Sql,
  projectId: string,
  q: UserListQuery,
  attached?: Attached,
): Promise<JsonText<PageOf<User>>> {
  return await listPage<User>(sql, userListStatement(projectId, q), attached);
}

/** The user a token belongs to; a client-credentials token has none (`user_not_found`). */
export async function getCurrentUser(
  sql: Sql,
  principal: Principal,
): Promise<CurrentUser> {
  const { projectId, userId } = requireUser(principal);
  return await retryRead(async () => {
    const row = await findUser(sql, projectId, userId);
    if (!row) throw new AppError("user_not_found");
    return { ...row, permissions: await permissionCodes(sql, { userId: row.id }) };
  });
}

/** One user, as the list shows them; with `permissions` (evaluated now) when asked. */
export async function getUser(
  sql: Sql,
  projectId: string,
  userId: string,
  includePermissions: boolean,
): Promise<User> {
  return await retryRead(async () => {
    const row = await findUser(sql, projectId, userId);
    if (!row) throw new AppError("user_not_found");
    if (includePermissions) return { ...row, permissions: await permissionCodes(sql, { userId: row.id }) };
    return row;
  });
}

/**
 * Deletes the user. Their login and single sign-on sessions end with the row, so their tokens are refused
 * from the next request on, and their email and external id can be used again. The caller must cover what
 * the user holds (their role is held `for share` meanwhile), and may not delete itself: a stolen token must
 * not be able to remove the account it belongs to.
 */
export async function deleteUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const operatorsKept = await guardOperators(tx, projectId);
    const current = await findUser(tx, projectId, userId, { lock: true });
    if (!current) throw new AppError("user_not_found");
    if (caller.userId === userId) {
      throw new AppError("insufficient_permission", {
        description: "a user cannot delete their own account through the admin API",
        details: [{ field: "user_id", issue: "is the caller" }],
      });
    }
    if (current.role_id !== null) await lockRoleShared(tx, projectId, current.role_id);
    await requireCovered(tx, caller, projectId, { userId }, "user_id", "deleting this user", {
      nameCodes: false,
    });
    await endGrantsOf(tx, caller, projectId, { userId }, { type: "user", id: userId });
    await deleteUserRow(tx, projectId, current);
    await operatorsKept("user_id");
    await record(tx, {
      projectId,
      type: "user.deleted",
      source: sourceOf(caller),
      target: { type: "user", id: userId },
      changes: diff(current, {}),
    });
  });
}

/** A pending address must not be another user's address already (409, as for an address set at once). */
export async function requireFreeEmail(
  tx: Sql,
  projectId: string,
  userId: string,
  change: { pending_email: string | null },
) {
  if (change.pending_email === null) return;
  const other = await findLoginUser(tx, projectId, change.pending_email);
  if (other && other.id !== userId) throw new AppError("user_email_already_used");
}

/**
 * An admin mails a user a link: a password reset, a new invitation, or a verification of their address. Like
 * changing the user's password or email, it needs covering every permission the user holds (403 otherwise).
 */
export async function mailUser(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
  purpose: LinkPurpose,
  mail: LinkSettings,
): Promise<{ email: string; expires_at: string }> {
  return await sendLink(sql, mail, projectId, userId, purpose, sourceOf(caller), async (tx) => {
    const current = await findUser(tx, projectId, userId);
    if (current?.role_id) await lockRoleShared(tx, projectId, current.role_id);
    await requireCovered(tx, caller, projectId, { userId }, "user_id", `mailing this user a link`, {
      nameCodes: false,
    });
  });
}
