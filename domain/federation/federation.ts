/**
 * Signing in through an upstream OpenID Connect provider (OpenID Connect Core 1.0 §3.1, the code flow): the
 * login page's button sends the browser to the provider with `state`, `nonce` and PKCE S256 (RFC 7636), all
 * three kept server-side with the login page's request (so bound to the browser's cookie) and spent once. The
 * callback trades the code at the provider's token endpoint and validates its ID token with jose (signature by
 * the provider's JWKS, `iss`, `aud`, `exp`, `nonce`, `azp`; §3.1.3.7). The user is then the one linked to
 * (provider, `sub`), or the one with the same email when both sides hold it verified and the provider allows
 * linking, or a new user (just-in-time). The project's sign-in policy then applies as after a password (a user
 * whose address is not verified is stopped, see domain/accounts/signin_policy.ts); from there the login ends
 * exactly as a password login does (domain/signin/sso.ts `completeLogin`). Every failure is an audit event and a
 * message on the login page.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import {
  consumeFederationState,
  findDomainProvider,
  findLinkedUser,
  findProvider,
  findUserByEmail,
  insertFederationState,
  insertIdentity,
  listActiveProviders,
  listOrganizationProviders,
  organizationProvidersExist,
  providerProject,
  type ProviderRow,
  replaceCsrf,
  touchIdentity,
} from "../../db/federation/identity_providers.ts";
import { findClientWithProject } from "../../db/oauth/clients.ts";
import {
  type AuthorizationRequestRow,
  findAuthorizationRequest,
  setRequestOrganization,
} from "../../db/oauth/sessions.ts";
import { joinThroughProvider, organizationHoldsAddress } from "../organizations/membership.ts";
import { isPublicMailDomain } from "../organizations/public_domains.ts";
import { insertUser } from "../../db/accounts/users.ts";
import { record, userSource } from "../audit/audit.ts";
import { encodeBase64Url } from "../shared/base64.ts";
import { newId, newSecret } from "../shared/ids.ts";
import { type Metadata, metadataFor, type ProviderSettings, redirectUriOf } from "./identity_providers.ts";
import { AuthorizePageError, LOGIN_REQUEST_TTL, loginRequestFor } from "../signin/login.ts";
import { OutboundError } from "../outbound/outbound.ts";
import { redeem, Refused, type Upstream } from "./federation_tokens.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { hashSecret, secretMatches } from "../shared/secrets.ts";
import { addressKey, attempt, THROTTLE } from "../shared/throttle.ts";
import { EmailNotVerified, requireSignInPolicy } from "../accounts/signin_policy.ts";

export type LoginRequest = AuthorizationRequestRow & { project_name: string };

/**
 * A failed upstream sign-in: the message for the user and, when the login page's request is still usable, that
 * request (the page is shown again with the message); otherwise an error page.
 */
export class FederationFailure extends Error {
  constructor(message: string, readonly request: LoginRequest | null) {
    super(message);
  }
}

/**
 * The active providers of a project, for the login page's buttons: the project's, and on a sign-in to an
 * organization that organization's own (another organization's never).
 */
export function loginButtons(sql: Sql, projectId: string, organizationId: string | null = null) {
  return listActiveProviders(sql, projectId, organizationId);
}

/** Whether the login page offers "Use my company's sign-in" (an organization of the project has a provider). */
export function companySignInOffered(sql: Sql, projectId: string): Promise<boolean> {
  return organizationProvidersExist(sql, projectId);
}

/**
 * The provider a sign-in to an organization goes straight to: its one active provider (null when it has none,
 * or several: the login page then shows theirs).
 */
export async function organizationProviderOf(
  sql: Sql,
  projectId: string,
  organizationId: string,
): Promise<string | null> {
  const providers = await listOrganizationProviders(sql, projectId, organizationId);
  return providers.length === 1 ? providers[0].id : null;
}

/**
 * Home realm discovery: the provider of the organization that holds the address's domain, for a login that
 * starts with an address (never a public mail domain's). Null when none, or when the login asks for another
 * organization.
 */
export async function providerForAddress(
  sql: Sql,
  req: { project_id: string; organization_id: string | null },
  email: string,
): Promise<string | null> {
  const at = email.lastIndexOf("@");
  const domain = at < 0 ? "" : email.slice(at + 1).trim().toLowerCase();
  if (domain === "" || isPublicMailDomain(domain)) return null;
  const found = await findDomainProvider(sql, req.project_id, domain);
  if (!found) return null;
  if (req.organization_id !== null && req.organization_id !== found.organization_id) return null;
  return found.id;
}

