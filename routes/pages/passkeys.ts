/**
 * Passkeys in the browser: the script the pages load (/passkey.js), the login page's passkey sign-in (and the
 * second step's), and the account page's registration and removal. The JSON endpoints are bound like the forms:
 * a login page's request, CSRF token and browser cookie; the account page's CSRF token and session.
 */
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie, setCookie } from "hono/cookie";
import { accountOf, csrfMatches } from "../../domain/signin/account.ts";
import { AppError } from "../../domain/shared/errors.ts";
import { AuthorizePageError, loginRequestFor } from "../../domain/signin/login.ts";
import {
  loginOptions,
  passkeyLogin,
  passkeySettings,
  registerPasskey,
  registrationOptions,
} from "../../domain/factors/passkeys.ts";
import { awaitedLogin } from "../../domain/factors/second_step.ts";
import { completeLogin } from "../../domain/signin/sso.ts";
import { WebAuthnError } from "../../domain/factors/webauthn.ts";
import type { App, AppEnv } from "../env.ts";
import { requestInfo } from "../request_info.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { retryAfter } from "./kit/errors.ts";
import { formSettings } from "./kit/forms.ts";
import { mfaSettings, ssoSettings } from "../settings.ts";
import { EmailNotVerified } from "../../domain/accounts/signin_policy.ts";
import { requireVerification } from "../../domain/accounts/email_changes.ts";
import { askConsent, verifyFirstUrl } from "./flow.ts";
import { ConsentRequired } from "../../domain/signin/consent.ts";

const SCRIPT = Deno.readTextFileSync(new URL("../assets/passkey.js", import.meta.url));

const REFUSED = "The passkey was refused. Try again, or sign in another way.";
const REAUTHENTICATE =
  "Adding a passkey needs fresh proof that it is you: enter a code of your authenticator, " +
  "or sign in again with your identity provider first (the button on this page).";

/**
 * A JSON error for the page's script: its message is shown under the button; a refused ceremony also says why
 * (`details.reason`, as in its `passkey.refused` event).
 */
const problem = (c: Context<AppEnv>, status: 400 | 403 | 409 | 429, description: string, reason?: string) => {
  c.header("Cache-Control", "no-store");
  return c.json({
    error: "passkey_refused",
    error_description: description,
    ...(reason ? { details: { reason } } : {}),
  }, status);
};

async function jsonBody(c: Context<AppEnv>): Promise<Record<string, unknown> | null> {
  if (!/^application\/json(;|$)/i.test(c.req.header("content-type") ?? "")) return null;
  try {
    const body = await c.req.json();
    return body && typeof body === "object" && !Array.isArray(body) ? body as Record<string, unknown> : null;
  } catch {
    return null; // not JSON: the caller answers 400
  }
}

const text = (v: unknown) => typeof v === "string" ? v : undefined;

/** Every JSON endpoint: small bodies, JSON only; page errors become JSON problems. */
function endpoint(
  app: App,
  path: string,
  handle: (c: Context<AppEnv>, body: Record<string, unknown>) => Promise<Response>,
) {
  app.post(
    path,
    bodyLimit({
      maxSize: 16 * 1024,
      onError: (c) => problem(c as Context<AppEnv>, 400, "Too large.", "too_large"),
    }),
  );
  app.post(path, async (c) => {
    c.header("Cache-Control", "no-store");
    const body = await jsonBody(c);
    if (!body) return problem(c, 400, "The request was not JSON.", "not_json");
    try {
      return await handle(c, body);
    } catch (err) {
      if (err instanceof AuthorizePageError) return problem(c, 400, err.message);
      if (err instanceof WebAuthnError) return problem(c, 400, REFUSED, err.reason);
      const wait = retryAfter(err);
      if (wait !== null) {
        c.header("Retry-After", wait);
        return problem(c, 429, `Too many attempts. Try again in ${wait} seconds.`);
      }
      if (err instanceof AppError && err.code === "second_factor_required") {
        return problem(c, 409, "This project requires a second factor.");
      }
      throw err;
    }
  });
}

/** The login request a passkey endpoint of the login page answers for, bound to this browser. */
async function loginRequest(c: Context<AppEnv>, body: Record<string, unknown>) {
  const { sql, config } = c.get("deps");
  const form = { request_id: text(body.request_id), csrf: text(body.csrf) };
  return await loginRequestFor(sql, form, getCookie(c, formSettings(c).cookieName), config.publicUrl);
}

