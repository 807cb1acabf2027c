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
  type ErrorCode,
  type ErrorDetail,
  FOREIGN_KEY_ERRORS,
} from "../domain/shared/errors.ts";
import type { OAuthEndpointCode, OAuthErrorCode } from "../openapi/fields.ts";
import type { Logger } from "../log.ts";
import type { AppEnv } from "./env.ts";
import { isFormEndpoint } from "./form_endpoints.ts";
import { knownFieldsBeside, MAX_LISTED_UNKNOWN, unknownFieldIssue } from "./api/unknown_fields.ts";

/** The HTTP status of each code: the one table, read by every answer of an error and the OpenAPI document. */
export const ERROR_STATUS = {
  invalid_params: 400,
  passkey_refused: 400,
  invalid_client: 400,
  client_not_active: 400,
  project_not_active: 400,
  invalid_authorization_code: 400,
  different_authorize_redirect_uri: 400,
  auth_code_already_used: 400,
  auth_code_expired: 400,
  invalid_code_verifier: 400,
  invalid_target: 400,
  unauthorized_client: 400,
  invalid_refresh_token: 400,
  refresh_token_expired: 400,
  refresh_token_already_used: 400,
  invalid_device_code: 400,
  invalid_subject_token: 400,
  invalid_scope: 400,
  authorization_pending: 400,
  slow_down: 400,
  expired_token: 400,
  access_denied: 400,
  invalid_client_credentials: 401,
  invalid_authorization_token: 401,
  insufficient_permission: 403,
  default_resource_immutable: 403,
  client_not_deletable: 403,
  reauthentication_required: 403,
  not_found: 404,
  project_not_found: 404,
  resource_not_found: 404,
  role_not_found: 404,
  user_not_found: 404,
  client_not_found: 404,
  some_permissions_not_found: 404,
  signing_key_not_found: 404,
  webhook_not_found: 404,
  webhook_delivery_not_found: 404,
  session_not_found: 404,
  consent_not_found: 404,
  identity_provider_not_found: 404,
  identity_not_found: 404,
  object_not_found: 404,
  grant_not_found: 404,
  organization_not_found: 404,
  member_not_found: 404,
  second_factor_not_found: 404,
  totp_enrolment_not_found: 404,
  resource_code_already_used: 409,
  resource_indicator_already_used: 409,
  role_code_already_used: 409,
  user_external_id_already_used: 409,
  user_email_already_used: 409,
  key_rotation_too_soon: 409,
  only_signing_key: 409,
  object_already_exists: 409,
  object_has_children: 409,
  organization_name_already_used: 409,
  organization_domain_already_used: 409,
  member_already_exists: 409,
  invitation_not_found: 404,
  scim_token_not_found: 404,
  invitation_not_pending: 409,
  role_in_use: 409,
  identity_already_linked: 409,
  last_sign_in_method: 409,
  second_factor_required: 409,
  totp_already_enrolled: 409,
  last_operator: 409,
  too_many_requests: 429,
  system_error: 500,
} as const satisfies Record<ErrorCode, ContentfulStatusCode>;

/**
 * The two answers whose status is not their code's usual one, both decided here at the edge: a body over
 * the limit (413 `invalid_params`) and a database that cannot answer now (503 `system_error`, with
 * `Retry-After`).
 */
const CONDITIONS = {
  body_too_large: { code: "invalid_params", status: 413 },
  database_unavailable: { code: "system_error", status: 503 },
} as const satisfies Record<string, { code: ErrorCode; status: ContentfulStatusCode }>;

export type EdgeCondition = keyof typeof CONDITIONS;

/** An AppError for one of the edge's own conditions: its code, and its status, are the condition's. */
export class EdgeError extends AppError {
  constructor(
    readonly condition: EdgeCondition,
    opts: { description?: string; details?: ErrorDetail[]; retryAfter?: number } = {},
  ) {
    super(CONDITIONS[condition].code, opts);
  }
}

export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode] | (typeof CONDITIONS)[EdgeCondition]["status"];

/** The HTTP status an error answers with. */
export function statusOf(err: AppError): ErrorStatus {
  return err instanceof EdgeError ? CONDITIONS[err.condition].status : ERROR_STATUS[err.code];
}

/**
 * The RFC 6749 §5.2 code of each code the token, revocation and introspection endpoints answer. An inactive
 * client or project is `invalid_client`, not `unauthorized_client`: no grant type would work for it, and a
 * client library reads `invalid_client` as "this registration cannot be used", which is the truth. Throttling
 * has no OAuth code; `temporarily_unavailable` tells a client to try again later, which is what `Retry-After`
 * says too, and never reads as wrong credentials or a grant to drop.
 */
