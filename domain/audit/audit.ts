/**
 * The audit trail: every change records one event in the transaction that makes it, and every security fact
 * (a failed login, a replayed code) one of its own. Secrets, password hashes, tokens and codes never appear:
 * their fields read `"changed"`. The same event is what webhooks deliver.
 */
import { auditEvents } from "../../telemetry/families.ts";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { hasRecentEvent, insertEvent, listEventRows, type Position } from "../../db/audit/audit.ts";
import { sendWithCommit, type Sql } from "../../db/connection.ts";
import type { AuditEvent, AuditEventPage, AuditQuery, EventType } from "../../openapi/audit.ts";
import { AppError } from "../shared/errors.ts";
import { newId } from "../shared/ids.ts";
import type { Principal, RequestInfo } from "../shared/principal.ts";

/** Who did it, and from where. */
export type Source = { actor: AuditEvent["actor"]; request: RequestInfo | null };

/** Background work: no caller. */
export const SYSTEM: Source = { actor: { type: "system", id: null, token_jti: null }, request: null };

/** A client acting with its own credentials, without an access token (the token endpoint, revocation). */
export function clientSource(clientId: string, request: RequestInfo | null): Source {
  return { actor: { type: "client", id: clientId, token_jti: null }, request };
}

/** A user at the login form, before any token; `userId` is null when no account matched. */
export function userSource(userId: string | null, request: RequestInfo | null): Source {
  return { actor: { type: "user", id: userId, token_jti: null }, request };
}

/** The caller of an admin operation: a user (through their token) or a client. */
export function sourceOf(p: Principal): Source {
  return {
    actor: p.userId !== undefined
      ? { type: "user", id: p.userId, token_jti: p.jti }
      : { type: "client", id: p.clientId, token_jti: p.jti },
    request: p.request ?? null,
  };
}

export type Changes = NonNullable<AuditEvent["changes"]>;

/**
 * Records an event, in the caller's transaction when `sql` is one. In a transaction the insert is sent with
 * the statements after it (COMMIT included) rather than waited for, so the event costs no round trip of its
 * own; if it fails, the whole transaction fails and nothing of it is written.
 */
export async function record(
  sql: Sql,
  e: {
    projectId: string;
    type: EventType;
    source: Source;
    target?: { type: string; id: string | null };
    changes?: Changes;
    details?: Record<string, unknown>;
  },
): Promise<void> {
  auditEvents.child(e.type).value++;
  await sendWithCommit(sql, () =>
    insertEvent(sql, {
      id: newId(),
      project_id: e.projectId,
      type: e.type,
      actor: e.source.actor,
      request: e.source.request,
      target: e.target ?? null,
      changes: e.changes ?? null,
      details: e.details ?? null,
    }));
}

/** Whether an event of this type with these details was recorded in the project in the last `seconds`. */
export async function recentEvent(
  sql: Sql,
  projectId: string,
  type: EventType,
  details: Record<string, string>,
  seconds: number,
): Promise<boolean> {
  return await hasRecentEvent(sql, projectId, type, details, seconds);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const IGNORED = new Set(["created_at", "updated_at"]);

/**
 * The fields that differ between two records of the API's shape, with their values before and after; `secrets`
 * names fields that changed but whose values must not be shown (a new password, a rotated secret).
 */
export function diff(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  secrets: string[] = [],
): Changes {
  const changes: Changes = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (IGNORED.has(key) || same(before[key], after[key])) continue;
    changes[key] = { before: before[key] ?? null, after: after[key] ?? null };
  }
  for (const key of secrets) changes[key] = "changed";
  return changes;
}

/** `<noun>.activated` / `.deactivated` when `is_active` flipped, else `<noun>.updated`. */
export function updateType<N extends "project" | "user" | "client">(
  noun: N,
  before: { is_active: boolean },
  after: { is_active: boolean },
): `${N}.updated` | `${N}.activated` | `${N}.deactivated` {
  if (before.is_active === after.is_active) return `${noun}.updated`;
  return after.is_active ? `${noun}.activated` : `${noun}.deactivated`;
}

/** A cursor names where a page ended and the query it belongs to, so it cannot be replayed on another. */
function queryHash(projectId: string, q: AuditQuery): string {
  const { type, actor_id, target_id, since, until } = q;
  return createHash("sha256").update(JSON.stringify([projectId, type, actor_id, target_id, since, until]))
    .digest("base64url").slice(0, 16);
}

function encodeCursor(projectId: string, q: AuditQuery, p: Position): string {
  return Buffer.from(JSON.stringify({ ...p, q: queryHash(projectId, q) })).toString("base64url");
}

function decodeCursor(projectId: string, q: AuditQuery): Position | null {
  if (q.cursor === undefined) return null;
  const bad = (issue: string) => new AppError("invalid_params", { details: [{ field: "cursor", issue }] });
  let parsed: { at?: unknown; id?: unknown; q?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(q.cursor, "base64url").toString("utf8"));
  } catch {
    throw bad("is not a cursor of this API");
  }
  if (typeof parsed.at !== "string" || typeof parsed.id !== "string" || Number.isNaN(Date.parse(parsed.at))) {
    throw bad("is not a cursor of this API");
  }
  if (parsed.q !== queryHash(projectId, q)) throw bad("belongs to another project or other filters");
  return { at: parsed.at, id: parsed.id };
}

/** A page of events, newest first; `next_cursor` continues with older ones, stable while new events arrive. */
export async function listEvents(sql: Sql, projectId: string, q: AuditQuery): Promise<AuditEventPage> {
  const rows = await listEventRows(sql, projectId, q, decodeCursor(projectId, q), q.limit + 1);
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return {
    data: page.map(({ position: _, ...event }) => event),
    next_cursor: rows.length > q.limit && last ? encodeCursor(projectId, q, last.position) : null,
  };
}

/** Every matching event, newest first, read a bounded batch at a time (an export for a SIEM). */
export async function* exportEvents(sql: Sql, projectId: string, q: AuditQuery): AsyncGenerator<AuditEvent> {
  let after = decodeCursor(projectId, q);
  for (;;) {
    const rows = await listEventRows(sql, projectId, q, after, 500);
    for (const { position: _, ...event } of rows) yield event;
    if (rows.length < 500) return;
    after = rows.at(-1)!.position;
  }
}
