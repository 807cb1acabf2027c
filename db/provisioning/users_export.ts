/** The export's read (domain/provisioning/export_users.ts): the project's users a page at a time, by id. */
import type { ExportedUser } from "../../openapi/users.ts";
import { fixed, isoText } from "../columns.ts";
import type { Sql } from "../connection.ts";

const COLUMNS =
  `u.id, u.project_id, u.display_name, u.given_name, u.family_name, u.avatar_url, u.external_user_id,
  u.email, u.email_verified, u.pending_email, u.role_id, u.is_active, u.properties, u.password_scheme,
  ${isoText("u.created_at")} as created_at, ${isoText("u.updated_at")} as updated_at`;

/**
 * The page of the project's users after `after` (by id: ids are UUIDv7, so this is also the order they were
 * made in), with their password hashes when `withHashes`. Keyset paging on (project_id, id), the table's unique
 * index: each page costs the same however far the export has gone.
 */
export async function exportPage(
  sql: Sql,
  projectId: string,
  after: string | null,
  limit: number,
  withHashes: boolean,
): Promise<(ExportedUser & { password_hash?: string | null })[]> {
  return await sql<(ExportedUser & { password_hash?: string | null })[]>`
    select ${fixed(sql, COLUMNS)} ${withHashes ? sql`, u.password_hash` : sql``}
    from users u
    where u.project_id = ${projectId} ${after === null ? sql`` : sql`and u.id > ${after}`}
    order by u.id
    limit ${limit}`;
}
