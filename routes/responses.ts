/**
 * Request bodies and responses as the OpenAPI document shows them, the error responses grouped by status; and
 * the answer whose JSON the database wrote.
 */
import type { z } from "@hono/zod-openapi";
import type { Context, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { JsonText } from "../domain/pages.ts";
import { type ErrorCode, ERRORS } from "../domain/errors.ts";
import { ErrorSchema } from "../openapi/fields.ts";

/**
 * Documents the error responses of an operation, grouped by status, listing each code and its meaning.
 * Every API operation (any call with codes) can also answer `invalid_params`: a malformed path or query
 * parameter, Content-Type or body.
 */
export function errorResponses(...codes: ErrorCode[]) {
  const byStatus = new Map<number, string[]>();
  if (codes.length > 0 && !codes.includes("invalid_params")) codes = ["invalid_params", ...codes];
  for (const code of new Set<ErrorCode>([...codes, "system_error"])) {
    const status = ERRORS[code].status;
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

export const jsonBody = <T extends z.ZodType>(schema: T, description?: string) => ({
  required: true,
  description,
  content: { "application/json": { schema } },
});

export const formBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/x-www-form-urlencoded": { schema } },
});

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/**
 * Answers with JSON the database wrote (a page of a list, domain/pages.ts): its text is the body as it is, with
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
