/**
 * The fields every shape is built from: the error shape, ids, names and codes with the specification's limits,
 * timestamps, pages and list queries. This folder is the contract: each shape is declared once here, as a zod
 * schema; routes validate with it and publish it, the domain and the queries take their types from it.
 */
import { z } from "@hono/zod-openapi";

/**
 * Every code an error can carry: the contract's one list. domain/shared/errors.ts gives each its message and
 * routes/errors.ts its status (the compiler holds both tables to this list); published as the `ErrorCode`
 * component, from which the SDK types its errors.
 */
export const ERROR_CODES = [
  "invalid_params",
  "invalid_client",
  "client_not_active",
  "project_not_active",
  "invalid_authorization_code",
  "different_authorize_redirect_uri",
  "auth_code_already_used",
  "auth_code_expired",
  "invalid_code_verifier",
  "invalid_target",
  "unauthorized_client",
  "invalid_refresh_token",
  "refresh_token_expired",
  "refresh_token_already_used",
  "invalid_device_code",
  "invalid_subject_token",
  "invalid_scope",
  "authorization_pending",
  "slow_down",
  "expired_token",
  "access_denied",
  "invalid_client_credentials",
  "invalid_authorization_token",
  "insufficient_permission",
  "default_resource_immutable",
  "not_found",
  "project_not_found",
  "resource_not_found",
  "role_not_found",
  "user_not_found",
  "client_not_found",
  "some_permissions_not_found",
  "signing_key_not_found",
  "webhook_not_found",
  "webhook_delivery_not_found",
  "session_not_found",
  "consent_not_found",
  "identity_provider_not_found",
  "identity_not_found",
  "object_not_found",
  "grant_not_found",
  "organization_not_found",
  "member_not_found",
  "resource_code_already_used",
  "resource_indicator_already_used",
  "role_code_already_used",
  "user_external_id_already_used",
  "user_email_already_used",
  "key_rotation_too_soon",
  "only_signing_key",
  "role_in_use",
  "object_already_exists",
  "object_has_children",
  "organization_name_already_used",
  "organization_domain_already_used",
  "member_already_exists",
  "invitation_not_found",
  "scim_token_not_found",
  "invitation_not_pending",
  "client_not_deletable",
  "identity_already_linked",
  "last_sign_in_method",
  "second_factor_not_found",
  "totp_enrolment_not_found",
  "totp_already_enrolled",
  "second_factor_required",
  "reauthentication_required",
  "passkey_refused",
  "last_operator",
  "too_many_requests",
  "system_error",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const ErrorCodeSchema = z.enum(ERROR_CODES).openapi("ErrorCode", {
  description: "A stable code from the error table; switch on it. Each operation lists the codes it answers.",
  example: "invalid_params",
});

export const ErrorSchema = z.object({
  error: ErrorCodeSchema,
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
 * The codes the token, revocation and introspection endpoints answer in `error`: RFC 6749 §5.2's (RFC 7009 §2.2.1
 * and RFC 7662 §2.3 send their errors there too), and for a failure of the service, RFC 6749 §4.1.2.1's
 * `server_error` and `temporarily_unavailable`, which OAuth clients already know.
 */
export const OAUTH_ERROR_CODES = [
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unsupported_grant_type",
  "invalid_target",
  "unauthorized_client",
  "authorization_pending",
  "slow_down",
  "expired_token",
  "access_denied",
  "invalid_scope",
  "server_error",
  "temporarily_unavailable",
] as const;
export type OAuthErrorCode = (typeof OAUTH_ERROR_CODES)[number];
export const OAuthErrorCodeSchema = z.enum(OAUTH_ERROR_CODES).openapi("OAuthErrorCode", {
  description:
    "The RFC 6749 §5.2 code, which OAuth libraries act on (`invalid_grant`: sign the user in again).",
  example: "invalid_grant",
});

/** The specification's codes those three endpoints answer, in their `error_code`. */
export const OAUTH_ENDPOINT_CODES = [
  "invalid_params",
  "invalid_client",
  "invalid_client_credentials",
  "client_not_active",
  "project_not_active",
  "invalid_authorization_code",
  "different_authorize_redirect_uri",
  "auth_code_already_used",
  "auth_code_expired",
  "invalid_code_verifier",
  "invalid_target",
  "unauthorized_client",
  "invalid_refresh_token",
  "refresh_token_expired",
  "refresh_token_already_used",
  "invalid_device_code",
  "invalid_subject_token",
  "invalid_scope",
  "authorization_pending",
  "slow_down",
  "expired_token",
  "access_denied",
  "too_many_requests",
  "system_error",
] as const satisfies readonly ErrorCode[];
export type OAuthEndpointCode = (typeof OAUTH_ENDPOINT_CODES)[number];

export const OAuthErrorSchema = z.object({
  error: OAuthErrorCodeSchema,
  error_code: z.enum(OAUTH_ENDPOINT_CODES).openapi({
    description:
      "The service's own code, finer than `error`; switch on it. Each operation lists the pairs it answers.",
    example: "refresh_token_already_used",
  }),
  error_description: z.string().openapi({
    description: "A human-readable message.",
    example: "the refresh token was already used",
  }),
  details: ErrorSchema.shape.details,
}).openapi("OAuthError", {
  description:
    "Every error of the token, revocation and introspection endpoints (RFC 6749 §5.2, with `error_code`).",
});

/**
 * No control characters: PostgreSQL refuses a NUL byte in text, and a lookup that shares a statement with
 * other requests' (db/batch.ts) must never carry one. Refused at the edge with `invalid_params`.
 */
// deno-lint-ignore no-control-regex -- finding control characters is the point
export const PLAIN = /^[^\u0000-\u001f\u007f]*$/;
export const plain = (max: number) =>
  z.string().max(max, `at most ${max} characters`).regex(PLAIN, "must not contain control characters");

export const Id = plain(100).min(1);

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
export type Pagination = z.infer<typeof Pagination>;

/** What a list operation answers (see `listOf`). */
export type PageOf<T> = { data: T[]; pagination: Pagination };

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
    search: plain(200).optional().openapi({
      description: "Case-insensitive substring; `%` and `_` match themselves",
    }),
  });
}

