/**
 * GET and POST /device, GET /device/callback, POST /device/confirm: the device grant's verification page
 * (RFC 8628 §3.3). The user enters the code, signs in through /authorize (every rule of a sign-in applies: see
 * domain/signin/device_flow.ts), and approves or denies the device. Every step is bound to the browser that entered
 * the code (a cookie, and CSRF tokens derived from it or kept with the code): a stale or foreign form changes
 * nothing.
 */
import { type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { AuthorizePageError } from "../../domain/signin/login.ts";
import {
  decideDevice,
  denyDeviceAtLogin,
  DeviceCodeNotValid,
  enterUserCode,
  redeemDeviceLogin,
  STALE,
} from "../../domain/signin/device_flow.ts";
import { encodeBase64Url } from "../../domain/shared/base64.ts";
import { newSecret } from "../../domain/shared/ids.ts";
import { hashSecret, isBrowserSecret, secretMatches } from "../../domain/shared/secrets.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { verificationCookie } from "./kit/cookies.ts";
import { brandFor } from "./kit/brand.ts";
import { formLimit, readForm } from "./kit/forms.ts";
import { startPage } from "./kit/headers.ts";
import { pageErrors, PageRefusal, retryAfter, showError } from "./kit/errors.ts";
import { deviceCodePage, deviceConfirmPage, deviceDonePage } from "./views/device.ts";

const NOT_FORM = "The form was not sent as a form.";

const cookieOf = (c: Context<AppEnv>) =>
  verificationCookie(c.get("deps").config.publicUrl.startsWith("https:"));

/** The browser's secret of the verification pages, set when missing. */
function browserOf(c: Context<AppEnv>): string {
  const cookie = cookieOf(c);
  let browser = getCookie(c, cookie.name);
  if (!isBrowserSecret(browser)) {
    browser = newSecret();
    setCookie(c, cookie.name, browser, cookie.options);
  }
  return browser;
}

/** The code form's CSRF token: derived from the browser's cookie, so that only this browser's form counts. */
const csrfOf = (browser: string) => encodeBase64Url(hashSecret(`device-page:${browser}`));

function csrfMatches(browser: string | undefined, presented: string | undefined): boolean {
  if (!browser || !presented) return false;
  return secretMatches(presented, hashSecret(csrfOf(browser)));
}

const actionOf = (c: Context<AppEnv>) => `${c.get("deps").config.publicUrl}/device`;

/** GET /device: the code's form, pre-filled from `verification_uri_complete`. */
function showDevicePage(c: Context<AppEnv>): Promise<Response> {
  const nonce = startPage(c);
  const entered = c.req.query("user_code");
  const page = deviceCodePage({
    nonce,
    action: actionOf(c),
    csrf: csrfOf(browserOf(c)),
    userCode: entered && entered.length <= 20 ? entered : undefined,
  });
  return Promise.resolve(c.html(page, 200));
}

/** POST /device: a valid code starts the sign-in; any other shows the form again, with the same words for all. */
async function submitDeviceCode(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const form = await readForm(c, NOT_FORM);
  const browser = getCookie(c, cookieOf(c).name);
  if (!csrfMatches(browser, form.csrf)) throw new AuthorizePageError(STALE);
  try {
    const to = await enterUserCode(sql, form.user_code ?? "", browser!, requestInfo(c), config.publicUrl);
    c.header("Cache-Control", "no-store");
    return c.redirect(to, 303);
  } catch (err) {
    const wait = retryAfter(err);
    if (wait !== null) {
      c.header("Retry-After", wait);
      return showError(c, new PageRefusal(`Too many wrong codes. Try again in ${wait} seconds.`, 429));
    }
    if (!(err instanceof DeviceCodeNotValid)) throw err;
    const nonce = startPage(c);
    const page = deviceCodePage({
      nonce,
      action: actionOf(c),
      csrf: csrfOf(browser!),
      userCode: (form.user_code ?? "").slice(0, 20),
      error: err.message,
    });
    return c.html(page, 400);
  }
}

/** GET /device/callback: the login's answer; its code is redeemed for who signed in, then the confirmation page. */
async function deviceCallback(c: Context<AppEnv>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const browserSecret = getCookie(c, cookieOf(c).name);
  const state = c.req.query("state");
  const error = c.req.query("error");
  if (error !== undefined) {
    if (error !== "access_denied") {
      throw new AuthorizePageError(
        `The sign-in did not complete (${error.slice(0, 50)}). Start again on the device.`,
      );
    }
    await denyDeviceAtLogin(sql, { state, browserSecret }, requestInfo(c));
    return c.html(deviceDonePage({ nonce: startPage(c), approved: false }), 200);
  }
  const shown = await redeemDeviceLogin(sql, {
    state,
    code: c.req.query("code"),
    browserSecret,
    publicUrl: config.publicUrl,
  });
  const nonce = startPage(c);
  return c.html(
    deviceConfirmPage({
      nonce,
      action: `${actionOf(c)}/confirm`,
      ...(await brandFor(c, shown.projectId, shown.projectName)),
      state: shown.state,
      csrf: shown.csrf,
      clientName: shown.clientName,
      resourceName: shown.asked.resource?.name ?? null,
      permissions: shown.asked.permissions,
    }),
    200,
  );
}

/** POST /device/confirm: Approve (the device's next poll gets the tokens) or Deny (`access_denied`). */
async function submitDeviceDecision(c: Context<AppEnv>): Promise<Response> {
  const { sql } = c.get("deps");
  const form = await readForm(c, NOT_FORM);
  const approve = form.decision === "approve";
  await decideDevice(
    sql,
    { state: form.state, csrf: form.csrf, browserSecret: getCookie(c, cookieOf(c).name), approve },
    requestInfo(c),
  );
  return c.html(deviceDonePage({ nonce: startPage(c), approved: approve }), 200);
}

const RESPONSES_400 = { description: "An error page: a stale or foreign form, or a code that is not valid" };

const showDevicePageDoc: RouteConfig = {
  method: "get",
  path: "/device",
  operationId: "showDevicePage",
  tags: ["Login"],
  summary: "The device grant's verification page (RFC 8628)",
  description:
    "Where the user enters the code a device shows (`verification_uri`); `user_code` pre-fills it " +
    "(`verification_uri_complete`).",
  request: { query: z.object({ user_code: z.string().optional() }) },
  responses: { 200: { description: "The code's form" } },
};

const submitDeviceCodeDoc: RouteConfig = {
  method: "post",
  path: "/device",
  operationId: "submitDeviceCode",
  tags: ["Login"],
  summary: "Enter a device's code",
  description:
    "The code in any case, with or without its dash. A valid one redirects to `/authorize` for the " +
    "device's client, whose login comes back to `/device/callback`. An unknown, expired, used or decided code " +
    "shows the form again with the same words; wrong codes are limited per address (20 per 10 minutes, then 429 " +
    "with `Retry-After`). A stale or foreign CSRF token changes nothing.",
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({ user_code: z.string(), csrf: z.string() }),
        },
      },
    },
  },
  responses: {
    303: { description: "To `/authorize`: the user signs in" },
    400: RESPONSES_400,
    413: { description: "A form larger than 16 KiB: an error page, sent before the body is read" },
    429: { description: "Too many wrong codes from this address: an error page with `Retry-After`" },
  },
};

