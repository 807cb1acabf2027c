/**
 * Single sign-on: an OpenID login opens a browser session for the project (a cookie naming the browser; only
 * its hash is stored), and the next OpenID authorization request of any client of the project is answered with
 * a code without the form, unless `prompt=login` or `max_age` asks for a new login. `prompt=none` without a
 * session answers `login_required`. Idle and absolute expiry, the user and the project are checked live, by
 * the database, on every use.
 */
import { type Sql, transaction } from "../../db/connection.ts";
import type { AuthorizationRequestRow, CodeLogin } from "../../db/oauth/sessions.ts";
import { insertSsoSession, rekeyBrowser, useSsoSession } from "../../db/signin/sso.ts";
import { record, userSource } from "../audit/audit.ts";
import { newId, newSecret } from "../shared/ids.ts";
import {
  AuthorizeRedirectError,
  issueAuthorizationCode,
  redirectWith,
  type ValidAuthorizeRequest,
} from "./login.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { hashSecret, isBrowserSecret } from "../shared/secrets.ts";
import { mfaPolicyOf, secondStepFor } from "../factors/second_step.ts";
import { ConsentRequired } from "./consent.ts";
import { mintAuthorizationCode, NotAMember } from "./codes.ts";
import { ACR_MULTI, acrOf } from "../oauth/acr.ts";
import { EmailNotVerified, recordStopped, requireSignInPolicy } from "../accounts/signin_policy.ts";

/**
 * The browser's session must be confirmed by the user's second factor before a code is issued: nothing is
 * presented yet at the new `auth_time` (`amr` empty), and the session's upstream provider, if any, stays.
 */
export type StepUp = { stepUp: { userId: string; amr: string[]; providerId: string | null } };

/** The browser's session answers for the user, but a third-party client needs their consent first. */
export type AskConsent = { consent: { userId: string; amr: string[] | null; providerId: string | null } };

export type SsoSettings = {
  /** A browser session ends this long after its last use (SSO_IDLE_TTL)… */
  idleTtl: number;
  /** …and this long after the login at most (SSO_TTL). */
  ttl: number;
  issuer: string;
  codeTtl: number;
};

const loginOf = (request: RequestInfo) => ({ ip: request.ip, user_agent: request.user_agent });

/**
 * GET /authorize of an OpenID request: the URL to redirect to with a code when the browser's session in the
 * project answers for the user, or null to show the form. `prompt=none` without a usable session throws the
 * `login_required` redirect. A session of a user the project's policy stops (an unverified address, see
 * domain/accounts/signin_policy.ts) throws EmailNotVerified, recorded as `login.failed`.
 */
export async function signInSilently(
  sql: Sql,
  req: ValidAuthorizeRequest,
  browser: string | undefined,
  settings: SsoSettings,
  request: RequestInfo,
): Promise<string | null | StepUp | AskConsent> {
  const oidc = req.oidc;
  if (!oidc || oidc.prompt === "login") return null;
  const projectId = req.client.project_id;
  const sso = isBrowserSecret(browser)
    ? await useSsoSession(sql, hashSecret(browser), projectId, settings.idleTtl)
    : undefined;
  const interaction = (why: string) => {
    if (oidc.prompt !== "none") return null;
    throw new AuthorizeRedirectError("login_required", why, req.redirectUri, req.state);
  };
  if (!sso) return interaction("the user is not signed in");
  // The project's policy holds for a session opened before it changed, or before the address did.
  const who = { projectId, clientId: req.client.id, userId: sso.user_id, request };
  try {
    await requireSignInPolicy(sql, who, { sso_session_id: sso.id });
  } catch (err) {
    if (err instanceof EmailNotVerified && oidc.prompt === "none") {
      interaction("the email address is not verified");
    }
    throw err;
  }
  const stale = oidc.maxAge !== null && sso.age > oidc.maxAge;
  // An organization requiring a second factor asks a session that has none for one, as acr_values=2 does.
  const required = req.organization !== null &&
    await mfaPolicyOf(sql, { project_id: projectId, organization_id: req.organization.id }) === "required";
  const weak = (oidc.acr === ACR_MULTI || required) && acrOf(sso.amr) !== ACR_MULTI;
  if (stale || weak) {
    // Step-up: a user with a second factor gives its code again (not the password); one without enrols after
    // the form; a project with factors off ignores acr_values.
    const step = await secondStepFor(
      sql,
      { project_id: projectId, acr: oidc.acr, organization_id: req.organization?.id ?? null },
      sso.user_id,
    );
    if (step === "code") {
      if (oidc.prompt === "none") return interaction("a second factor is needed");
      // RFC 8176: the new login's methods are those presented now, not the session's earlier ones.
      return { stepUp: { userId: sso.user_id, amr: [], providerId: sso.provider_id } };
    }
    if (stale || step === "enrol") {
      return interaction(stale ? "the last login is older than max_age" : "a second factor is needed");
    }
  }
  const code = newSecret();
  try {
    await mintSilently(sql, req, sso, code, settings, request);
  } catch (err) {
    // With prompt=none no page may be shown: a user who is not a member is the client's to hear of.
    if (err instanceof NotAMember && oidc.prompt === "none") {
      throw new AuthorizeRedirectError(
        "access_denied",
        "the user is not a member of the organization",
        req.redirectUri,
        req.state,
      );
    }
    if (!(err instanceof ConsentRequired)) throw err;
    // OpenID Connect Core §3.1.2.6: with prompt=none, no page may be shown.
    if (oidc.prompt === "none") {
      throw new AuthorizeRedirectError(
        "consent_required",
        "the user has not consented to this client",
        req.redirectUri,
        req.state,
      );
    }
    return { consent: { userId: sso.user_id, amr: sso.amr, providerId: sso.provider_id } };
  }
  return redirectWith(req.redirectUri, { code, state: req.state, iss: settings.issuer });
}

