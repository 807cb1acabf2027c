/** Queries on webhook subscriptions and the delivery outbox; a webhook row is the API's `Webhook`. */
import type { AuditEvent } from "../../openapi/audit.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type {
  DeliveryListQuery,
  Webhook,
  WebhookDelivery,
  WebhookListQuery,
} from "../../openapi/webhooks.ts";
import { eventColumns } from "../audit/audit.ts";
import { fixed, isoText, timestampsText } from "../columns.ts";
import { retryConflict, type Sql } from "../connection.ts";
import { containsPattern, offsetOf, pageOf } from "../lists.ts";

const COLUMNS = `w.id, w.project_id, w.url, w.description, w.event_types, w.is_active, ${
  timestampsText("w")
}`;
const columns = (sql: Sql) => fixed(sql, COLUMNS);

/** How a secret is kept: whole, or sealed (see domain/keys/key_vault.ts); exactly one of the two. */
export type StoredSecret = { secret: string | null; secret_sealed: Uint8Array | null };

export type WebhookFields = Pick<Webhook, "url" | "description" | "event_types" | "is_active">;

export async function insertWebhook(
  sql: Sql,
  w: WebhookFields & StoredSecret & { project_id: string; id: string },
): Promise<void> {
  await sql`
    insert into webhooks (project_id, id, url, description, event_types, is_active, secret, secret_sealed)
    values (${w.project_id}, ${w.id}, ${w.url}, ${w.description}, ${w.event_types}, ${w.is_active}, ${w.secret},
            ${w.secret_sealed})`;
}

