/** GET /authorize (RFC 6749 §4.1.1) shows the login page; POST /authorize checks it and redirects with a code. */
import { type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { DEVICE_TTL } from "../../domain/signin/devices.ts";
import {
  checkPassword,
  loginRequestFor,
  startLogin,
  validateAuthorizeRequest,
} from "../../domain/signin/login.ts";
import { newSecret } from "../../domain/shared/ids.ts";
import { signInSilently } from "../../domain/signin/sso.ts";
import { EmailNotVerified } from "../../domain/accounts/signin_policy.ts";
import {
  companySignInOffered,
  FederationFailure,
  loginButtons,
  organizationProviderOf,
  providerForAddress,
  startFederation,
} from "../../domain/federation/federation.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { brandFor } from "./kit/brand.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { loginPage } from "./views/login.ts";
import { normalizeEmail } from "../../domain/accounts/emails.ts";
import { askConsent, continueAfterPassword, showSecondStep, verifyFirst } from "./flow.ts";
import { consoleProject } from "./flow.ts";
import { cookieOptions, deviceCookie } from "./kit/cookies.ts";
import { formLimit, formSettings, readForm } from "./kit/forms.ts";
import { startPage } from "./kit/headers.ts";
import { pageErrors, retryAfter } from "./kit/errors.ts";
import { providerSettings, ssoSettings } from "../settings.ts";
import { signupRule } from "../../domain/signup/signup.ts";
const INVALID = "Invalid email or password.";

/** `login_hint` of the query, when it is short enough to be an address (OpenID Connect Core §3.1.2.1). */
function loginHintOf(c: Context<AppEnv>): string | undefined {
  const hint = c.req.query("login_hint");
  return hint && hint.length <= 100 ? hint : undefined;
}

function queryParams(c: Context<AppEnv>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of new URL(c.req.url).searchParams) (out[k] ??= []).push(v);
  return out;
}

/** The "Forgot your password?" page of this login page. */
const resetUrl = (c: Context<AppEnv>, requestId: string) =>
  `${c.get("deps").config.publicUrl}/authorize/reset?${new URLSearchParams({ request_id: requestId })}`;

/** "Create an account" of this login page, bound to it as its form is, when the project's sign-up is on. */
async function signupUrl(c: Context<AppEnv>, projectId: string, requestId: string, csrf: string) {
  if (!(await signupRule(c.get("deps").sql, projectId))) return undefined;
  const query = new URLSearchParams({ request_id: requestId, csrf });
  return `${c.get("deps").config.publicUrl}/authorize/signup?${query}`;
}

/**
 * Straight to an upstream provider, from the login page's request: a 303 to the provider, or null when the
 * provider cannot be used now (`failure` then holds why, for the page).
 */
async function toProvider(
  c: Context<AppEnv>,
  providerId: string,
  form: { request_id: string; csrf: string },
  /** The browser's cookie: the request's, or the one this answer sets (a first visit). */
  browser: string | undefined,
  loginHint?: string,
): Promise<{ response: Response } | { failure: string }> {
  try {
    const location = await startFederation(
      c.get("deps").sql,
      providerSettings(c.get("deps")),
      providerId,
      form,
      browser,
      requestInfo(c),
      loginHint,
    );
    c.header("Cache-Control", "no-store");
    c.header("Referrer-Policy", "no-referrer");
    return { response: c.redirect(location, 303) };
  } catch (err) {
    if (err instanceof FederationFailure) return { failure: err.message };
    throw err;
  }
}

/** What the login page shows of organizations: their providers' buttons and the company sign-in. */
async function organizationOptions(c: Context<AppEnv>, projectId: string, organizationId: string | null) {
  const { sql } = c.get("deps");
  return {
    providers: await loginButtons(sql, projectId, organizationId),
    companySignIn: await companySignInOffered(sql, projectId),
  };
}

