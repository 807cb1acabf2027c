/** GET /authorize (RFC 6749 §4.1.1) shows the login page; POST /authorize checks it and redirects with a code. */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie, setCookie } from "hono/cookie";
import { encodeBase64Url } from "../../domain/shared/base64.ts";
import { consoleClientId } from "../../domain/console/client.ts";
import { DEVICE_TTL } from "../../domain/signin/devices.ts";
import {
  AuthorizePageError,
  AuthorizeRedirectError,
  checkPassword,
  loginRequestFor,
  redirectWith,
  startLogin,
  validateAuthorizeRequest,
} from "../../domain/signin/login.ts";
import { AppError } from "../../domain/shared/errors.ts";
import { newSecret } from "../../domain/shared/ids.ts";
import { completeLogin, signInSilently, type SsoSettings } from "../../domain/signin/sso.ts";
import { loginButtons } from "../../domain/federation/federation.ts";
import { ssoCookie } from "./kit/cookies.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { errorPage, loginPage } from "./views/login.ts";
import { verifyFirstPage } from "./views/mail_links.ts";
import { requireVerification } from "../../domain/accounts/email_changes.ts";
import { showSecondStep } from "./second_step.ts";
import { normalizeEmail } from "../../domain/accounts/emails.ts";
import { AMR_PASSWORD } from "../../domain/oauth/acr.ts";

/** Binds a login form to the browser (the password's and the second step's). On https it is a `__Host-` cookie, which no sibling domain can plant. */
export const browserCookie = (secure: boolean) => secure ? "__Host-acs_browser" : "acs_browser";
/** Names a browser that signed in before, so that its failed logins count apart (see domain/signin/devices.ts). */
export const deviceCookie = (secure: boolean) => secure ? "__Host-acs_device" : "acs_device";
/** Both cookies are sent only to /authorize, except that a `__Host-` cookie must have Path=/. */
export const cookieOptions = (secure: boolean, maxAge: number) =>
  ({ httpOnly: true, sameSite: "Lax", secure, path: secure ? "/" : "/authorize", maxAge }) as const;
/** A login form is a few fields; anything larger is refused before it is read. */
export const LOGIN_FORM_LIMIT = 16 * 1024;
const INVALID = "Invalid email or password.";

/** Security headers of every login and error page; `form-action` must allow the redirect's origin too. */

/**
 * The project whose console this login is for, or undefined for any other client: the login page shows its ID,
 * which no other project can share (its name is anyone's to choose), so that a link to another tenant's console
 * sign-in shows as one.
 */
export const consoleProject = (clientId: string, projectId: string) =>
  clientId === consoleClientId(projectId) ? projectId : undefined;

export function pageHeaders(c: Context<AppEnv>, nonce: string, redirectUri?: string) {
  let formAction = "'self'";
  if (redirectUri) {
    // Chrome follows form-action through the redirect after the POST, so the redirect URI's origin must be
    // allowed. Browsers cannot parse an IPv6 literal in a source expression: for those, the scheme.
    const url = new URL(redirectUri);
    formAction += url.hostname.startsWith("[") ? ` ${url.protocol}` : ` ${url.origin}`;
  }
  c.header(
    "Content-Security-Policy",
    `default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'nonce-${nonce}'; img-src 'self'; ` +
      `form-action ${formAction}; ` +
      "frame-ancestors 'none'; base-uri 'none'",
  );
  c.header("X-Frame-Options", "DENY");
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", "no-store");
  c.header("Pragma", "no-cache");
}

export function showError(c: Context<AppEnv>, err: AuthorizePageError) {
  const nonce = newNonce();
  pageHeaders(c, nonce);
  return c.html(errorPage({ nonce, message: err.message }), err.status as 400 | 413 | 429);
}

/** The `Retry-After` of a 429 `too_many_requests`, or null for any other error. */
export function retryAfter(err: unknown): string | null {
  return err instanceof AppError && err.code === "too_many_requests" ? String(err.retryAfter ?? 1) : null;
}

