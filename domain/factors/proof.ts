/**
 * Fresh proof: what a change of the user's sign-in methods (an authenticator, recovery codes, a passkey, the
 * password, the email address) needs besides the token or browser session that asks for it, so that a stolen
 * access token or a borrowed browser cannot add a way in or take one away. One rule for the current user's API
 * and the account page:
 *
 * - a user with a password gives the current password (wrong ones are throttled like logins);
 * - a user without one (made through an upstream provider) gives the current code of their authenticator or an
 *   unspent recovery code (spent then), or, on the account page, has just signed in again at their linked
 *   provider (`prompt=login`, `max_age=0`, its `auth_time` checked: domain/federation/reauthentication.ts), which
 *   counts for FRESH_PROOF_SECONDS.
 *
 * Anything else: 403 `reauthentication_required`. The user's second-factor secrets are opened here too.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import { findTotp, type TotpRow, useRecoveryCode, useTotpStep } from "../../db/factors/mfa.ts";
import { clearAttempts, uncountAttempt } from "../../db/shared/throttle.ts";
import { findUser } from "../../db/accounts/users.ts";
import type { KeyVault } from "../keys/key_vault.ts";
import { record, type Source, sourceOf } from "../audit/audit.ts";
import { verifyPassword } from "../accounts/passwords.ts";
import { rehashIfForeign } from "../accounts/password_rehash.ts";
import { accountKey } from "../accounts/emails.ts";
import { AppError } from "../shared/errors.ts";
import { hashSecret } from "../shared/secrets.ts";
import { type Principal, requireUser } from "../shared/principal.ts";
import { attempt, secondFactorKey, THROTTLE } from "../shared/throttle.ts";
import { matchingStep } from "./totp.ts";

/** How long a sign-in again at the user's provider counts as fresh proof on the account page, seconds. */
export const FRESH_PROOF_SECONDS = 300;

/**
 * Who changes a user's sign-in methods: the user (through a token or the account page), and where from. On the
 * account page, when the browser session last signed in again at the user's provider.
 */
export type FactorActor = {
  projectId: string;
  userId: string;
  source: Source;
  reauthenticatedAt?: Date | null;
};

/** The actor of a user's token: a token never carries a fresh sign-in. */
export function tokenActor(principal: Principal): FactorActor {
  const { projectId, userId } = requireUser(principal);
  return { projectId, userId, source: sourceOf(principal), reauthenticatedAt: null };
}

export type MfaSettings = {
  vault: KeyVault | null;
  /** The issuer authenticator apps show above the code: the service's host. */
  issuer: string;
  /** PUBLIC_URL: the account page that notice mails point to. */
  publicUrl: string;
};

const sealId = (projectId: string, userId: string) => `totp:${projectId}:${userId}`;

/** A new TOTP secret as stored: sealed with KEY_ENCRYPTION_KEY when it is set. */
export function storedSecret(s: MfaSettings, projectId: string, userId: string, secret: string) {
  return s.vault
    ? { secret: null, secret_sealed: s.vault.sealText(sealId(projectId, userId), secret) }
    : { secret, secret_sealed: null };
}

export function openSecret(s: MfaSettings, projectId: string, userId: string, row: TotpRow): string {
  if (row.secret_sealed) {
    if (!s.vault) throw new Error("the TOTP secret is sealed: KEY_ENCRYPTION_KEY is needed to open it");
    return s.vault.openText(sealId(projectId, userId), row.secret_sealed);
  }
  return row.secret!;
}

/** What is hashed: the code without dashes, spaces or case, salted with its user's id. */
export function recoveryHash(userId: string, code: string): Uint8Array {
  return hashSecret(`${userId}:${code.toUpperCase().replace(/[\s-]/g, "")}`);
}

/** What a request gives as proof: the current password, or a code of an existing factor. */
export type FreshProof = { current_password?: string | null; code?: string | null };

