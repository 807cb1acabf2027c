/**
 * The browser side of the authorization code flow: validating GET /authorize (RFC 6749 §4.1.1, RFC 7636),
 * the login form's CSRF binding, throttled password checks, and the code that the redirect carries.
 */
import { logins } from "../../telemetry/families.ts";
import { type Sql, transaction } from "../../db/connection.ts";
import { type ClientWithProjectRow, findClientWithProject } from "../../db/oauth/clients.ts";
import {
  type AuthorizationRequestRow,
  type CodeLogin,
  consumeAuthorizationRequest,
  findAuthorizationRequest,
  insertAuthorizationRequest,
} from "../../db/oauth/sessions.ts";
import { clearAttempts, uncountAttempt } from "../../db/shared/throttle.ts";
import { findLoginUser } from "../../db/accounts/users.ts";
import {
  deviceCallbackUri,
  redirectUriAllowed,
  type UnregisteredUri,
  unregisteredUri,
} from "../projects/redirect_uris.ts";
import { deviceLoginExists } from "../../db/oauth/device_codes.ts";
import { deviceFor, deviceThrottleKey, trustDevice } from "./devices.ts";
import { newSecret } from "../shared/ids.ts";
import { verifyPassword } from "../accounts/passwords.ts";
import { rehashIfForeign } from "../accounts/password_rehash.ts";
import { decoyHash } from "../accounts/password_decoy.ts";
import { hashSecret, secretMatches } from "../shared/secrets.ts";
import { oidcParamIssue, type OidcRequest, oidcRequest } from "../oauth/oidc.ts";
import { recentEvent, record, userSource } from "../audit/audit.ts";
import { AppError } from "../shared/errors.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { addressKey, attempt, THROTTLE } from "../shared/throttle.ts";
import { type SecondStep, secondStepFor } from "../factors/second_step.ts";
import { accountKey, normalizeEmail } from "../accounts/emails.ts";
import { mustVerifyFirst } from "../accounts/signin_policy.ts";
import { mintAuthorizationCode } from "./codes.ts";
import { AuthorizePageError } from "./page_errors.ts";

export { AuthorizePageError };
import { organizationNameOf } from "../organizations/membership.ts";
import { indicatorOfProject, oneIndicator } from "../oauth/resource_indicators.ts";
import { ClientMetadataRefused, isClientIdUrl, metadataClientOf } from "../oauth/client_metadata.ts";

/** How long a login page stays usable. */
export const LOGIN_REQUEST_TTL = 600;

/** A `redirect_uri` not in the list that applies to the client: the page says what was received and where to fix it. */
export class RedirectUriNotRegistered extends AuthorizePageError {
  constructor(message: string, readonly unregistered: UnregisteredUri) {
    super(message, "redirect_uri_not_registered");
  }
}

/** An error sent back to the client's redirect URI (RFC 6749 §4.1.2.1). */
export class AuthorizeRedirectError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly redirectUri: string,
    readonly state: string | null,
  ) {
    super(message);
  }
}

export type AuthorizeParams = Record<string, string[]>;

export type ValidAuthorizeRequest = {
  client: ClientWithProjectRow;
  redirectUri: string;
  codeChallenge: string;
  state: string | null;
  /** With `openid` in the scope: the OpenID Connect request (see domain/oauth/oidc.ts); else null. */
  oidc: OidcRequest | null;
  /** RFC 8707: the one API asked for (a resource's indicator in the client's project) and the scope asked. */
  resource: { indicator: string; scope: string | null } | null;
  /** The organization the user signs in to (`organization`, one of the project's), or null. */
  organization: { id: string; name: string } | null;
};

const single = (params: AuthorizeParams, name: string): string | undefined | null => {
  const values = params[name];
  if (!values || values.length === 0) return undefined;
  return values.length === 1 ? values[0] : null; // null: repeated (RFC 6749 §3.1 forbids it)
};

