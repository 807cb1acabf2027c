/**
 * Second factors: a TOTP authenticator (domain/factors/totp.ts) with ten recovery codes, enrolled by the signed-in user
 * (the current user's API, the account page) or at sign-in, read and removed by admins. Secrets are sealed with
 * KEY_ENCRYPTION_KEY when it is set; recovery codes are kept only as hashes; every code is good once. The
 * login's second step, which checks them, is domain/factors/second_step.ts.
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import type { SecondFactors } from "../../openapi/mfa.ts";
import {
  deleteRecoveryCodes,
  deleteTotp,
  factorSummary,
  findTotp,
  replaceRecoveryCodes,
  upsertPendingTotp,
  useTotpStep,
} from "../../db/factors/mfa.ts";
import { clearAttempts } from "../../db/shared/throttle.ts";
import { findUser } from "../../db/accounts/users.ts";
import { findMfaPolicy } from "../../db/projects/projects.ts";
import { listPasskeys } from "../../db/factors/passkeys.ts";
import { requireCovered } from "../authz/coverage.ts";
import type { Principal } from "../shared/principal.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import { attempt, secondFactorKey, THROTTLE } from "../shared/throttle.ts";
import { base32Encode, matchingStep, newTotpSecret, otpauthUri } from "./totp.ts";
import { mailNotice } from "../accounts/notices.ts";
import {
  type FactorActor,
  type FreshProof,
  type MfaSettings,
  openSecret,
  recoveryHash,
  requireFreshProof,
  storedSecret,
} from "./proof.ts";

export const RECOVERY_CODE_COUNT = 10;

/** A recovery code: 80 random bits, as four groups of four base32 characters (`ABCD-EFGH-JKLM-NPQR`). */
function newRecoveryCode(): string {
  return base32Encode(crypto.getRandomValues(new Uint8Array(10))).match(/.{4}/g)!.join("-");
}

/** Whether the user has a second factor that a login must ask for. */
export async function hasSecondFactor(sql: Sql, projectId: string, userId: string): Promise<boolean> {
  const s = await factorSummary(sql, projectId, userId);
  return s.totp || s.passkeys > 0;
}

const fieldIssue = (field: string, issue: string) =>
  new AppError("invalid_params", { details: [{ field, issue }] });

const TO_CHANGE = "to change second factors";

/**
 * Starts an authenticator enrolment for the token's user: a new secret (replacing an enrolment under way), its
 * `otpauth://` URI for the QR code. It signs nobody in until confirmed with a code of it.
 */
export async function startTotpEnrolment(
  sql: Sql,
  s: MfaSettings,
  actor: FactorActor,
  input: FreshProof,
  /** At sign-in, right after the password was checked (a `required` policy): not asked again. */
  opts: { passwordJustChecked?: boolean } = {},
): Promise<{ secret: string; otpauth_uri: string }> {
  const { projectId, userId } = actor;
  const user = opts.passwordJustChecked
    ? await findUser(sql, projectId, userId)
    : await requireFreshProof(sql, s, actor, input, TO_CHANGE);
  if (!user) throw new AppError("user_not_found");
  const secret = newTotpSecret();
  const stored = storedSecret(s, projectId, userId, secret);
  if (!(await upsertPendingTotp(sql, { project_id: projectId, user_id: userId, ...stored }))) {
    throw new AppError("totp_already_enrolled");
  }
  return {
    secret,
    otpauth_uri: otpauthUri({ secret, issuer: s.issuer, account: user.email ?? user.display_name }),
  };
}

/** Completes the enrolment with a code of the new authenticator; answers the ten recovery codes, once. */
export async function confirmTotpEnrolment(
  sql: Sql,
  s: MfaSettings,
  actor: FactorActor,
  input: { code: string },
): Promise<{ recovery_codes: string[] }> {
  const { projectId, userId } = actor;
  const row = await findTotp(sql, projectId, userId);
  // An enrolment abandoned for 15 minutes is over: its key is not left open to guessing.
  if (!row || row.stale) throw new AppError("totp_enrolment_not_found");
  if (row.confirmed) throw new AppError("totp_already_enrolled");
  // Guesses count toward the second step's throttle (a growing delay, never a lockout).
  const key = secondFactorKey(projectId, userId);
  await attempt(sql, key, THROTTLE.account);
  const step = matchingStep(openSecret(s, projectId, userId, row), input.code.trim(), Date.now());
  if (step === null) throw fieldIssue("code", "is not the authenticator's current code");
  await clearAttempts(sql, key);
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await transaction(sql, async (tx) => {
    if (!(await useTotpStep(tx, projectId, userId, step, true))) {
      throw fieldIssue("code", "is not the authenticator's current code");
    }
    await replaceRecoveryCodes(tx, projectId, userId, codes.map((c) => recoveryHash(userId, c)));
    await record(tx, {
      projectId,
      type: "mfa.enrolled",
      source: actor.source,
      target: { type: "user", id: userId },
      details: { factor: "totp" },
    });
    await mailNotice(tx, {
      projectId,
      userId,
      kind: "totp_added",
      source: actor.source,
      publicUrl: s.publicUrl,
    });
  });
  return { recovery_codes: codes };
}

