/**
 * The import's writes (domain/provisioning/import_users.ts): a chunk of users in one statement that skips those
 * whose email or external id is taken, and their `user.created` events in one more, both in the caller's
 * transaction.
 */
import type { Sql } from "../connection.ts";

/** A user to import, as stored. */
export type ImportRow = {
  id: string;
  display_name: string;
  given_name: string | null;
  family_name: string | null;
  avatar_url: string | null;
  external_user_id: string | null;
  email: string | null;
  email_verified: boolean;
  role_id: string | null;
  is_active: boolean;
  password_hash: string | null;
  /** JSON text of the properties object. */
  properties: string;
};

/**
 * Inserts the rows that take no email or external id already used in the project (`on conflict do nothing`:
 * a user made meanwhile by another request is skipped, never an error). Answers the ids inserted.
 */
export async function insertImportedUsers(
  sql: Sql,
  projectId: string,
  rows: ImportRow[],
): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const col = <K extends keyof ImportRow>(k: K) => rows.map((r) => r[k]);
  const inserted = await sql<{ id: string }[]>`
    insert into users (project_id, id, display_name, given_name, family_name, avatar_url, external_user_id, email,
                       email_verified, role_id, is_active, password_hash, properties)
    select ${projectId}, r.id, r.display_name, r.given_name, r.family_name, r.avatar_url, r.external_user_id,
           r.email, r.email_verified::boolean, r.role_id, r.is_active::boolean, r.password_hash, r.properties::jsonb
    from unnest(${col("id")}::text[], ${col("display_name")}::text[], ${col("given_name")}::text[],
                ${col("family_name")}::text[], ${col("avatar_url")}::text[], ${
    col("external_user_id")
  }::text[],
                ${col("email")}::text[], ${col("email_verified").map(String)}::text[], ${
    col("role_id")
  }::text[],
                ${col("is_active").map(String)}::text[], ${col("password_hash")}::text[], ${
    col("properties")
  }::text[])
      as r (id, display_name, given_name, family_name, avatar_url, external_user_id, email, email_verified,
            role_id, is_active, password_hash, properties)
    on conflict do nothing
    returning id`;
  return new Set(inserted.map((r) => r.id));
}

/** Which of these emails and external ids the project's users already have. */
export async function takenIdentifiers(
  sql: Sql,
  projectId: string,
  emails: string[],
  externalIds: string[],
): Promise<{ emails: Set<string>; externalIds: Set<string> }> {
  const rows = await sql<{ email: string | null; external_user_id: string | null }[]>`
    select u.email, u.external_user_id from users u
    where u.project_id = ${projectId}
      and (u.email = any(${emails}::text[]) or u.external_user_id = any(${externalIds}::text[]))`;
  return {
    emails: new Set(rows.map((r) => r.email).filter((e): e is string => e !== null)),
    externalIds: new Set(rows.map((r) => r.external_user_id).filter((e): e is string => e !== null)),
  };
}

/** Who made the events, as db/audit/audit.ts stores an actor and a request. */
export type EventSource = {
  actor_type: string;
  actor_id: string | null;
  actor_token_jti: string | null;
  request_id: string | null;
  request_ip: string | null;
  request_user_agent: string | null;
};

/**
 * One event of `type` per target user, in one statement; `fans_out` as insertEvent computes it, once (the
 * trigger then writes the webhook deliveries as for any event).
 */
export async function insertUserEvents(
  sql: Sql,
  projectId: string,
  type: string,
  source: EventSource,
  events: { id: string; user_id: string; details: string | null }[],
): Promise<void> {
  if (events.length === 0) return;
  await sql`
    insert into audit_events (project_id, id, occurred_at, type, actor_type, actor_id, actor_token_jti,
                              request_id, request_ip, request_user_agent, target_type, target_id, changes, details,
                              fans_out)
    select ${projectId}::text, e.id, clock_timestamp(), ${type}::text, ${source.actor_type}::text,
           ${source.actor_id}::text, ${source.actor_token_jti}::text, ${source.request_id}::text,
           ${source.request_ip}::text, ${source.request_user_agent}::text, 'user', e.user_id, null,
           e.details::jsonb, exists (select 1 from webhooks w where w.project_id = ${projectId} and w.is_active)
    from unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.user_id)}::text[],
                ${events.map((e) => e.details)}::text[]) as e (id, user_id, details)`;
}
