/**
 * Where the sign-in pages lead after a right credential (a password, a passkey, an upstream provider): the second
 * step's page, the code of a factor or the enrolment of one, the code itself, or the page that asks for a
 * verified address first. And which project's console a login page is for.
 */
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { consoleClientId } from "../../domain/console/client.ts";
import { type SecondStep, startLoginEnrolment, startSecondStep } from "../../domain/factors/second_step.ts";
import { EmailNotVerified } from "../../domain/accounts/signin_policy.ts";
import { requireVerification } from "../../domain/accounts/email_changes.ts";
import { type LoginRequest, newCsrf } from "../../domain/federation/federation.ts";
import { completeLogin } from "../../domain/signin/sso.ts";
import { ConsentRequired, holdLoginForConsent } from "../../domain/signin/consent.ts";
import { AMR_PASSWORD } from "../../domain/oauth/acr.ts";
import type { AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { mfaSettings, ssoSettings } from "../settings.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { brandFor } from "./kit/brand.ts";
import { formSettings } from "./kit/forms.ts";
import { qrSvg } from "./kit/qr_svg.ts";
import { enrolInLoginPage, secondFactorPage } from "./views/login.ts";
import { verifyFirstPage } from "./views/mail_links.ts";

/**
 * The page after a right password (or a step-up of a browser session): the code of the user's factor, or the
 * enrolment of one; the login request now waits for it.
 */
export async function showSecondStep(
  c: Context<AppEnv>,
  p: {
    nonce: string;
    req: { id: string; project_id: string; project_name: string };
    csrf: string;
    userId: string;
    step: Exclude<SecondStep, "none">;
    /** What this login presented so far (RFC 8176); the password's by default. */
    amr?: string[];
    /** The upstream provider the login went through, kept for the code and the ID token's `idp`. */
    providerId?: string | null;
  },
): Promise<Response> {
  const { sql } = c.get("deps");
  const { action } = formSettings(c);
  await startSecondStep(sql, p.req, p.userId, p.amr, p.providerId ?? null);
  const common = {
    nonce: p.nonce,
    action: `${action}/mfa`,
    ...(await brandFor(c, p.req.project_id, p.req.project_name)),
    requestId: p.req.id,
    csrf: p.csrf,
  };
  if (p.step === "code") return c.html(secondFactorPage(common), 200);
  const enrolment = await startLoginEnrolment(sql, mfaSettings(c), {
    projectId: p.req.project_id,
    userId: p.userId,
    request: requestInfo(c),
  });
  return c.html(enrolInLoginPage({ ...common, ...enrolPicture(enrolment) }), 200);
}

export const enrolPicture = (t: { secret: string; otpauth_uri: string }) => ({
  secret: t.secret,
  qrSvg: qrSvg(t.otpauth_uri, "QR code of the key for your authenticator app"),
});

/** Security headers of every login and error page; `form-action` must allow the redirect's origin too. */

/**
 * The project whose console this login is for, or undefined for any other client: the login page shows its ID,
 * which no other project can share (its name is anyone's to choose), so that a link to another tenant's console
 * sign-in shows as one.
 */
export const consoleProject = (clientId: string, projectId: string) =>
  clientId === consoleClientId(projectId) ? projectId : undefined;

/**
 * A sign-in the project's policy stopped (domain/accounts/signin_policy.ts): the login request is held for the
 * user, and the page offers to mail the verification link (POST /authorize/verify/resend, under a fresh CSRF
 * token when the page's own is not at hand).
 */
export async function verifyFirst(
  c: Context<AppEnv>,
  p: {
    nonce: string;
    req: { id: string; project_id: string; project_name: string };
    csrf?: string;
    who: { userId: string; email: string | null };
  },
): Promise<Response> {
  const { sql, config } = c.get("deps");
  await requireVerification(sql, p.req.id, p.who.userId);
  return c.html(
    verifyFirstPage({
      nonce: p.nonce,
      action: `${config.publicUrl}/authorize/verify/resend`,
      csrf: p.csrf ?? await newCsrf(sql, p.req.id),
      ...(await brandFor(c, p.req.project_id, p.req.project_name)),
      requestId: p.req.id,
      email: p.who.email ?? "",
    }),
    403,
  );
}

/**
 * The way on after a good password (a login's, or one just chosen at sign-up): the second factor's page when the
 * project asks for one, else the code, as `finishLogin` gives it.
 */
export async function continueAfterPassword(
  c: Context<AppEnv>,
  p: {
    nonce: string;
    req: LoginRequest & { project_name: string };
    csrf: string;
    userId: string;
    step: SecondStep;
  },
): Promise<Response> {
  const { nonce, req, csrf, userId, step } = p;
  if (step !== "none") return await showSecondStep(c, { nonce, req, csrf, userId, step });
  const done = await finishLogin(c, { nonce, req, csrf, userId, amr: AMR_PASSWORD });
  return done instanceof Response ? done : c.redirect(done.location, 303);
}

/** Where the browser of a login held for a verified address sees its page (the passkey script goes there). */
export const verifyFirstUrl = (c: Context<AppEnv>, requestId: string) =>
  `${c.get("deps").config.publicUrl}/authorize/verify/first?${new URLSearchParams({
    request_id: requestId,
  })}`;

/**
 * The end of a sign-in page: the code and the single sign-on cookie (domain/signin/sso.ts `completeLogin`), or,
 * when the project's policy stops the user at the code, the "verify your address first" page.
 */
export async function finishLogin(
  c: Context<AppEnv>,
  p: {
    nonce: string;
    req: LoginRequest;
    csrf?: string;
    userId: string;
    providerId?: string | null;
    amr?: string[] | null;
  },
): Promise<{ location: string } | Response> {
  const { sql, config } = c.get("deps");
  const sso = ssoCookie(config.publicUrl);
  try {
    const done = await completeLogin(
      sql,
      p.req,
      p.userId,
      getCookie(c, sso.name),
      ssoSettings(c),
      requestInfo(c),
      p.providerId ?? null,
      p.amr ?? null,
    );
    if (done.browser) setCookie(c, sso.name, done.browser, sso.options(config.ssoTtl));
    return { location: done.location };
  } catch (err) {
    if (err instanceof ConsentRequired) {
      const hold = { user_id: p.userId, amr: p.amr ?? null, provider_id: p.providerId ?? null, sso: false };
      return { location: await askConsent(c, p.req.id, hold) };
    }
    if (!(err instanceof EmailNotVerified)) throw err;
    return await verifyFirst(c, { nonce: p.nonce, req: p.req, csrf: p.csrf, who: err });
  }
}

/**
 * A third-party client's code waits for the user's consent: the login request is held for the user (how they
 * signed in, kept for the code), and the browser goes to the consent page. Returns that page's URL.
 */
export async function askConsent(
  c: Context<AppEnv>,
  requestId: string,
  hold: { user_id: string; amr: string[] | null; provider_id: string | null; sso: boolean },
): Promise<string> {
  await holdLoginForConsent(c.get("deps").sql, requestId, hold);
  return consentUrl(c, requestId);
}

/** The consent page of a held login request. */
export const consentUrl = (c: Context<AppEnv>, requestId: string) =>
  `${c.get("deps").config.publicUrl}/authorize/consent?${new URLSearchParams({ request_id: requestId })}`;