/**
 * The one place where /authorize's errors become answers: a request error the redirect URI can be trusted
 * with goes back to it (RFC 6749 §4.1.2.1); anything about the client or the page is shown on our own page;
 * too many login pages is a 429 page. Anything else is a server error, answered by the app's error handler.
 */
export function pageErrors(handler: (c: Context<AppEnv>) => Promise<Response>) {
  return async (c: Context<AppEnv>): Promise<Response> => {
    try {
      return await handler(c);
    } catch (err) {
      if (err instanceof AuthorizeRedirectError) {
        c.header("Cache-Control", "no-store");
        const params = { error: err.code, error_description: err.message, state: err.state };
        return c.redirect(
          redirectWith(err.redirectUri, { ...params, iss: c.var.deps.config.publicUrl }),
          302,
        );
      }
      if (err instanceof AuthorizePageError) return showError(c, err);
      const wait = retryAfter(err);
      if (wait === null) throw err;
      c.header("Retry-After", wait);
      return showError(
        c,
        new AuthorizePageError(`Too many sign-in pages opened. Try again in ${wait} seconds.`, 429),
      );
    }
  };
}

export const newNonce = () => encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));

function queryParams(c: Context<AppEnv>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of new URL(c.req.url).searchParams) (out[k] ??= []).push(v);
  return out;
}

/** The login form's page and the cookie it is bound to, for the service's public URL. */
export function formSettings(c: Context<AppEnv>) {
  const { publicUrl } = c.var.deps.config;
  const secure = publicUrl.startsWith("https:");
  return { action: `${publicUrl}/authorize`, secure, cookieName: browserCookie(secure) };
}

/** Single sign-on's settings, from the configuration. */
export function ssoSettings(c: Context<AppEnv>): SsoSettings {
  const { config } = c.var.deps;
  return {
    idleTtl: config.ssoIdleTtl,
    ttl: config.ssoTtl,
    issuer: config.publicUrl,
    codeTtl: config.authCodeTtl,
  };
}

/** The "Forgot your password?" page of this login page. */
const resetUrl = (c: Context<AppEnv>, requestId: string) =>
  `${c.var.deps.config.publicUrl}/authorize/reset?${new URLSearchParams({ request_id: requestId })}`;