/** The signed-in account a passkey endpoint of the account page acts for (its CSRF token checked). */
async function accountFor(c: Context<AppEnv>, body: Record<string, unknown>) {
  const browser = getCookie(c, ssoCookie(c.get("deps").config.publicUrl).name);
  if (!csrfMatches(browser, text(body.csrf))) {
    throw new AuthorizePageError("This page has expired. Open your account page again.");
  }
  const found = await accountOf(c.get("deps").sql, browser, text(body.project) ?? null, requestInfo(c));
  if (!found) throw new AuthorizePageError("You are not signed in here.");
  return found;
}

/** POST /authorize/passkey/options */
async function loginPasskeyOptions(c: Context<AppEnv>, body: Record<string, unknown>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const req = await loginRequest(c, body);
  const pending = await awaitedLogin(sql, req.id);
  return c.json(
    await loginOptions(sql, passkeySettings(config.publicUrl), req, pending?.user_id ?? null),
    200,
  );
}

/** POST /authorize/passkey */
async function loginWithPasskey(c: Context<AppEnv>, body: Record<string, unknown>): Promise<Response> {
  const { sql, config } = c.get("deps");
  const req = await loginRequest(c, body);
  const awaited = (await awaitedLogin(sql, req.id)) ?? null;
  // The passkey as the second step of this login (its first factor, and any upstream provider, carried on).
  const pending = awaited && !awaited.amr.includes("mfa") ? awaited : null;
  let amr: string[] | null = null;
  try {
    const signedIn = await passkeyLogin(sql, passkeySettings(config.publicUrl), {
      req,
      body,
      request: requestInfo(c),
      pending,
    });
    amr = signedIn.amr;
    const sso = ssoCookie(config.publicUrl);
    const done = await completeLogin(
      sql,
      req,
      signedIn.userId,
      getCookie(c, sso.name),
      ssoSettings(c),
      requestInfo(c),
      pending?.provider_id ?? null,
      signedIn.amr,
    );
    if (done.browser) setCookie(c, sso.name, done.browser, sso.options(config.ssoTtl));
    return c.json({ location: done.location }, 200);
  } catch (err) {
    if (err instanceof ConsentRequired) {
      // A third-party client: the script goes to the consent page, the login held for the user.
      const hold = { user_id: err.userId, amr, provider_id: pending?.provider_id ?? null, sso: false };
      return c.json({ location: await askConsent(c, req.id, hold) }, 200);
    }
    if (!(err instanceof EmailNotVerified)) throw err;
    // The project wants a verified address first: the script goes to the page that offers the link.
    await requireVerification(sql, req.id, err.userId);
    return c.json({
      error: "email_not_verified",
      error_description: "Confirm your email address before you sign in.",
      location: verifyFirstUrl(c, req.id),
    }, 403);
  }
}

/** POST /account/passkeys/options */
async function accountPasskeyOptions(c: Context<AppEnv>, body: Record<string, unknown>): Promise<Response> {
  const a = await accountFor(c, body);
  const settings = passkeySettings(c.get("deps").config.publicUrl);
  try {
    const input = { current_password: text(body.current_password), code: text(body.code) };
    return c.json(
      await registrationOptions(c.get("deps").sql, settings, mfaSettings(c), a.actor, input),
      200,
    );
  } catch (err) {
    if (err instanceof AppError && err.code === "invalid_params") {
      return problem(
        c,
        400,
        err.details?.[0]?.field === "code"
          ? "That is not a current code of your authenticator or an unspent recovery code."
          : "Enter your current password to add a passkey.",
      );
    }
    if (err instanceof AppError && err.code === "reauthentication_required") {
      return problem(c, 403, REAUTHENTICATE);
    }
    throw err;
  }
}

/** POST /account/passkeys */
async function addPasskey(c: Context<AppEnv>, body: Record<string, unknown>): Promise<Response> {
  const a = await accountFor(c, body);
  await registerPasskey(c.get("deps").sql, passkeySettings(c.get("deps").config.publicUrl), a.actor, body);
  return c.json(
    { location: `/account?${new URLSearchParams({ project: a.projectId, done: "passkey" })}` },
    200,
  );
}

export function registerPasskeyRoutes(app: App) {
  app.get("/passkey.js", (c) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=300");
    return c.body(SCRIPT);
  });
  endpoint(app, "/authorize/passkey/options", loginPasskeyOptions);
  endpoint(app, "/authorize/passkey", loginWithPasskey);
  endpoint(app, "/account/passkeys/options", accountPasskeyOptions);
  endpoint(app, "/account/passkeys", addPasskey);
}
