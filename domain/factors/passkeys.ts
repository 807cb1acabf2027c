/**
 * Passkeys: WebAuthn discoverable credentials with user verification (domain/factors/webauthn.ts checks the
 * ceremonies through @simplewebauthn/server, passkey_keys.ts the keys' strength). Registered by the signed-in user on the account page; at sign-in they replace the password
 * (`amr: ["hwk" or "swk", "mfa"]`: a device-bound or a synced key, verified by the device's PIN or biometrics)
 * or serve as the second factor. The relying party is PUBLIC_URL's host. A counter that goes back (a cloned
 * authenticator) is refused; every refusal is a `passkey.refused` event.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import {
  countPasskeys,
  deletePasskey,
  findPasskey,
  insertPasskey,
  listPasskeys,
  putLoginChallenge,
  putRegistrationChallenge,
  takeLoginChallenge,
  takeRegistrationChallenge,
  usePasskey,
} from "../../db/factors/passkeys.ts";
import { findMfaPolicy } from "../../db/projects/projects.ts";
import { uncountAttempt } from "../../db/shared/throttle.ts";
import { findUser } from "../../db/accounts/users.ts";
import { record, type Source, sourceOf, userSource } from "../audit/audit.ts";
import { requireCovered } from "../authz/coverage.ts";
import { encodeBase64Url } from "../shared/base64.ts";
import { AppError } from "../shared/errors.ts";
import { newSecret } from "../shared/ids.ts";
import { type FactorActor, type FreshProof, type MfaSettings, requireFreshProof } from "./proof.ts";
import { mailNotice } from "../accounts/notices.ts";
import type { Principal, RequestInfo } from "../shared/principal.ts";
import { addressKey, attempt, THROTTLE } from "../shared/throttle.ts";
import { verifyAssertion, verifyRegistration, WebAuthnError } from "./webauthn.ts";
import { ALGORITHM_IDS } from "./passkey_keys.ts";
import { findTotp } from "../../db/factors/mfa.ts";
import { requireSignInPolicy } from "../accounts/signin_policy.ts";

export type PasskeySettings = { rpId: string; origin: string; rpName: string; publicUrl: string };

export function passkeySettings(publicUrl: string): PasskeySettings {
  const url = new URL(publicUrl);
  return { rpId: url.hostname, origin: url.origin, rpName: url.host, publicUrl };
}

/** How long a ceremony's challenge stays good, seconds. */
const CEREMONY_TTL = 300;
const ALGORITHMS = ALGORITHM_IDS.map((alg) => ({ type: "public-key", alg }));

/** The WebAuthn user handle of a user: their id's bytes (never an email: §14.6.1). */
const userHandle = (userId: string) => encodeBase64Url(new TextEncoder().encode(userId));

async function refused(
  sql: Sql,
  e: { projectId: string; userId: string | null; source: Source; reason: string; credentialId?: string },
) {
  await record(sql, {
    projectId: e.projectId,
    type: "passkey.refused",
    source: e.source,
    target: { type: "user", id: e.userId },
    details: { reason: e.reason, ...(e.credentialId ? { credential_id: e.credentialId.slice(0, 200) } : {}) },
  });
}

/**
 * Options for `navigator.credentials.create()`: a discoverable credential, user verification required. Like
 * any new factor, it needs fresh proof (domain/factors/proof.ts): a borrowed session cannot add one.
 */
export async function registrationOptions(
  sql: Sql,
  s: PasskeySettings,
  mfa: MfaSettings,
  actor: FactorActor,
  input: FreshProof,
) {
  const user = await requireFreshProof(sql, mfa, actor, input, "to add a passkey");
  const challenge = newSecret();
  await putRegistrationChallenge(sql, actor.projectId, actor.userId, challenge, CEREMONY_TTL);
  const existing = await listPasskeys(sql, actor.projectId, actor.userId);
  return {
    challenge,
    rp: { id: s.rpId, name: s.rpName },
    user: { id: userHandle(user.id), name: user.email ?? user.display_name, displayName: user.display_name },
    pubKeyCredParams: ALGORITHMS,
    authenticatorSelection: {
      residentKey: "required",
      requireResidentKey: true,
      userVerification: "required",
    },
    attestation: "none",
    timeout: CEREMONY_TTL * 1000,
    excludeCredentials: existing.map((p) => ({ type: "public-key", id: p.id })),
  };
}

