/** GET /authorize (RFC 6749 §4.1.1) shows the login page; POST /authorize checks it and redirects with a code. */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getConnInfo } from "hono/deno";
import { bodyLimit } from "hono/body-limit";
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

/** Binds a login form to the browser. On https it is a `__Host-` cookie, which no sibling domain can plant. */
const browserCookie = (secure: boolean) => secure ? "__Host-acs_browser" : "acs_browser";
/** A login form is a few fields; anything larger is refused before it is read. */
const LOGIN_FORM_LIMIT = 16 * 1024;
const INVALID = "Invalid email or password.";

/** Security headers of every login and error page; `form-action` must allow the redirect's origin too. */
function pageHeaders(c: Context<AppEnv>, nonce: string, redirectUri?: string) {
  let formAction = "'self'";
  if (redirectUri) {
    // Chrome follows form-action through the redirect after the POST, so the redirect URI's origin must be
    // allowed. Browsers cannot parse an IPv6 literal in a source expression: for those, the scheme.
    const url = new URL(redirectUri);
    formAction += url.hostname.startsWith("[") ? ` ${url.protocol}` : ` ${url.origin}`;
  }
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
  return c.html(errorPage({ nonce, message: err.message }), err.status as 400 | 413);
}

const newNonce = () => encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));

function queryParams(c: Context<AppEnv>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of new URL(c.req.url).searchParams) (out[k] ??= []).push(v);
  return out;
}

/**
 * The address that login throttling counts: the connection's peer, or behind TRUST_PROXY_HOPS proxies the
 * entry of X-Forwarded-For that the nearest trusted proxy saw. IPv6 addresses count by their /64 prefix,
 * the block one subscriber holds.
 */
function clientAddress(c: Context<AppEnv>, trustedHops: number): string {
  let address: string | undefined;
  if (trustedHops > 0) {
    const hops = (c.req.header("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    address = hops[hops.length - trustedHops];
  }
  if (!address) {
    try {
      address = getConnInfo(c).remote.address;
    } catch { /* no connection info (in-process requests) */ }
  }
  return address ? ipv6Prefix(address) : "unknown";
}

export function ipv6Prefix(address: string): string {
  if (!address.includes(":")) return address;
  const [head, tail = ""] = address.replace(/^\[|\]$/g, "").split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups.slice(0, 4).map((g) => parseInt(g || "0", 16).toString(16)).join(":")}::/64`;
}

export function registerAuthorizeRoutes(app: App, deps: Deps) {
  const action = `${deps.config.publicUrl}/authorize`;
  const secure = deps.config.publicUrl.startsWith("https:");
  const cookieName = browserCookie(secure);

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
    let browser = getCookie(c, cookieName);
    if (!browser || !/^[A-Za-z0-9_-]{43}$/.test(browser)) browser = newSecret();
    setCookie(c, cookieName, browser, {
      httpOnly: true,
      sameSite: "Lax",
      secure,
      path: secure ? "/" : "/authorize", // __Host- cookies must have Path=/
      maxAge: 86_400,
    });
    const { requestId, csrf } = await startLogin(deps.sql, valid, browser);
    const nonce = newNonce();
    pageHeaders(c, nonce, valid.redirectUri);
    return c.html(loginPage({ nonce, action, projectName: valid.client.project_name, requestId, csrf }), 200);
  });

  app.post(
    "/authorize",
    bodyLimit({
      maxSize: LOGIN_FORM_LIMIT,
      onError: (c) =>
        showError(c as Context<AppEnv>, new AuthorizePageError("The sign-in form is too large.", 413)),
    }),
  );
  app.post("/authorize", async (c) => {
    const contentType = c.req.header("content-type") ?? "";
    if (!/^application\/x-www-form-urlencoded(;|$)/i.test(contentType)) {
      return showError(c, new AuthorizePageError("The sign-in form was not sent as a form."));
    }
    const form = Object.fromEntries(new URLSearchParams(await c.req.text()));
    let req;
    try {
      req = await loginRequestFor(deps.sql, form, getCookie(c, cookieName));
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
      userId = await checkPassword(
        deps.sql,
        req.project_id,
        email,
        password,
        clientAddress(c, deps.config.trustProxyHops),
      );
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
