/**
 * The pages of mailed links, under /authorize so that the login form's browser cookie reaches them: "Forgot your
 * password?" (GET and POST /authorize/reset), choosing a password from a reset or invitation link (GET and POST
 * /authorize/password) and confirming an address (GET and POST /authorize/verify). Each form carries a CSRF
 * token derived from the browser's cookie (which a page of another site can neither read nor set); a link's
 * token travels in the form, and every page has the login page's headers (CSP without script, no referrer).
 */
import { passwordIssue } from "../../domain/accounts/passwords.ts";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie, setCookie } from "hono/cookie";
import {
  type LinkRow,
  linkState,
  LinkUnusable,
  requestPasswordReset,
  resetContext,
  resumableRequest,
  setPasswordWithLink,
  signInBrowser,
  verifyWithLink,
} from "../../domain/accounts/account_links.ts";
import { heldForVerification, resendForLogin } from "../../domain/accounts/email_changes.ts";
import { duration } from "../../domain/events/mail_templates.ts";
import { secondStepFor } from "../../domain/factors/second_step.ts";
import {
  choosePasswordPage,
  passwordSetPage,
  resetRequestPage,
  resetSentPage,
  staleLinkPage,
  verifiedPage,
  verifyPage,
  verifySentPage,
} from "./views/mail_links.ts";
import { AuthorizePageError, authorizeUrlOf, loginRequestFor } from "../../domain/signin/login.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { brandFor } from "./kit/brand.ts";
import { browserCookie } from "./kit/cookies.ts";
import { linkSettings } from "../settings.ts";
import { browserOf, csrfMatches, csrfOf } from "./kit/csrf.ts";
import { page, type PageStatus, startPage } from "./kit/headers.ts";
import { finishLogin, verifyFirst } from "./flow.ts";
import { retryAfter } from "./kit/errors.ts";
import { errorPage, showError } from "./kit/errors.ts";

const FORM_LIMIT = 16 * 1024;
type Status = PageStatus;

const problem = (c: Context<AppEnv>, message: string, status: Status = 400) =>
  page(c, (nonce) => errorPage({ nonce, message }), status);

/** The form's fields, or null when it was not sent as a form or its CSRF token does not match this browser. */
async function formOf(c: Context<AppEnv>): Promise<Record<string, string> | null> {
  if (!/^application\/x-www-form-urlencoded(;|$)/i.test(c.req.header("content-type") ?? "")) return null;
  const form = Object.fromEntries(new URLSearchParams(await c.req.text()));
  return csrfMatches(c, form.csrf) ? form : null;
}

/**
 * The redirect URI the choose-password form may end at: the login page it continues, when this browser opened
 * it (the page's `form-action` must allow its origin, which Chrome checks through the redirect).
 */
async function continuedRedirect(c: Context<AppEnv>, link: LinkRow): Promise<string | undefined> {
  if (!link.authorization_request_id) return undefined;
  const { sql, config } = c.get("deps");
  const browser = getCookie(c, browserCookie(config.publicUrl.startsWith("https:")));
  const req = await resumableRequest(sql, link.authorization_request_id, browser, config.publicUrl);
  return req && req.project_id === link.project_id ? req.redirect_uri : undefined;
}

/**
 * "Back to sign-in": the login request this browser opened, asked again as the application asked it (see
 * `authorizeUrlOf`), or null when there is none still open for this browser.
 */
async function signInAgainUrl(
  c: Context<AppEnv>,
  requestId: string | null | undefined,
): Promise<string | null> {
  if (!requestId) return null;
  const { sql, config } = c.get("deps");
  const browser = getCookie(c, browserCookie(config.publicUrl.startsWith("https:")));
  const req = await resumableRequest(sql, requestId, browser, config.publicUrl);
  return req ? authorizeUrlOf(req, config.publicUrl) : null;
}

const NOTHING_TO_CONFIRM = "There is nothing to confirm for this sign-in. Go back and sign in again.";
const EXPIRED_FORM = "This page has expired or was not opened in this browser. Open the link again.";

/** A page for a link that does not work: a way to a new one when its project is known. */
async function staleLink(c: Context<AppEnv>, token: string, verification: boolean) {
  const state = await linkState(c.get("deps").sql, token, [
    "password_reset",
    "invitation",
    "email_verification",
  ]);
  const { publicUrl } = c.get("deps").config;
  const newLinkUrl = state.state === "unknown" ? null : `${publicUrl}/authorize/reset?${new URLSearchParams({
    project_id: state.state === "stale" ? state.projectId : state.link.project_id,
  })}`;
  return page(c, (nonce) => staleLinkPage({ nonce, newLinkUrl, verification }), 400);
}

