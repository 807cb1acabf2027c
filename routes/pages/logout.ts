/**
 * GET and POST /logout (OpenID Connect RP-Initiated Logout 1.0): asks a signed-in browser to confirm unless a
 * trusted ID token of its session vouches for the request; then ends the browser's single sign-on session and
 * the login sessions it created, and redirects to a registered `post_logout_redirect_uri` or shows a page.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { deleteCookie, getCookie } from "hono/cookie";
import { confirmsLogout, logout } from "../../domain/signin/logout.ts";
import type { App, AppEnv } from "../env.ts";
import { signedOutPage, signOutConfirmPage } from "./views/login.ts";
import { requestInfo } from "../request_info.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { startPage } from "./kit/headers.ts";
import { unregisteredHelp } from "./kit/errors.ts";

const LOGOUT_FORM_LIMIT = 16 * 1024;

function paramsOf(search: URLSearchParams): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of search) (out[k] ??= []).push(v);
  return out;
}

/** `confirmation`: the token a POST of the confirmation form carries (absent on GET). */
async function answer(c: Context<AppEnv>, params: Record<string, string[]>, confirmation?: string[]) {
  const { sql, tokens, config } = c.get("deps");
  const cookie = ssoCookie(config.publicUrl);
  const browser = getCookie(c, cookie.name);
  const state = confirmation === undefined
    ? "none"
    : confirmation.length === 1 && confirmsLogout(browser, confirmation[0])
    ? "confirmed"
    : "stale";
  const outcome = await logout(sql, tokens, params, browser, requestInfo(c), state);
  if (outcome.reason) c.set("reason", outcome.reason);
  if (outcome.clearCookie) deleteCookie(c, cookie.name, cookie.options(0));
  if (outcome.location) {
    c.header("Cache-Control", "no-store");
    return c.redirect(outcome.location, 303);
  }
  const nonce = startPage(c, outcome.confirm?.redirectUri ?? undefined);
  if (outcome.confirm) {
    return c.html(
      signOutConfirmPage({
        nonce,
        action: `${config.publicUrl}/logout`,
        ...outcome.confirm,
      }),
      200,
    );
  }
  return c.html(
    signedOutPage({
      nonce,
      message: outcome.message,
      ok: outcome.status === 200,
      help: outcome.unregistered && unregisteredHelp(config.publicUrl, outcome.unregistered),
    }),
    outcome.status,
  );
}

const LogoutParams = z.object({
  id_token_hint: z.string().optional().openapi({
    description: "An ID token the service issued to the application (it may not be expired)",
  }),
  client_id: z.string().optional().openapi({ description: "The application; must be the hint's `aud`" }),
  post_logout_redirect_uri: z.string().optional().openapi({
    description: "Registered for the client, matched byte for byte: in its own `post_logout_redirect_uris` " +
      "when it has any, else in its project's",
  }),
  state: z.string().optional().openapi({ description: "Returned unchanged with the redirect" }),
});

const LogoutForm = LogoutParams.extend({
  confirmation: z.string().optional().openapi({
    description: "Sent by the confirmation page's form: a token bound to the browser's cookie",
  }),
});

export function registerLogoutRoutes(app: App) {
  app.get("/logout", (c) => answer(c, paramsOf(new URL(c.req.url).searchParams)));
  app.post(
    "/logout",
    bodyLimit({ maxSize: LOGOUT_FORM_LIMIT, onError: (c) => c.text("The sign-out form is too large.", 413) }),
    async (c) => {
      const type = c.req.header("content-type") ?? "";
      const body = /^application\/x-www-form-urlencoded(;|$)/i.test(type) ? await c.req.text() : "";
      const { confirmation, ...params } = paramsOf(new URLSearchParams(body));
      return await answer(c, params, confirmation);
    },
  );

  for (const method of ["get", "post"] as const) {
    app.openAPIRegistry.registerPath({
      method,
      path: "/logout",
      operationId: method === "get" ? "logout" : "submitLogout",
      tags: ["Login"],
      summary: "Sign out (OpenID Connect RP-initiated logout)",
      description:
        "First, a browser signed in to the project (or, without `id_token_hint` and `client_id`, " +
        "to any project) is asked to confirm, unless `id_token_hint` is a trusted ID token of one of its " +
        "sessions: a page (200) that ends nothing and whose form posts the same parameters back with " +
        "`confirmation`, a token bound to the browser's cookie, which other sites can neither read nor send. " +
        "So a link or form from elsewhere cannot sign a browser out; a cross-site POST carries no cookie and " +
        "can end only the session a trusted hint names. Then it ends the browser's single sign-on session in " +
        "the project (and the one the ID token names) and revokes the refresh tokens of the login sessions it " +
        "created; their access tokens are refused from the next request. Then redirects (303) to " +
        "`post_logout_redirect_uri` with `state` when it is registered for the client of `id_token_hint` or " +
        "`client_id` (its own `post_logout_redirect_uris` when it has any, else its project's), or shows a " +
        '"signed out" page. An unregistered URI shows an error page, never a redirect: it shows the URI ' +
        "received (escaped, at most 200 characters), says it must match byte for byte, and names where to " +
        "register it (the console page of the client or project, or the admin API), never the registered " +
        "URIs; the request log's line carries `reason: post_logout_redirect_uri_not_registered`. An " +
        "`id_token_hint` that is forged, expired or of another client never redirects.",
      request: method === "get"
        ? { query: LogoutParams }
        : { body: { content: { "application/x-www-form-urlencoded": { schema: LogoutForm } } } },
      responses: {
        200: { description: "The signed-out page, or the page that asks the user to confirm" },
        303: { description: "To `post_logout_redirect_uri`, with `state`" },
        400: {
          description:
            "An error page: the sign-out happened but the browser is not sent back, or (malformed " +
            "parameters) nothing was done",
        },
      },
    });
  }
}