const OAUTH_CODES: Record<OAuthEndpointCode, OAuthErrorCode> = {
  invalid_params: "invalid_request",
  invalid_client: "invalid_client",
  invalid_client_credentials: "invalid_client",
  client_not_active: "invalid_client",
  project_not_active: "invalid_client",
  invalid_authorization_code: "invalid_grant",
  different_authorize_redirect_uri: "invalid_grant",
  auth_code_already_used: "invalid_grant",
  auth_code_expired: "invalid_grant",
  invalid_code_verifier: "invalid_grant",
  invalid_target: "invalid_target",
  unauthorized_client: "unauthorized_client",
  invalid_refresh_token: "invalid_grant",
  refresh_token_expired: "invalid_grant",
  refresh_token_already_used: "invalid_grant",
  invalid_device_code: "invalid_grant",
  invalid_subject_token: "invalid_grant",
  invalid_scope: "invalid_scope",
  authorization_pending: "authorization_pending",
  slow_down: "slow_down",
  expired_token: "expired_token",
  access_denied: "access_denied",
  too_many_requests: "temporarily_unavailable",
  system_error: "server_error",
};

/** Codes about a client named in the form: answered 400 when the request sent no Authorization header. */
const NAMED_CLIENT = new Set<ErrorCode>(["invalid_client", "client_not_active", "project_not_active"]);

/**
 * How an error is answered at the token, revocation and introspection endpoints: its RFC 6749 §5.2 code and
 * status. `invalid_client` is 401 (with a `WWW-Authenticate: Basic` challenge, added by the HTTP edge) when the
 * client authenticated with HTTP Basic, which §5.2 requires, and when it must and did not, which §5.2 allows to
 * say which scheme to use; a public client that names itself in the form is answered 400, since a Basic
 * challenge would ask it for a secret it does not have.
 */
export function oauthAnswer(
  err: AppError,
  sentAuthorization: boolean,
): { error: OAuthErrorCode; status: ContentfulStatusCode } {
  const status = statusOf(err);
  const error = err.oauth ??
    (status === 503 ? "temporarily_unavailable" : OAUTH_CODES[err.code as OAuthEndpointCode] ??
      (status >= 500 ? "server_error" : "invalid_request"));
  if (error !== "invalid_client") return { error, status };
  return { error, status: !sentAuthorization && NAMED_CLIENT.has(err.code) ? 400 : 401 };
}

const REALM = 'realm="access-control"';
export const BASIC_CHALLENGE = `Basic ${REALM}, charset="UTF-8"`;

/**
 * `resourceMetadata`: the absolute URL of this service's protected resource metadata (RFC 9728 §5.1), named in
 * every Bearer challenge so that a client that met a 401 finds where tokens come from.
 */
export function errorResponse(c: Context, err: AppError, resourceMetadata?: string): Response {
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
      status,
    );
  }
  // RFC 6750 §3: a 401 names the scheme it wants; `error` only when a token was sent.
  if (err.code === "invalid_authorization_token") {
    const sent = c.req.header("authorization") !== undefined;
    // The description is ours and plain ASCII without quotes or backslashes, as the challenge's syntax needs.
    const description = err.message.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "");
    const metadata = resourceMetadata ? `, resource_metadata="${resourceMetadata}"` : "";
    c.header(
      "WWW-Authenticate",
      sent
        ? `Bearer ${REALM}, error="invalid_token", error_description="${description}"${metadata}`
        : `Bearer ${REALM}${metadata}`,
    );
  }
  return c.json({ error: err.code, error_description: err.message, ...details }, statusOf(err));
}

type Issue = { path: PropertyKey[]; message: string; code?: string; keys?: string[] };

/**
 * zod's issues as `details`, one per offending field. Each unknown key of a strict object is one of them, named by
 * its path; in a JSON body (routes/api/unknown_fields.ts) its issue says which field was probably meant. Past
 * `MAX_LISTED_UNKNOWN` unknown keys in one object, one more detail on the object counts the rest.
 */
export function zodDetails(issues: Issue[]): ErrorDetail[] {
  return issues.flatMap((i): ErrorDetail[] => {
    if (i.code !== "unrecognized_keys" || !i.keys?.length) {
      return [{ field: i.path.map(String).join(".") || "body", issue: i.message }];
    }
    const known = knownFieldsBeside(i.keys);
    const listed = i.keys.slice(0, MAX_LISTED_UNKNOWN).map((key) => ({
      field: [...i.path, key.slice(0, 100)].map(String).join("."),
      issue: known ? unknownFieldIssue(key, known) : i.message,
    }));
    const more = i.keys.length - listed.length;
    if (more === 0) return listed;
    return [...listed, {
      field: i.path.map(String).join(".") || "body",
      issue: `${more} more unknown fields`,
    }];
  });
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
    if (err.status === 413) return new EdgeError("body_too_large");
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
  return new EdgeError("database_unavailable", {
    description: "the service cannot reach its database; retry later",
    retryAfter: 1,
  });
}