const deviceCallbackDoc: RouteConfig = {
  method: "get",
  path: "/device/callback",
  operationId: "deviceCallback",
  tags: ["Login"],
  summary: "The verification page's sign-in comes back",
  description:
    "The internal redirect URI of the sign-in a device code started, accepted only for it and only in " +
    "the browser that entered the code. The code is redeemed here; the page then shows which client asks, for " +
    "which API and permissions, with Approve and Deny. `error=access_denied` (the user denied a third-party " +
    "client's consent) denies the device.",
  request: {
    query: z.object({
      code: z.string().optional(),
      state: z.string(),
      error: z.string().optional(),
      iss: z.string().optional(),
    }),
  },
  responses: { 200: { description: "The confirmation page" }, 400: RESPONSES_400 },
};

const submitDeviceDecisionDoc: RouteConfig = {
  method: "post",
  path: "/device/confirm",
  operationId: "submitDeviceDecision",
  tags: ["Login"],
  summary: "Approve or deny a device",
  description: "Posted by the confirmation page with its CSRF token, bound to the browser's cookie: " +
    "`decision=approve` gives the device's next poll the user's tokens (audit `device.approved`); anything else " +
    "answers it `access_denied` (`device.denied`). A stale or foreign form changes nothing.",
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({ decision: z.enum(["approve", "deny"]), state: z.string(), csrf: z.string() }),
        },
      },
    },
  },
  responses: {
    200: { description: "The end: approved or denied" },
    400: RESPONSES_400,
    413: { description: "A form larger than 16 KiB: an error page, sent before the body is read" },
  },
};

export function registerDevicePages(app: App) {
  app.get("/device", pageErrors(showDevicePage));
  app.post("/device", formLimit("The form is too large."));
  app.post("/device", pageErrors(submitDeviceCode));
  app.get("/device/callback", pageErrors(deviceCallback));
  app.post("/device/confirm", formLimit("The form is too large."));
  app.post("/device/confirm", pageErrors(submitDeviceDecision));
  app.openAPIRegistry.registerPath(showDevicePageDoc);
  app.openAPIRegistry.registerPath(submitDeviceCodeDoc);
  app.openAPIRegistry.registerPath(deviceCallbackDoc);
  app.openAPIRegistry.registerPath(submitDeviceDecisionDoc);
}
