/**
 * Second factors: a TOTP authenticator (domain/totp.ts) with ten recovery codes, enrolled by the signed-in user,
 * and the second step of a login that checks them. Secrets are sealed with KEY_ENCRYPTION_KEY when it is set;
 * recovery codes are kept only as hashes; every code is good once. Wrong codes count against a throttle of
 * their own per user (the login throttle's policy: a growing delay, never a lockout), which a right password
 * does not clear, and against the address's login counter.
 */
import { retryRead, type Sql, transaction } from "../db/connection.ts";
import type { SecondFactors } from "../openapi/mfa.ts";
import {
  awaitSecondFactor,
  deleteRecoveryCodes,
  deleteTotp,
  factorSummary,
  findTotp,
  pendingSecondFactor,
  replaceRecoveryCodes,
  type TotpRow,
  upsertPendingTotp,
  useRecoveryCode,
  useTotpStep,
} from "../db/mfa.ts";
import { clearAttempts, uncountAttempt } from "../db/throttle.ts";
import { findUser } from "../db/users.ts";
import { findMfaPolicy } from "../db/projects.ts";
import { requireCovered } from "./coverage.ts";
import type { Principal } from "./principal.ts";
import { record, type Source, sourceOf, userSource } from "./audit.ts";
import { AppError } from "./errors.ts";
import type { KeyVault } from "./key_vault.ts";
import { verifyPassword } from "./passwords.ts";
import type { RequestInfo } from "./principal.ts";
import { requireUser } from "./principal.ts";
import { hashSecret } from "./secrets.ts";
import { addressKey, attempt, THROTTLE } from "./throttle.ts";
import { base32Encode, matchingStep, newTotpSecret, otpauthUri } from "./totp.ts";
import { accountKey } from "./users.ts";

/** Who changes a user's factors: the user (through a token or the account page), and where from. */
export type FactorActor = { projectId: string; userId: string; source: Source };

/** The actor of a user's token. */
export function tokenActor(principal: Principal): FactorActor {
  const { projectId, userId } = requireUser(principal);
  return { projectId, userId, source: sourceOf(principal) };
}

export type MfaSettings = {
  vault: KeyVault | null;
  /** The issuer authenticator apps show above the code: the service's host. */
  issuer: string;
};

/** RFC 8176 method references of a login with a password and a second factor. */
export const AMR_PASSWORD = ["pwd"];
export const AMR_TOTP = ["pwd", "otp", "mfa"];
/** `acr` values: one factor, or several (`acr_values=2` asks for the second, see docs/second-factors.md). */
export const ACR_SINGLE = "1";
export const ACR_MULTI = "2";
export const acrOf = (amr: string[] | null): string => amr?.includes("mfa") ? ACR_MULTI : ACR_SINGLE;

export const RECOVERY_CODE_COUNT = 10;

const sealId = (projectId: string, userId: string) => `totp:${projectId}:${userId}`;

function openSecret(s: MfaSettings, projectId: string, userId: string, row: TotpRow): string {
  if (row.secret_sealed) {
    if (!s.vault) throw new Error("the TOTP secret is sealed: KEY_ENCRYPTION_KEY is needed to open it");
    return s.vault.openText(sealId(projectId, userId), row.secret_sealed);
  }
  return row.secret!;
}

/** A recovery code: 80 random bits, as four groups of four base32 characters (`ABCD-EFGH-JKLM-NPQR`). */
function newRecoveryCode(): string {
  return base32Encode(crypto.getRandomValues(new Uint8Array(10))).match(/.{4}/g)!.join("-");
}

/** What is hashed: the code without dashes, spaces or case, salted with its user's id. */
function recoveryHash(userId: string, code: string): Uint8Array {
  return hashSecret(`${userId}:${code.toUpperCase().replace(/[\s-]/g, "")}`);
}

/** Whether the user has a second factor that a login must ask for. */
export async function hasSecondFactor(sql: Sql, projectId: string, userId: string): Promise<boolean> {
  return (await factorSummary(sql, projectId, userId)).totp;
}

const fieldIssue = (field: string, issue: string) =>
  new AppError("invalid_params", { details: [{ field, issue }] });

/**
 * The current password, when the user has one: a stolen access token alone cannot add or remove a factor.
 * Wrong ones count toward the login throttle, as for a password change.
 */
