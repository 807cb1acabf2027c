/**
 * What the metrics and the readiness check read from the database, which every instance shares: the webhook
 * and mail outboxes' backlogs, the current signing key's age, the schema's version. One statement each time.
 */
import type { Sql } from "../connection.ts";

export type SharedGauges = {
  webhook_backlog: number;
  /** Seconds the most overdue pending delivery has been due; 0 when none is overdue. */
  webhook_oldest_seconds: number;
  mail_backlog: number;
  /** Seconds since the current signing key started signing; null without one. */
  key_age_seconds: number | null;
  next_key: boolean;
};

/** The gauges read at scrape time, from the partial index of due deliveries and the keys' state index. */
export async function readSharedGauges(sql: Sql): Promise<SharedGauges> {
  const [row] = await sql<SharedGauges[]>`
    select
      (select count(*)::int from webhook_deliveries where status in ('pending', 'sending')) as webhook_backlog,
      coalesce((select extract(epoch from now() - min(next_attempt_at))::float8 from webhook_deliveries
        where status in ('pending', 'sending') and next_attempt_at < now()), 0) as webhook_oldest_seconds,
      (select count(*)::int from mail_outbox where status in ('pending', 'sending')) as mail_backlog,
      (select extract(epoch from now() - coalesce(activated_at, created_at))::float8 from signing_keys
        where state = 'current') as key_age_seconds,
      exists (select 1 from signing_keys where state = 'next') as next_key`;
  return row;
}

/** The schema's version and the current signing key, for readiness. */
export async function readReadiness(sql: Sql): Promise<{ version: number; kid: string | null }> {
  const [row] = await sql<{ version: number; kid: string | null }[]>`
    select
      (select coalesce(max(version), 0)::int from schema_migrations) as version,
      (select kid from signing_keys where state = 'current') as kid`;
  return row;
}
