/**
 * The closed list of error codes, each with its HTTP status and the message the client sees. This is the one
 * list: openapi/fields.ts publishes its keys as the `ErrorCode` enum, from which the SDK types its errors.
 */
import type { OAuthEndpointCode, OAuthErrorCode } from "../openapi/fields.ts";

export const ERRORS = {
  invalid_params: { status: 400, message: "invalid or missing parameters, headers or body" },
  invalid_client: { status: 400, message: "the client id is invalid" },
  client_not_active: { status: 400, message: "the client is inactive" },
  project_not_active: { status: 400, message: "the project is inactive" },
  invalid_authorization_code: { status: 400, message: "the authorization code is invalid" },
  different_authorize_redirect_uri: {
    status: 400,
    message: "redirect URI differs from the one in the authorize request",
  },
  auth_code_already_used: { status: 400, message: "the code was already used" },
  auth_code_expired: { status: 400, message: "the code has expired" },
  invalid_code_verifier: { status: 400, message: "the code verifier is invalid" },
  invalid_refresh_token: { status: 400, message: "the refresh token is invalid" },
  refresh_token_expired: { status: 400, message: "the refresh token has expired; the user signs in again" },
  refresh_token_already_used: { status: 400, message: "the refresh token was already used" },
  invalid_client_credentials: { status: 401, message: "client credentials are invalid" },
  invalid_authorization_token: { status: 401, message: "the bearer token is missing or invalid" },
  insufficient_permission: { status: 403, message: "the token lacks the required permission" },
  default_resource_immutable: { status: 403, message: "default resources cannot be changed" },
  not_found: { status: 404, message: "no such endpoint" },
  project_not_found: { status: 404, message: "the project does not exist" },
  resource_not_found: { status: 404, message: "the resource does not exist" },
  role_not_found: { status: 404, message: "the role does not exist" },
  user_not_found: { status: 404, message: "the user does not exist" },
  client_not_found: { status: 404, message: "the client does not exist" },
  some_permissions_not_found: { status: 404, message: "some of the given permission ids do not exist" },
  signing_key_not_found: { status: 404, message: "no signing key has this kid" },
  webhook_not_found: { status: 404, message: "the webhook does not exist" },
  webhook_delivery_not_found: { status: 404, message: "the webhook has no such delivery" },
  session_not_found: { status: 404, message: "the user has no such live session" },
  identity_provider_not_found: { status: 404, message: "the identity provider does not exist" },
  identity_not_found: { status: 404, message: "the user has no identity linked at this provider" },
  object_not_found: { status: 404, message: "the resource has no such object" },
  grant_not_found: { status: 404, message: "the grant does not exist" },
  resource_code_already_used: { status: 409, message: "a resource with this code exists in the project" },
  role_code_already_used: { status: 409, message: "a role with this code exists in the project" },
  user_external_id_already_used: {
    status: 409,
    message: "a user with this external id exists in the project",
  },
  user_email_already_used: { status: 409, message: "a user with this email exists" },
  key_rotation_too_soon: {
    status: 409,
    message: "the next signing key is too new: verifiers caching the JWKS may not know it yet",
  },
  only_signing_key: { status: 409, message: "this is the only key that can sign" },
  object_already_exists: { status: 409, message: "an object with this id exists in the resource" },
  object_has_children: {
    status: 409,
    message: "the object has children: delete them first, or delete with cascade=true",
  },
  role_in_use: { status: 409, message: "users still have this role: reassign them with reassign_role_id" },
  client_not_deletable: {
    status: 403,
    message: "the project's admin client and the console client cannot be deleted",
  },
  identity_already_linked: {
    status: 409,
    message: "this upstream identity, or an identity of this user at this provider, is already linked",
  },
  last_sign_in_method: {
    status: 409,
    message: "the user would have no way left to sign in: set a password or link another identity first",
  },
  second_factor_not_found: { status: 404, message: "the user has no such second factor" },
  totp_enrolment_not_found: {
    status: 404,
    message: "no authenticator enrolment is under way: start one with POST /api/v1/users/current/totp",
  },
  second_factor_required: {
    status: 409,
    message: "the project requires a second factor: this is the user's last one",
  },
  totp_already_enrolled: {
    status: 409,
    message: "the user already has an authenticator: remove it before enrolling another",
  },
  too_many_requests: { status: 429, message: "too many requests; retry later" },
  system_error: { status: 500, message: "unexpected error" },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;
/** Statuses the codes answer with; 413 (`invalid_params`, body too large) and 503 (`system_error`, database
 * unreachable) are the two overrides of a code's usual status. */
export type ErrorStatus = (typeof ERRORS)[ErrorCode]["status"] | 413 | 503;

export type ErrorDetail = { field: string; issue: string };

/** A refusal with a code from ERRORS; `onError` turns it into the wire shape. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: ErrorStatus;
  readonly details?: ErrorDetail[];
  /** Seconds to wait before trying again (429, 503); the HTTP edge sends it as `Retry-After`. */
  readonly retryAfter?: number;
  /** At the token, revocation and introspection endpoints: the RFC 6749 §5.2 code, when not the code's own. */
  readonly oauth?: OAuthErrorCode;

  constructor(
    code: ErrorCode,
    opts: {
      description?: string;
      details?: ErrorDetail[];
      retryAfter?: number;
      status?: 413 | 503;
      oauth?: OAuthErrorCode;
    } = {},
  ) {
    // A refusal is an expected answer, not a fault: capturing a stack trace would cost more than the answer.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(opts.description ?? ERRORS[code].message);
    Error.stackTraceLimit = limit;
    this.name = "AppError";
    this.code = code;
    this.status = opts.status ?? ERRORS[code].status;
    this.details = opts.details;
    this.retryAfter = opts.retryAfter;
    this.oauth = opts.oauth;
  }
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
  invalid_refresh_token: "invalid_grant",
  refresh_token_expired: "invalid_grant",
  refresh_token_already_used: "invalid_grant",
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
): { error: OAuthErrorCode; status: number } {
  const error = err.oauth ??
    (err.status === 503 ? "temporarily_unavailable" : OAUTH_CODES[err.code as OAuthEndpointCode] ??
      (err.status >= 500 ? "server_error" : "invalid_request"));
  if (error !== "invalid_client") return { error, status: err.status };
  return { error, status: !sentAuthorization && NAMED_CLIENT.has(err.code) ? 400 : 401 };
}

/** Database constraint name → the error a race answers (never a 500): unique violations... */
export const CONSTRAINT_ERRORS: Record<string, ErrorCode> = {
  resources__project_id_code: "resource_code_already_used",
  roles__project_id_code: "role_code_already_used",
  users__project_id_email: "user_email_already_used",
  users__project_id_external_user_id: "user_external_id_already_used",
  external_identities__pkey: "identity_already_linked",
  external_identities__provider_id_user_id: "identity_already_linked",
  objects__pkey: "object_already_exists",
};

/** ...and foreign-key violations, when a referenced row is deleted between the check and the write. */
export const FOREIGN_KEY_ERRORS: Record<string, ErrorCode> = {
  role_permissions__permission_fkey: "some_permissions_not_found",
  client_permissions__permission_fkey: "some_permissions_not_found",
  users__role_fkey: "role_not_found",
  external_identities__provider_fkey: "identity_provider_not_found",
  identity_providers__role_fkey: "role_not_found",
  object_grants__role_fkey: "role_not_found",
  object_grants__object_fkey: "object_not_found",
  objects__resource_fkey: "resource_not_found",
};