/** The project's row of a client identified by a URL (domain/oauth/client_metadata.ts), or the page's error. */
async function metadataClient(
  sql: Sql,
  outbound: { allowPrivate: boolean; request: RequestInfo | null },
  params: AuthorizeParams,
  clientId: string,
): Promise<string> {
  try {
    return await metadataClientOf(sql, outbound, {
      clientId,
      resource: params.resource,
      redirectUri: single(params, "redirect_uri") ?? undefined,
    });
  } catch (err) {
    if (!(err instanceof ClientMetadataRefused)) throw err;
    // The OAuth code in the page's words too, for the developer of the application reading it.
    throw new AuthorizePageError(`${err.message} (${err.code})`, `client_metadata_${err.reason ?? err.code}`);
  }
}

/**
 * Checks an authorization request in the order RFC 6749 §4.1.2.1 needs: what decides whether the redirect URI
 * can be trusted first (client, its state, the exact redirect URI), then the rest, whose errors redirect.
 */
export async function validateAuthorizeRequest(
  sql: Sql,
  params: AuthorizeParams,
  publicUrl?: string,
  /** For a client identified by a URL: the address guard's setting, and the request for a refusal's event. */
  outbound: { allowPrivate: boolean; request: RequestInfo | null } = { allowPrivate: false, request: null },
): Promise<ValidAuthorizeRequest> {
  // A NUL byte fits no parameter; nothing of such a request can be trusted, not even its redirect URI.
  if (Object.entries(params).some(([k, vs]) => k.includes("\0") || vs.some((v) => v.includes("\0")))) {
    throw new AuthorizePageError("The request is malformed.");
  }
  const clientId = single(params, "client_id");
  if (!clientId) throw new AuthorizePageError("The request has no valid client_id.");
  const client = await findClientWithProject(
    sql,
    isClientIdUrl(clientId) ? await metadataClient(sql, outbound, params, clientId) : clientId,
  );
  if (!client) throw new AuthorizePageError("The application that sent you here is not known.");
  if (!client.is_active) throw new AuthorizePageError("The application that sent you here is disabled.");
  if (!client.project_is_active) {
    throw new AuthorizePageError("The application that sent you here is disabled.");
  }
  const redirectUri = single(params, "redirect_uri");
  if (!redirectUri) throw new AuthorizePageError("The request has no valid redirect_uri.");
  if (!redirectUriAllowed(client, redirectUri, publicUrl)) {
    throw new RedirectUriNotRegistered(
      "The redirect_uri is not registered for this application.",
      unregisteredUri(client, "redirect_uri", redirectUri),
    );
  }
  // The verification page's own callback serves only the login it started for a device code (its PKCE challenge).
  if (publicUrl !== undefined && redirectUri === deviceCallbackUri(publicUrl)) {
    const challenge = single(params, "code_challenge");
    if (!challenge || !(await deviceLoginExists(sql, client.id, challenge))) {
      throw new AuthorizePageError(
        "This sign-in is not tied to a device code. Enter the code at /device again.",
      );
    }
  }
  const rawState = single(params, "state");
  // An over-long state is refused and not echoed back.
  const state = typeof rawState === "string" && rawState.length <= 1024 ? rawState : null;
  const fail = (code: string, message: string) =>
    new AuthorizeRedirectError(code, message, redirectUri, state);
  for (const [name, values] of Object.entries(params)) {
    // RFC 8707 §2 allows `resource` more than once; this service issues a token for one API (invalid_target).
    if (values.length > 1 && name !== "resource") {
      throw fail("invalid_request", `the parameter ${name} is repeated`);
    }
  }
  const responseType = single(params, "response_type");
  if (!responseType) throw fail("invalid_request", "response_type is required");
  if (responseType !== "code") {
    throw fail("unsupported_response_type", "only response_type=code is supported");
  }
  const method = single(params, "code_challenge_method");
  const challenge = single(params, "code_challenge");
  if (!challenge) throw fail("invalid_request", "code_challenge is required (PKCE)");
  if (!method) throw fail("invalid_request", "code_challenge_method is required and must be S256");
  if (method !== "S256") throw fail("invalid_request", "only code_challenge_method=S256 is supported");
  // A SHA-256 digest in base64url without padding is 43 characters (RFC 7636 §4.2).
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
    throw fail("invalid_request", "code_challenge is not a base64url SHA-256 digest");
  }
  if (typeof rawState === "string" && rawState.length > 1024) {
    throw fail("invalid_request", "state is longer than 1024 characters");
  }
  const get = (name: string) => single(params, name) ?? undefined;
  const oidcIssue = oidcParamIssue(get);
  if (oidcIssue) throw fail("invalid_request", oidcIssue);
  let resource: ValidAuthorizeRequest["resource"] = null;
  if (params.resource !== undefined) {
    try {
      const indicator = oneIndicator(params.resource);
      // Checked now so that the client hears of an unknown API before the user signs in; again at the token.
      await indicatorOfProject(sql, client.project_id, indicator);
      resource = { indicator, scope: get("scope") ?? null };
    } catch (err) {
      if (err instanceof AppError) throw fail("invalid_target", err.message);
      throw err;
    }
  }
  let organization: ValidAuthorizeRequest["organization"] = null;
  const asked = get("organization");
  if (asked !== undefined) {
    // Whether the user is a member is known once they sign in: the code is then refused (NotAMember's page).
    const name = await organizationNameOf(sql, client.project_id, asked);
    if (name === null) {
      throw fail("invalid_request", "organization is not the id of an organization of the project");
    }
    organization = { id: asked, name };
  }
  return {
    client,
    redirectUri,
    codeChallenge: challenge,
    state,
    oidc: oidcRequest(get),
    resource,
    organization,
  };
}

