/**
 * What every database statement tells the telemetry (the driver's `on_statement`, patches 10 and 11): its
 * duration in the histogram, a failure by class, a deadline by kind, the statement's span under the request's
 * (when tracing), and its line in the log at LOG_LEVEL=debug. Never a statement's parameters.
 */
import postgres from "postgres";
import { isConflict, isConnectionLoss } from "../db/connection.ts";
import { dbTimeouts, statementDuration, statementErrors } from "./families.ts";
import { childSpan, currentSpan, endSpan, type Span, tracing } from "./trace.ts";

const TIMEOUT_KIND: Record<string, string> = {
  QUEUE_TIMEOUT: "queue",
  STATEMENT_TIMEOUT: "statement",
  "57014": "statement",
  CONNECT_TIMEOUT: "connect",
};

const codeOf = (err: unknown) => String((err as { code?: unknown })?.code ?? "");

function errorClass(err: unknown): string {
  const code = codeOf(err);
  if (TIMEOUT_KIND[code]) return "timeout";
  if (isConflict(err)) return "conflict";
  if (isConnectionLoss(err) || code === "CONNECTION_ENDED") return "connection";
  if (err instanceof postgres.PostgresError && code.startsWith("23")) return "constraint";
  return "other";
}

const summaries = new Map<string, string>();
const VERB = /^\s*(?:\/\*.*?\*\/\s*)?(\w+)/s;
const TABLE = /\b(?:from|into|update|join|table)\s+"?([a-z_][a-z0-9_]*)"?/i;

/** The longest statement text remembered: a longer one (a SCIM filter's, say) is summarized every time. */
export const MAX_REMEMBERED_TEXT = 4096;

/**
 * A statement's name for its span: its verb and first table (`select signing_keys`, `insert audit_events`),
 * from the text with its `$n` placeholders, so never a value. Remembered per text (at most 2,000 of them, each
 * at most MAX_REMEMBERED_TEXT characters: texts a client shapes cannot pin megabytes).
 */
export function statementSummary(text: string): string {
  let s = summaries.get(text);
  if (s !== undefined) return s;
  const verb = (VERB.exec(text)?.[1] ?? "statement").toLowerCase();
  const table = verb === "begin" || verb === "commit" || verb === "rollback" || verb === "savepoint"
    ? undefined
    : TABLE.exec(text)?.[1]?.toLowerCase();
  s = table ? `${verb} ${table}` : verb;
  if (summaries.size < 2000 && text.length <= MAX_REMEMBERED_TEXT) summaries.set(text, s);
  return s;
}

/** How many texts are remembered (for tests). */
export const rememberedSummaries = (): number => summaries.size;

export type StatementHooks = {
  on_statement: (text: string, durationMs: number, error?: unknown, context?: unknown) => void;
  statement_context?: () => unknown;
};

/** The driver's hooks: metrics always, spans when tracing, and `log` (the debug log) when given. */
export function statementHooks(log?: (text: string, durationMs: number) => void): StatementHooks {
  const observe = statementDuration;
  return {
    on_statement(text, durationMs, error, context) {
      if (error !== undefined) {
        const cls = errorClass(error);
        statementErrors.child(cls).value++;
        if (cls === "timeout") dbTimeouts.child(TIMEOUT_KIND[codeOf(error)]).value++;
      }
      // A statement that never left the queue (a queue timeout) has no text and took no time on the server.
      if (text === "") return;
      observe.observe(durationMs / 1000);
      if (context) statementSpan(context as Span, text, durationMs, error);
      log?.(text, durationMs);
    },
    ...(tracing() ? { statement_context: currentSpan } : {}),
  };
}

function statementSpan(parent: Span, text: string, durationMs: number, error: unknown): void {
  const end = performance.timeOrigin + performance.now();
  const summary = statementSummary(text);
  const span = childSpan(summary, "client", parent, end - durationMs);
  span.attributes["db.system.name"] = "postgresql";
  span.attributes["db.query.summary"] = summary;
  span.attributes["db.operation.name"] = summary.split(" ")[0];
  if (error !== undefined) span.error = codeOf(error) || "error";
  endSpan(span, end);
}
