/**
 * Every error becomes one wire shape, `{ error, error_description, details? }`: refusals by code, races the
 * database decided by constraint name, an unreachable database as 503, anything else as a logged 500. The token,
 * revocation and introspection endpoints add `error_code` and put the RFC 6749 §5.2 code in `error`.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import postgres from "postgres";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import {
  AppError,
  CONSTRAINT_ERRORS,
  type ErrorDetail,
  FOREIGN_KEY_ERRORS,
  oauthAnswer,
} from "../domain/shared/errors.ts";
import type { Logger } from "../log.ts";
import type { AppEnv } from "./env.ts";
import { isFormEndpoint } from "./form_endpoints.ts";

const REALM = 'realm="access-control"';
export const BASIC_CHALLENGE = `Basic ${REALM}, charset="UTF-8"`;

export function errorResponse(c: Context, err: AppError): Response {
  if (err.retryAfter !== undefined) c.header("Retry-After", String(err.retryAfter));
  c.header("Cache-Control", "no-store");
  const details = err.details ? { details: err.details } : {};
  if (c.req.method === "POST" && isFormEndpoint(c.req.path)) {
    // The token, revocation and introspection endpoints answer the RFC 6749 §5.2 code, and ours beside it.
    const { error, status } = oauthAnswer(err, c.req.header("authorization") !== undefined);
    // RFC 6749 §5.2, RFC 7235 §3.1: a 401 names the scheme the client authenticates with.
    if (status === 401) c.header("WWW-Authenticate", BASIC_CHALLENGE);
    c.header("Pragma", "no-cache");
    return c.json(
      { error, error_code: err.code, error_description: err.message, ...details },
      status as ContentfulStatusCode,
    );
  }
  // RFC 6750 §3: a 401 names the scheme it wants; `error` only when a token was sent.
  if (err.code === "invalid_authorization_token") {
    const sent = c.req.header("authorization") !== undefined;
    c.header("WWW-Authenticate", sent ? `Bearer ${REALM}, error="invalid_token"` : `Bearer ${REALM}`);
  }
  return c.json({ error: err.code, error_description: err.message, ...details }, err.status);
}

type Issue = { path: PropertyKey[]; message: string; code?: string; keys?: string[] };

/** zod's issues as `details`, one per offending field; each unknown key of a strict object is one of them. */
export function zodDetails(issues: Issue[]): ErrorDetail[] {
  return issues.flatMap((i) =>
    i.code === "unrecognized_keys" && i.keys?.length
      ? i.keys.map((key) => ({
        field: [...i.path, key.slice(0, 100)].map(String).join("."),
        issue: i.message,
      }))
      : [{ field: i.path.map(String).join(".") || "body", issue: i.message }]
  );
}

/**
 * SQLSTATEs that mean "the database cannot answer now", not "the request was wrong": connection (08),
 * resources (53), shutdown (57P01-3), cancelled statement (57014), serialization failure and deadlock (40001,
 * 40P01; these only once db/connection.ts has run the transaction or read again its bounded number of times).
 * They answer 503 with Retry-After.
 */
const UNAVAILABLE = /^(08|53|57P0[1-3]|57014|40001|40P01)/;

const CONNECTION_ERRORS = new Set([
  "CONNECT_TIMEOUT",
  "QUEUE_TIMEOUT", // no connection became free within DATABASE_QUEUE_TIMEOUT (db/connection.ts)
  "STATEMENT_TIMEOUT", // no answer, not even to the cancel, within twice DATABASE_STATEMENT_TIMEOUT
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOENT",
  "EPIPE",
]);

export function toAppError(err: unknown, c: Context<AppEnv>, log: Logger): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof HTTPException && err.status >= 400 && err.status < 500) {
    // The framework's own refusals: malformed JSON or form bodies (400), media types (415), size (413).
    if (err.status === 413) return new AppError("invalid_params", { status: 413 });
    const field = err.status === 415 ? "Content-Type" : "body";
    // The AuthZEN API names fields by JSON pointers into the body: the whole body is "".
    if (err.status === 400 && c.req.path.startsWith("/access/")) {
      return new AppError("invalid_params", {
        description: "the body must be a JSON object",
        details: [{ field: "", issue: "must be a JSON object (an empty or malformed body is not)" }],
      });
    }
    return new AppError("invalid_params", { details: [{ field, issue: err.message }] });
  }
  if (err instanceof postgres.PostgresError) {
    // A race the database decided: a unique or foreign-key constraint, named after what it protects.
    const table = err.code === "23505" ? CONSTRAINT_ERRORS : err.code === "23503" ? FOREIGN_KEY_ERRORS : {};
    const mapped = err.constraint_name ? table[err.constraint_name] : undefined;
    if (mapped) return new AppError(mapped);
    // Class 22, data exceptions: a value the database cannot take (a NUL byte in text, say) is bad input.
    if (err.code.startsWith("22")) {
      return new AppError("invalid_params", {
        details: [{ field: "request", issue: "contains a value that cannot be stored (a NUL byte, say)" }],
      });
    }
    if (UNAVAILABLE.test(err.code)) return unavailable(err, c, log);
  } else if (CONNECTION_ERRORS.has((err as { code?: string })?.code ?? "")) {
    return unavailable(err, c, log);
  }
  log.error("unexpected error", {
    request_id: c.get("requestId"),
    error: String((err as Error)?.stack ?? err),
  });
  return new AppError("system_error");
}

function unavailable(err: unknown, c: Context<AppEnv>, log: Logger): AppError {
  log.error("database unavailable", {
    request_id: c.get("requestId"),
    method: c.req.method,
    path: c.req.path,
    error: String(err),
  });
  return new AppError("system_error", {
    status: 503,
    description: "the service cannot reach its database; retry later",
    retryAfter: 1,
  });
}