/** Stores a new passkey from the browser's answer to the registration options (`passkey.registered`). */
export async function registerPasskey(
  sql: Sql,
  s: PasskeySettings,
  actor: FactorActor,
  body: { name?: unknown; id?: unknown; clientDataJSON?: unknown; attestationObject?: unknown },
): Promise<void> {
  const challenge = await takeRegistrationChallenge(sql, actor.projectId, actor.userId);
  let verified;
  try {
    if (!challenge) throw new WebAuthnError("no_challenge");
    verified = await verifyRegistration(
      { id: body.id, clientDataJSON: body.clientDataJSON, attestationObject: body.attestationObject },
      { challenge, origin: s.origin, rpId: s.rpId },
    );
    if (await findPasskey(sql, actor.projectId, verified.credentialId)) {
      throw new WebAuthnError("already_registered");
    }
  } catch (err) {
    if (!(err instanceof WebAuthnError)) throw err;
    await refused(sql, {
      projectId: actor.projectId,
      userId: actor.userId,
      source: actor.source,
      reason: err.reason,
    });
    throw err;
  }
  const name = typeof body.name === "string" && body.name.trim() ? body.name.trim().slice(0, 50) : "Passkey";
  await transaction(sql, async (tx) => {
    if (await findPasskey(tx, actor.projectId, verified.credentialId)) {
      throw new WebAuthnError("already_registered"); // registered in between: the first check audited the rest
    }
    await insertPasskey(tx, {
      project_id: actor.projectId,
      id: verified.credentialId,
      user_id: actor.userId,
      public_key: verified.publicKey,
      sign_count: verified.signCount,
      backup_eligible: verified.backupEligible,
      backup_state: verified.backupState,
      name,
    });
    await record(tx, {
      projectId: actor.projectId,
      type: "passkey.registered",
      source: actor.source,
      target: { type: "user", id: actor.userId },
      details: { credential_id: verified.credentialId, name, backup_eligible: verified.backupEligible },
    });
    await mailNotice(tx, {
      projectId: actor.projectId,
      userId: actor.userId,
      kind: "passkey_added",
      source: actor.source,
      publicUrl: s.publicUrl,
      name,
    });
  });
}

/**
 * Removes one of the user's passkeys (`passkey.removed`), with fresh proof. The user's row is locked while the
 * project's policy is checked against what remains (two removals at once cannot both pass it): under a
 * `required` policy the user's last factor stays (409 `second_factor_required`).
 */
export async function removePasskey(
  sql: Sql,
  mfa: MfaSettings,
  actor: FactorActor,
  id: string,
  input: FreshProof,
): Promise<void> {
  await requireFreshProof(sql, mfa, actor, input, "to remove a passkey");
  await transaction(sql, async (tx) => {
    if (!(await findUser(tx, actor.projectId, actor.userId, { lock: true }))) {
      throw new AppError("user_not_found");
    }
    const passkey = await findPasskey(tx, actor.projectId, id);
    if (!passkey || passkey.user_id !== actor.userId) throw new AppError("second_factor_not_found");
    if ((await findMfaPolicy(tx, actor.projectId)) === "required") {
      const totp = await findTotp(tx, actor.projectId, actor.userId);
      if (!totp?.confirmed && (await countPasskeys(tx, actor.projectId, actor.userId)) <= 1) {
        throw new AppError("second_factor_required");
      }
    }
    if (!(await deletePasskey(tx, actor.projectId, actor.userId, id))) {
      throw new AppError("second_factor_not_found");
    }
    await record(tx, {
      projectId: actor.projectId,
      type: "passkey.removed",
      source: actor.source,
      target: { type: "user", id: actor.userId },
      details: { credential_id: id },
    });
    await mailNotice(tx, {
      projectId: actor.projectId,
      userId: actor.userId,
      kind: "passkey_removed",
      source: actor.source,
      publicUrl: mfa.publicUrl,
      name: passkey.name,
    });
  });
}

/**
 * Options for `navigator.credentials.get()` on a login page: any of the project's passkeys (discoverable), or,
 * for a second step, the awaited user's.
 */
export async function loginOptions(
  sql: Sql,
  s: PasskeySettings,
  req: { id: string; project_id: string },
  pendingUserId: string | null,
) {
  const challenge = newSecret();
  await putLoginChallenge(sql, req.id, challenge);
  const allow = pendingUserId === null ? [] : await listPasskeys(sql, req.project_id, pendingUserId);
  return {
    challenge,
    rpId: s.rpId,
    userVerification: "required",
    timeout: CEREMONY_TTL * 1000,
    allowCredentials: allow.map((p) => ({ type: "public-key", id: p.id })),
  };
}