/** A fresh CSRF token for a login page shown again (its hash replaces the old one). */
export async function newCsrf(sql: Sql, requestId: string): Promise<string> {
  const csrf = newSecret();
  await replaceCsrf(sql, requestId, hashSecret(csrf));
  return csrf;
}

const challengeOf = async (verifier: string) =>
  encodeBase64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));

/**
 * The provider's authorization URL of an upstream round trip (a login, or a re-authentication with `extra`
 * `prompt` and `max_age`): the code flow with `state`, `nonce` and PKCE S256.
 */
export async function authorizationUrl(
  s: ProviderSettings,
  provider: ProviderRow,
  metadata: Metadata,
  trip: { state: string; nonce: string; verifier: string },
  extra: Record<string, string> = {},
): Promise<string> {
  const url = new URL(metadata.authorization_endpoint);
  const params = {
    response_type: "code",
    client_id: provider.client_id,
    redirect_uri: redirectUriOf(s.publicUrl, provider.id),
    scope: provider.scopes.join(" "),
    state: trip.state,
    nonce: trip.nonce,
    code_challenge: await challengeOf(trip.verifier),
    code_challenge_method: "S256",
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

/**
 * The button: checks the login page's request (its CSRF token and the browser's cookie), stores state, nonce
 * and verifier, and returns the provider's authorization URL.
 */
export async function startFederation(
  sql: Sql,
  s: ProviderSettings,
  providerId: string,
  form: { request_id?: string; csrf?: string },
  browser: string | undefined,
  request: RequestInfo,
  /** The address the user typed, passed on to the provider (`login_hint`). */
  loginHint?: string,
): Promise<string> {
  const req = await loginRequestFor(sql, form, browser, s.publicUrl);
  // Each click stores a state: counted with the login pages an address opens (429 beyond).
  await attempt(sql, `authorize:${addressKey(request.ip)}`, THROTTLE.loginPage);
  const provider = await findProvider(sql, req.project_id, providerId);
  // An organization's own provider signs in to that organization only.
  if (
    !provider || !provider.is_active ||
    (provider.organization_id !== null && req.organization_id !== null &&
      provider.organization_id !== req.organization_id)
  ) {
    throw new FederationFailure("This sign-in option is not available.", req);
  }
  let metadata;
  try {
    metadata = await metadataFor(sql, s.allowPrivate, provider);
  } catch (err) {
    throw await failed(sql, provider.project_id, provider.id, req, request, "provider_unreachable", err);
  }
  const state = newSecret();
  const nonce = newSecret();
  const verifier = newSecret();
  await insertFederationState(sql, {
    state_hash: hashSecret(state),
    project_id: provider.project_id,
    provider_id: provider.id,
    request_id: req.id,
    nonce,
    code_verifier: verifier,
    ttlSeconds: LOGIN_REQUEST_TTL,
  });
  const hint: Record<string, string> = loginHint && loginHint.length <= 100 ? { login_hint: loginHint } : {};
  return await authorizationUrl(s, provider, metadata, { state, nonce, verifier }, hint);
}

/**
 * RFC 9207: an authorization response naming another issuer is a mix-up attack; a provider that announces the
 * parameter must send it. Why the response's `iss` is refused, or null.
 */
export function wrongIssuer(provider: ProviderRow, iss: string | undefined): string | null {
  const announced = (provider.metadata as Metadata).authorization_response_iss_parameter_supported === true;
  return (iss !== undefined || announced) && iss !== provider.issuer
    ? `the authorization response's iss is ${JSON.stringify(iss ?? null)}`
    : null;
}

/** Records `login.failed` for an upstream sign-in and makes the failure shown to the user. */
async function failed(
  sql: Sql,
  projectId: string,
  providerId: string,
  req: LoginRequest | null,
  request: RequestInfo,
  reason: string,
  cause: unknown,
  userId: string | null = null,
): Promise<FederationFailure> {
  const detail = cause instanceof Error ? cause.message : typeof cause === "string" ? cause : "";
  await record(sql, {
    projectId,
    type: "login.failed",
    source: userSource(userId, request),
    target: { type: "user", id: userId },
    details: {
      provider_id: providerId,
      reason,
      ...(req ? { client_id: req.client_id } : {}),
      ...(detail ? { detail: detail.slice(0, 300) } : {}),
    },
  });
  return new FederationFailure(MESSAGES[reason] ?? MESSAGES.default, req);
}

const MESSAGES: Record<string, string> = {
  upstream_error: "The identity provider did not sign you in. Try again, or sign in another way.",
  provider_unreachable: "The identity provider could not be reached or is misconfigured. Try again later, " +
    "or sign in another way.",
  token_error: "The identity provider refused to complete the sign-in. Try again.",
  invalid_id_token: "The identity provider's answer could not be trusted. Try again, or sign in another way.",
  nonce_mismatch: "The identity provider's answer could not be trusted. Try again, or sign in another way.",
  issuer_mismatch: "The identity provider's answer could not be trusted. Try again, or sign in another way.",
  state_mismatch: "This sign-in did not start in this browser, or was already used. Go back to the " +
    "application and start again.",
  state_replayed: "This sign-in was already used. Go back to the application and start again.",
  state_expired: "This sign-in has expired. Go back to the application and start again.",
  provider_inactive: "This sign-in option is not available.",
  no_account:
    "There is no account for you here yet. Ask an administrator to invite you, or sign in another way.",
  email_not_linkable:
    "An account with your email exists but is not linked to this identity provider. Sign in " +
    "with your password, or ask an administrator to link it.",
  no_email: "The identity provider did not share an email address, which this sign-in needs.",
  user_inactive: "Your account is disabled.",
  default: "The sign-in failed. Try again.",
};

/**
 * The callback's outcome: the user who signed in, and the login request to finish; or, when the project's
 * policy stops the user (`unverified`), the login request to show the "verify your address first" page for.
 */
export type FederatedLogin = {
  userId: string;
  providerId: string;
  request: LoginRequest;
  unverified: EmailNotVerified | null;
};

/**
 * The provider's redirect back. Checks state (known, unspent, this provider's, this browser's), then the
 * provider's answer, and returns the user to sign in. Anything wrong throws FederationFailure, audited.
 */
export async function federationCallback(
  sql: Sql,
  s: ProviderSettings,
  providerId: string,
  query: Record<string, string>,
  browser: string | undefined,
  request: RequestInfo,
): Promise<FederatedLogin> {
  const projectId = await providerProject(sql, providerId);
  const nowhere = new FederationFailure(MESSAGES.state_mismatch, null);
  if (!projectId) throw nowhere;
  const state = query.state;
  if (!state || state.length > 200) {
    throw await failed(sql, projectId, providerId, null, request, "state_mismatch", "no state");
  }
  const spent = await consumeFederationState(sql, hashSecret(state));
  const row = spent.row;
  if (!row || row.request_id === null || row.provider_id !== providerId || row.project_id !== projectId) {
    const reason = spent.known && spent.known.provider_id === providerId
      ? "state_replayed"
      : "state_mismatch";
    throw await failed(sql, projectId, providerId, null, request, reason, "unknown, spent or expired state");
  }
  const stored = await findAuthorizationRequest(sql, row.request_id);
  if (!stored || !browser || !secretMatches(browser, stored.browser_hash)) {
    throw await failed(
      sql,
      projectId,
      providerId,
      null,
      request,
      "state_mismatch",
      "another browser's state",
    );
  }
  if (stored.used || stored.expired) {
    throw await failed(sql, projectId, providerId, null, request, "state_expired", "the login page expired");
  }
  const client = await findClientWithProject(sql, stored.client_id);
  if (!client || !client.is_active || !client.project_is_active) {
    throw new AuthorizePageError("The application that sent you here is disabled.");
  }
  const req: LoginRequest = { ...stored, project_name: client.project_name };
  const fail = (reason: string, cause: unknown, userId: string | null = null) =>
    failed(sql, projectId, providerId, req, request, reason, cause, userId);
  if (query.error) {
    const described = `${query.error.slice(0, 100)}${
      query.error_description ? `: ${query.error_description.slice(0, 200)}` : ""
    }`;
    throw await fail("upstream_error", described);
  }
  if (!query.code) throw await fail("upstream_error", "the callback has neither code nor error");
  const provider = await findProvider(sql, projectId, providerId);
  if (!provider || !provider.is_active) throw await fail("provider_inactive", "the provider is inactive");
  const wrong = wrongIssuer(provider, query.iss);
  if (wrong) throw await fail("issuer_mismatch", wrong);
  let upstream: Upstream;
  try {
    upstream = await redeem(sql, s, provider, query.code, row);
  } catch (err) {
    if (err instanceof Refused) throw await fail(err.reason, err.message);
    if (err instanceof OutboundError) throw await fail("provider_unreachable", err);
    throw err;
  }
  // An organization's own provider vouches for the addresses of its organization's domains only: another
  // address it says is verified counts as unverified (no link by it, no join by its domain, the policy's check).
  if (provider.organization_id !== null && upstream.emailVerified && upstream.email !== null) {
    const ours = await organizationHoldsAddress(sql, projectId, provider.organization_id, upstream.email);
    if (!ours) upstream = { ...upstream, emailVerified: false };
  }
  const userId = await account(sql, provider, upstream, req, request, fail);
  // The project's sign-in policy, before a second step: a user just created from an address the provider did
  // not say is verified, or a linked one whose address is not, is stopped here (the page offers the link).
  try {
    const who = { projectId, clientId: req.client_id, userId, request };
    await requireSignInPolicy(sql, who, { provider_id: providerId, method: "oidc" });
  } catch (err) {
    if (err instanceof EmailNotVerified) return { userId, providerId, request: req, unverified: err };
    throw err;
  }
  // An organization's own provider vouches for its people: whoever the policy lets in through it is a member
  // (just in time), and the sign-in is that organization's (its code, its tokens, its `mfa`).
  if (provider.organization_id !== null) {
    await joinThroughProvider(sql, {
      projectId,
      organizationId: provider.organization_id,
      userId,
      providerId,
      request,
    });
    await setRequestOrganization(sql, req.id, provider.organization_id);
    req.organization_id = provider.organization_id;
  }
  await record(sql, {
    projectId,
    type: "login.succeeded",
    source: userSource(userId, request),
    target: { type: "user", id: userId },
    details: { client_id: req.client_id, provider_id: providerId, method: "oidc" },
  });
  return { userId, providerId, request: req, unverified: null };
}

/** The user the upstream account signs in as: linked, linked now by verified email, or created. */
async function account(
  sql: Sql,
  provider: ProviderRow,
  up: Upstream,
  req: LoginRequest,
  request: RequestInfo,
  fail: (reason: string, cause: unknown, userId?: string | null) => Promise<FederationFailure>,
): Promise<string> {
  const projectId = provider.project_id;
  const linked = await findLinkedUser(sql, projectId, provider.id, up.sub);
  if (linked) {
    if (!linked.is_active) throw await fail("user_inactive", "the linked user is inactive", linked.id);
    await touchIdentity(sql, projectId, provider.id, up.sub, up.email);
    return linked.id;
  }
  if (up.email === null) throw await fail("no_email", "no usable email claim and no link");
  const existing = await findUserByEmail(sql, projectId, up.email);
  const linkEvent = (tx: Sql, userId: string, how: string) =>
    record(tx, {
      projectId,
      type: "user.identity_linked",
      source: userSource(userId, request),
      target: { type: "user", id: userId },
      details: { provider_id: provider.id, how, client_id: req.client_id },
    });
  if (existing) {
    if (!provider.link_by_verified_email || !up.emailVerified || !existing.email_verified) {
      const why = !provider.link_by_verified_email
        ? "linking by email is off"
        : !up.emailVerified
        ? "the provider does not say the email is verified"
        : "the user's email is not verified here";
      throw await fail("email_not_linkable", why, existing.id);
    }
    if (!existing.is_active) throw await fail("user_inactive", "the user is inactive", existing.id);
    await transaction(sql, async (tx) => {
      await insertIdentity(tx, {
        project_id: projectId,
        provider_id: provider.id,
        subject: up.sub,
        user_id: existing.id,
        email: up.email,
      });
      await touchIdentity(tx, projectId, provider.id, up.sub, up.email);
      await linkEvent(tx, existing.id, "verified_email");
    });
    return existing.id;
  }
  if (!provider.jit_provisioning) throw await fail("no_account", "no linked user and provisioning is off");
  const userId = newId();
  await transaction(sql, async (tx) => {
    await insertUser(tx, {
      project_id: projectId,
      id: userId,
      display_name: (up.name ?? up.email!.split("@")[0]).slice(0, 50),
      avatar_url: up.picture,
      external_user_id: null,
      email: up.email,
      // As the upstream provider says: it verified the address, or not.
      email_verified: up.emailVerified,
      pending_email: null,
      role_id: provider.default_role_id,
      is_active: true,
      password_hash: null,
    });
    await insertIdentity(tx, {
      project_id: projectId,
      provider_id: provider.id,
      subject: up.sub,
      user_id: userId,
      email: up.email,
    });
    await touchIdentity(tx, projectId, provider.id, up.sub, up.email);
    await record(tx, {
      projectId,
      type: "user.created",
      source: userSource(userId, request),
      target: { type: "user", id: userId },
      details: { provider_id: provider.id, how: "jit" },
    });
    await linkEvent(tx, userId, "jit");
  });
  return userId;
}