export const booleanFilter = (description: string) =>
  boolParam.optional().openapi({ type: "boolean", description });

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

/**
 * A condition: a CEL expression over `subject`, `resource`, `action`, `context` and `now` (docs/authzen.md §
 * Conditions), parsed and type-checked when written.
 */
export const ConditionExpression = z.string().max(1000, "at most 1000 characters")
  .refine((s) => !s.includes("\0"), "must not contain a NUL character").openapi({
    description: "A CEL expression (at most 1,000 characters) over `subject` (`type`, `id`, `properties`), " +
      "`resource` (`type`, `id`, `properties`), `action` (`name`, `properties`), `context` and `now` (a " +
      "timestamp, the database's clock), with CEL's standard functions: it must be a boolean. Parsed and " +
      "type-checked when written (400 `invalid_params` naming the position of an error); its cost is bounded " +
      "(at most 200 nodes, no `cel.bind`, `join` or `split`, a comprehension only over a value as given and " +
      "never inside another, `matches` only on a value as given with a literal pattern of bounded " +
      "backtracking: docs/authzen.md § Conditions), and it reads at most 4,096 bytes of each thing a request " +
      "sends (4,096 characters of `resource.id`). Example: " +
      "`resource.properties.ownerID == subject.id`.",
    example: "resource.properties.ownerID == subject.id",
  });

/** A list answer: `{ data, pagination }`. */
export const listOf = <T extends z.ZodType>(item: T, name: string) =>
  z.object({ data: z.array(item), pagination: Pagination }).openapi(name);

/** At most this many bytes in the JSON text of a record's `properties`. */
export const MAX_PROPERTIES_BYTES = 4096;
/** A top-level key of `properties`: an identifier, as a condition names it (`resource.properties.owner`). */
export const PROPERTY_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Any JSON value (what a parsed body holds), typed as hono's answers need it. */
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
/**
 * A JSON object, taken as it was parsed (not copied key by key as `z.record` does, which would turn a
 * `__proto__` key into the copy's prototype and drop it without a word).
 */
const JsonObject = z.custom<{ [key: string]: Json }>(
  (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  "must be a JSON object (not an array or null)",
);

/** Whether a string inside the value holds a NUL character, which PostgreSQL's jsonb refuses. */
function holdsNul(v: unknown): boolean {
  if (typeof v === "string") return v.includes("\u0000");
  if (Array.isArray(v)) return v.some(holdsNul);
  if (v !== null && typeof v === "object") {
    return Object.entries(v).some(([k, x]) => k.includes("\u0000") || holdsNul(x));
  }
  return false;
}

/**
 * Attributes of a user, a client or an object (issue 48): a JSON object whose top-level keys are identifiers,
 * at most 4 KB of JSON text; nested values may be any JSON. Checked here, at the edge; the table's check only
 * holds it to an object.
 */
export const Properties = JsonObject.superRefine((p, ctx) => {
  for (const key of Object.keys(p)) {
    if (key === "") ctx.addIssue({ code: "custom", path: [], message: "a key must not be empty" });
    else if (key === "__proto__") {
      ctx.addIssue({ code: "custom", path: [key], message: "is reserved (JavaScript's prototype)" });
    } else if (!PROPERTY_KEY.test(key)) {
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: "a key starts with a letter or _ and holds only letters, digits and _",
      });
    }
  }
  const bytes = new TextEncoder().encode(JSON.stringify(p)).length;
  if (bytes > MAX_PROPERTIES_BYTES) {
    ctx.addIssue({
      code: "custom",
      path: [],
      message: `at most ${MAX_PROPERTIES_BYTES} bytes of JSON (this is ${bytes})`,
    });
  } else if (holdsNul(p)) {
    ctx.addIssue({ code: "custom", path: [], message: "must not contain a NUL character" });
  }
}).openapi({
  type: "object",
  additionalProperties: {},
  description:
    "Attributes of the record that decisions' conditions will read (an owner, a region, a status): " +
    "a JSON object of at most 4096 bytes of JSON text, whose top-level keys match `^[A-Za-z_][A-Za-z0-9_]*$`; " +
    "nested values may be any JSON. `{}` when none.",
  example: { owner: "user-1", region: "eu" },
});
export type Properties = z.infer<typeof Properties>;

/** `properties` in a create request: omitted is `{}`. */
export const NewProperties = Properties.optional().openapi({
  description:
    "Attributes of the record that decisions' conditions will read (an owner, a region, a status): " +
    "a JSON object of at most 4096 bytes of JSON text, whose top-level keys match `^[A-Za-z_][A-Za-z0-9_]*$`; " +
    "nested values may be any JSON. Default {}.",
});
/** `properties` in an update request: omitted keeps them, an object replaces them whole. */
export const ChangedProperties = Properties.optional().openapi({
  description: "Attributes of the record that decisions' conditions will read, with the rules of the " +
    "record's `properties` (a JSON object, at most 4096 bytes, identifier keys). Omitted: unchanged; an object " +
    "replaces them whole ({} clears them). Whoever may update the record may set them.",
});