/** GET /authorize: a request checked, then single sign-on, a step-up's second step, or the login page. */
async function showLogin(c: Context<AppEnv>): Promise<Response> {
  const { sql } = c.get("deps");
  const { action, secure, cookieName } = formSettings(c);
  const valid = await validateAuthorizeRequest(sql, queryParams(c), c.get("deps").config.publicUrl, {
    allowPrivate: c.get("deps").config.webhookAllowPrivateTargets,
    request: requestInfo(c),
  });
  // OpenID requests: a browser signed in to the project gets its code without the form.
  const sso = getCookie(c, ssoCookie(c.get("deps").config.publicUrl).name);
  let silent: Awaited<ReturnType<typeof signInSilently>> = null;
  let stopped: EmailNotVerified | null = null;
  try {
    silent = await signInSilently(sql, valid, sso, ssoSettings(c), requestInfo(c));
  } catch (err) {
    // The browser's session is of a user the project's policy stops: the page that asks for the address.
    if (!(err instanceof EmailNotVerified)) throw err;
    stopped = err;
  }
  if (typeof silent === "string") {
    c.header("Cache-Control", "no-store");
    return c.redirect(silent, 302);
  }
  let browser = getCookie(c, cookieName);
  if (!browser || !/^[A-Za-z0-9_-]{43}$/.test(browser)) browser = newSecret();
  setCookie(c, cookieName, browser, cookieOptions(secure, 86_400));
  const { requestId, csrf } = await startLogin(sql, valid, browser, requestInfo(c));
  const nonce = startPage(c, valid.redirectUri);
  const req = { id: requestId, project_id: valid.client.project_id, project_name: valid.client.project_name };
  if (stopped) return await verifyFirst(c, { nonce, req, csrf, who: stopped });
  if (silent !== null && "consent" in silent) {
    // Signed in by the browser's session, but a third-party client needs the user's consent first.
    const { userId, amr, providerId } = silent.consent;
    const hold = { user_id: userId, amr, provider_id: providerId, sso: true };
    c.header("Cache-Control", "no-store");
    return c.redirect(await askConsent(c, requestId, hold), 302);
  }
  if (silent !== null) {
    // Step-up (acr_values, max_age): the browser's user confirms with their second factor.
    const { userId, amr, providerId } = silent.stepUp;
    return await showSecondStep(c, { nonce, req, csrf, userId, step: "code", amr, providerId });
  }
  let error: string | undefined;
  if (valid.organization !== null) {
    // A sign-in to an organization with its own provider goes straight there (docs/organizations.md).
    const own = await organizationProviderOf(sql, valid.client.project_id, valid.organization.id);
    if (own !== null) {
      const sent = await toProvider(c, own, { request_id: requestId, csrf }, browser);
      if ("response" in sent) return sent.response;
      error = sent.failure;
    }
  }
  return c.html(
    loginPage({
      ...(await organizationOptions(c, valid.client.project_id, valid.organization?.id ?? null)),
      organizationName: valid.organization?.name,
      error,
      nonce,
      action,
      ...(await brandFor(c, valid.client.project_id, valid.client.project_name)),
      consoleOf: consoleProject(valid.client.id, valid.client.project_id),
      requestId,
      csrf,
      // A pre-fill only, so taken from a plain OAuth request too (the console's own sign-in sends one).
      email: valid.oidc?.loginHint ?? loginHintOf(c),
      resetUrl: resetUrl(c, requestId),
      signupUrl: await signupUrl(c, valid.client.project_id, requestId, csrf),
    }),
    200,
  );
}

type LoginForm = Record<string, string>;
type LoginRequest = Awaited<ReturnType<typeof loginRequestFor>>;

/** A failed or throttled login shows the form again, with its message. */
async function loginAgain(
  c: Context<AppEnv>,
  p: { nonce: string; req: LoginRequest; form: LoginForm; error: string; status: 400 | 429 },
): Promise<Response> {
  const { req, form } = p;
  return c.html(
    loginPage({
      ...(await organizationOptions(c, req.project_id, req.organization_id)),
      nonce: p.nonce,
      action: formSettings(c).action,
      ...(await brandFor(c, req.project_id, req.project_name)),
      consoleOf: consoleProject(req.client_id, req.project_id),
      requestId: form.request_id,
      csrf: form.csrf,
      email: (form.email ?? "").slice(0, 100),
      error: p.error,
      resetUrl: resetUrl(c, form.request_id),
      signupUrl: await signupUrl(c, req.project_id, form.request_id, form.csrf),
    }),
    p.status,
  );
}

/** POST /authorize: the password checked; then a verified address, a second step, or the code. */
async function submitLogin(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const { secure, cookieName } = formSettings(c);
  const form = await readForm(c);
  const req = await loginRequestFor(sql, form, getCookie(c, cookieName), config.publicUrl);
  const nonce = startPage(c, req.redirect_uri);
  const again = (error: string, status: 400 | 429) => loginAgain(c, { nonce, req, form, error, status });
  const email = form.email ?? "";
  const password = form.password ?? "";
  // An address alone ("Use my company's sign-in", or no password): its organization's own provider, if any.
  if (email && email.length <= 100 && (form.company === "1" || !password)) {
    const providerId = await providerForAddress(sql, req, email);
    if (providerId !== null) {
      const sent = await toProvider(
        c,
        providerId,
        { request_id: form.request_id, csrf: form.csrf },
        getCookie(c, cookieName),
        email,
      );
      if ("response" in sent) return sent.response;
      return await again(sent.failure, 400);
    }
    if (form.company === "1") {
      return await again("No company sign-in is set up for this address. Sign in with your password.", 400);
    }
  }
  if (!email || !password || email.length > 100 || password.length > 1024) return await again(INVALID, 400);
  let signedIn;
  try {
    const device = getCookie(c, deviceCookie(secure));
    signedIn = await checkPassword(sql, req, { email, password, device, request: requestInfo(c) });
  } catch (err) {
    const wait = retryAfter(err);
    if (wait === null) throw err;
    c.header("Retry-After", wait);
    return await again(`Too many failed attempts. Try again in ${wait} seconds.`, 429);
  }
  if (!signedIn) return await again(INVALID, 400);
  setCookie(c, deviceCookie(secure), signedIn.device, cookieOptions(secure, DEVICE_TTL));
  return await afterPassword(c, { nonce, req, form, email, signedIn });
}

