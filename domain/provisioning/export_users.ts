/**
 * Exporting users (`GET …/users/export`): JSON lines, read a page of EXPORT_PAGE users at a time as the client
 * reads the answer, so that a project of any size never sits in memory. With their password hashes only for a
 * caller holding `users:export_secrets`, and then as an audit event recorded before the first line. The pages are
 * separate reads, not one snapshot: a user created or deleted during a long export may or may not be in it.
 */
import { retryRead, type Sql } from "../../db/connection.ts";
import { exportPage } from "../../db/provisioning/users_export.ts";
import type { ExportedUser } from "../../openapi/users.ts";
import { record, sourceOf } from "../audit/audit.ts";
import { requireCovered } from "../authz/coverage.ts";
import type { Principal } from "../shared/principal.ts";

/** Users read per statement. */
export const EXPORT_PAGE = 1000;

/**
 * Checks what the export needs (and records the export of hashes), then answers its lines a page at a time:
 * each string is the page's users, one JSON object a line, each line ending in `\n`.
 */
export async function exportUsers(
  sql: Sql,
  caller: Principal,
  projectId: string,
  opts: { includePasswordHashes: boolean },
): Promise<AsyncGenerator<string>> {
  const withHashes = opts.includePasswordHashes;
  if (withHashes) {
    await requireCovered(
      sql,
      caller,
      projectId,
      { codes: ["users:export_secrets"] },
      "include_password_hashes",
      "exporting password hashes",
    );
    await record(sql, {
      projectId,
      type: "users.exported_with_secrets",
      source: sourceOf(caller),
      target: { type: "project", id: projectId },
    });
  }
  return pages(sql, projectId, withHashes);
}

async function* pages(sql: Sql, projectId: string, withHashes: boolean): AsyncGenerator<string> {
  let after: string | null = null;
  for (;;) {
    const from: string | null = after;
    const rows: Row[] = await retryRead(() => exportPage(sql, projectId, from, EXPORT_PAGE, withHashes));
    if (rows.length > 0) yield rows.map((r) => JSON.stringify(line(r, withHashes)) + "\n").join("");
    if (rows.length < EXPORT_PAGE) return;
    after = rows[rows.length - 1].id;
  }
}

type Row = ExportedUser & { password_hash?: string | null };

/** A user as the admin API shows them, and the hash (when asked, and the user has one) last. */
function line(r: Row, withHashes: boolean): ExportedUser {
  const { password_hash, ...user } = r;
  return withHashes && password_hash ? { ...user, password_hash } : user;
}
