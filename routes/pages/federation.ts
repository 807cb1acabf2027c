/**
 * Signing in through an upstream identity provider: the login page's button (GET /authorize/idp/{provider_id})
 * and the provider's redirect back (GET /authorize/idp/{provider_id}/callback). Both are pages: a failure shows
 * the login page again with its message, or an error page, never a JSON error.
 */
import { type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import {
  federationCallback,
  FederationFailure,
  loginButtons,
  type LoginRequest,
  newCsrf,
  startFederation,
} from "../../domain/federation/federation.ts";
import {
  isReauthentication,
  reauthenticationCallback,
  ReauthFailure,
} from "../../domain/federation/reauthentication.ts";
import { secondStepFor } from "../../domain/factors/second_step.ts";
import { AMR_FEDERATED } from "../../domain/oauth/acr.ts";
import type { App, AppEnv } from "../env.ts";
import { forwardPage, loginPage } from "./views/login.ts";
import { requestInfo } from "../request_info.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { brandFor } from "./kit/brand.ts";
import { newNonce, pageHeaders, startPage } from "./kit/headers.ts";
import { pageErrors } from "./kit/errors.ts";
import { formSettings } from "./kit/forms.ts";
import { providerSettings } from "../settings.ts";
import { consoleProject, finishLogin, showSecondStep, verifyFirst } from "./flow.ts";
import { errorPage } from "./kit/errors.ts";

/** The login page again, with the failure's message and a fresh CSRF token; or an error page. */
async function showFailure(c: Context<AppEnv>, err: FederationFailure): Promise<Response> {
  const nonce = newNonce();
  const req: LoginRequest | null = err.request;
  if (!req || req.used || req.expired) {
    pageHeaders(c, nonce);
    return c.html(errorPage({ nonce, message: err.message }), 400);
  }
  const { sql } = c.get("deps");
  pageHeaders(c, nonce, req.redirect_uri);
  return c.html(
    loginPage({
      nonce,
      action: formSettings(c).action,
      ...(await brandFor(c, req.project_id, req.project_name)),
      consoleOf: consoleProject(req.client_id, req.project_id),
      requestId: req.id,
      csrf: await newCsrf(sql, req.id),
      error: err.message,
      providers: await loginButtons(sql, req.project_id),
    }),
    400,
  );
}

function queryOf(c: Context<AppEnv>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URL(c.req.url).searchParams) {
    // A repeated parameter is as good as a forged one: keep none of it.
    out[k] = k in out ? "" : v;
  }
  return out;
}

/** GET /authorize/idp/:provider_id */
async function startFederatedLogin(c: Context<AppEnv>): Promise<Response> {
  const { sql } = c.get("deps");
  const q = queryOf(c);
  try {
    const location = await startFederation(
      sql,
      providerSettings(c.get("deps")),
      c.req.param("provider_id") ?? "",
      { request_id: q.request_id, csrf: q.csrf },
      getCookie(c, formSettings(c).cookieName),
      requestInfo(c),
    );
    c.header("Cache-Control", "no-store");
    c.header("Referrer-Policy", "no-referrer");
    return c.redirect(location, 303);
  } catch (err) {
    if (err instanceof FederationFailure) return await showFailure(c, err);
    throw err;
  }
}

/**
 * The callback of a re-authentication from the account page (domain/federation/reauthentication.ts): back to
 * the account page, freshly proven or with the failure's reason.
 */
async function reauthenticationReturn(c: Context<AppEnv>): Promise<Response> {
  c.header("Cache-Control", "no-store");
  c.header("Referrer-Policy", "no-referrer");
  try {
    const { projectId } = await reauthenticationCallback(
      c.get("deps").sql,
      providerSettings(c.get("deps")),
      c.req.param("provider_id") ?? "",
      queryOf(c),
      getCookie(c, ssoCookie(c.get("deps").config.publicUrl).name),
      requestInfo(c),
    );
    return c.redirect(
      `/account?${new URLSearchParams({ project: projectId, done: "reauthenticated" })}`,
      303,
    );
  } catch (err) {
    if (!(err instanceof ReauthFailure)) throw err;
    if (err.projectId === null) {
      const nonce = startPage(c);
      return c.html(errorPage({ nonce, message: err.message }), 400);
    }
    return c.redirect(`/account?${new URLSearchParams({ project: err.projectId, reauth: err.reason })}`, 303);
  }
}