/**
 * Checks a login page's assertion: the challenge it was given (spent once), a passkey of the project (of the
 * awaited user, for a second step), the signature, user verification, and a counter that moves forward. Answers
 * the user and the login's methods; throws `WebAuthnError` (audited) or 429 while the address must wait.
 */
export async function passkeyLogin(
  sql: Sql,
  s: PasskeySettings,
  login: {
    req: { id: string; project_id: string; client_id: string };
    body: Record<string, unknown>;
    request: RequestInfo;
    pending: { user_id: string; amr: string[] } | null;
  },
): Promise<{ userId: string; amr: string[] }> {
  const { req, body, request } = login;
  const address = `address:${addressKey(request.ip)}`;
  await attempt(sql, address, THROTTLE.address);
  const credentialId = typeof body.id === "string" ? body.id : "";
  let userId: string | null = login.pending?.user_id ?? null;
  try {
    const challenge = await takeLoginChallenge(sql, req.id);
    if (!challenge) throw new WebAuthnError("no_challenge");
    const passkey = credentialId ? await findPasskey(sql, req.project_id, credentialId) : undefined;
    if (!passkey) throw new WebAuthnError("unknown_credential");
    userId = passkey.user_id;
    if (login.pending && passkey.user_id !== login.pending.user_id) throw new WebAuthnError("another_user");
    if (body.userHandle != null && body.userHandle !== userHandle(passkey.user_id)) {
      throw new WebAuthnError("user_handle_mismatch");
    }
    const verified = await verifyAssertion(
      {
        clientDataJSON: body.clientDataJSON,
        authenticatorData: body.authenticatorData,
        signature: body.signature,
      },
      { id: passkey.id, publicKey: passkey.public_key, signCount: passkey.sign_count },
      { challenge, origin: s.origin, rpId: s.rpId },
    );
    if (
      !(await usePasskey(sql, req.project_id, passkey.id, {
        sign_count: verified.signCount,
        backup_state: verified.backupState,
      }))
    ) throw new WebAuthnError("counter_went_back");
    const user = await findUser(sql, req.project_id, passkey.user_id);
    if (!user?.is_active) throw new WebAuthnError("user_inactive");
    await uncountAttempt(sql, address);
    const method = passkey.backup_eligible ? "swk" : "hwk";
    const before = login.pending ? login.pending.amr.filter((m) => m !== "mfa") : [];
    const amr = [...new Set([...before, method, "mfa"])];
    if (!login.pending) {
      // The project's sign-in policy (a verified address), before the sign-in counts as one.
      const who = { projectId: req.project_id, clientId: req.client_id, userId: user.id, request };
      await requireSignInPolicy(sql, who, { method: "passkey", credential_id: passkey.id });
      await record(sql, {
        projectId: req.project_id,
        type: "login.succeeded",
        source: userSource(user.id, request),
        target: { type: "user", id: user.id },
        details: { client_id: req.client_id, method: "passkey", credential_id: passkey.id },
      });
    }
    return { userId: user.id, amr };
  } catch (err) {
    if (!(err instanceof WebAuthnError)) throw err;
    await refused(sql, {
      projectId: req.project_id,
      userId,
      source: userSource(userId, request),
      reason: err.reason,
      credentialId,
    });
    throw err;
  }
}

/** An admin removes one of a user's passkeys (a lost device), covering the user as for other user changes. */
export async function removeUserPasskey(
  sql: Sql,
  mfa: MfaSettings,
  caller: Principal,
  projectId: string,
  userId: string,
  id: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    if (!(await findUser(tx, projectId, userId, { lock: true }))) throw new AppError("user_not_found");
    await requireCovered(tx, caller, projectId, { userId }, "user_id", "removing this user's passkeys", {
      nameCodes: false,
    });
    if (!(await deletePasskey(tx, projectId, userId, id))) throw new AppError("second_factor_not_found");
    await record(tx, {
      projectId,
      type: "passkey.removed",
      source: sourceOf(caller),
      target: { type: "user", id: userId },
      details: { credential_id: id, by: "admin" },
    });
    await mailNotice(tx, {
      projectId,
      userId,
      kind: "passkey_removed",
      source: sourceOf(caller),
      publicUrl: mfa.publicUrl,
      byAdmin: true,
    });
  });
}
