/** GET /authorize (RFC 6749 §4.1.1) shows the login page; POST /authorize checks it and redirects with a code. */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getConnInfo } from "hono/deno";
import { getCookie, setCookie } from "hono/cookie";
import { encodeBase64Url } from "../domain/base64.ts";
import {
  AuthorizePageError,
  AuthorizeRedirectError,
  checkPassword,
  issueAuthorizationCode,
  loginRequestFor,
  LoginThrottled,
  redirectWith,
  startLogin,
  validateAuthorizeRequest,
} from "../domain/login.ts";
import { newSecret } from "../domain/ids.ts";
import type { App, AppEnv, Deps } from "./app.ts";
import { errorPage, loginPage } from "./login_page.ts";

const BROWSER_COOKIE = "acs_browser";
const INVALID = "Invalid email or password.";

/** Security headers of every login and error page; `form-action` must allow the redirect's origin too. */
function pageHeaders(c: Context<AppEnv>, nonce: string, redirectUri?: string) {
  let formAction = "'self'";
  if (redirectUri) formAction += ` ${new URL(redirectUri).origin}`;
  c.header(
    "Content-Security-Policy",
    `default-src 'none'; style-src 'nonce-${nonce}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  );
  c.header("X-Frame-Options", "DENY");
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", "no-store");
  c.header("Pragma", "no-cache");
}

function showError(c: Context<AppEnv>, err: AuthorizePageError) {
  const nonce = newNonce();
  pageHeaders(c, nonce);
  return c.html(errorPage({ nonce, message: err.message }), err.status as 400);
}

const newNonce = () => encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));

function queryParams(c: Context<AppEnv>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of new URL(c.req.url).searchParams) (out[k] ??= []).push(v);
  return out;
}

function clientAddress(c: Context<AppEnv>): string {
  try {
    return getConnInfo(c).remote.address ?? "unknown";
  } catch {
    return "unknown";
  }
}

export function registerAuthorizeRoutes(app: App, deps: Deps) {
  const action = `${deps.config.publicUrl}/authorize`;
  const secure = deps.config.publicUrl.startsWith("https:");

  app.get("/authorize", async (c) => {
    let valid;
    try {
      valid = await validateAuthorizeRequest(deps.sql, queryParams(c));
    } catch (err) {
      if (err instanceof AuthorizePageError) return showError(c, err);
      if (err instanceof AuthorizeRedirectError) {
        c.header("Cache-Control", "no-store");
        return c.redirect(
          redirectWith(err.redirectUri, {
            error: err.code,
            error_description: err.message,
            state: err.state,
            iss: deps.config.publicUrl,
          }),
          302,
        );
      }
      throw err;
    }
    let browser = getCookie(c, BROWSER_COOKIE);
    if (!browser || !/^[A-Za-z0-9_-]{43}$/.test(browser)) browser = newSecret();
    setCookie(c, BROWSER_COOKIE, browser, {
      httpOnly: true,
      sameSite: "Lax",
      secure,
      path: "/authorize",
      maxAge: 86_400,
    });
    const { requestId, csrf } = await startLogin(deps.sql, valid, browser);
    const nonce = newNonce();
    pageHeaders(c, nonce, valid.redirectUri);
    return c.html(loginPage({ nonce, action, projectName: valid.client.project_name, requestId, csrf }), 200);
  });

  app.post("/authorize", async (c) => {
    const contentType = c.req.header("content-type") ?? "";
    if (!/^application\/x-www-form-urlencoded(;|$)/i.test(contentType)) {
      return showError(c, new AuthorizePageError("The sign-in form was not sent as a form."));
    }
    const form = Object.fromEntries(new URLSearchParams(await c.req.text()));
    let req;
    try {
      req = await loginRequestFor(deps.sql, form, getCookie(c, BROWSER_COOKIE));
    } catch (err) {
      if (err instanceof AuthorizePageError) return showError(c, err);
      throw err;
    }
    const nonce = newNonce();
    pageHeaders(c, nonce, req.redirect_uri);
    const again = (error: string, status: 400 | 429) =>
      c.html(
        loginPage({
          nonce,
          action,
          projectName: req.project_name,
          requestId: form.request_id,
          csrf: form.csrf,
          email: (form.email ?? "").slice(0, 100),
          error,
        }),
        status,
      );
    const email = form.email ?? "";
    const password = form.password ?? "";
    if (!email || !password || email.length > 100 || password.length > 1024) return again(INVALID, 400);
    let userId;
    try {
      userId = await checkPassword(deps.sql, req.project_id, email, password, clientAddress(c));
    } catch (err) {
      if (err instanceof LoginThrottled) {
        c.header("Retry-After", String(err.retryAfter));
        return again(`Too many failed attempts. Try again in ${err.retryAfter} seconds.`, 429);
      }
      throw err;
    }
    if (!userId) return again(INVALID, 400);
    try {
      const location = await issueAuthorizationCode(
        deps.sql,
        req,
        userId,
        deps.config.publicUrl,
        deps.config.authCodeTtl,
      );
      return c.redirect(location, 303);
    } catch (err) {
      if (err instanceof AuthorizePageError) return showError(c, err);
      throw err;
    }
  });

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
      "(303) to `redirect_uri` with `code`, `state` and `iss`.",
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
      }),
    },
    responses: {
      200: { description: "The login page" },
      302: { description: "A request error, sent back to the redirect URI" },
      400: {
        description: "An error page: the client or redirect URI cannot be trusted",
      },
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
      303: { description: "Success: to `redirect_uri` with `code`, `state` and `iss`" },
      400: {
        description: "The page again with a generic error, or an error page",
      },
      429: {
        description: "Too many failed logins; see `Retry-After`",
      },
    },
  });
}