export function registerAuthorizeRoutes(app: App) {
  app.get(
    "/authorize",
    pageErrors(async (c) => {
      const { sql } = c.var.deps;
      const { action, secure, cookieName } = formSettings(c);
      const valid = await validateAuthorizeRequest(sql, queryParams(c), c.var.deps.config.publicUrl);
      // OpenID requests: a browser signed in to the project gets its code without the form.
      const sso = getCookie(c, ssoCookie(c.var.deps.config.publicUrl).name);
      const silent = await signInSilently(sql, valid, sso, ssoSettings(c), requestInfo(c));
      if (typeof silent === "string") {
        c.header("Cache-Control", "no-store");
        return c.redirect(silent, 302);
      }
      let browser = getCookie(c, cookieName);
      if (!browser || !/^[A-Za-z0-9_-]{43}$/.test(browser)) browser = newSecret();
      setCookie(c, cookieName, browser, cookieOptions(secure, 86_400));
      const { requestId, csrf } = await startLogin(sql, valid, browser, requestInfo(c));
      if (silent !== null) {
        // Step-up (acr_values, max_age): the browser's user confirms with their second factor.
        const nonce = newNonce();
        pageHeaders(c, nonce, valid.redirectUri);
        return await showSecondStep(c, {
          nonce,
          req: {
            id: requestId,
            project_id: valid.client.project_id,
            project_name: valid.client.project_name,
          },
          csrf,
          userId: silent.stepUp.userId,
          step: "code",
          amr: silent.stepUp.amr,
        });
      }
      const providers = await loginButtons(sql, valid.client.project_id);
      const nonce = newNonce();
      pageHeaders(c, nonce, valid.redirectUri);
      return c.html(
        loginPage({
          nonce,
          action,
          projectName: valid.client.project_name,
          consoleOf: consoleProject(valid.client.id, valid.client.project_id),
          requestId,
          csrf,
          email: valid.oidc?.loginHint ?? undefined,
          providers,
          resetUrl: resetUrl(c, requestId),
        }),
        200,
      );
    }),
  );

  app.post(
    "/authorize",
    bodyLimit({
      maxSize: LOGIN_FORM_LIMIT,
      onError: (c) =>
        showError(c as Context<AppEnv>, new AuthorizePageError("The sign-in form is too large.", 413)),
    }),
  );
  app.post(
    "/authorize",
    pageErrors(async (c) => {
      const { sql, config } = c.var.deps;
      const { action, secure, cookieName } = formSettings(c);
      const contentType = c.req.header("content-type") ?? "";
      if (!/^application\/x-www-form-urlencoded(;|$)/i.test(contentType)) {
        throw new AuthorizePageError("The sign-in form was not sent as a form.");
      }
      const form = Object.fromEntries(new URLSearchParams(await c.req.text()));
      const req = await loginRequestFor(sql, form, getCookie(c, cookieName), config.publicUrl);
      const nonce = newNonce();
      pageHeaders(c, nonce, req.redirect_uri);
      // A failed or throttled login shows the form again, with its message.
      const again = async (error: string, status: 400 | 429) =>
        c.html(
          loginPage({
            providers: await loginButtons(sql, req.project_id),
            nonce,
            action,
            projectName: req.project_name,
            consoleOf: consoleProject(req.client_id, req.project_id),
            requestId: form.request_id,
            csrf: form.csrf,
            email: (form.email ?? "").slice(0, 100),
            error,
            resetUrl: resetUrl(c, form.request_id),
          }),
          status,
        );
      const email = form.email ?? "";
      const password = form.password ?? "";
      if (!email || !password || email.length > 100 || password.length > 1024) {
        return await again(INVALID, 400);
      }
      let signedIn;
      try {
        signedIn = await checkPassword(sql, req, {
          email,
          password,
          device: getCookie(c, deviceCookie(secure)),
          request: requestInfo(c),
        });
      } catch (err) {
        const wait = retryAfter(err);
        if (wait === null) throw err;
        c.header("Retry-After", wait);
        return await again(`Too many failed attempts. Try again in ${wait} seconds.`, 429);
      }
      if (!signedIn) return await again(INVALID, 400);
      setCookie(c, deviceCookie(secure), signedIn.device, cookieOptions(secure, DEVICE_TTL));
      if (signedIn.unverified) {
        // The project wants a verified address: the page offers to mail the link (docs/email.md).
        await requireVerification(sql, req.id, signedIn.userId);
        return c.html(
          verifyFirstPage({
            nonce,
            action: `${config.publicUrl}/authorize/verify/resend`,
            csrf: form.csrf,
            projectName: req.project_name,
            requestId: req.id,
            email: normalizeEmail(email)!,
          }),
          403,
        );
      }
      // A second factor (its code, or enrolling one) before any code is issued.
      if (signedIn.secondStep !== "none") {
        return await showSecondStep(c, {
          nonce,
          req,
          csrf: form.csrf,
          userId: signedIn.userId,
          step: signedIn.secondStep,
        });
      }
      const sso = ssoCookie(config.publicUrl);
      const done = await completeLogin(
        sql,
        req,
        signedIn.userId,
        getCookie(c, sso.name),
        ssoSettings(c),
        requestInfo(c),
        null,
        AMR_PASSWORD,
      );
      if (done.browser) setCookie(c, sso.name, done.browser, sso.options(config.ssoTtl));
      return c.redirect(done.location, 303);
    }),
  );

  // Documented for the reference page; the handlers above do their own checks, since their errors are pages.
  app.openAPIRegistry.registerPath({
    method: "get",
    path: "/authorize",
    operationId: "authorize",
    tags: ["Login"],
    summary: "Start a browser login (authorization code with PKCE)",
    description:
      "Open this URL in the user's browser. Errors about the client or the redirect URI (unknown or " +
      "inactive client, inactive project, a redirect URI not registered byte for byte) show an error page and " +
      "never redirect. Other errors redirect to `redirect_uri` with `error`, `error_description`, `state` and " +
      "`iss` (RFC 6749 §4.1.2.1, RFC 9207). A valid request shows the login page; a successful login redirects " +
      "(303) to `redirect_uri` with `code`, `state` and `iss`. With `openid` in `scope`, a browser already " +
      "signed in to the project (single sign-on) is redirected (302) with a code at once.",
    request: {
      query: z.object({
        client_id: z.string().openapi({ description: "The client's id" }),
        redirect_uri: z.string().openapi({ description: "Registered in the project, matched byte for byte" }),
        response_type: z.literal("code"),
        code_challenge: z.string().openapi({
          description: "BASE64URL(SHA-256(code_verifier)), 43 characters",
        }),
        code_challenge_method: z.literal("S256"),
        state: z.string().optional().openapi({ description: "Returned unchanged; recommended against CSRF" }),
        scope: z.string().optional().openapi({
          description: "With `openid`: an OpenID Connect request (ID token, single sign-on); `profile` and " +
            "`email` add claims; other scopes are ignored. Without `openid` the request is plain OAuth.",
        }),
        nonce: z.string().optional().openapi({ description: "Echoed in the ID token" }),
        prompt: z.enum(["login", "none"]).optional().openapi({
          description: "`login` shows the form even when signed in; `none` never shows it (without a " +
            "session: `error=login_required`). Other values: `invalid_request`.",
        }),
        max_age: z.string().optional().openapi({
          description: "Seconds: an older login shows the form again, or for a user with a second factor " +
            "asks only for its code (`invalid_request` unless a non-negative integer)",
        }),
        login_hint: z.string().optional().openapi({ description: "Pre-fills the email field" }),
        acr_values: z.string().optional().openapi({
          description:
            "`2` asks for a second factor: a signed-in user with one gives its code again (step-up), " +
            "one without enrols after the password; the ID token's `acr` says what was reached (`1` or `2`). " +
            "Ignored by a project whose `mfa` policy is `off`.",
        }),
      }),
    },
    responses: {
      200: { description: "The login page" },
      302: { description: "A request error, sent back to the redirect URI" },
      400: {
        description: "An error page: the client or redirect URI cannot be trusted",
      },
      429: { description: "Too many login pages opened from one address: an error page; see `Retry-After`" },
    },
  });
  app.openAPIRegistry.registerPath({
    method: "post",
    path: "/authorize",
    operationId: "submitLogin",
    tags: ["Login"],
    summary: "Submit the login form",
    description:
      "Posted by the login page, with the CSRF token bound to the browser's cookie. A failed login " +
      'answers the page again with "Invalid email or password" whatever the cause (no account enumeration); ' +
      "repeated failures for one account or one address answer 429 with `Retry-After`.",
    request: {
      body: {
        content: {
          "application/x-www-form-urlencoded": {
            schema: z.object({
              email: z.string(),
              password: z.string(),
              request_id: z.string(),
              csrf: z.string(),
            }),
          },
        },
      },
    },
    responses: {
      200: {
        description:
          "A right password of a user with a second factor: the page asking for its code, posted " +
          "to `/authorize/mfa`",
      },
      303: { description: "Success: to `redirect_uri` with `code`, `state` and `iss`" },
      400: {
        description: "The page again with a generic error, or an error page",
      },
      403: {
        description:
          "The right password in a project with `require_verified_email` whose user's address is not " +
          "verified: a page that offers to mail the verification link",
      },
      413: { description: "A form larger than 16 KiB: an error page, sent before the body is read" },
      429: {
        description: "Too many failed logins; see `Retry-After`",
      },
    },
  });
}
