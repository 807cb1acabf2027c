/** The audit trail: one event per change or security fact, and the query that reads it. */
import { z } from "@hono/zod-openapi";
import { plain } from "./fields.ts";

/** Every event type, with what it records. Updates carry `changes`; security facts carry `details`. */
export const EVENT_TYPES = {
  "project.created": "A project was created, with its default resources and admin client",
  "project.updated": "A project's name, description or redirect URIs changed",
  "project.activated": "A project was activated",
  "project.deactivated": "A project was deactivated: its tokens are refused and its sessions ended",
  "resource.created": "A resource was created with its permissions",
  "resource.updated": "A resource or its permissions changed",
  "resource.deleted":
    "A resource was deleted with its permissions, which left every role and client holding them; `changes` " +
    "holds its last state",
  "role.created": "A role was created",
  "role.updated": "A role's code, name, description or permissions changed",
  "role.deleted":
    "A role was deleted; `changes` holds its last state, `details` the users moved to another role",
  "user.created":
    'A user was created: by an admin, on the sign-up page (`details.how`: `"signup"`), or by an ' +
    'import (`"import"`, POST …/users/import)',
  "users.exported_with_secrets": "The project's users were exported with their password hashes " +
    "(GET …/users/export?include_password_hashes=true), recorded before the first line is sent",
  "signup.refused": "A sign-up on the login page created nothing: `details.reason` `honeypot` (the field " +
    "humans leave empty was filled; the page answered as for a success) or `domain_not_allowed` " +
    "(`details.domain` is not among the project's `signup.domains`)",
  "user.updated": 'A user\'s profile, identity, password (`"changed"`) or role changed',
  "user.password_rehashed":
    "An imported password hash became the service's own argon2id at the user's first " +
    "successful sign-in or fresh proof (`details.from`: the imported scheme, e.g. `bcrypt`); the password is " +
    "the same",
  "user.activated": "A user was activated",
  "user.deactivated": "A user was deactivated: their sessions ended",
  "user.deleted":
    "A user was deleted: their sessions ended, their email and external id free; `changes` holds " +
    "their last state",
  "client.created": "A client was created",
  "client.updated": "A client's name, description, authentication method or permissions changed",
  "client.activated": "A client was activated",
  "client.deactivated": "A client was deactivated: its tokens are refused and its sessions ended",
  "client.secret_rotated": "A client's secret was replaced; tokens issued before are refused",
  "scim_token.created": "A SCIM token of a client was made (`details.scim_token_id`, `details.expires_at`)",
  "scim_token.revoked": "A SCIM token of a client was revoked (`details.scim_token_id`)",
  "client.recorded":
    "A client identified by the URL of its metadata document was recorded on its first use " +
    "(`details.metadata_url`, `details.name`); block it by deactivating it",
  "client_metadata.refused":
    "An authorization request of a client identified by a URL was refused (`details.metadata_url`, " +
    "`details.reason`: `not_admitted` (the project's `client_metadata_documents`), `unreachable`, " +
    "`private_address`, `too_large`, `timeout`, `bad_status`, `not_json`, `client_id_mismatch`, " +
    "`invalid_document`, `redirect_uri_not_listed`; `details.description`); nothing was recorded of the client. " +
    "At most one per URL, reason and minute",
  "client.deleted":
    "A client was deleted: its tokens are refused and its sessions ended; `changes` holds its " +
    "last state (never a secret)",
  "object.created":
    "Objects of a resource were created (`details.resource_id`; a batch: one event, target the resource, " +
    "`details.count`)",
  "object.updated":
    "An object was renamed, moved under another parent, given other properties or another organization",
  "object.deleted":
    "An object was deleted with its grants (with `cascade`, its descendants and theirs: `details` counts them)",
  "grant.created": "A role was granted on an object (`details`: subject, role, object, expiry)",
  "grant.deleted": "A grant on an object was revoked",
  "grant.expired":
    "An expired grant was purged, GRANT_RETENTION_DAYS after its expiry (it had stopped deciding at `expires_at`)",
  "organization.created": "An organization was created (with its domains)",
  "organization.updated":
    "An organization's name, description, properties, domains or second-factor policy (`mfa`) changed",
  "organization.deleted":
    "An organization was deleted with its members (their users stay), its objects left to the project; " +
    "`changes` holds its last state, `details.members_removed` and `details.objects_released` count them",
  "organization.member_added":
    "A user was added to an organization (the target) with organization roles (`details.user_id`, " +
    "`details.role_ids`)",
  "organization.member_updated":
    "A member's organization roles were replaced (`details.user_id`; `changes.role_ids`)",
  "organization.member_removed":
    "A member was removed from an organization: their roles there ended (`details.user_id`, " +
    "`details.role_ids`)",
  "organization.invitation_sent":
    "An address was invited to an organization (the target) with organization " +
    "roles and mailed a link (`details.invitation_id`, `details.email`, `details.role_ids`; " +
    "`details.replaced_invitation_id` when it replaced an open invitation to the same address)",
  "organization.invitation_resent":
    "An invitation was mailed again with a new link (`details.invitation_id`, `details.sent_count`)",
  "organization.invitation_revoked": "An invitation was revoked: its link stopped working",
  "organization.invitation_accepted":
    "An invitation was accepted on its link's page (`details.user_id`: the " +
    "user who joined; with `organization.member_added` or `organization.member_updated` `how: invitation`, " +
    "and `user.created` `how: invitation` when the page created the user)",
  "webhook.created": "A webhook subscription was created",
  "webhook.updated": "A webhook subscription changed",
  "webhook.deleted": "A webhook subscription was deleted",
  "webhook.secret_rotated": "A webhook's signing secret was replaced",
  "webhook.delivery_retried": "A delivery was put back in line to be sent again now, on request",
  "identity_provider.created": "An upstream identity provider was added (its client secret never shown)",
  "identity_provider.updated":
    'An identity provider\'s settings changed (a new client secret shows as `"changed"`)',
  "identity_provider.activated": "An identity provider was activated: its button shows on the login page",
  "identity_provider.deactivated": "An identity provider was deactivated: no one signs in with it",
  "identity_provider.deleted": "An identity provider was deleted with every identity linked through it",
  "user.identity_linked":
    "An upstream identity was linked to a user: by an admin, by email at sign-in, or to a user created at " +
    "sign-in (`details.provider_id`, `details.how`)",
  "user.identity_unlinked": "An upstream identity was unlinked from a user",
  "login.succeeded": "A user signed in on the login page, with a password or through an identity provider " +
    '(`details.provider_id`), or right after creating their account (`details.how`: `"signup"`); then asked ' +
    "for a second factor's code or to enrol one (`details.second_factor`: `code`, `enrol`)",
  "login.failed":
    "A sign-in failed (wrong password, unknown, inactive or password-less user); for an unknown account " +
    "nothing typed is kept (`details.reason` is `unknown_email`, no `email`); `email_not_verified`: the right " +
    "password, in a project that requires a verified address. Through an identity provider: " +
    "`details.provider_id` and `details.reason` (`upstream_error`, `provider_unreachable`, `state_mismatch`, " +
    "`state_replayed`, `invalid_id_token`, `issuer_mismatch`, `no_account`, `email_not_linkable`, `user_inactive`, …)",
  "login.throttled":
    "A sign-in was refused for too many failures (429), at most one per account and minute; an unknown " +
    "account's typed email is not kept",
  "mfa.enrolled": "A user added a second factor (`details.factor`: `totp`), with new recovery codes",
  "mfa.removed": "A second factor was removed, by its user or an admin (`details.factor`)",
  "mfa.failed":
    "A second-step code was wrong, spent or expired, or refused while throttled (`details.reason`: " +
    "`wrong_code`, `throttled`)",
  "recovery_code.used":
    "A recovery code was spent at sign-in, or as fresh proof for changing sign-in methods " +
    '(`details.for`: `"fresh_proof"`); `details.remaining`: how many are left',
  "user.reauthenticated": "A user without a password signed in again at their identity provider from the " +
    "account page (`prompt=login`, `max_age=0`), as fresh proof for changing sign-in methods " +
    "(`details.provider_id`)",
  "user.reauthentication_failed": "Signing in again at the identity provider from the account page failed " +
    "(`details.provider_id`, `details.reason`: `state_mismatch`, `upstream_error`, `another_identity`, " +
    "`stale_auth_time`, `invalid_id_token`, …)",
  "recovery_codes.regenerated": "A user's recovery codes were replaced with ten new ones",
  "passkey.registered": "A user registered a passkey (`details.credential_id`, `details.name`, " +
    "`details.backup_eligible`: a synced passkey)",
  "passkey.removed": "A passkey was removed, by its user or an admin (`details.credential_id`)",
  "passkey.refused":
    "A passkey registration or sign-in was refused (`details.reason`: `wrong_challenge`, `wrong_origin`, " +
    "`wrong_rp_id`, `bad_signature`, `user_not_verified`, `counter_went_back` (a cloned authenticator), " +
    "`unknown_credential`, `another_user`, …)",
  "client_auth.failed":
    "A client authentication with a wrong secret failed, or was refused while throttled, at the token, " +
    "revocation or introspection endpoint (`details.endpoint`, `details.reason`: `wrong_secret`, " +
    "`throttled`); at most one per client and minute",
  "authorization_code.replayed": "A spent authorization code was presented again; its session was revoked",
  "refresh_token.reuse_detected": "A spent refresh token was presented again; its session was revoked",
  "session.revoked":
    "A login session ended: its refresh token was revoked (RFC 7009), or an admin or the user ended it",
  "user.sessions_ended": "Every session of a user was ended (sign out everywhere)",
  "consent.granted": "A user allowed a third-party client on its consent page (`details.client_id`, " +
    "`details.resource_id` (null: the project), `details.permissions`: the codes granted)",
  "consent.denied": "A user denied a third-party client on its consent page; the login ended with " +
    "`access_denied` (`details.client_id`, `details.resource`: the indicator asked, or null)",
  "consent.revoked":
    "A user's consent to a client was revoked, by the user (Connected apps on /account) or an " +
    "admin: the client's sessions and refresh tokens for that user ended (`details.client_id`, `details.resource_id`)",
  "device.approved": "A user approved a device on the verification page (RFC 8628): its next poll gets the " +
    "user's tokens (`details.client_id`, `details.device_id`)",
  "device.denied":
    "A user denied a device on the verification page, or at the consent page of its sign-in; " +
    "its next poll answers `access_denied` (`details.client_id`, `details.device_id`)",
  "login.sso": "A user was signed in by their single sign-on session, without the login form",
  "sso_session.ended": "A single sign-on session ended by a logout, with the login sessions it created",
  "token.revoked": "An access token was revoked (RFC 7009)",
  "delegation.revoked":
    "A user removed an agent acting for them (on /account): every live token exchanged for them in whose chain " +
    "the agent acts is refused from the next request on (`details.client_id`, `details.tokens`: how many)",
  "token.exchanged":
    "A client with a delegation exchanged a subject's token for one naming it as the actor (RFC 8693): " +
    "`details.subject` (`type`, `id`), `details.actor`, `details.actors` (the chain, the latest first), " +
    "`details.permissions` granted, `details.resource` (an API's indicator, if any), `details.jti`",
  "password_reset.requested":
    "A password reset link was mailed to a user (asked on the login page, or by an admin: see the actor)",
  "password_reset.completed":
    "A user set a new password through a reset link: every session and single sign-on session of theirs ended",
  "email.verification_sent": "A link that verifies a user's email address was mailed to it",
  "email.verified": "A user followed the link mailed to their address: `email_verified` is true",
  "invitation.sent": "An invitation to choose a password was mailed to a user",
  "invitation.accepted": "An invited user chose their password (which also verified their address)",
  "mail.failed":
    "A mail could not be delivered after its last retry and was given up (`details`: kind, address, attempts, " +
    "the last error)",
  "key.rotated": "The signing key was rotated (system project)",
  "key.revoked": "A signing key was revoked (system project)",
} as const;

