/** Deletes what has expired, so that unauthenticated traffic (login pages, failed logins) cannot grow tables forever. */
import type { Sql } from "../connection.ts";

/** Every instance may run it; the statements are idempotent. Returns how many rows went. */
export async function purgeExpired(sql: Sql): Promise<number> {
  const counts = await Promise.all([
    sql`delete from authorization_requests where expires_at < now() - interval '1 hour'`,
    sql`delete from authorization_codes where expires_at < now() - interval '1 day'`,
    sql`delete from device_codes where expires_at < now() - interval '1 day'`,
    sql`delete from delegated_tokens where expires_at < now() - interval '1 day'`,
    sql`delete from delegation_stops where stopped_at < now() - interval '2 days'`,
    sql`delete from revoked_access_tokens where expires_at < now()`,
    sql`delete from refresh_tokens where expires_at < now() - interval '1 day'`,
    sql`delete from sessions s where (s.expires_at < now() - interval '1 day' or s.revoked_at < now() - interval '1 day')
          and not exists (select 1 from refresh_tokens t where t.session_id = s.id and t.expires_at > now())`,
    sql`delete from login_failures where last_failed_at < now() - interval '1 day'`,
    sql`delete from login_devices where expires_at < now()`,
    sql`delete from sso_sessions where least(idle_expires_at, coalesce(ended_at, expires_at)) < now() - interval '1 day'`,
    sql`delete from console_sessions where expires_at < now()`,
    sql`delete from console_setup_tokens where expires_at < now() - interval '1 day'`,
    sql`delete from account_links where expires_at < now() - interval '1 day'`,
    sql`delete from mail_outbox where status in ('sent', 'failed') and created_at < now() - interval '30 days'`,
  ]);
  return counts.reduce((n, r) => n + r.count, 0);
}