/** The webhook; `lock` holds it for the rest of the transaction. */
export async function findWebhook(
  sql: Sql,
  projectId: string,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<Webhook | undefined> {
  const [row] = await sql<Webhook[]>`
    select ${columns(sql)} from webhooks w where w.project_id = ${projectId} and w.id = ${id}
    ${opts.lock ? sql`for update` : sql``}`;
  return row;
}

export async function updateWebhookRow(
  sql: Sql,
  projectId: string,
  id: string,
  w: WebhookFields,
): Promise<Webhook> {
  const [row] = await sql<Webhook[]>`
    update webhooks w set url = ${w.url}, description = ${w.description}, event_types = ${w.event_types},
      is_active = ${w.is_active}, updated_at = now()
    where w.project_id = ${projectId} and w.id = ${id}
    returning ${columns(sql)}`;
  return row;
}

export async function updateWebhookSecret(
  sql: Sql,
  projectId: string,
  id: string,
  s: StoredSecret,
): Promise<void> {
  await sql`
    update webhooks set secret = ${s.secret}, secret_sealed = ${s.secret_sealed}, updated_at = now()
    where project_id = ${projectId} and id = ${id}`;
}

/** Deletes the webhook; its deliveries go with it. */
export async function deleteWebhookRow(sql: Sql, projectId: string, id: string): Promise<void> {
  await sql`delete from webhooks where project_id = ${projectId} and id = ${id}`;
}

export async function listWebhookRows(
  sql: Sql,
  projectId: string,
  q: WebhookListQuery,
): Promise<PageOf<Webhook>> {
  const where = sql`
    where w.project_id = ${projectId}
    ${
    q.search
      ? sql`and (w.url ilike ${containsPattern(q.search)} or w.description ilike ${
        containsPattern(q.search)
      })`
      : sql``
  }
    ${q.is_active === undefined ? sql`` : sql`and w.is_active = ${q.is_active}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return await pageOf(
    sql<(Webhook & { total_count: number })[]>`
      select ${columns(sql)}, count(*) over ()::int as total_count from webhooks w ${where}
      order by ${sql("w." + q.sort_by)} ${dir}, w.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from webhooks w ${where}`,
  );
}

const DELIVERY_COLUMNS = `d.id, d.webhook_id, d.event_id, a.type as event_type, d.status, d.attempts,
      case when d.status in ('pending', 'sending') then ${
  isoText("d.next_attempt_at")
} end as next_attempt_at,
      ${isoText("d.last_attempt_at")} as last_attempt_at, d.last_status, d.last_error,
      ${isoText("d.delivered_at")} as delivered_at, ${isoText("d.created_at")} as created_at`;
const deliveryColumns = (sql: Sql) => fixed(sql, DELIVERY_COLUMNS);

export async function listDeliveryRows(
  sql: Sql,
  projectId: string,
  webhookId: string,
  q: DeliveryListQuery,
): Promise<PageOf<WebhookDelivery>> {
  const where = sql`
    where d.project_id = ${projectId} and d.webhook_id = ${webhookId}
    ${q.status === undefined ? sql`` : sql`and d.status = ${q.status}`}`;
  const dir = q.sort_dir === "asc" ? sql`asc` : sql`desc`;
  return await pageOf(
    sql<(WebhookDelivery & { total_count: number })[]>`
      select ${deliveryColumns(sql)}, count(*) over ()::int as total_count
      from webhook_deliveries d join audit_events a on a.id = d.event_id ${where}
      order by d.created_at ${dir}, d.id ${dir}
      limit ${q.page_size} offset ${offsetOf(q)}`,
    q,
    () => sql<{ total: number }[]>`select count(*)::int as total from webhook_deliveries d ${where}`,
  );
}

/** Puts a delivery back in line for an attempt now, unless a worker is sending it; whether it was. */
export async function requeueDelivery(
  sql: Sql,
  projectId: string,
  webhookId: string,
  id: string,
): Promise<boolean> {
  const rows = await sql`
    update webhook_deliveries set status = 'pending', next_attempt_at = now(), locked_until = null
    where project_id = ${projectId} and webhook_id = ${webhookId} and id = ${id} and status <> 'sending'`;
  return rows.count === 1;
}

export async function findDelivery(
  sql: Sql,
  projectId: string,
  webhookId: string,
  id: string,
): Promise<WebhookDelivery | undefined> {
  const [row] = await sql<WebhookDelivery[]>`
    select ${deliveryColumns(sql)} from webhook_deliveries d join audit_events a on a.id = d.event_id
    where d.project_id = ${projectId} and d.webhook_id = ${webhookId} and d.id = ${id}`;
  return row;
}

/** A claimed delivery with what sending it takes. */
export type ClaimedDelivery = {
  id: string;
  attempts: number;
  url: string;
  secret: string | null;
  secret_sealed: Uint8Array | null;
  webhook_id: string;
  webhook_active: boolean;
  event: AuditEvent;
};

/**
 * Claims up to `limit` due deliveries for `leaseSeconds` (those of a crashed worker come back once their lease
 * has run out): one statement with FOR UPDATE SKIP LOCKED, so that workers of every instance never take the
 * same delivery. Each claim counts as an attempt.
 */
export async function claimDeliveries(
  sql: Sql,
  limit: number,
  leaseSeconds: number,
): Promise<ClaimedDelivery[]> {
  // One autocommit statement: a deadlock rolls it back whole, so running it again claims nothing twice.
  return await retryConflict(sql, () =>
    sql<ClaimedDelivery[]>`
    with due as (
      select id from webhook_deliveries
      where (status = 'pending' or (status = 'sending' and locked_until < now())) and next_attempt_at <= now()
      order by next_attempt_at
      limit ${limit}
      for update skip locked
    ), claimed as (
      update webhook_deliveries d
      set status = 'sending', attempts = d.attempts + 1, locked_until = now() + make_interval(secs => ${leaseSeconds}),
          last_attempt_at = now()
      from due where d.id = due.id
      returning d.id, d.attempts, d.webhook_id, d.event_id
    )
    select c.id, c.attempts, c.webhook_id, w.is_active as webhook_active, w.url, w.secret, w.secret_sealed,
           row_to_json(ev) as event
    from claimed c
    join webhooks w on w.id = c.webhook_id
    cross join lateral (select ${eventColumns(sql)} from audit_events a where a.id = c.event_id) ev`);
}

/**
 * Which claim an outcome belongs to: the delivery and its attempt number (each claim counts one more). An
 * outcome recorded after the lease ran out and another worker claimed the delivery again changes nothing.
 */
export type Claim = { id: string; attempts: number };

export async function markDelivered(sql: Sql, claim: Claim, status: number): Promise<void> {
  await retryConflict(sql, () =>
    sql`
    update webhook_deliveries set status = 'delivered', delivered_at = now(), last_status = ${status},
      last_error = null, locked_until = null
    where id = ${claim.id} and status = 'sending' and attempts = ${claim.attempts}`);
}

/** A failed attempt: another in `retryInSeconds`, or (null) the delivery has failed for good. */
export async function markAttemptFailed(
  sql: Sql,
  claim: Claim,
  outcome: { status: number | null; error: string; retryInSeconds: number | null },
): Promise<void> {
  await retryConflict(sql, () =>
    sql`
    update webhook_deliveries set
      status = ${outcome.retryInSeconds === null ? "failed" : "pending"},
      next_attempt_at = case when ${outcome.retryInSeconds}::float8 is null then next_attempt_at
                             else now() + make_interval(secs => ${outcome.retryInSeconds}::float8) end,
      last_status = ${outcome.status}, last_error = ${outcome.error.slice(0, 500)}, locked_until = null
    where id = ${claim.id} and status = 'sending' and attempts = ${claim.attempts}`);
}