const fieldIssue = (field: string, issue: string) =>
  new AppError("invalid_params", { details: [{ field, issue }] });

const NEEDED = "changing how you sign in needs fresh proof: the current code of your authenticator, one of " +
  "your recovery codes, or signing in again at your identity provider from the account page";

/**
 * Checks the proof of a change of the actor's sign-in methods (see the module's comment), and answers the user
 * (with their password hash). `what` names the change in the errors ("to change second factors").
 */
export async function requireFreshProof(
  sql: Sql,
  s: MfaSettings,
  actor: FactorActor,
  given: FreshProof,
  what: string,
) {
  const { projectId, userId } = actor;
  const user = await findUser(sql, projectId, userId, { withPasswordHash: true });
  if (!user) throw new AppError("user_not_found");
  if (user.password_hash) {
    if (!given.current_password) throw fieldIssue("current_password", `required ${what}`);
    const key = accountKey(projectId, user.email ?? userId);
    await attempt(sql, key, THROTTLE.account);
    const right = await verifyPassword(user.password_hash, given.current_password).catch(async (err) => {
      await uncountAttempt(sql, key); // 429 (hash_gate.ts): not counted
      throw err;
    });
    if (!right) {
      throw fieldIssue("current_password", "is wrong");
    }
    const stored = await rehashIfForeign(
      sql,
      { projectId, userId, stored: user.password_hash },
      given.current_password,
      actor.source,
    );
    await clearAttempts(sql, key);
    return { ...user, password_hash: stored };
  }
  const at = actor.reauthenticatedAt?.getTime();
  if (at !== undefined && Date.now() - at <= FRESH_PROOF_SECONDS * 1000) return user;
  if (given.code) {
    await factorCode(sql, s, actor, given.code);
    return user;
  }
  throw new AppError("reauthentication_required", { description: NEEDED });
}

/**
 * A code of the user's existing factor as proof (each good once, as at sign-in). Guesses count toward the second
 * step's throttle; a wrong one is 400 `invalid_params` on `code`.
 */
async function factorCode(sql: Sql, s: MfaSettings, actor: FactorActor, given: string): Promise<void> {
  const { projectId, userId } = actor;
  const key = secondFactorKey(projectId, userId);
  await attempt(sql, key, THROTTLE.account);
  const spent = await spendFactorCode(sql, s, {
    projectId,
    userId,
    code: given,
    source: actor.source,
    details: { for: "fresh_proof" },
  });
  if (!spent) {
    throw fieldIssue("code", "is not a current code of your authenticator or an unspent recovery code");
  }
  await clearAttempts(sql, key);
}

/**
 * Spends a code of the user's existing factor: the authenticator's current code (its step is kept, so each
 * code is good once) or an unspent recovery code, whose use is recorded (`recovery_code.used`, `details` and
 * how many are left) in the same transaction. False for a wrong, spent or expired code. One rule for the
 * login's second step and for fresh proof; throttling is the caller's.
 */
export async function spendFactorCode(
  sql: Sql,
  s: MfaSettings,
  use: { projectId: string; userId: string; code: string; source: Source; details: Record<string, unknown> },
): Promise<boolean> {
  const { projectId, userId } = use;
  const code = use.code.replace(/\s/g, "");
  if (/^\d{6}$/.test(code)) {
    const row = await findTotp(sql, projectId, userId);
    const step = row?.confirmed
      ? matchingStep(openSecret(s, projectId, userId, row), code, Date.now())
      : null;
    return step !== null && await useTotpStep(sql, projectId, userId, step, false);
  }
  if (code.length < 16 || code.length > 40) return false;
  return await transaction(sql, async (tx) => {
    const remaining = await useRecoveryCode(tx, projectId, userId, recoveryHash(userId, code));
    if (remaining === null) return false;
    await record(tx, {
      projectId,
      type: "recovery_code.used",
      source: use.source,
      target: { type: "user", id: userId },
      details: { ...use.details, remaining },
    });
    return true;
  });
}