export type EventType = keyof typeof EVENT_TYPES;
const TYPES = Object.keys(EVENT_TYPES) as [EventType, ...EventType[]];

export const AuditEventType = z.enum(TYPES).openapi("AuditEventType", {
  description: Object.entries(EVENT_TYPES).map(([t, d]) => `\`${t}\`: ${d}`).join("; "),
});

const Change = z.union([
  z.object({ before: z.unknown(), after: z.unknown() }),
  z.literal("changed"),
]).openapi("AuditChange", {
  description: 'A field\'s value before and after, or `"changed"` for a secret, password, token or code',
});

export const AuditEvent = z.object({
  id: z.string().openapi({ description: "UUIDv7" }),
  project_id: z.string(),
  occurred_at: z.string().openapi({ format: "date-time" }),
  type: AuditEventType,
  actor: z.object({
    type: z.enum(["client", "user", "system"]),
    id: z.string().nullable().openapi({
      description: "The client or user id; null for the system, or an unknown user",
    }),
    token_jti: z.string().nullable().openapi({ description: "The access token the actor used" }),
  }),
  request: z.object({
    id: z.string().nullable(),
    ip: z.string().nullable().openapi({ description: "The caller's address, after TRUST_PROXY_HOPS" }),
    user_agent: z.string().nullable(),
  }).nullable().openapi({ description: "Null for background work" }),
  target: z.object({ type: z.string(), id: z.string().nullable() }).nullable(),
  changes: z.record(z.string(), Change).nullable().openapi({
    description: "For updates: each changed field",
  }),
  details: z.record(z.string(), z.unknown()).nullable().openapi({
    description: "For security facts: what identifies them (the email tried, the client, the reason)",
  }),
}).openapi("AuditEvent");
export type AuditEvent = z.infer<typeof AuditEvent>;

