/**
 * GET and POST /authorize/consent: a third-party client's login waits for the user's decision
 * (domain/signin/consent.ts). The page is bound like the login form (its request, a CSRF token and the browser's
 * cookie); a stale or foreign token changes nothing. Allowing keeps the decision and issues the code; denying sends
 * the browser back with `error=access_denied` (RFC 6749 §4.1.2.1).
 */
import { type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import {
  AuthorizePageError,
  loginRequestFor,
  reauthorizeUrl,
  redirectWith,
} from "../../domain/signin/login.ts";
import { resumableRequest } from "../../domain/accounts/account_links.ts";
import { newCsrf } from "../../domain/federation/federation.ts";
import {
  askedOf,
  consentClientShown,
  consentHoldOf,
  denyConsent,
  grantConsent,
} from "../../domain/signin/consent.ts";
import { userSource } from "../../domain/audit/audit.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { ssoSettings } from "../settings.ts";
import { startPage } from "./kit/headers.ts";
import { brandFor } from "./kit/brand.ts";
import { pageErrors } from "./kit/errors.ts";
import { formLimit, formSettings, readForm } from "./kit/forms.ts";
import { consentPage } from "./views/consent.ts";
import { finishLogin } from "./flow.ts";

const NOTHING =
  "This page has expired or was not opened in this browser. Go back to the application and start again.";

const USED = "This login page was already used. Go back to the application and start again.";

/** GET /authorize/consent: the page, under a fresh CSRF token bound to the held request. */
async function showConsent(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const { action, cookieName } = formSettings(c);
  const req = await resumableRequest(
    sql,
    c.req.query("request_id") ?? "",
    getCookie(c, cookieName),
    config.publicUrl,
  );
  const hold = req ? await consentHoldOf(sql, req.id) : null;
  if (!req || !hold) throw new AuthorizePageError(NOTHING);
  const asked = await askedOf(sql, { ...req, user_id: hold.user_id });
  const csrf = await newCsrf(sql, req.id);
  const nonce = startPage(c, req.redirect_uri);
  c.header("Cache-Control", "no-store");
  return c.html(
    consentPage({
      nonce,
      action: `${action}/consent`,
      ...(await brandFor(c, req.project_id, req.project_name)),
      requestId: req.id,
      csrf,
      ...await consentClientShown(sql, req.project_id, req.client_id, req.redirect_uri),
      resourceName: asked.resource?.name ?? null,
      permissions: asked.permissions,
    }),
    200,
  );
}

/** POST /authorize/consent: allow (the code) or deny (`access_denied`). */
async function submitConsent(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const { cookieName } = formSettings(c);
  const form = await readForm(c);
  // A stale or foreign CSRF token, or another browser: an error page, and nothing changes.
  const req = await loginRequestFor(sql, form, getCookie(c, cookieName), config.publicUrl);
  const hold = await consentHoldOf(sql, req.id);
  if (!hold) throw new AuthorizePageError(NOTHING);
  const nonce = startPage(c, req.redirect_uri);
  c.header("Cache-Control", "no-store");
  const source = userSource(hold.user_id, requestInfo(c));
  if (form.decision !== "allow") {
    if (!(await denyConsent(sql, req, hold.user_id, source))) throw new AuthorizePageError(USED);
    const to = redirectWith(req.redirect_uri, {
      error: "access_denied",
      error_description: "the user denied the request",
      state: req.state,
      iss: ssoSettings(c).issuer,
    });
    return c.redirect(to, 303);
  }
  const shown = (form.permissions ?? "").split(" ").filter((code) => code !== "");
  await grantConsent(sql, req, hold.user_id, shown, source);
  // Signed in by the browser's session: back to /authorize, which issues the code from that session.
  if (hold.sso) {
    const back = await reauthorizeUrl(sql, req, config.publicUrl);
    if (back === null) throw new AuthorizePageError(USED);
    return c.redirect(back, 303);
  }
  const done = await finishLogin(c, {
    nonce,
    req,
    csrf: form.csrf,
    userId: hold.user_id,
    providerId: hold.provider_id,
    amr: hold.amr,
  });
  return done instanceof Response ? done : c.redirect(done.location, 303);
}

const showConsentDoc: RouteConfig = {
  method: "get",
  path: "/authorize/consent",
  operationId: "showConsent",
  tags: ["Login"],
  summary: "The consent page of a third-party client",
  description:
    "Where a login of a client marked `third_party` goes when the user has not yet consented to what it asks: " +
    "the client's name, the host of its redirect URI, the API (the resource named by `resource`, else the " +
    "project) and the permissions asked, with their descriptions. Only the browser that opened the login sees it.",
  request: { query: z.object({ request_id: z.string() }) },
  responses: {
    200: { description: "The consent page" },
    400: { description: "An error page: the login has expired, was used, or is not this browser's" },
  },
};

const submitConsentDoc: RouteConfig = {
  method: "post",
  path: "/authorize/consent",
  operationId: "submitConsent",
  tags: ["Login"],
  summary: "Submit the consent page",
  description:
    "Posted by the consent page with its CSRF token, bound to the browser's cookie; a stale or foreign token " +
    "changes nothing (an error page). `decision=allow` keeps the decision (per user, client and API, with the " +
    "permissions granted: the next login asking no more shows no page) and redirects with the code; anything " +
    "else redirects to `redirect_uri` with `error=access_denied`, `state` and `iss` (RFC 6749 §4.1.2.1).",
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({
            decision: z.enum(["allow", "deny"]),
            permissions: z.string().openapi({
              description: "The permission codes the page showed, space-separated: only these are granted",
            }),
            request_id: z.string(),
            csrf: z.string(),
          }),
        },
      },
    },
  },
  responses: {
    303: { description: "To `redirect_uri` with `code` (allowed) or `error=access_denied` (denied)" },
    400: { description: "An error page: a stale or foreign form" },
    413: { description: "A form larger than 16 KiB: an error page, sent before the body is read" },
  },
};

export function registerConsentRoutes(app: App) {
  app.get("/authorize/consent", pageErrors(showConsent));
  app.post("/authorize/consent", formLimit());
  app.post("/authorize/consent", pageErrors(submitConsent));
  app.openAPIRegistry.registerPath(showConsentDoc);
  app.openAPIRegistry.registerPath(submitConsentDoc);
}
