/** Schemas shared by every route: the error shape, documented error responses, ids, pages and limits. */
import { z } from "@hono/zod-openapi";
import { type ErrorCode, ERRORS } from "../domain/errors.ts";

export const ErrorSchema = z.object({
  error: z.string().openapi({
    description: "A stable code from the error table; switch on it.",
    example: "invalid_params",
  }),
  error_description: z.string().openapi({
    description: "A human-readable message.",
    example: "invalid or missing parameters, headers or body",
  }),
  details: z.array(
    z.object({
      field: z.string().openapi({ example: "name" }),
      issue: z.string().openapi({ example: "at most 50 characters" }),
    }),
  ).optional().openapi({ description: "For `invalid_params`: each offending field." }),
}).openapi("Error", {
  description: "Every error on every endpoint has this shape (it is also the RFC 6749 §5.2 shape).",
});

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

export const Id = z.string().min(1).max(100);

export const ProjectIdParam = z.object({
  project_id: Id.openapi({
    param: { name: "project_id", in: "path" },
    example: "0196c6a4-6f3e-7b1a-9c59-3c1f7f0b6a10",
  }),
});

export const Timestamps = {
  created_at: z.string().openapi({ format: "date-time", description: "RFC 3339, UTC" }),
  updated_at: z.string().openapi({ format: "date-time", description: "RFC 3339, UTC" }),
};

/** A string field with an exact maximum length, as the specification's limits give them. */
export const text = (max: number) => z.string().max(max, `at most ${max} characters`);

/** An optional text field on update: omitted keeps, null or "" clears. */
export const clearableText = (max: number) => text(max).nullable().optional();

export const Pagination = z.object({
  page_num: z.number().int().openapi({ example: 1 }),
  page_size: z.number().int().openapi({ example: 10 }),
  total: z.number().int().openapi({ description: "Items matching the filters, over all pages", example: 42 }),
}).openapi("Pagination");

const boolParam = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

/** A whole-number query parameter written as plain digits (no sign, exponent, hex or spaces). */
function intParam(min: number, max: number, fallback: number, description: string) {
  return z.string().regex(/^[0-9]{1,9}$/, "must be a whole number").transform(Number)
    .pipe(z.number().min(min, `at least ${min}`).max(max, `at most ${max}`))
    .optional().transform((v) => v ?? fallback)
    .openapi({
      type: "integer",
      minimum: min,
      maximum: max,
      default: fallback,
      description,
      example: fallback,
    });
}

/** Query parameters of a list: paging, sorting by one of `sortable`, search and extra filters. */
export function listQuery<F extends string>(sortable: readonly [F, ...F[]]) {
  return z.object({
    page_num: intParam(1, 999_999_999, 1, "From 1 (default 1); past the last page `data` is empty"),
    page_size: intParam(1, 100, 10, "1 to 100 (default 10)"),
    sort_by: z.enum(sortable).default("created_at" as F).openapi({
      description: "Default `created_at`; ties by id",
    }),
    sort_dir: z.enum(["asc", "desc"]).default("desc").openapi({ description: "Default `desc`" }),
    search: z.string().max(200).optional().openapi({
      description: "Case-insensitive substring; `%` and `_` match themselves",
    }),
  });
}

export const booleanFilter = (description: string) =>
  boolParam.optional().openapi({ type: "boolean", description });

export const jsonBody = <T extends z.ZodType>(schema: T, description?: string) => ({
  required: true,
  description,
  content: { "application/json": { schema } },
});

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** A name: trimmed, 1 to 50 characters. */
export const Name = z.string().trim().min(1, "must not be empty").max(50, "at most 50 characters");

/** A code on create: letters, digits, dash and underscore, 1 to 50 characters. */
export const Code = z.string().min(1, "must not be empty").max(50, "at most 50 characters")
  .regex(/^[A-Za-z0-9_-]+$/, "only letters, digits, dash and underscore")
  .openapi({ example: "orders", pattern: "^[A-Za-z0-9_-]{1,50}$" });

export const Description = clearableText(200).openapi({
  description: 'At most 200 characters. On update: omitted keeps it; null or "" clears it.',
});

export const PermissionIds = z.array(Id).max(500, "at most 500 permission ids").openapi({
  description: "Ids of permissions of this project; unknown ids answer `some_permissions_not_found`.",
});

/** A list answer: `{ data, pagination }`. */
export const listOf = <T extends z.ZodType>(item: T, name: string) =>
  z.object({ data: z.array(item), pagination: Pagination }).openapi(name);