/** The code of a single sign-on, and its `login.sso` event, in one transaction. */
async function mintSilently(
  sql: Sql,
  req: ValidAuthorizeRequest,
  sso: NonNullable<Awaited<ReturnType<typeof useSsoSession>>>,
  code: string,
  settings: SsoSettings,
  request: RequestInfo,
): Promise<void> {
  const oidc = req.oidc!;
  const projectId = req.client.project_id;
  await transaction(sql, async (tx) => {
    await mintAuthorizationCode(tx, {
      project_id: projectId,
      code_hash: hashSecret(code),
      client_id: req.client.id,
      user_id: sso.user_id,
      redirect_uri: req.redirectUri,
      code_challenge: req.codeChallenge,
      ttlSeconds: settings.codeTtl,
      scope: oidc.scope,
      nonce: oidc.nonce,
      resource: req.resource?.indicator ?? null,
      resource_scope: req.resource?.scope ?? null,
      organization_id: req.organization?.id ?? null,
      auth_time: sso.auth_time,
      sso_session_id: sso.id,
      amr: sso.amr,
      ...loginOf(request),
    });
    await record(tx, {
      projectId,
      type: "login.sso",
      source: userSource(sso.user_id, request),
      target: { type: "user", id: sso.user_id },
      details: { client_id: req.client.id, sso_session_id: sso.id },
    });
  });
}

/**
 * After a good password: the code, and for an OpenID request a new browser session, in one transaction. The
 * browser's cookie is turned over on every login (its other projects' sessions follow it), so a value planted
 * before the login names nothing afterwards. Returns where to send the browser and the cookie to set, if any.
 */
export async function completeLogin(
  sql: Sql,
  req: AuthorizationRequestRow,
  userId: string,
  browser: string | undefined,
  settings: SsoSettings,
  request: RequestInfo,
  /** The identity provider the user signed in through (its ID tokens then say `amr: ["fed"]`, `idp`). */
  providerId: string | null = null,
  /** How the user authenticated (RFC 8176), e.g. `["pwd"]`, `["pwd", "otp", "mfa"]`. */
  amr: string[] | null = null,
): Promise<{ location: string; browser: string | null }> {
  const scope = req.scope;
  // Without `openid` the login opens no browser session; with it, one (under a new browser secret).
  const fresh = scope === null ? null : newSecret();
  const login = async (tx: Sql): Promise<Partial<CodeLogin>> => {
    if (scope === null || fresh === null) return { ...loginOf(request), amr };
    if (isBrowserSecret(browser)) await rekeyBrowser(tx, hashSecret(browser), hashSecret(fresh));
    const sso = await insertSsoSession(tx, {
      project_id: req.project_id,
      id: newId(),
      browser_hash: hashSecret(fresh),
      user_id: userId,
      idleSeconds: settings.idleTtl,
      ttlSeconds: settings.ttl,
      provider_id: providerId,
      amr,
    });
    return {
      scope,
      nonce: req.nonce,
      auth_time: sso.auth_time,
      sso_session_id: sso.id,
      amr,
      ...loginOf(request),
    };
  };
  try {
    const location = await issueAuthorizationCode(sql, req, userId, settings.issuer, settings.codeTtl, login);
    return { location, browser: fresh };
  } catch (err) {
    if (err instanceof EmailNotVerified) {
      const who = { projectId: req.project_id, clientId: req.client_id, userId, request };
      await recordStopped(sql, who, providerId !== null ? { provider_id: providerId } : {});
    }
    throw err;
  }
}
