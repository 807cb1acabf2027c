/**
 * What a sign-in verifies the password against when there is no hash to verify (an unknown address, a user
 * without a password), so that such a sign-in takes as long as one of an existing account and does not tell
 * the two apart.
 *
 * A project that holds imported hashes (docs/provisioning.md, "Password schemes") gets one of them: an imported
 * bcrypt-10 account takes about 90 ms and a Django PBKDF2 one half a second, where the service's own argon2id
 * decoy takes 20 ms, so with the argon2id decoy an unknown address would be told from an imported one by its
 * time. The guessed password fails against it (were it right, the sign-in still has no user to sign in), and it
 * is verified under the same process-wide gate as the imported accounts' (hash_gate.ts). A project without any
 * gets an argon2id hash of a random secret, made once per process.
 *
 * Residual: one decoy stands for every imported scheme, so while a project holds several (bcrypt and PBKDF2, or
 * bcrypt of several costs) accounts of the other schemes can still be told apart by their time, as can
 * imported accounts from the ones already rehashed once most have signed in. Prompt imported users to sign in
 * (or reset their password) soon after an import; the window closes as their hashes become argon2id.
 */
import type { Sql } from "../../db/connection.ts";
import { findForeignHash } from "../../db/accounts/passwords.ts";
import { newSecret } from "../shared/ids.ts";
import { hashPassword } from "./passwords.ts";

let ownDecoy: Promise<string> | undefined;

/** The hash to verify a password against for a sign-in of the project with no hash of its own. */
export async function decoyHash(sql: Sql, projectId: string): Promise<string> {
  const foreign = await findForeignHash(sql, projectId);
  if (foreign !== null) return foreign;
  ownDecoy ??= hashPassword(newSecret());
  return await ownDecoy;
}
