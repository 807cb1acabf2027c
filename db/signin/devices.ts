/** Browsers known to an account (table login_devices): each signed in to it before, from the same cookie. */
import type { Sql } from "../connection.ts";

export type DeviceKey = { tokenHash: Uint8Array; projectId: string; email: string };

/** Whether this browser signed in to the account and its cookie has not expired. */
export async function isKnownDevice(sql: Sql, d: DeviceKey): Promise<boolean> {
  const rows = await sql`
    select 1 from login_devices
    where token_hash = ${d.tokenHash} and project_id = ${d.projectId} and email = ${d.email} and expires_at > now()`;
  return rows.length === 1;
}

/** Records (or renews) that this browser signed in to the account, for `ttl` seconds from now. */
export async function rememberDevice(sql: Sql, d: DeviceKey, ttl: number): Promise<void> {
  await sql`
    insert into login_devices (token_hash, project_id, email, expires_at)
    values (${d.tokenHash}, ${d.projectId}, ${d.email}, now() + make_interval(secs => ${ttl}))
    on conflict (token_hash, project_id, email) do update set expires_at = excluded.expires_at`;
}