/** GET /authorize/idp/:provider_id/callback */
async function federatedLoginCallback(c: Context<AppEnv>): Promise<Response> {
  const { sql } = c.get("deps");
  if (await isReauthentication(sql, c.req.query("state"))) return await reauthenticationReturn(c);
  try {
    const login = await federationCallback(
      sql,
      providerSettings(c.get("deps")),
      c.req.param("provider_id") ?? "",
      queryOf(c),
      getCookie(c, formSettings(c).cookieName),
      requestInfo(c),
    );
    const nonce = startPage(c);
    const { request: req, userId } = login;
    // The project's policy stopped the user (an address not verified): the page that offers the link.
    if (login.unverified) return await verifyFirst(c, { nonce, req, who: login.unverified });
    // The upstream's word replaces the password, not a second factor: a user who has one (or must enrol
    // one, or an application asking for it) goes on to the same second step as after a password.
    const step = await secondStepFor(sql, req, userId);
    if (step !== "none") {
      const csrf = await newCsrf(sql, req.id);
      const providerId = login.providerId;
      return await showSecondStep(c, { nonce, req, csrf, userId, step, amr: AMR_FEDERATED, providerId });
    }
    const done = await finishLogin(c, {
      nonce,
      req,
      userId,
      providerId: login.providerId,
      amr: AMR_FEDERATED,
    });
    if (done instanceof Response) return done;
    return c.html(forwardPage({ nonce, location: done.location }), 200);
  } catch (err) {
    if (err instanceof FederationFailure) return await showFailure(c, err);
    throw err;
  }
}

const startFederatedLoginDoc: RouteConfig = {
  method: "get",
  path: "/authorize/idp/{provider_id}",
  operationId: "startFederatedLogin",
  tags: ["Login"],
  summary: "Sign in through an identity provider (the login page's button)",
  description: "Sends the browser to the provider's authorization endpoint with `state`, `nonce` and PKCE " +
    "S256, all kept server-side with the login page (bound to its browser) and spent once. An inactive or " +
    "unknown provider, or an unreachable one, shows the login page again with a message.",
  request: {
    params: z.object({ provider_id: z.string() }),
    query: z.object({
      request_id: z.string().openapi({ description: "The login page's request" }),
      csrf: z.string().openapi({ description: "The login page's CSRF token" }),
    }),
  },
  responses: {
    303: { description: "To the provider" },
    400: { description: "The login page with a message, or an error page" },
  },
};

const federatedLoginCallbackDoc: RouteConfig = {
  method: "get",
  path: "/authorize/idp/{provider_id}/callback",
  operationId: "federatedLoginCallback",
  tags: ["Login"],
  summary: "The identity provider's redirect back (register it at the provider)",
  description: "Checks `state` (known, unspent, of this browser), trades `code` at the provider's token " +
    "endpoint and validates its ID token (signature by the provider's JWKS, `iss`, `aud`, `exp`, `nonce`, " +
    "`azp`). The user is the one linked to the upstream account, or the one with its email when both sides " +
    "hold it verified and the provider links by email, or a new user (just-in-time provisioning). The login " +
    "then ends as a password login does. A callback of a re-authentication started on the account page (a user " +
    "without a password proving themselves before changing sign-in methods) goes back to the account page " +
    "instead, freshly proven for five minutes when the ID token names the user's linked identity with an " +
    "`auth_time` no older than the request. Every failure (an upstream `error`, a forged or replayed callback, " +
    "a token for another audience, an unreachable provider) is a `login.failed` event and a page, never a " +
    "session.",
  request: {
    params: z.object({ provider_id: z.string() }),
    query: z.object({
      state: z.string(),
      code: z.string().optional(),
      error: z.string().optional(),
      error_description: z.string().optional(),
    }),
  },
  responses: {
    200: {
      description: 'Signed in: a page that moves on at once (`<meta http-equiv="refresh">`, and a link) to ' +
        "the application's `redirect_uri` with `code`, `state` and `iss`. Not a redirect: the provider's " +
        "page may restrict where its form leads (CSP `form-action`), redirects included.",
    },
    400: { description: "The login page with a message, or an error page" },
    403: {
      description: "A project with `require_verified_email`, and a user whose address is not verified (a " +
        "linked user, or one just created from an address the provider did not say is verified): a page that " +
        "offers to mail the verification link, and no code",
    },
  },
};

export function registerFederationRoutes(app: App) {
  app.get("/authorize/idp/:provider_id", pageErrors(startFederatedLogin));

  app.get("/authorize/idp/:provider_id/callback", pageErrors(federatedLoginCallback));

  app.openAPIRegistry.registerPath(startFederatedLoginDoc);
  app.openAPIRegistry.registerPath(federatedLoginCallbackDoc);
}
