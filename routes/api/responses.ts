/**
 * Request bodies and responses as the OpenAPI document shows them, the error responses grouped by status; and
 * the answer whose JSON the database wrote.
 */
import { z } from "@hono/zod-openapi";
import type { Context, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { JsonText } from "../../domain/authz/lists.ts";
import { AppError, type ErrorCode, ERRORS } from "../../domain/shared/errors.ts";
import {
  ErrorSchema,
  type OAuthEndpointCode,
  type OAuthErrorCode,
  OAuthErrorSchema,
} from "../../openapi/fields.ts";
import { EdgeError, ERROR_STATUS, oauthAnswer } from "../errors.ts";
import { openPlaces, unknownFieldsError } from "./unknown_fields.ts";

/**
 * Documents the error responses of an operation, grouped by status, listing each code and its meaning.
 * Every API operation (any call with codes) can also answer `invalid_params`: a malformed path or query
 * parameter, Content-Type or body.
 */
export function errorResponses(...codes: ErrorCode[]) {
  const byStatus = new Map<number, string[]>();
  if (codes.length > 0 && !codes.includes("invalid_params")) codes = ["invalid_params", ...codes];
  for (const code of new Set<ErrorCode>([...codes, "system_error"])) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), `\`${code}\`: ${ERRORS[code].message}`]);
  }
  if (codes.includes("invalid_params")) {
    byStatus.set(413, ["`invalid_params`: the request body is larger than 1 MiB"]);
  }
  byStatus.set(503, ["`system_error`: the database cannot be reached; nothing was decided, retry later"]);
  const out: Record<
    number,
    { description: string; content: { "application/json": { schema: typeof ErrorSchema } } }
  > = {};
  for (const [status, lines] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[status] = { description: lines.join("; "), content: { "application/json": { schema: ErrorSchema } } };
  }
  return out;
}

/** An answer a code gives in a particular case, beyond its usual one (see `oauthErrorResponses`). */
export type OAuthCase = { code: OAuthEndpointCode; error: OAuthErrorCode; status: number; when: string };

/**
 * Documents the error responses of the token, revocation and introspection endpoints, grouped by status: each
 * line is an `error` (RFC 6749 §5.2) with the `error_code` beside it, as `oauthAnswer` decides them, and
 * `cases` adds the particular ones.
 */
export function oauthErrorResponses(codes: OAuthEndpointCode[], cases: OAuthCase[] = []) {
  const byStatus = new Map<number, Set<string>>();
  const add = (status: number, error: string, code: string, meaning: string) => {
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(`\`${error}\` (\`${code}\`): ${meaning}`));
  };
  for (const code of new Set<OAuthEndpointCode>(["invalid_params", ...codes, "system_error"])) {
    for (const sentAuthorization of [false, true]) {
      const { error, status } = oauthAnswer(new AppError(code), sentAuthorization);
      add(status, error, code, ERRORS[code].message);
    }
  }
  add(413, "invalid_request", "invalid_params", "the request body is too large");
  const unavailable = oauthAnswer(new EdgeError("database_unavailable"), false);
  add(
    503,
    unavailable.error,
    "system_error",
    "the database cannot be reached; nothing was decided, retry later",
  );
  for (const c of cases) add(c.status, c.error, c.code, c.when);
  const out: Record<
    number,
    { description: string; content: { "application/json": { schema: typeof OAuthErrorSchema } } }
  > = {};
  for (const [status, lines] of [...byStatus].sort(([a], [b]) => a - b)) {
    const challenge = status === 401 ? " Sent with `WWW-Authenticate: Basic`." : "";
    out[status] = {
      description: [...lines].join("; ") + challenge,
      content: { "application/json": { schema: OAuthErrorSchema } },
    };
  }
  return out;
}

/** The schemas whose asynchronous parse already is `bodyParse`'s. */
const patched = new WeakSet<z.ZodType>();

/**
 * A body schema as the route's validator parses it (zod's asynchronous parse): with `unknownFieldsError`, so that
 * an unknown field's issue names the field meant; and synchronously first: only that takes zod's compiled fast path
 * for objects (a batch of 100 evaluations costs the service thread about a third less). Same schema, same result; a
 * schema with an asynchronous part falls back to the asynchronous parse.
 */
function bodyParse<T extends z.ZodType>(schema: T): T {
  if (patched.has(schema)) return schema;
  patched.add(schema);
  const target = schema as z.ZodType;
  const parseAsync = target.safeParseAsync.bind(target);
  target.safeParseAsync = (data: unknown, params?: z.core.ParseContext<z.core.$ZodIssue>) => {
    const ctx = { ...params, error: params?.error ?? unknownFieldsError };
    try {
      return Promise.resolve(target.safeParse(data, ctx));
    } catch (err) {
      if (err instanceof z.core.$ZodAsyncError) return parseAsync(data, ctx);
      throw err;
    }
  };
  return schema;
}

const body = <T extends z.ZodType>(schema: T, description?: string) => ({
  required: true,
  description,
  content: { "application/json": { schema: bodyParse(schema) } },
});

/**
 * A JSON body of the admin API: it refuses an unknown field at any level (400 `invalid_params`, its path in
 * `details`). Its schema must say so with `z.strictObject` for every object in it, and so the OpenAPI document
 * says `additionalProperties: false`; a schema with an open object or a record is a mistake found at startup.
 */
export const jsonBody = <T extends z.ZodType>(schema: T, description?: string) => {
  const open = openPlaces(schema);
  if (open.length > 0) {
    const places = open.map((p) => p === "" ? "the body" : `\`${p}\``).join(", ");
    throw new Error(`a JSON body must refuse unknown fields (z.strictObject); open: ${places}`);
  }
  return body(schema, description);
};

/**
 * A JSON body of a standard that lets its messages carry members it does not define (AuthZEN 1.0: subjects,
 * resources, actions and the context may hold extensions): unknown fields are accepted and ignored.
 */
export const extensibleJsonBody = <T extends z.ZodType>(schema: T, description?: string) =>
  body(schema, description);

export const formBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/x-www-form-urlencoded": { schema } },
});

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/**
 * Answers with JSON the database wrote (a page of a list, domain/authz/lists.ts): its text is the body as it is, with
 * the Content-Type `c.json` sets, and the route's response type, which the text has by construction.
 */
export function jsonText<T, S extends ContentfulStatusCode>(
  c: Context,
  text: JsonText<T>,
  status: S,
): Response & TypedResponse<T, S, "json"> {
  const answer: Response = c.body(text, status, { "Content-Type": "application/json" });
  return answer as Response & TypedResponse<T, S, "json">;
}
