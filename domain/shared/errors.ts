/**
 * The closed list of error codes, each with the message the client sees; the HTTP status of each is the
 * edge's (routes/errors.ts). The domain refuses with a code, never with a status.
 */
import type { ErrorCode as ContractCode, OAuthErrorCode } from "../../openapi/fields.ts";

export const ERRORS = {
  invalid_params: { message: "invalid or missing parameters, headers or body" },
  invalid_client: { message: "the client id is invalid" },
  client_not_active: { message: "the client is inactive" },
  project_not_active: { message: "the project is inactive" },
  invalid_authorization_code: { message: "the authorization code is invalid" },
  different_authorize_redirect_uri: { message: "redirect URI differs from the one in the authorize request" },
  auth_code_already_used: { message: "the code was already used" },
  auth_code_expired: { message: "the code has expired" },
  invalid_code_verifier: { message: "the code verifier is invalid" },
  invalid_target: { message: "the resource is not an API this client may ask a token for" },
  unauthorized_client: { message: "the client may not use this grant" },
  invalid_refresh_token: { message: "the refresh token is invalid" },
  refresh_token_expired: { message: "the refresh token has expired; the user signs in again" },
  refresh_token_already_used: { message: "the refresh token was already used" },
  invalid_device_code: { message: "the device code is invalid" },
  invalid_subject_token: {
    message: "the subject token is not a live access token of this project (expired, revoked or malformed)",
  },
  invalid_scope: { message: "the scope asks for more than the subject holds and the client may carry" },
  authorization_pending: { message: "the user has not yet approved the device" },
  slow_down: { message: "polling too fast: wait 5 seconds more between requests" },
  expired_token: { message: "the device code has expired; start again" },
  access_denied: { message: "the user denied the device" },
  invalid_client_credentials: { message: "client credentials are invalid" },
  invalid_authorization_token: { message: "the bearer token is missing or invalid" },
  insufficient_permission: { message: "the token lacks the required permission" },
  default_resource_immutable: { message: "default resources cannot be changed" },
  not_found: { message: "no such endpoint" },
  project_not_found: { message: "the project does not exist" },
  resource_not_found: { message: "the resource does not exist" },
  role_not_found: { message: "the role does not exist" },
  user_not_found: { message: "the user does not exist" },
  client_not_found: { message: "the client does not exist" },
  some_permissions_not_found: { message: "some of the given permission ids do not exist" },
  signing_key_not_found: { message: "no signing key has this kid" },
  webhook_not_found: { message: "the webhook does not exist" },
  webhook_delivery_not_found: { message: "the webhook has no such delivery" },
  session_not_found: { message: "the user has no such live session" },
  consent_not_found: { message: "the user has no such consent" },
  identity_provider_not_found: { message: "the identity provider does not exist" },
  identity_not_found: { message: "the user has no identity linked at this provider" },
  object_not_found: { message: "the resource has no such object" },
  grant_not_found: { message: "the grant does not exist" },
  organization_not_found: { message: "the organization does not exist" },
  member_not_found: { message: "the user is not a member of this organization" },
  resource_code_already_used: { message: "a resource with this code exists in the project" },
  resource_indicator_already_used: { message: "a resource of this service already has this indicator" },
  role_code_already_used: { message: "a role with this code exists in the project" },
  user_external_id_already_used: { message: "a user with this external id exists in the project" },
  user_email_already_used: { message: "a user with this email exists" },
  key_rotation_too_soon: {
    message: "the next signing key is too new: verifiers caching the JWKS may not know it yet",
  },
  only_signing_key: { message: "this is the only key that can sign" },
  object_already_exists: { message: "an object with this id exists in the resource" },
  object_has_children: { message: "the object has children: delete them first, or delete with cascade=true" },
  organization_name_already_used: { message: "an organization with this name exists in the project" },
  organization_domain_already_used: {
    message: "another organization of the project already has this domain",
  },
  member_already_exists: { message: "the user is already a member of this organization" },
  invitation_not_found: { message: "the invitation does not exist" },
  scim_token_not_found: { message: "the SCIM token does not exist" },
  invitation_not_pending: { message: "the invitation was accepted or revoked" },
  role_in_use: { message: "users still have this role: reassign them with reassign_role_id" },
  client_not_deletable: { message: "the project's admin client and the console client cannot be deleted" },
  identity_already_linked: {
    message: "this upstream identity, or an identity of this user at this provider, is already linked",
  },
  last_sign_in_method: {
    message: "the user would have no way left to sign in: set a password or link another identity first",
  },
  second_factor_not_found: { message: "the user has no such second factor" },
  totp_enrolment_not_found: {
    message: "no authenticator enrolment is under way: start one with POST /api/v1/users/current/totp",
  },
  second_factor_required: { message: "the project requires a second factor: this is the user's last one" },
  totp_already_enrolled: {
    message: "the user already has an authenticator: remove it before enrolling another",
  },
  reauthentication_required: {
    message:
      "changing sign-in methods needs fresh proof: the current password, a code of an existing factor, " +
      "or a fresh sign-in at the linked provider",
  },
  passkey_refused: { message: "the passkey ceremony was refused" },
  last_operator: {
    message: "this is the last active operator holding every system permission: promote another one first",
  },
  too_many_requests: { message: "too many requests; retry later" },
  system_error: { message: "unexpected error" },
} as const satisfies Record<ContractCode, { message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export type ErrorDetail = { field: string; issue: string };

/**
 * Error's prototype without Error's constructor, which captures a stack trace: a refusal is an expected
 * answer, not a fault, is frequent (a throttled or refused request), and its trace would tell nothing.
 * Capturing one added 6 to 10 µs to each throw and catch (a micro-benchmark of 1e6, thrown 1 and 10 calls
 * deep: 0.9 and 7 µs without it), and setting `Error.stackTraceLimit` to 0 around it, as this class did,
 * saved nothing (7 to 19 µs: the global's writes cost more). An AppError is still `instanceof Error` (Hono
 * hands only Errors to `onError`), prints and logs as `AppError: message`, and has no `stack`.
 */
function Refusal(this: Error, message: string) {
  Object.defineProperty(this, "message", { value: message, writable: true, configurable: true });
}
Refusal.prototype = Error.prototype;

/** A refusal with a code from ERRORS; the HTTP edge (routes/errors.ts) gives it its status and wire shape. */
export class AppError extends (Refusal as unknown as ErrorConstructor) {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  /** Seconds to wait before trying again (a throttle, an unreachable database); sent as `Retry-After`. */
  readonly retryAfter?: number;
  /** At the token, revocation and introspection endpoints: the RFC 6749 §5.2 code, when not the code's own. */
  readonly oauth?: OAuthErrorCode;

  constructor(
    code: ErrorCode,
    opts: { description?: string; details?: ErrorDetail[]; retryAfter?: number; oauth?: OAuthErrorCode } = {},
  ) {
    super(opts.description ?? ERRORS[code].message);
    this.name = "AppError";
    this.code = code;
    this.details = opts.details;
    this.retryAfter = opts.retryAfter;
    this.oauth = opts.oauth;
  }
}

/** Database constraint name → the error a race answers (never a 500): unique violations... */
export const CONSTRAINT_ERRORS: Record<string, ErrorCode> = {
  resources__project_id_code: "resource_code_already_used",
  resources__indicator: "resource_indicator_already_used",
  roles__project_id_code: "role_code_already_used",
  users__project_id_email: "user_email_already_used",
  users__project_id_external_user_id: "user_external_id_already_used",
  external_identities__pkey: "identity_already_linked",
  external_identities__provider_id_user_id: "identity_already_linked",
  objects__pkey: "object_already_exists",
  organizations__project_id_name: "organization_name_already_used",
  organization_domains__project_id_domain: "organization_domain_already_used",
  organization_members__pkey: "member_already_exists",
  organization_members__project_id_organization_id_user_id: "member_already_exists",
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
  objects__organization_fkey: "organization_not_found",
  organization_domains__organization_fkey: "organization_not_found",
  organization_members__organization_fkey: "organization_not_found",
  organization_members__user_fkey: "user_not_found",
  organization_member_roles__member_fkey: "member_not_found",
  organization_member_roles__role_fkey: "role_not_found",
};