/**
 * Stores the validated request; the form carries its id and a CSRF token bound to the browser's cookie. Each
 * is a row that anyone can make, so each address may open a limited number (429 `too_many_requests` beyond).
 */
export async function startLogin(
  sql: Sql,
  req: ValidAuthorizeRequest,
  browserSecret: string,
  request: RequestInfo,
): Promise<{ requestId: string; csrf: string }> {
  await attempt(sql, `authorize:${addressKey(request.ip)}`, THROTTLE.loginPage);
  const requestId = newSecret();
  const csrf = newSecret();
  await insertAuthorizationRequest(sql, {
    id: requestId,
    project_id: req.client.project_id,
    client_id: req.client.id,
    redirect_uri: req.redirectUri,
    code_challenge: req.codeChallenge,
    state: req.state,
    scope: req.oidc?.scope ?? null,
    nonce: req.oidc?.nonce ?? null,
    acr: req.oidc?.acr ?? null,
    resource: req.resource?.indicator ?? null,
    resource_scope: req.resource?.scope ?? null,
    organization_id: req.organization?.id ?? null,
    csrf_hash: hashSecret(csrf),
    browser_hash: hashSecret(browserSecret),
    ttlSeconds: LOGIN_REQUEST_TTL,
  });
  return { requestId, csrf };
}

/** The pending request of a login form, if the form's CSRF token and the browser's cookie both match it. */
export async function loginRequestFor(
  sql: Sql,
  form: { request_id?: string; csrf?: string },
  browserSecret: string | undefined,
  publicUrl?: string,
): Promise<AuthorizationRequestRow & { project_name: string }> {
  const stale = new AuthorizePageError(
    "This login page has expired or was not opened in this browser. Go back to the application and start again.",
  );
  if (!form.request_id || !form.csrf || !browserSecret) throw stale;
  const req = await findAuthorizationRequest(sql, form.request_id);
  if (!req || req.used || req.expired) throw stale;
  if (!secretMatches(form.csrf, req.csrf_hash) || !secretMatches(browserSecret, req.browser_hash)) {
    throw stale;
  }
  const client = await findClientWithProject(sql, req.client_id);
  if (!client || !client.is_active || !client.project_is_active) {
    throw new AuthorizePageError("The application that sent you here is disabled.");
  }
  // The redirect URI may have been removed from the project since the page was opened.
  if (!redirectUriAllowed(client, req.redirect_uri, publicUrl)) {
    throw new RedirectUriNotRegistered(
      "The redirect_uri is no longer registered for this application.",
      unregisteredUri(client, "redirect_uri", req.redirect_uri),
    );
  }
  return { ...req, project_name: client.project_name };
}

/**
 * The /authorize URL that asks a stored login request again, as the application asked it: the same client,
 * registered redirect URI, PKCE challenge, state, scope, nonce, second-factor level (`acr_values`) and RFC 8707
 * `resource`. Only the request's own, already checked values go into it (`prompt`, `max_age` and `login_hint`
 * are not kept). With `resource`, the scope the request asked was kept whole as `resource_scope`; without, its
 * OpenID scope.
 */
