/** Queries on the audit trail; an event row is the API's `AuditEvent`. */
import type { AuditEvent, AuditQuery } from "../../openapi/audit.ts";
import { fixed, isoText } from "../columns.ts";
import type { Sql } from "../connection.ts";

export type NewEvent = {
  id: string;
  project_id: string;
  type: string;
  actor: AuditEvent["actor"];
  request: AuditEvent["request"];
  target: AuditEvent["target"];
  changes: AuditEvent["changes"];
  details: AuditEvent["details"];
};

/**
 * Writes the event, in the caller's transaction. When the project has an active webhook, the trigger
 * `audit_events__fan_out` (migrations 0009 and 0010) adds, in the same statement, a pending delivery for every
 * active webhook of the project that subscribes to its type (the outbox). `fans_out` says whether it has one,
 * so that the trigger's function runs only then.
 */
export async function insertEvent(sql: Sql, e: NewEvent): Promise<void> {
  await sql.unsafe(INSERT_EVENT, [
    e.project_id,
    e.id,
    e.type,
    e.actor.type,
    e.actor.id,
    e.actor.token_jti,
    e.request?.id ?? null,
    e.request?.ip ?? null,
    e.request?.user_agent ?? null,
    e.target?.type ?? null,
    e.target?.id ?? null,
    // Objects: the driver serializes them as the parameters' described type (jsonb) asks.
    e.changes as never,
    e.details as never,
  ], { prepare: true });
}

/**
 * The insert as text written once, its values parameters, rather than a tagged template with 15 values and
 * two `sql.json` pieces that postgres.js builds again for every event.
 */
const INSERT_EVENT = `
  insert into audit_events (project_id, id, occurred_at, type, actor_type, actor_id, actor_token_jti,
                            request_id, request_ip, request_user_agent, target_type, target_id, changes, details,
                            fans_out)
  values ($1, $2, clock_timestamp(), $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13::jsonb,
          exists (select 1 from webhooks w where w.project_id = $1 and w.is_active))`;

/** An event row in the API's shape (and `position`, the exact instant and id that cursors resume from). */
const EVENT_COLUMNS = `a.id, a.project_id, ${isoText("a.occurred_at")} as occurred_at, a.type,
      json_build_object('type', a.actor_type, 'id', a.actor_id, 'token_jti', a.actor_token_jti) as actor,
      case when a.request_id is null and a.request_ip is null and a.request_user_agent is null then null
           else json_build_object('id', a.request_id, 'ip', a.request_ip, 'user_agent', a.request_user_agent) end
        as request,
      case when a.target_type is null then null else json_build_object('type', a.target_type, 'id', a.target_id) end
        as target,
      a.changes, a.details`;
export const eventColumns = (sql: Sql) => fixed(sql, EVENT_COLUMNS);

export type Position = { at: string; id: string };

/**
 * A page of the project's events matching the filters, newest first, strictly older than `after` when given.
 * Each row carries its `position` (the instant to the microsecond, and the id) for the next cursor.
 */
export async function listEventRows(
  sql: Sql,
  projectId: string,
  q: Omit<AuditQuery, "cursor" | "limit">,
  after: Position | null,
  limit: number,
): Promise<(AuditEvent & { position: Position })[]> {
  const prefix = q.type?.endsWith(".*") ? q.type.slice(0, -1) : null;
  // The position's instant goes as text: postgres.js sends a timestamptz parameter through a JS Date, which
  // keeps milliseconds only, and the next page would skip the rest of a millisecond (a bulk write's events).
  return await sql<(AuditEvent & { position: Position })[]>`
    select ${eventColumns(sql)},
           json_build_object('at', to_char(a.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                             'id', a.id) as position
    from audit_events a
    where a.project_id = ${projectId}
      ${
    q.type === undefined
      ? sql``
      : prefix !== null
      ? sql`and starts_with(a.type, ${prefix})`
      : sql`and a.type = ${q.type}`
  }
      ${q.actor_id === undefined ? sql`` : sql`and a.actor_id = ${q.actor_id}`}
      ${q.target_id === undefined ? sql`` : sql`and a.target_id = ${q.target_id}`}
      ${q.since === undefined ? sql`` : sql`and a.occurred_at >= ${q.since}::timestamptz`}
      ${q.until === undefined ? sql`` : sql`and a.occurred_at < ${q.until}::timestamptz`}
      ${
    after === null ? sql`` : sql`and (a.occurred_at, a.id) < (${after.at}::text::timestamptz, ${after.id})`
  }
    order by a.occurred_at desc, a.id desc
    limit ${limit}`;
}

export async function hasRecentEvent(
  sql: Sql,
  projectId: string,
  type: string,
  details: Record<string, string>,
  seconds: number,
): Promise<boolean> {
  const rows = await sql`
    select 1 from audit_events
    where project_id = ${projectId} and occurred_at > now() - make_interval(secs => ${seconds})
      and type = ${type} and details @> ${sql.json(details)}
    limit 1`;
  return rows.length === 1;
}

/** Deletes events older than the retention; their deliveries go with them. Returns how many went. */
export async function purgeEvents(sql: Sql, retentionDays: number): Promise<number> {
  const rows = await sql`
    delete from audit_events where occurred_at < now() - make_interval(days => ${retentionDays})`;
  return rows.count;
}