async function checkCurrentPassword(sql: Sql, projectId: string, userId: string, given: string | undefined) {
  const user = await findUser(sql, projectId, userId, { withPasswordHash: true });
  if (!user) throw new AppError("user_not_found");
  if (!user.password_hash) return user;
  if (!given) throw fieldIssue("current_password", "required to change second factors");
  const key = accountKey(projectId, user.email ?? userId);
  await attempt(sql, key, THROTTLE.account);
  if (!(await verifyPassword(user.password_hash, given))) throw fieldIssue("current_password", "is wrong");
  await clearAttempts(sql, key);
  return user;
}

/**
 * Starts an authenticator enrolment for the token's user: a new secret (replacing an enrolment under way), its
 * `otpauth://` URI for the QR code. It signs nobody in until confirmed with a code of it.
 */
export async function startTotpEnrolment(
  sql: Sql,
  s: MfaSettings,
  actor: FactorActor,
  input: { current_password?: string },
  /** At sign-in, right after the password was checked (a `required` policy): not asked again. */
  opts: { passwordJustChecked?: boolean } = {},
): Promise<{ secret: string; otpauth_uri: string }> {
  const { projectId, userId } = actor;
  const user = opts.passwordJustChecked
    ? await findUser(sql, projectId, userId)
    : await checkCurrentPassword(sql, projectId, userId, input.current_password);
  if (!user) throw new AppError("user_not_found");
  const secret = newTotpSecret();
  const stored = s.vault
    ? { secret: null, secret_sealed: s.vault.sealText(sealId(projectId, userId), secret) }
    : { secret, secret_sealed: null };
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
  if (!row) throw new AppError("totp_enrolment_not_found");
  if (row.confirmed) throw new AppError("totp_already_enrolled");
  const step = matchingStep(openSecret(s, projectId, userId, row), input.code.trim(), Date.now());
  if (step === null) throw fieldIssue("code", "is not the authenticator's current code");
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
  });
  return { recovery_codes: codes };
}

/** Ten new recovery codes for a user with an authenticator; the old ones, spent or not, stop working. */
export async function regenerateRecoveryCodes(
  sql: Sql,
  actor: FactorActor,
  input: { current_password?: string },
): Promise<{ recovery_codes: string[] }> {
  const { projectId, userId } = actor;
  await checkCurrentPassword(sql, projectId, userId, input.current_password);
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
  });
  return { recovery_codes: codes };
}

/** Removes the user's authenticator and its recovery codes (by the user, with the current password). */
export async function removeCurrentTotp(
  sql: Sql,
  actor: FactorActor,
  input: { current_password?: string },
): Promise<void> {
  const { projectId, userId } = actor;
  await checkCurrentPassword(sql, projectId, userId, input.current_password);
  if ((await findMfaPolicy(sql, projectId)) === "required") throw new AppError("second_factor_required");
  await transaction(sql, async (tx) => {
    if (!(await deleteTotp(tx, projectId, userId))) throw new AppError("second_factor_not_found");
    await deleteRecoveryCodes(tx, projectId, userId);
    await record(tx, {
      projectId,
      type: "mfa.removed",
      source: actor.source,
      target: { type: "user", id: userId },
      details: { factor: "totp" },
    });
  });
}

/**
 * The second step of a login: a code of the user's authenticator (6 digits, once each) or one of their recovery
 * codes. Returns the login's methods (RFC 8176), or null for a wrong, spent or expired code (`mfa.failed`).
 * Throws 429 `too_many_requests` while the user's second-step throttle, or the address's, must wait.
 */