export function authorizeUrlOf(
  req: Pick<
    AuthorizationRequestRow,
    | "client_id"
    | "redirect_uri"
    | "code_challenge"
    | "state"
    | "scope"
    | "nonce"
    | "acr"
    | "resource"
    | "resource_scope"
    | "organization_id"
  >,
  publicUrl: string,
): string {
  const q = new URLSearchParams({
    client_id: req.client_id,
    redirect_uri: req.redirect_uri,
    response_type: "code",
    code_challenge: req.code_challenge,
    code_challenge_method: "S256",
  });
  const scope = req.resource !== null ? req.resource_scope : req.scope;
  if (scope) q.set("scope", scope);
  if (req.state !== null) q.set("state", req.state);
  if (req.nonce !== null) q.set("nonce", req.nonce);
  if (req.acr !== null) q.set("acr_values", req.acr);
  if (req.resource !== null) q.set("resource", req.resource);
  if (req.organization_id !== null) q.set("organization", req.organization_id);
  return `${publicUrl}/authorize?${q}`;
}

/**
 * After consent to a login by single sign-on: the request is spent and the browser goes back to /authorize with
 * the same parameters, where the session (now with consent) gives the code as any single sign-on does. Null: the
 * request was already spent.
 */
export async function reauthorizeUrl(
  sql: Sql,
  req: AuthorizationRequestRow,
  publicUrl: string,
): Promise<string | null> {
  if (!(await consumeAuthorizationRequest(sql, req.id))) return null;
  return authorizeUrlOf(req, publicUrl);
}

/**
 * Checks email and password. Unknown, inactive and password-less users fail exactly like a wrong password.
 * Every attempt is counted, per address and per account, before the password is checked (so that parallel
 * guesses are counted too), and taken back when it succeeds; an attempt refused with 429
 * `too_many_requests` is not counted, so a throttled account is free again once its delay has passed. A
 * browser that signed in to the account before (its device cookie) counts against a counter of its own, so
 * guesses from elsewhere cannot keep the owner out of it. Each outcome is an audit event (`login.succeeded`,
 * `login.failed`, `login.throttled`). Returns the user's id and the device token to set, or null for "invalid
 * email or password".
 */
export async function checkPassword(
  sql: Sql,
  req: { project_id: string; client_id: string; acr: string | null },
  login: { email: string; password: string; device: string | undefined; request: RequestInfo },
): Promise<{ userId: string; device: string; unverified: boolean; secondStep: SecondStep } | null> {
  const { password, request } = login;
  const normalized = normalizeEmail(login.email)!;
  const who = { projectId: req.project_id, email: normalized };
  const device = await deviceFor(sql, login.device, who);
  const account = deviceThrottleKey(accountKey(req.project_id, normalized), device);
  const address = `address:${addressKey(request.ip)}`;
  const event = (
    type: "login.succeeded" | "login.failed" | "login.throttled",
    userId: string | null,
    extra = {},
  ) =>
    record(sql, {
      projectId: req.project_id,
      type,
      source: userSource(userId, request),
      target: { type: "user", id: userId },
      // What was typed for an account that does not exist may be anything (a password in the wrong field):
      // it is neither kept nor sent to webhooks.
      details: {
        ...(userId !== null ? { email: normalized.slice(0, 100) } : {}),
        client_id: req.client_id,
        ...extra,
      },
    });
  try {
    await attempt(sql, address, THROTTLE.address);
    try {
      await attempt(sql, account, THROTTLE.account);
    } catch (err) {
      await uncountAttempt(sql, address); // answered 429: not a failure of this address either
      throw err;
    }
  } catch (err) {
    if (err instanceof AppError && err.code === "too_many_requests") {
      logins.child("throttled").value++;
      await throttledEvent(sql, req, normalized, request);
    }
    throw err;
  }
  const user = normalized ? await findLoginUser(sql, req.project_id, normalized) : undefined;
  let ok: boolean;
  try {
    // No hash (an unknown address, no password): a decoy that costs what the project's accounts cost.
    ok = await verifyPassword(user?.password_hash ?? await decoyHash(sql, req.project_id), password);
  } catch (err) {
    // Too many imported hashes are being verified at once (hash_gate.ts): 429, and the attempt is not counted.
    await uncountAttempt(sql, account);
    await uncountAttempt(sql, address);
    throw err;
  }
  if (ok && user?.is_active && user.password_hash) {
    // An imported hash becomes the service's own argon2id now that the password is known to be right.
    await rehashIfForeign(
      sql,
      { projectId: req.project_id, userId: user.id, stored: user.password_hash },
      password,
      userSource(user.id, request),
    );
    await clearAttempts(sql, account);
    await uncountAttempt(sql, address);
    const trusted = await trustDevice(sql, device, who);
    // The right password, but the project wants a verified address first (the page offers to mail a link).
    if (mustVerifyFirst(user)) {
      await event("login.failed", user.id, { reason: "email_not_verified" });
      logins.child("failed").value++;
      return { userId: user.id, device: trusted, unverified: true, secondStep: "none" };
    }
    // The login may go on to a second factor (`details.second_factor`: `code` or `enrol`); no code is issued yet.
    const secondStep = await secondStepFor(sql, req, user.id);
    await event("login.succeeded", user.id, secondStep !== "none" ? { second_factor: secondStep } : {});
    logins.child("succeeded").value++;
    return { userId: user.id, device: trusted, unverified: false, secondStep };
  }
  const reason = !user
    ? "unknown_email"
    : !user.password_hash
    ? "no_password"
    : !ok
    ? "wrong_password"
    : "user_inactive";
  await event("login.failed", user?.id ?? null, { reason });
  logins.child("failed").value++;
  return null;
}