export const AuditEventPage = z.object({
  data: z.array(AuditEvent),
  next_cursor: z.string().nullable().openapi({
    description: "Pass as `cursor` for the next (older) page; null at the end",
  }),
}).openapi("AuditEventPage");
export type AuditEventPage = z.infer<typeof AuditEventPage>;

/** `role.created` exactly, `role.*` any type of that prefix. */
export const TypeFilter = z.string().max(100).refine(
  (t) => t in EVENT_TYPES || (t.endsWith(".*") && TYPES.some((k) => k.startsWith(t.slice(0, -1)))),
  "must be an event type, or a prefix of one followed by .* (e.g. role.*)",
);

const Timestamp = z.string().refine((v) => !Number.isNaN(Date.parse(v)) && /^\d{4}-\d{2}-\d{2}T/.test(v), {
  message: "must be an RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z",
});

/** Strict: a misspelt filter (`actor=`) is refused, not ignored into an unfiltered answer. */
export const AuditQuery = z.strictObject({
  type: TypeFilter.optional().openapi({ description: "An event type, or a prefix such as `role.*`" }),
  actor_id: plain(100).optional(),
  target_id: plain(200).optional(),
  since: Timestamp.optional().openapi({
    description: "Events at or after this instant",
    format: "date-time",
  }),
  until: Timestamp.optional().openapi({ description: "Events before this instant", format: "date-time" }),
  limit: z.string().regex(/^[0-9]{1,3}$/, "must be a whole number").transform(Number)
    .pipe(z.number().min(1, "at least 1").max(100, "at most 100")).optional().transform((v) => v ?? 50)
    .openapi({ type: "integer", minimum: 1, maximum: 100, default: 50 }),
  cursor: plain(500).optional().openapi({ description: "`next_cursor` of the page before" }),
}, {
  error: (issue) =>
    issue.code === "unrecognized_keys"
      ? "is not a parameter of the audit trail (type, actor_id, target_id, since, until, limit, cursor)"
      : undefined,
});
export type AuditQuery = z.infer<typeof AuditQuery>;