export async function checkSecondFactor(
  sql: Sql,
  s: MfaSettings,
  login: {
    projectId: string;
    userId: string;
    clientId: string;
    code: string;
    request: RequestInfo;
    /** The methods of the login so far (`pwd`, or `fed` for a step-up of a federated session). */
    amr: string[];
  },
): Promise<string[] | null> {
  const { projectId, userId, request } = login;
  const key = `mfa:${projectId}:${userId}`;
  const address = `address:${addressKey(request.ip)}`;
  const failed = (reason: string) =>
    record(sql, {
      projectId,
      type: "mfa.failed",
      source: userSource(userId, request),
      target: { type: "user", id: userId },
      details: { client_id: login.clientId, reason },
    });
  try {
    await attempt(sql, address, THROTTLE.address);
    try {
      await attempt(sql, key, THROTTLE.account);
    } catch (err) {
      await uncountAttempt(sql, address);
      throw err;
    }
  } catch (err) {
    if (err instanceof AppError && err.code === "too_many_requests") await failed("throttled");
    throw err;
  }
  const code = login.code.replace(/\s/g, "");
  const succeeded = async () => {
    await clearAttempts(sql, key);
    await uncountAttempt(sql, address);
    return withSecondFactor(login.amr);
  };
  if (/^\d{6}$/.test(code)) {
    const row = await findTotp(sql, projectId, userId);
    const step = row?.confirmed
      ? matchingStep(openSecret(s, projectId, userId, row), code, Date.now())
      : null;
    if (step !== null && await useTotpStep(sql, projectId, userId, step, false)) return await succeeded();
  } else if (code.length >= 16 && code.length <= 40) {
    const used = await transaction(sql, async (tx) => {
      const remaining = await useRecoveryCode(tx, projectId, userId, recoveryHash(userId, code));
      if (remaining === null) return false;
      await record(tx, {
        projectId,
        type: "recovery_code.used",
        source: userSource(userId, request),
        target: { type: "user", id: userId },
        details: { client_id: login.clientId, remaining },
      });
      return true;
    });
    if (used) return await succeeded();
  }
  await failed("wrong_code");
  return null;
}

/**
 * After a right password of a user with a second factor: the login request waits for it, and no code is issued
 * until `checkSecondFactor` accepts one.
 */
export async function startSecondStep(
  sql: Sql,
  req: { id: string },
  userId: string,
  amr: string[] = AMR_PASSWORD,
): Promise<void> {
  await awaitSecondFactor(sql, req.id, userId, amr);
}

/** The user whose second factor the login request awaits and the methods so far, or undefined. */
export async function awaitedLogin(
  sql: Sql,
  requestId: string,
): Promise<{ user_id: string; amr: string[] } | undefined> {
  return await pendingSecondFactor(sql, requestId);
}

/** The methods of a login once a second factor was given: those before it, then `otp` and `mfa`. */
export function withSecondFactor(amr: string[]): string[] {
  return [...new Set([...amr.filter((m) => m !== "mfa"), "otp", "mfa"])];
}

/** What comes after a right password: nothing, the code of the user's factor, or enrolling one. */
export type SecondStep = "none" | "code" | "enrol";

/**
 * The project's policy decides, live: `off` asks for nothing; a user with a factor gives its code; a user
 * without one enrols when the project requires factors or the OpenID request asked for the multi-factor level
 * (`acr_values=2`).
 */
export async function secondStepFor(
  sql: Sql,
  req: { project_id: string; acr: string | null },
  userId: string,
): Promise<SecondStep> {
  const policy = await findMfaPolicy(sql, req.project_id);
  if (policy === "off") return "none";
  if (await hasSecondFactor(sql, req.project_id, userId)) return "code";
  return policy === "required" || req.acr === ACR_MULTI ? "enrol" : "none";
}

/** The login's enrolment (a `required` policy): a new key for the user who just gave their password. */
export async function startLoginEnrolment(
  sql: Sql,
  s: MfaSettings,
  login: { projectId: string; userId: string; request: RequestInfo },
): Promise<{ secret: string; otpauth_uri: string }> {
  const actor = {
    projectId: login.projectId,
    userId: login.userId,
    source: userSource(login.userId, login.request),
  };
  return await startTotpEnrolment(sql, s, actor, {}, { passwordJustChecked: true });
}

/**
 * The login's enrolment completed with a right code: answers the recovery codes, and the login request now
 * waits only for the user to go on (its methods say the second factor was given).
 */
export async function confirmLoginEnrolment(
  sql: Sql,
  s: MfaSettings,
  login: {
    requestId: string;
    projectId: string;
    userId: string;
    amr: string[];
    code: string;
    request: RequestInfo;
  },
): Promise<{ recovery_codes: string[] } | null> {
  const actor = {
    projectId: login.projectId,
    userId: login.userId,
    source: userSource(login.userId, login.request),
  };
  let codes;
  try {
    codes = await confirmTotpEnrolment(sql, s, actor, { code: login.code });
  } catch (err) {
    if (err instanceof AppError && err.code === "invalid_params") return null;
    throw err;
  }
  await awaitSecondFactor(sql, login.requestId, login.userId, withSecondFactor(login.amr));
  return codes;
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
export async function removeUserTotp(sql: Sql, caller: Principal, projectId: string, userId: string) {
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
  });
}