/** Ten new recovery codes for a user with an authenticator; the old ones, spent or not, stop working. */
export async function regenerateRecoveryCodes(
  sql: Sql,
  s: MfaSettings,
  actor: FactorActor,
  input: FreshProof,
): Promise<{ recovery_codes: string[] }> {
  const { projectId, userId } = actor;
  await requireFreshProof(sql, s, actor, input, TO_CHANGE);
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await transaction(sql, async (tx) => {
    if (!(await factorSummary(tx, projectId, userId)).totp) {
      throw new AppError("second_factor_not_found", {
        description: "recovery codes go with an authenticator",
      });
    }
    await replaceRecoveryCodes(tx, projectId, userId, codes.map((c) => recoveryHash(userId, c)));
    await record(tx, {
      projectId,
      type: "recovery_codes.regenerated",
      source: actor.source,
      target: { type: "user", id: userId },
    });
    await mailNotice(tx, {
      projectId,
      userId,
      kind: "recovery_codes",
      source: actor.source,
      publicUrl: s.publicUrl,
    });
  });
  return { recovery_codes: codes };
}

/**
 * Removes the user's authenticator and its recovery codes (by the user, with fresh proof). The user's row is
 * locked while the project's policy is checked against what remains, so two removals at once cannot both pass
 * it: under a `required` policy the last factor stays (409 `second_factor_required`).
 */
export async function removeCurrentTotp(
  sql: Sql,
  s: MfaSettings,
  actor: FactorActor,
  input: FreshProof,
): Promise<void> {
  const { projectId, userId } = actor;
  await requireFreshProof(sql, s, actor, input, TO_CHANGE);
  await transaction(sql, async (tx) => {
    if (!(await findUser(tx, projectId, userId, { lock: true }))) throw new AppError("user_not_found");
    const left = await factorSummary(tx, projectId, userId);
    if (!left.totp) throw new AppError("second_factor_not_found");
    if ((await findMfaPolicy(tx, projectId)) === "required" && left.passkeys === 0) {
      throw new AppError("second_factor_required");
    }
    if (!(await deleteTotp(tx, projectId, userId))) throw new AppError("second_factor_not_found");
    await deleteRecoveryCodes(tx, projectId, userId);
    await record(tx, {
      projectId,
      type: "mfa.removed",
      source: actor.source,
      target: { type: "user", id: userId },
      details: { factor: "totp" },
    });
    await mailNotice(tx, {
      projectId,
      userId,
      kind: "totp_removed",
      source: actor.source,
      publicUrl: s.publicUrl,
    });
  });
}

/** The token's user's second factors, for their own pages. */
export async function factorsOf(
  sql: Sql,
  actor: { projectId: string; userId: string },
): Promise<SecondFactors> {
  const { projectId, userId } = actor;
  return await retryRead(async () => {
    const s = await factorSummary(sql, projectId, userId);
    return {
      totp: s.totp,
      totp_enrolled_at: s.totp ? s.totp_confirmed_at?.toISOString() ?? null : null,
      recovery_codes_left: s.recovery_codes_left,
      passkeys: (await listPasskeys(sql, projectId, userId)).map((p) => ({
        id: p.id,
        name: p.name,
        synced: p.backup_eligible,
        created_at: p.created_at.toISOString(),
        last_used_at: p.last_used_at?.toISOString() ?? null,
      })),
    };
  });
}

/** The enrolment under way (its key and URI again, for the page that asks for its first code), if any. */
export async function pendingTotp(
  sql: Sql,
  s: MfaSettings,
  actor: { projectId: string; userId: string },
): Promise<{ secret: string; otpauth_uri: string } | null> {
  const { projectId, userId } = actor;
  const row = await findTotp(sql, projectId, userId);
  if (!row || row.confirmed) return null;
  const user = await findUser(sql, projectId, userId);
  if (!user) return null;
  const secret = openSecret(s, projectId, userId, row);
  return {
    secret,
    otpauth_uri: otpauthUri({ secret, issuer: s.issuer, account: user.email ?? user.display_name }),
  };
}

/** An admin's read of a user's second factors (`users:read`); 404 for a user of no such project. */
export async function userFactors(sql: Sql, projectId: string, userId: string): Promise<SecondFactors> {
  return await retryRead(async () => {
    if (!(await findUser(sql, projectId, userId))) throw new AppError("user_not_found");
    return await factorsOf(sql, { projectId, userId });
  });
}

/**
 * An admin removes a user's authenticator and recovery codes (a lost phone): the caller must hold every
 * permission the user holds, as for other changes of a user. Allowed under a `required` policy: the user then
 * enrols again at their next sign-in.
 */
export async function removeUserTotp(
  sql: Sql,
  s: MfaSettings,
  caller: Principal,
  projectId: string,
  userId: string,
) {
  await transaction(sql, async (tx) => {
    if (!(await findUser(tx, projectId, userId, { lock: true }))) throw new AppError("user_not_found");
    await requireCovered(
      tx,
      caller,
      projectId,
      { userId },
      "user_id",
      "removing this user's second factors",
      {
        nameCodes: false,
      },
    );
    if (!(await deleteTotp(tx, projectId, userId))) throw new AppError("second_factor_not_found");
    await deleteRecoveryCodes(tx, projectId, userId);
    await record(tx, {
      projectId,
      type: "mfa.removed",
      source: sourceOf(caller),
      target: { type: "user", id: userId },
      details: { factor: "totp", by: "admin" },
    });
    await mailNotice(tx, {
      projectId,
      userId,
      kind: "totp_removed",
      source: sourceOf(caller),
      publicUrl: s.publicUrl,
      byAdmin: true,
    });
  });
}
