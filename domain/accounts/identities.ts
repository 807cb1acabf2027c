/**
 * A user's linked upstream identities in the admin API: the list, an admin's pre-link (the user then signs in
 * with that upstream account at once), and unlinking, which never takes away the user's last way to sign in.
 * Linking or unlinking changes who can sign in as the user, so the caller must cover the user's permissions.
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  deleteIdentity,
  findIdentity,
  findProvider,
  insertIdentity,
  listIdentities,
  signInMethods,
} from "../../db/federation/identity_providers.ts";
import { findUser } from "../../db/accounts/users.ts";
import type { ExternalIdentity, LinkIdentityRequest } from "../../openapi/identity_providers.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { requireCovered } from "../authz/coverage.ts";
import { AppError } from "../shared/errors.ts";
import { type Principal, requireUser } from "../shared/principal.ts";
import { normalizeEmail } from "./emails.ts";

export async function listUserIdentities(
  sql: Sql,
  projectId: string,
  userId: string,
): Promise<{ data: ExternalIdentity[] }> {
  return await retryRead(async () => {
    if (!(await findUser(sql, projectId, userId))) throw new AppError("user_not_found");
    return { data: await listIdentities(sql, projectId, userId) };
  });
}

export async function linkIdentity(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
  input: LinkIdentityRequest,
): Promise<ExternalIdentity> {
  return await transaction(sql, async (tx) => {
    if (!(await findUser(tx, projectId, userId, { lock: true }))) throw new AppError("user_not_found");
    if (!(await findProvider(tx, projectId, input.provider_id))) {
      throw new AppError("identity_provider_not_found");
    }
    await requireCovered(tx, caller, projectId, { userId }, "user_id", "linking an identity to this user", {
      nameCodes: false,
    });
    if (await findIdentity(tx, projectId, input.provider_id, userId)) {
      throw new AppError("identity_already_linked");
    }
    await insertIdentity(tx, {
      project_id: projectId,
      provider_id: input.provider_id,
      subject: input.subject,
      user_id: userId,
      email: normalizeEmail(input.email) || null,
    });
    await record(tx, {
      projectId,
      type: "user.identity_linked",
      source: sourceOf(caller),
      target: { type: "user", id: userId },
      details: { provider_id: input.provider_id, subject: input.subject, how: "admin" },
    });
    return (await findIdentity(tx, projectId, input.provider_id, userId))!;
  });
}

/** The current user's identities (a user's token). */
export async function listCurrentIdentities(
  sql: Sql,
  caller: Principal,
): Promise<{ data: ExternalIdentity[] }> {
  const user = requireUser(caller);
  return await listUserIdentities(sql, user.projectId, user.userId);
}

/** The current user unlinks one of their identities, never their last way to sign in. */
export async function unlinkCurrentIdentity(sql: Sql, caller: Principal, providerId: string): Promise<void> {
  const user = requireUser(caller);
  await unlinkIdentity(sql, caller, user.projectId, user.userId, providerId, { self: true });
}

export async function unlinkIdentity(
  sql: Sql,
  caller: Principal,
  projectId: string,
  userId: string,
  providerId: string,
  opts: { self?: boolean } = {},
): Promise<void> {
  await transaction(sql, async (tx) => {
    if (!(await findUser(tx, projectId, userId, { lock: true }))) throw new AppError("user_not_found");
    const identity = await findIdentity(tx, projectId, providerId, userId);
    if (!identity) throw new AppError("identity_not_found");
    if (!opts.self) {
      await requireCovered(tx, caller, projectId, { userId }, "user_id", "unlinking this user's identity", {
        nameCodes: false,
      });
    }
    // The user row is locked: no other unlink or password change of this user runs meanwhile.
    if ((await signInMethods(tx, projectId, userId)) <= 1) throw new AppError("last_sign_in_method");
    await deleteIdentity(tx, projectId, providerId, userId);
    await record(tx, {
      projectId,
      type: "user.identity_unlinked",
      source: sourceOf(caller),
      target: { type: "user", id: userId },
      details: { provider_id: providerId, subject: identity.subject },
    });
  });
}
