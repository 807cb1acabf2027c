/**
 * The console's first operator: a user of the system project whose `admin` role holds every system
 * permission. BOOTSTRAP_ADMIN_EMAIL makes one at a start that finds no user with that email: with
 * BOOTSTRAP_ADMIN_PASSWORD it can sign in at once; without it, a one-time setup link lets them choose a password.
 * A start that finds no operator at all (no active user of the system project with a password) prints a
 * one-time link that creates one, with the email and password its holder chooses. Every link is printed only
 * to the service's terminal, works for an hour and once, and is stored only as a hash.
 */
import {
  consumeSetupToken,
  defaultPermissionIds,
  findRoleIdByCode,
  findUsableSetupToken,
  insertSetupToken,
  lockSetup,
  NEW_OPERATOR,
  operatorExists,
  setUserPasswordHash,
} from "../../db/console/sessions.ts";
import { type Sql, transaction, type Tx } from "../../db/connection.ts";
import { insertRole, setRolePermissions } from "../../db/authz/roles.ts";
import { findLoginUser, findUser, insertUser } from "../../db/accounts/users.ts";
import { SYSTEM_PROJECT_ID } from "../../openapi/projects.ts";
import { record, SYSTEM } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import { newId, newSecret } from "../shared/ids.ts";
import { hashPassword } from "../accounts/passwords.ts";
import { hashSecret } from "../shared/secrets.ts";
import { normalizeEmail } from "../accounts/emails.ts";

/** How long a setup link works. */
export const SETUP_TTL = 3600;

/** What a start did about the console's first operator, for the banner. */
export type FirstOperator =
  /** An operator can sign in (or a link was not wanted): nothing to say. */
  | { kind: "none" }
  /** BOOTSTRAP_ADMIN_EMAIL's user, made now: with a link to choose a password unless it was given. */
  | { kind: "created"; email: string; setupToken?: string }
  /** BOOTSTRAP_ADMIN_EMAIL's user exists but has no password yet, and no operator can sign in: a new link. */
  | { kind: "password"; email: string; setupToken: string }
  /** No operator, and none named: a link that creates one. */
  | { kind: "create"; setupToken: string };

/**
 * At start, after the system project exists: creates BOOTSTRAP_ADMIN_EMAIL's user when no user has that email;
 * then, when no operator can sign in and `link` (a start that prints its banner), makes a setup link.
 */
export async function ensureFirstOperator(
  sql: Sql,
  email: string | undefined,
  password: string | undefined,
  opts: { link?: boolean } = {},
): Promise<FirstOperator> {
  const normalized = normalizeEmail(email);
  const existing = normalized ? await findLoginUser(sql, SYSTEM_PROJECT_ID, normalized) : undefined;
  if (normalized && !existing) return await createOperator(sql, normalized, password);
  if (!opts.link || await operatorExists(sql, SYSTEM_PROJECT_ID)) return { kind: "none" };
  if (normalized && existing && existing.is_active && existing.password_hash === null) {
    return { kind: "password", email: normalized, setupToken: await newSetupLink(sql, existing.id) };
  }
  return { kind: "create", setupToken: await newSetupLink(sql, NEW_OPERATOR) };
}

async function newSetupLink(sql: Sql, userId: string): Promise<string> {
  const setupToken = newSecret();
  await insertSetupToken(sql, {
    token_hash: hashSecret(setupToken),
    project_id: SYSTEM_PROJECT_ID,
    user_id: userId,
    ttl: SETUP_TTL,
  });
  return setupToken;
}

/** The system project's `admin` role, made with every system permission when it does not exist yet. */
async function adminRole(tx: Tx): Promise<string> {
  const found = await findRoleIdByCode(tx, SYSTEM_PROJECT_ID, "admin");
  if (found) return found;
  const roleId = newId();
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
    new Map(),
  );
  await record(tx, {
    projectId: SYSTEM_PROJECT_ID,
    type: "role.created",
    source: SYSTEM,
    target: { type: "role", id: roleId },
  });
  return roleId;
}

/** An operator with the `admin` role; audited as made by the system. */
async function insertOperator(tx: Tx, email: string, passwordHash: string | null): Promise<string> {
  const user = await insertUser(tx, {
    project_id: SYSTEM_PROJECT_ID,
    id: newId(),
    display_name: "Operator",
    avatar_url: null,
    external_user_id: null,
    email,
    email_verified: false,
    pending_email: null,
    role_id: await adminRole(tx),
    is_active: true,
    password_hash: passwordHash,
  });
  await record(tx, {
    projectId: SYSTEM_PROJECT_ID,
    type: "user.created",
    source: SYSTEM,
    target: { type: "user", id: user.id },
  });
  return user.id;
}

/** BOOTSTRAP_ADMIN_EMAIL's user, with its password or a link to choose one. */
async function createOperator(sql: Sql, email: string, password: string | undefined): Promise<FirstOperator> {
  const passwordHash = password ? await hashPassword(password) : null;
  return await transaction(sql, async (tx) => {
    const userId = await insertOperator(tx, email, passwordHash);
    if (passwordHash) return { kind: "created", email };
    return { kind: "created", email, setupToken: await newSetupLink(tx, userId) };
  });
}

/** What a setup link does while it works: set its user's password, or create the first operator. */
export type SetupLink = "password" | "create";

/** What the link does, or undefined when it is unknown, used, expired or moot. */
export async function setupLinkOf(sql: Sql, token: string): Promise<SetupLink | undefined> {
  if (token.length === 0 || token.length > 100) return undefined;
  const row = await findUsableSetupToken(sql, hashSecret(token));
  return row === undefined ? undefined : row.user_id === NEW_OPERATOR ? "create" : "password";
}

const EMAIL =
  /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$/;

/**
 * Spends the setup link: sets its user's password, or creates the first operator with this email and password
 * (only while no operator can sign in: links spent at once are taken in turn, and the second finds one).
 * `invalid_params` names the field at fault (`token` when the link no longer works); nothing is spent then.
 * Answers the operator's email, for the sign-in that follows to prefill.
 */
export async function completeSetup(
  sql: Sql,
  token: string,
  password: string,
  email?: string,
): Promise<string | null> {
  if (password.length < 8 || password.length > 1024) {
    throw new AppError("invalid_params", {
      details: [{ field: "password", issue: "at least 8 characters" }],
    });
  }
  const passwordHash = await hashPassword(password);
  return await transaction(sql, async (tx) => {
    await lockSetup(tx);
    const spent = token.length > 100 ? undefined : await consumeSetupToken(tx, hashSecret(token));
    if (!spent) {
      throw new AppError("invalid_params", { details: [{ field: "token", issue: "expired or used" }] });
    }
    if (spent.user_id !== NEW_OPERATOR) {
      await setUserPasswordHash(tx, spent.project_id, spent.user_id, passwordHash);
      return (await findUser(tx, spent.project_id, spent.user_id))?.email ?? null;
    }
    const normalized = normalizeEmail(email) ?? "";
    if (normalized.length > 100 || !EMAIL.test(normalized)) {
      throw new AppError("invalid_params", { details: [{ field: "email", issue: "must be a valid email" }] });
    }
    if (await findLoginUser(tx, SYSTEM_PROJECT_ID, normalized)) {
      throw new AppError("invalid_params", {
        details: [{ field: "email", issue: "a user of the system project has this email already" }],
      });
    }
    await insertOperator(tx, normalized, passwordHash);
    return normalized;
  });
}