/** GET /authorize/reset */
async function showReset(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const browser = browserOf(c);
  const ctx = await resetContext(
    sql,
    { requestId: c.req.query("request_id"), projectId: c.req.query("project_id") },
    browser,
    config.publicUrl,
  );
  if (!ctx) {
    return problem(
      c,
      "Open this page from the sign-in page of the application: choose “Forgot your password?”.",
    );
  }
  const brand = await brandFor(c, ctx.projectId, ctx.projectName);
  const backUrl = await signInAgainUrl(c, ctx.requestId);
  return page(c, (nonce) =>
    resetRequestPage({
      nonce,
      action: `${config.publicUrl}/authorize/reset`,
      csrf: csrfOf(browser),
      ...brand,
      projectId: ctx.projectId,
      requestId: ctx.requestId,
      backUrl,
    }));
}

/** POST /authorize/reset */
async function submitReset(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const form = await formOf(c);
  if (!form) return problem(c, EXPIRED_FORM, 403);
  const browser = getCookie(c, browserCookie(config.publicUrl.startsWith("https:")));
  const ctx = await resetContext(
    sql,
    { requestId: form.request_id, projectId: form.project_id },
    browser,
    config.publicUrl,
  );
  if (!ctx) return problem(c, "Open this page from the sign-in page of the application.");
  const email = (form.email ?? "").trim();
  const brand = await brandFor(c, ctx.projectId, ctx.projectName);
  const backUrl = await signInAgainUrl(c, ctx.requestId);
  const again = (error: string, status: Status) =>
    page(c, (nonce) =>
      resetRequestPage({
        nonce,
        action: `${config.publicUrl}/authorize/reset`,
        csrf: form.csrf,
        ...brand,
        projectId: ctx.projectId,
        requestId: ctx.requestId,
        email: email.slice(0, 100),
        error,
        backUrl,
      }), status);
  if (!email || email.length > 100 || !/^[^\s@\0]+@[^\s@\0]+$/.test(email)) {
    return again("Enter the email address of your account.", 400);
  }
  try {
    await requestPasswordReset(sql, linkSettings(c), {
      projectId: ctx.projectId,
      email,
      authorizationRequestId: ctx.requestId,
      request: requestInfo(c),
    });
  } catch (err) {
    const wait = retryAfter(err);
    if (wait === null) throw err;
    c.header("Retry-After", wait);
    return again(`Too many requests from your network. Try again in ${wait} seconds.`, 429);
  }
  return page(c, (nonce) =>
    resetSentPage({
      nonce,
      ...brand,
      validFor: duration(config.passwordResetTtl),
      backUrl,
    }));
}

/** GET /authorize/password */
async function showPassword(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const token = c.req.query("token") ?? "";
  const state = await linkState(sql, token, ["password_reset", "invitation"]);
  if (state.state !== "usable") return await staleLink(c, token, false);
  const browser = browserOf(c);
  const brand = await brandFor(c, state.link.project_id, state.link.project_name);
  return page(
    c,
    (nonce) =>
      choosePasswordPage({
        nonce,
        action: `${config.publicUrl}/authorize/password`,
        csrf: csrfOf(browser),
        ...brand,
        email: state.link.email,
        token,
        invitation: state.link.purpose === "invitation",
      }),
    200,
    await continuedRedirect(c, state.link),
  );
}

/** POST /authorize/password */
async function submitPassword(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const form = await formOf(c);
  if (!form) return problem(c, EXPIRED_FORM, 403);
  const token = form.token ?? "";
  const password = form.password ?? "";
  const state = await linkState(sql, token, ["password_reset", "invitation"]);
  if (state.state !== "usable") return await staleLink(c, token, false);
  const issue = passwordIssue(password, state.link.email);
  if (issue) {
    const brand = await brandFor(c, state.link.project_id, state.link.project_name);
    return page(
      c,
      (nonce) =>
        choosePasswordPage({
          nonce,
          action: `${config.publicUrl}/authorize/password`,
          csrf: form.csrf,
          ...brand,
          email: state.link.email,
          token,
          invitation: state.link.purpose === "invitation",
          error: issue,
        }),
      400,
      await continuedRedirect(c, state.link),
    );
  }
  let link;
  try {
    link = await setPasswordWithLink(sql, token, password, requestInfo(c), c.get("deps").config.publicUrl);
  } catch (err) {
    if (err instanceof LinkUnusable) return await staleLink(c, token, false);
    throw err;
  }
  // The login page the reset was asked from, when this browser opened it: it goes on after the password.
  const secure = config.publicUrl.startsWith("https:");
  const browser = getCookie(c, browserCookie(secure));
  const sso = ssoCookie(config.publicUrl);
  const resumed = link.authorization_request_id
    ? await resumableRequest(sql, link.authorization_request_id, browser, config.publicUrl)
    : null;
  const req = resumed && resumed.project_id === link.project_id ? resumed : null;
  // A link proves the mailbox, not a second factor: a user who has one (or must enrol one: the project's
  // policy, the organization's the login asks for, or its acr_values) is not signed in by it, and signs in
  // with the new password and the factor.
  const step = await secondStepFor(
    sql,
    { project_id: link.project_id, acr: req?.acr ?? null, organization_id: req?.organization_id ?? null },
    link.user_id,
  );
  if (step !== "none") {
    const brand = await brandFor(c, link.project_id, link.project_name);
    const backUrl = await signInAgainUrl(c, link.authorization_request_id);
    return page(c, (nonce) => passwordSetPage({ nonce, ...brand, signedIn: false, backUrl }));
  }
  // Signed in: the login page goes on; otherwise the browser gets a single sign-on session of the project.
  if (req) {
    // The link verified the address, so the project's policy lets the user in; were it not so, its page.
    let done;
    try {
      done = await finishLogin(c, { nonce: startPage(c, req.redirect_uri), req, userId: link.user_id });
    } catch (err) {
      // A sign-in to an organization the user is not a member of, say: its page (the password stays set).
      if (err instanceof AuthorizePageError) return showError(c, err);
      throw err;
    }
    if (done instanceof Response) return done;
    c.header("Cache-Control", "no-store");
    return c.redirect(done.location, 303);
  }
  const fresh = await signInBrowser(sql, link.project_id, link.user_id, getCookie(c, sso.name), {
    idleTtl: config.ssoIdleTtl,
    ttl: config.ssoTtl,
  });
  setCookie(c, sso.name, fresh, sso.options(config.ssoTtl));
  const brand = await brandFor(c, link.project_id, link.project_name);
  const accountUrl = `${config.publicUrl}/account?${new URLSearchParams({ project: link.project_id })}`;
  return page(c, (nonce) => passwordSetPage({ nonce, ...brand, accountUrl }));
}

