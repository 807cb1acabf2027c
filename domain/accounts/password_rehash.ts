/**
 * Imported password hashes become the service's own at the first successful sign-in (the login form) or proof
 * (a change of sign-in methods): the password just proved right is hashed with argon2id and stored in place of
 * the foreign hash, if that hash is still the user's, with its audit event `user.password_rehashed`
 * (`details.from`: the imported scheme) in the same transaction. The one place both paths call.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import { record, type Source } from "../audit/audit.ts";
import { findPasswordHash, replacePasswordHash } from "../../db/accounts/passwords.ts";
import { needsRehash, schemeOf } from "./password_schemes.ts";
import { hashPassword, verifyPassword } from "./passwords.ts";

/**
 * After `password` was verified against `stored`: when `stored` is not the service's own argon2id, stores the
 * password's argon2id hash instead (compare-and-set on `stored`, so a concurrent change of password wins).
 * Answers the user's hash as it now is: the new one, or `stored` when nothing was replaced (a caller that
 * compares hashes later, as a change of password does, compares with this one).
 *
 * When the compare-and-set finds the hash changed, a concurrent sign-in with the same password usually rehashed
 * it first: the hash now is the service's own of this very password, and is answered (so that a change of
 * password that proved this password is not refused as "changed meanwhile"). Any other change (a new password:
 * a reset, another change) is answered as `stored`, and the caller's later check refuses.
 */
export async function rehashIfForeign(
  sql: Sql,
  user: { projectId: string; userId: string; stored: string },
  password: string,
  source: Source,
): Promise<string> {
  if (!needsRehash(user.stored)) return user.stored;
  const next = await hashPassword(password);
  const replaced = await transaction(sql, async (tx) => {
    if (!(await replacePasswordHash(tx, user.projectId, user.userId, user.stored, next))) return false;
    await record(tx, {
      projectId: user.projectId,
      type: "user.password_rehashed",
      source,
      target: { type: "user", id: user.userId },
      details: { from: schemeOf(user.stored) },
    });
    return true;
  });
  if (replaced) return next;
  const now = await findPasswordHash(sql, user.projectId, user.userId);
  // The service's own hash (argon2id, ungated) of the same password: rehashed by a concurrent sign-in.
  return now !== null && !needsRehash(now) && await verifyPassword(now, password) ? now : user.stored;
}