/** After a right password: the project's verified-address rule, the second step, or the code. */
async function afterPassword(
  c: Context<AppEnv>,
  p: {
    nonce: string;
    req: LoginRequest;
    form: LoginForm;
    email: string;
    signedIn: NonNullable<Awaited<ReturnType<typeof checkPassword>>>;
  },
): Promise<Response> {
  const { nonce, req, form, signedIn } = p;
  const userId = signedIn.userId;
  if (signedIn.unverified) {
    // The project wants a verified address: the page offers to mail the link (docs/email.md).
    const who = { userId, email: normalizeEmail(p.email) ?? null };
    return await verifyFirst(c, { nonce, req, csrf: form.csrf, who });
  }
  // A second factor (its code, or enrolling one) before any code is issued.
  return await continueAfterPassword(c, { nonce, req, csrf: form.csrf, userId, step: signedIn.secondStep });
}

// Documented for the reference page; the handlers do their own checks, since their errors are pages.
const authorizeDoc: RouteConfig = {
  method: "get",
  path: "/authorize",
  operationId: "authorize",
  tags: ["Login"],
  summary: "Start a browser login (authorization code with PKCE)",
  description:
    "Open this URL in the user's browser. Errors about the client or the redirect URI (unknown or " +
    "inactive client, inactive project, a redirect URI not registered byte for byte) show an error page and " +
    "never redirect. The page of an unregistered `redirect_uri` shows the URI received (escaped, at most 200 " +
    "characters), says it must match one registered for the client byte for byte, and names where to register " +
    "it: the console page of the client (when it has its own `redirect_uris`) or of its project, or the admin " +
    "API; it never lists the registered URIs. The request log's line carries `reason: " +
    "redirect_uri_not_registered`. Other errors redirect to `redirect_uri` with `error`, `error_description`, `state` and " +
    "`iss` (RFC 6749 §4.1.2.1, RFC 9207). A valid request shows the login page; a successful login redirects " +
    "(303) to `redirect_uri` with `code`, `state` and `iss`. With `openid` in `scope`, a browser already " +
    "signed in to the project (single sign-on) is redirected (302) with a code at once. A client marked " +
    "`third_party` first shows the user its consent page (`/authorize/consent`) unless the user's kept decision " +
    "covers what is asked; with `prompt=none`, `error=consent_required` instead.",
  request: {
    query: z.object({
      client_id: z.string().openapi({ description: "The client's id" }),
      redirect_uri: z.string().openapi({
        description: "Registered for the client, matched byte for byte: in its own `redirect_uris` when it " +
          "has any, else in its project's",
      }),
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
      resource: z.string().optional().openapi({
        description:
          "RFC 8707: the `indicator` of the one API (a resource of the client's project) the tokens " +
          "are for; `scope` then also names the permission codes of it wanted. Their `aud` is the indicator. " +
          "Unknown, another project's, not an absolute URI, with a fragment or repeated: `error=invalid_target`.",
      }),
      organization: z.string().optional().openapi({
        description: "The id of an organization of the client's project the user signs in to " +
          "(docs/organizations.md): the tokens carry it as `org_id`, with the member's organization roles. " +
          "Not an organization of the project: `error=invalid_request`. A user who is not a member of it is " +
          "shown a page saying so (with `prompt=none`: `error=access_denied`), never given a code.",
      }),
      prompt: z.enum(["login", "none"]).optional().openapi({
        description: "`login` shows the form even when signed in; `none` never shows it (without a " +
          "session: `error=login_required`; a third-party client without the user's consent: " +
          "`error=consent_required`). Other values: `invalid_request`.",
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
    403: {
      description:
        "The browser is signed in (single sign-on) as a user whose address is not verified, in a " +
        "project with `require_verified_email`: a page that offers to mail the verification link, and no " +
        "code (with `prompt=none`, `error=login_required` instead)",
    },
    429: { description: "Too many login pages opened from one address: an error page; see `Retry-After`" },
  },
};

const submitLoginDoc: RouteConfig = {
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
      description: "A right password of a user with a second factor: the page asking for its code, posted " +
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
};

export function registerAuthorizeRoutes(app: App) {
  app.get("/authorize", pageErrors(showLogin));
  app.post("/authorize", formLimit());
  app.post("/authorize", pageErrors(submitLogin));
  app.openAPIRegistry.registerPath(authorizeDoc);
  app.openAPIRegistry.registerPath(submitLoginDoc);
}
