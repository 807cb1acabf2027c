/**
 * The second step of a login: after a right password (or for a step-up of a browser session), the code of the
 * user's authenticator or a recovery code, or, where the project requires a factor, enrolling one. What comes
 * next is decided live from the project's `mfa` policy and the request's `acr_values`. Wrong codes count against
 * a throttle of their own per user (the login throttle's policy: a growing delay, never a lockout), which a
 * right password does not clear, and against the address's login counter.
 */
import type { Sql } from "../../db/connection.ts";
import { awaitSecondFactor, pendingSecondFactor } from "../../db/factors/mfa.ts";
import { clearAttempts, uncountAttempt } from "../../db/shared/throttle.ts";
import { record, userSource } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import { confirmTotpEnrolment, hasSecondFactor, startTotpEnrolment } from "./mfa.ts";
import { type MfaSettings, spendFactorCode } from "./proof.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { addressKey, attempt, secondFactorKey, THROTTLE } from "../shared/throttle.ts";
import { ACR_MULTI, AMR_PASSWORD } from "../oauth/acr.ts";
import { signInMfaPolicy } from "../organizations/membership.ts";

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
  const key = secondFactorKey(projectId, userId);
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
  const succeeded = async () => {
    await clearAttempts(sql, key);
    await uncountAttempt(sql, address);
    return withSecondFactor(login.amr);
  };
  const spent = await spendFactorCode(sql, s, {
    projectId,
    userId,
    code: login.code,
    source: userSource(userId, request),
    details: { client_id: login.clientId },
  });
  if (spent) return await succeeded();
  await failed("wrong_code");
  return null;
}

/**
 * After a right password of a user with a second factor: the login request waits for it, and no code is issued
 * until `checkSecondFactor` accepts one. `amr` is what this login presented so far (nothing for a step-up of a
 * browser session); `providerId` the upstream provider it went through (or the step-up's session did).
 */
export async function startSecondStep(
  sql: Sql,
  req: { id: string },
  userId: string,
  amr: string[] = AMR_PASSWORD,
  providerId: string | null = null,
): Promise<void> {
  await awaitSecondFactor(sql, req.id, userId, amr, providerId);
}

/** The user whose second factor the login request awaits, the methods so far and the provider, or undefined. */
export async function awaitedLogin(
  sql: Sql,
  requestId: string,
): Promise<{ user_id: string; amr: string[]; provider_id: string | null } | undefined> {
  return await pendingSecondFactor(sql, requestId);
}

/**
 * The methods of a login once a code was given (RFC 8176: those presented at this `auth_time`): after a first
 * factor, that factor, `otp` and `mfa`; for a step-up or a `max_age` re-authentication of a browser session,
 * whose first factor was presented at an earlier `auth_time`, `otp` alone.
 */
export function withSecondFactor(amr: string[]): string[] {
  const before = amr.filter((m) => m !== "mfa" && m !== "otp");
  return before.length === 0 ? ["otp"] : [...new Set([...before, "otp", "mfa"])];
}

/** What comes after a right password: nothing, the code of the user's factor, or enrolling one. */
export type SecondStep = "none" | "code" | "enrol";

/**
 * The policy of a sign-in, live: the project's `mfa`, made stricter by the organization signed in to
 * (domain/organizations/membership.ts `signInMfaPolicy`).
 */
export async function mfaPolicyOf(
  sql: Sql,
  req: { project_id: string; organization_id?: string | null },
): Promise<"off" | "optional" | "required"> {
  return await signInMfaPolicy(sql, req.project_id, req.organization_id);
}

/**
 * The project's policy (and the organization's) decides, live: `off` asks for nothing; a user with a factor gives its code; a user
 * without one enrols when the project requires factors or the OpenID request asked for the multi-factor level
 * (`acr_values=2`).
 */
export async function secondStepFor(
  sql: Sql,
  req: { project_id: string; acr: string | null; organization_id?: string | null },
  userId: string,
): Promise<SecondStep> {
  const policy = await mfaPolicyOf(sql, req);
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
