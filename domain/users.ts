/** Users of a project: fully managed (email and password) or identified by the calling system's external id. */
import { type Sql, transaction } from "../db/connection.ts";
import type { Page, Sort } from "../db/lists.ts";
import { roleExists } from "../db/roles.ts";
import { permissionCodes } from "../db/principals.ts";
import { revokeOtherSessions } from "../db/sessions.ts";
import {
  findUser,
  findUserByExternalId,
  findUserForUpdate,
  insertUser,
  listUsers as listUserRows,
  revokeUserSessions,
  updateUserRow,
  type UserRow,
  type UserSortField,
} from "../db/users.ts";
import { AppError } from "./errors.ts";
import { newId } from "./ids.ts";
import { keepOrClear, type PageOut, pageResult } from "./pages.ts";
import type { Principal } from "./gate.ts";
import { hashPassword } from "./passwords.ts";

export type UserInput = {
  display_name: string;
  avatar_url?: string | null;
  external_user_id?: string | null;
  email?: string | null;
  password?: string | null;
  role_id?: string | null;
  is_active?: boolean;
};

export type UserRecord = {
  id: string;
  project_id: string;
  display_name: string;
  avatar_url: string | null;
  external_user_id: string | null;
  email: string | null;
  role_id: string | null;
  is_active: boolean;
  created_at: string;
  updated_at: string;
  permissions?: string[];
};

export function userRecord(u: UserRow): UserRecord {
  return {
    id: u.id,
    project_id: u.project_id,
    display_name: u.display_name,
    avatar_url: u.avatar_url,
    external_user_id: u.external_user_id,
    email: u.email,
    role_id: u.role_id,
    is_active: u.is_active,
    created_at: u.created_at.toISOString(),
    updated_at: u.updated_at.toISOString(),
  };
}

/** Emails are stored trimmed and lower-cased, so uniqueness and login are case-insensitive. */
export function normalizeEmail(email: string | null | undefined): string | null | undefined {
  return typeof email === "string" ? email.trim().toLowerCase() : email;
}

async function checkRole(sql: Sql, projectId: string, roleId: string | null) {
  if (roleId !== null && !(await roleExists(sql, projectId, roleId))) throw new AppError("role_not_found");
}

export async function createUser(sql: Sql, projectId: string, input: UserInput): Promise<UserRecord> {
  // Hash before the transaction: it takes milliseconds and must not hold a connection.
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  return await transaction(sql, async (tx) => {
    const roleId = input.role_id || null;
    await checkRole(tx, projectId, roleId);
    const row = await insertUser(tx, {
      project_id: projectId,
      id: newId(),
      display_name: input.display_name,
      avatar_url: input.avatar_url || null,
      external_user_id: input.external_user_id || null,
      email: normalizeEmail(input.email) || null,
      role_id: roleId,
      is_active: input.is_active ?? true,
      password_hash: passwordHash,
    });
    return userRecord(row);
  });
}

/**
 * Applies an update: `avatar_url`, `external_user_id`, `email` and `role_id` keep their value when
 * omitted and are cleared by null or ""; an empty or omitted password keeps the current one. Deactivating
 * the user or setting a new password ends the user's sessions at once.
 */
export async function updateUser(
  sql: Sql,
  projectId: string,
  userId: string,
  input: UserInput & { is_active: boolean },
): Promise<UserRecord> {
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  return await transaction(sql, async (tx) => {
    const current = await findUserForUpdate(tx, projectId, userId);
    if (!current) throw new AppError("user_not_found");
    const roleId = keepOrClear(input.role_id, current.role_id);
    if (roleId !== current.role_id) await checkRole(tx, projectId, roleId);
    const email = keepOrClear(normalizeEmail(input.email), current.email);
    const externalUserId = keepOrClear(input.external_user_id, current.external_user_id);
    if (email === null && externalUserId === null) {
      throw new AppError("invalid_params", {
        details: [{ field: "external_user_id", issue: "required when the user has no email" }],
      });
    }
    const row = await updateUserRow(tx, projectId, userId, {
      display_name: input.display_name,
      avatar_url: keepOrClear(input.avatar_url, current.avatar_url),
      external_user_id: externalUserId,
      email,
      role_id: roleId,
      is_active: input.is_active,
      password_hash: passwordHash,
    });
    if (!input.is_active || passwordHash) await revokeUserSessions(tx, userId);
    return userRecord(row!);
  });
}

export async function getExternalUser(
  sql: Sql,
  projectId: string,
  externalUserId: string,
  includePermissions: boolean,
): Promise<UserRecord> {
  // An id no user can have (over 100 characters, a NUL byte) is not looked up: it is simply not found.
  const possible = externalUserId.length <= 100 && !externalUserId.includes("\0");
  const row = possible ? await findUserByExternalId(sql, projectId, externalUserId) : undefined;
  if (!row) {
    throw new AppError("user_not_found", { description: "no user with this external id in this project" });
  }
  const record = userRecord(row);
  if (includePermissions) record.permissions = await permissionCodes(sql, { userId: row.id });
  return record;
}

export async function listUsers(
  sql: Sql,
  projectId: string,
  q: Page & Sort<UserSortField> & { search?: string; is_active?: boolean; role_id?: string },
): Promise<PageOut<UserRecord>> {
  return pageResult(q, await listUserRows(sql, projectId, q), userRecord);
}

/** The user a token belongs to; a client-credentials token has none (`user_not_found`). */
export async function getCurrentUser(
  sql: Sql,
  principal: Principal,
): Promise<UserRecord & { permissions: string[] }> {
  if (!principal.sid) {
    throw new AppError("user_not_found", { description: "the token belongs to a client, not a user" });
  }
  const row = await findUser(sql, principal.aud, principal.sub);
  if (!row) throw new AppError("user_not_found");
  return { ...userRecord(row), permissions: await permissionCodes(sql, { userId: row.id }) };
}

export type CurrentUserInput = {
  display_name: string;
  email: string;
  avatar_url?: string | null;
  password?: string | null;
};

/**
 * §4.13: the token's user updates their own profile. An omitted avatar keeps it, null or "" removes it; an
 * empty or omitted password keeps it, and a new one ends the user's other sessions (not this one).
 */
export async function updateCurrentUser(
  sql: Sql,
  principal: Principal,
  input: CurrentUserInput,
): Promise<UserRecord & { permissions: string[] }> {
  if (!principal.sid) {
    throw new AppError("user_not_found", { description: "the token belongs to a client, not a user" });
  }
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  const row = await transaction(sql, async (tx) => {
    const current = await findUserForUpdate(tx, principal.aud, principal.sub);
    if (!current) throw new AppError("user_not_found");
    const updated = await updateUserRow(tx, principal.aud, principal.sub, {
      display_name: input.display_name,
      avatar_url: keepOrClear(input.avatar_url, current.avatar_url),
      external_user_id: current.external_user_id,
      email: normalizeEmail(input.email)!,
      role_id: current.role_id,
      is_active: current.is_active,
      password_hash: passwordHash,
    });
    if (passwordHash) await revokeOtherSessions(tx, principal.sub, principal.sid!);
    return updated!;
  });
  return { ...userRecord(row), permissions: await permissionCodes(sql, { userId: row.id }) };
}