/**
 * One `login.throttled` event per account and minute at most: refused attempts cannot flood the trail. An
 * email that names no account is not kept: those events carry `account: "unknown"` instead, one per project
 * and minute.
 */
async function throttledEvent(
  sql: Sql,
  req: { project_id: string; client_id: string },
  email: string,
  request: RequestInfo,
): Promise<void> {
  const user = email ? await findLoginUser(sql, req.project_id, email) : undefined;
  const who: Record<string, string> = user ? { email: email.slice(0, 100) } : { account: "unknown" };
  if (await recentEvent(sql, req.project_id, "login.throttled", who, 60)) return;
  await record(sql, {
    projectId: req.project_id,
    type: "login.throttled",
    source: userSource(user?.id ?? null, request),
    target: { type: "user", id: user?.id ?? null },
    details: { ...who, client_id: req.client_id },
  });
}

/**
 * Spends the login request and issues the authorization code; returns the URL to send the browser to. `login`
 * adds, in the same transaction, how the user signed in (the browser, and an OpenID request's session). The
 * project's sign-in policy may refuse the code (EmailNotVerified, domain/accounts/signin_policy.ts): nothing is kept.
 */
export async function issueAuthorizationCode(
  sql: Sql,
  req: AuthorizationRequestRow,
  userId: string,
  issuer: string,
  codeTtl: number,
  login: (tx: Sql) => Promise<Partial<CodeLogin>> = () => Promise.resolve({}),
): Promise<string> {
  const code = newSecret();
  await transaction(sql, async (tx) => {
    if (!(await consumeAuthorizationRequest(tx, req.id))) {
      throw new AuthorizePageError(
        "This login page was already used. Go back to the application and start again.",
      );
    }
    await mintAuthorizationCode(tx, {
      project_id: req.project_id,
      code_hash: hashSecret(code),
      client_id: req.client_id,
      user_id: userId,
      redirect_uri: req.redirect_uri,
      code_challenge: req.code_challenge,
      ttlSeconds: codeTtl,
      resource: req.resource,
      resource_scope: req.resource_scope,
      organization_id: req.organization_id,
      ...(await login(tx)),
    });
  });
  return redirectWith(req.redirect_uri, { code, state: req.state, iss: issuer });
}

/**
 * Adds parameters to a registered redirect URI, keeping its own query byte for byte (RFC 6749 §3.1.2:
 * the query component must be retained). Registered URIs have no fragment.
 */
export function redirectWith(redirectUri: string, params: Record<string, string | null>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null) query.append(k, v);
  const separator = !redirectUri.includes("?") ? "?" : /[?&]$/.test(redirectUri) ? "" : "&";
  return `${redirectUri}${separator}${query}`;
}
