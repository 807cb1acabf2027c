/**
 * The first operator (BOOTSTRAP_ADMIN_EMAIL): a user of the system project whose `admin` role holds every
 * system permission, made at a start that finds no user with that email. With BOOTSTRAP_ADMIN_PASSWORD the
 * user can sign in at once; without it, a one-time setup link valid for an hour lets them choose a password.
 */
import {
  consumeSetupToken,
  defaultPermissionIds,
  findRoleIdByCode,
  insertSetupToken,
  setupTokenUsable,
  setUserPasswordHash,
} from "../db/console_sessions.ts";
import { type Sql, transaction } from "../db/connection.ts";
import { insertRole, setRolePermissions } from "../db/roles.ts";
import { findLoginUser, insertUser } from "../db/users.ts";
import { SYSTEM_PROJECT_ID } from "../openapi/projects.ts";
import { record, SYSTEM } from "./audit.ts";
import { AppError } from "./errors.ts";
import { newId, newSecret } from "./ids.ts";
import { hashPassword } from "./passwords.ts";
import { hashSecret } from "./secrets.ts";
import { normalizeEmail } from "./users.ts";

/** How long the setup link works. */
export const SETUP_TTL = 3600;

export type FirstOperator = { created: false } | { created: true; email: string; setupToken?: string };

/** Creates the first operator when the email names no user of the system project yet (at start, under its lock). */
export async function ensureFirstOperator(
  sql: Sql,
  email: string | undefined,
  password: string | undefined,
): Promise<FirstOperator> {
  const normalized = normalizeEmail(email);
  if (!normalized) return { created: false };
  if (await findLoginUser(sql, SYSTEM_PROJECT_ID, normalized)) return { created: false };
  const passwordHash = password ? await hashPassword(password) : null;
  return await transaction(sql, async (tx) => {
    let roleId = await findRoleIdByCode(tx, SYSTEM_PROJECT_ID, "admin");
    if (!roleId) {
      roleId = newId();
      await insertRole(tx, {
        project_id: SYSTEM_PROJECT_ID,
        id: roleId,
        code: "admin",
        name: "Admin",
        description: "Operators: every permission of the system project",
      });
      await setRolePermissions(
        tx,
        SYSTEM_PROJECT_ID,
        roleId,
        await defaultPermissionIds(tx, SYSTEM_PROJECT_ID),
      );
      await record(tx, {
        projectId: SYSTEM_PROJECT_ID,
        type: "role.created",
        source: SYSTEM,
        target: { type: "role", id: roleId },
      });
    }
    const user = await insertUser(tx, {
      project_id: SYSTEM_PROJECT_ID,
      id: newId(),
      display_name: "Operator",
      avatar_url: null,
      external_user_id: null,
      email: normalized,
      role_id: roleId,
      is_active: true,
      password_hash: passwordHash,
    });
    await record(tx, {
      projectId: SYSTEM_PROJECT_ID,
      type: "user.created",
      source: SYSTEM,
      target: { type: "user", id: user.id },
    });
    if (passwordHash) return { created: true, email: normalized };
    const setupToken = newSecret();
    await insertSetupToken(tx, {
      token_hash: hashSecret(setupToken),
      project_id: SYSTEM_PROJECT_ID,
      user_id: user.id,
      ttl: SETUP_TTL,
    });
    return { created: true, email: normalized, setupToken };
  });
}

export async function setupLinkUsable(sql: Sql, token: string): Promise<boolean> {
  return await setupTokenUsable(sql, hashSecret(token));
}

/** Spends the setup link and sets the operator's password. */
export async function completeSetup(sql: Sql, token: string, password: string): Promise<void> {
  if (password.length < 8 || password.length > 1024) {
    throw new AppError("invalid_params", {
      details: [{ field: "password", issue: "at least 8 characters" }],
    });
  }
  const passwordHash = await hashPassword(password);
  await transaction(sql, async (tx) => {
    const spent = await consumeSetupToken(tx, hashSecret(token));
    if (!spent) {
      throw new AppError("invalid_params", { details: [{ field: "token", issue: "expired or used" }] });
    }
    await setUserPasswordHash(tx, spent.project_id, spent.user_id, passwordHash);
  });
}