/** POST /authorize/verify/resend: From the login page's "confirm your address first": the login form's CSRF token, bound to its request. */
async function submitVerifyResend(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  if (!/^application\/x-www-form-urlencoded(;|$)/i.test(c.req.header("content-type") ?? "")) {
    return problem(c, EXPIRED_FORM, 403);
  }
  const form = Object.fromEntries(new URLSearchParams(await c.req.text()));
  const browser = getCookie(c, browserCookie(config.publicUrl.startsWith("https:")));
  let req;
  try {
    req = await loginRequestFor(sql, form, browser, config.publicUrl);
  } catch (err) {
    if (err instanceof AuthorizePageError) return problem(c, err.message);
    throw err;
  }
  const email = await resendForLogin(sql, linkSettings(c), req.id, requestInfo(c));
  if (!email) return problem(c, NOTHING_TO_CONFIRM);
  const brand = await brandFor(c, req.project_id, req.project_name);
  const backUrl = await signInAgainUrl(c, req.id);
  return page(c, (nonce) =>
    verifySentPage({
      nonce,
      ...brand,
      backUrl,
      email,
      validFor: duration(config.emailVerificationTtl),
    }));
}

/** GET /authorize/verify/first: a login held for a verified address (where the passkey script goes). */
async function showVerifyFirst(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const browser = getCookie(c, browserCookie(config.publicUrl.startsWith("https:")));
  const req = await resumableRequest(sql, c.req.query("request_id") ?? "", browser, config.publicUrl);
  const held = req ? await heldForVerification(sql, req.id) : null;
  if (!req || !held) return problem(c, NOTHING_TO_CONFIRM);
  return await verifyFirst(c, { nonce: startPage(c, req.redirect_uri), req, who: held });
}

/** GET /authorize/verify */
async function showVerify(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const token = c.req.query("token") ?? "";
  const state = await linkState(sql, token, ["email_verification"]);
  if (state.state !== "usable") return await staleLink(c, token, true);
  const browser = browserOf(c);
  const brand = await brandFor(c, state.link.project_id, state.link.project_name);
  return page(c, (nonce) =>
    verifyPage({
      nonce,
      action: `${config.publicUrl}/authorize/verify`,
      csrf: csrfOf(browser),
      ...brand,
      email: state.link.email,
      token,
    }));
}

/** POST /authorize/verify */
async function submitVerify(c: Context<AppEnv>): Promise<Response> {
  const form = await formOf(c);
  if (!form) return problem(c, EXPIRED_FORM, 403);
  const token = form.token ?? "";
  try {
    const link = await verifyWithLink(c.get("deps").sql, token, requestInfo(c));
    const brand = await brandFor(c, link.project_id, link.project_name);
    return page(c, (nonce) => verifiedPage({ nonce, ...brand, email: link.email }));
  } catch (err) {
    if (err instanceof LinkUnusable) return await staleLink(c, token, true);
    throw err;
  }
}

export function registerAccountPages(app: App) {
  for (
    const path of ["/authorize/reset", "/authorize/password", "/authorize/verify", "/authorize/verify/resend"]
  ) {
    app.post(
      path,
      bodyLimit({
        maxSize: FORM_LIMIT,
        onError: (c) => problem(c as Context<AppEnv>, "The form is too large."),
      }),
    );
  }

  app.get("/authorize/reset", showReset);
  app.post("/authorize/reset", submitReset);
  app.get("/authorize/password", showPassword);
  app.post("/authorize/password", submitPassword);
  app.post("/authorize/verify/resend", submitVerifyResend);
  app.get("/authorize/verify/first", showVerifyFirst);
  app.get("/authorize/verify", showVerify);
  app.post("/authorize/verify", submitVerify);
}
