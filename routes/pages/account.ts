/**
 * `/account`: the signed-in user's own page, for the browser's single sign-on session (the cookie the login
 * sets): profile, password, two-step verification (an authenticator app with a QR code drawn here, recovery
 * codes), sessions and linked identities. Every form carries a CSRF token derived from the browser's secret;
 * changes go through the same domain functions as the current user's API and are audited as the user's.
 */
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import {
  type Account,
  accountCsrf,
  accountOf,
  accountView,
  csrfMatches,
  currentProfile,
  endAllOwnSessions,
} from "../../domain/signin/account.ts";
import { AppError } from "../../domain/shared/errors.ts";
import { unlinkCurrentIdentity } from "../../domain/accounts/identities.ts";
import { AuthorizePageError } from "../../domain/signin/login.ts";
import {
  confirmTotpEnrolment,
  pendingTotp,
  regenerateRecoveryCodes,
  removeCurrentTotp,
  startTotpEnrolment,
} from "../../domain/factors/mfa.ts";
import { revokeCurrentSession } from "../../domain/signin/sessions.ts";
import { revokeOwnConsent } from "../../domain/signin/consent.ts";
import { revokeAgent } from "../../domain/oauth/delegations.ts";
import { removePasskey } from "../../domain/factors/passkeys.ts";
import { updateCurrentUser } from "../../domain/signin/current_user.ts";
import type { UpdateCurrentUserRequest } from "../../openapi/users.ts";
import { accountPage, enrolPage, recoveryCodesPage, signedOutAccountPage } from "./views/account.ts";
import type { App, AppEnv } from "../env.ts";
import { qrSvg } from "./kit/qr_svg.ts";
import { brandFor, brandOf } from "./kit/brand.ts";
import { requestInfo } from "../request_info.ts";
import { ssoCookie } from "./kit/cookies.ts";
import { startPage } from "./kit/headers.ts";
import { pageErrors, PageRefusal, retryAfter } from "./kit/errors.ts";
import { mfaSettings, providerSettings } from "../settings.ts";
import {
  ReauthFailure,
  reauthMessage,
  startReauthentication,
} from "../../domain/federation/reauthentication.ts";
import { formLimit, readForm } from "./kit/forms.ts";

const NOTICES: Record<string, string> = {
  profile: "Your name was saved.",
  session: "That session was signed out.",
  consent: "The app's access was removed: its sessions ended.",
  agent: "The agent no longer acts for you: its tokens are refused.",
  totp_removed: "The authenticator was removed: signing in asks only for your password.",
  identity: "The identity was unlinked.",
  passkey: "Your passkey was added.",
  passkey_removed: "The passkey was removed.",
  reauthenticated: "You signed in again: for the next five minutes you can change how you sign in.",
};

const REAUTHENTICATE = "Changing how you sign in needs fresh proof that it is you: sign in again at your " +
  "identity provider (above), or give a code of your authenticator app.";

const browserOf = (c: Context<AppEnv>) => getCookie(c, ssoCookie(c.get("deps").config.publicUrl).name);

const NOT_SIGNED_IN =
  "You are not signed in here. Sign in from your application, then come back to this page.";

type Render = {
  c: Context<AppEnv>;
  account: Account;
  browser: string;
  nonce: string;
};

/** The account page, with a notice or field errors. */
async function showAccount(
  r: Render,
  extra: { notice?: string; errors?: Record<string, string>; values?: Record<string, string> } = {},
  status: 200 | 400 | 403 | 409 | 429 = 200,
) {
  const view = await accountView(r.c.get("deps").sql, r.account, r.browser);
  if (!view) return r.c.html(signedOutAccountPage({ nonce: r.nonce, message: NOT_SIGNED_IN }), 200);
  return r.c.html(
    accountPage({
      nonce: r.nonce,
      csrf: accountCsrf(r.browser),
      projectId: r.account.projectId,
      ...(await brandFor(r.c, r.account.projectId, r.account.projectName)),
      view,
      currentSession: r.account.ssoSessionId,
      ...extra,
    }),
    status,
  );
}

/**
 * An `invalid_params`, `reauthentication_required` or 429 error of an action, shown under the form's field
 * (a wrong `code` under the current password's id: the form asks for one or the other); anything else is thrown.
 */
function fieldErrors(err: unknown, ids: Record<string, string>): Record<string, string> | null {
  if (err instanceof AppError && err.code === "reauthentication_required") {
    return { [ids.current_password ?? Object.values(ids)[0]]: REAUTHENTICATE };
  }
  if (err instanceof AppError && err.code === "invalid_params" && err.details) {
    const out: Record<string, string> = {};
    for (const d of err.details) {
      const id = ids[d.field] ?? (d.field === "code" ? ids.current_password : undefined);
      if (id) {
        out[id] = d.field === "current_password"
          ? `The current password ${d.issue}.`
          : d.field === "code"
          ? "That is not a current code of your authenticator app or an unspent recovery code."
          : `This ${d.issue}.`;
      }
    }
    if (Object.keys(out).length > 0) return out;
  }
  const wait = retryAfter(err);
  if (wait !== null) {
    return { [Object.values(ids)[0]]: `Too many wrong passwords. Try again in ${wait} seconds.` };
  }
  return null;
}

/** The status of a refused action's page: 429 while throttled, 403 without fresh proof, else 400. */
const statusOf = (err: unknown) =>
  retryAfter(err) !== null
    ? 429
    : err instanceof AppError && err.code === "reauthentication_required"
    ? 403
    : 400;

const back = (c: Context<AppEnv>, account: Account, done: string) =>
  c.redirect(`/account?${new URLSearchParams({ project: account.projectId, done })}`, 303);

/** GET /account: the page of the browser's signed-in user, in the project asked for. */
async function showAccountPage(c: Context<AppEnv>): Promise<Response> {
  const nonce = startPage(c);
  const browser = browserOf(c);
  const project = c.req.query("project") ?? null;
  const account = await accountOf(c.get("deps").sql, browser, project, requestInfo(c));
  if (!account || !browser) {
    return c.html(signedOutAccountPage({ nonce, message: NOT_SIGNED_IN }), 200);
  }
  const done = c.req.query("done");
  const reauth = c.req.query("reauth");
  return await showAccount({ c, account, browser, nonce }, {
    notice: done ? NOTICES[done] : undefined,
    errors: reauth ? { reauth: reauthMessage(reauth) } : undefined,
  });
}

type Form = Record<string, string>;

/** The fresh proof a form gives: the current password, or a code of an existing factor (domain/factors/proof.ts). */
const proofOf = (form: Form) => ({ current_password: form.current_password, code: form.code });
type Action = (r: Render, form: Form) => Promise<Response>;

/** Every POST: a form, the browser signed in, the CSRF token right; then the action. */
const accountAction = (handle: Action) =>
  pageErrors(async (c) => {
    const nonce = startPage(c);
    const form = await readForm(c, "The form was not sent as a form.");
    const browser = browserOf(c);
    if (!csrfMatches(browser, form.csrf)) {
      throw new PageRefusal(
        "This page has expired or was not opened in this browser. Open your account page again.",
        403,
      );
    }
    const account = await accountOf(c.get("deps").sql, browser, form.project || null, requestInfo(c));
    if (!account || !browser) return c.html(signedOutAccountPage({ nonce, message: NOT_SIGNED_IN }), 200);
    return await handle({ c, account, browser, nonce }, form);
  });

/** The enrolment page of an authenticator app: its QR code and key. */
const showEnrol = async (r: Render, t: { secret: string; otpauth_uri: string }, error?: string) =>
  r.c.html(
    enrolPage({
      nonce: r.nonce,
      brand: await brandOf(r.c, r.account.projectId),
      csrf: accountCsrf(r.browser),
      projectId: r.account.projectId,
      qrSvg: qrSvg(t.otpauth_uri, "QR code of the key for your authenticator app"),
      secret: t.secret,
      error,
    }),
    error ? 400 : 200,
  );

/** POST /account/profile */
async function accountProfile(r: Render, form: Form): Promise<Response> {
  const { sql } = r.c.get("deps");
  const name = (form.display_name ?? "").trim();
  if (!name || name.length > 50) {
    return await showAccount(r, {
      errors: { display_name: name ? "At most 50 characters." : "Enter your name." },
      values: { display_name: (form.display_name ?? "").slice(0, 100) },
    }, 400);
  }
  const profile = await currentProfile(sql, r.account);
  if (!profile) throw new AuthorizePageError(NOT_SIGNED_IN);
  await updateCurrentUser(
    sql,
    r.account.principal,
    {
      display_name: name,
      email: profile.email as string,
    } as UpdateCurrentUserRequest,
    { mfa: mfaSettings(r.c) },
    r.account.actor,
  );
  return back(r.c, r.account, "profile");
}

/** POST /account/password */
async function accountPassword(r: Render, form: Form): Promise<Response> {
  const { sql } = r.c.get("deps");
  const password = form.password ?? "";
  if (password.length < 8 || password.length > 1024) {
    return await showAccount(r, { errors: { new_password: "At least 8 characters (at most 1024)." } }, 400);
  }
  if (form.password_repeat !== password) {
    return await showAccount(r, { errors: { repeat_password: "The two new passwords differ." } }, 400);
  }
  const profile = await currentProfile(sql, r.account);
  if (!profile) throw new AuthorizePageError(NOT_SIGNED_IN);
  try {
    await updateCurrentUser(
      sql,
      r.account.principal,
      {
        display_name: profile.display_name,
        email: profile.email as string,
        password,
        current_password: form.current_password ?? "",
      } as UpdateCurrentUserRequest,
      { mfa: mfaSettings(r.c) },
      r.account.actor,
    );
  } catch (err) {
    const errors = fieldErrors(err, { current_password: "password-current", password: "new_password" });
    if (!errors) throw err;
    return await showAccount(r, { errors }, statusOf(err));
  }
  return r.c.html(
    signedOutAccountPage({
      nonce: r.nonce,
      message:
        "Your password was changed, and you were signed out everywhere. Sign in again from your application.",
    }),
    200,
  );
}

/** POST /account/sessions/end */
async function accountSessionsEnd(r: Render, form: Form): Promise<Response> {
  try {
    await revokeCurrentSession(r.c.get("deps").sql, r.account.principal, form.session_id ?? "");
  } catch (err) {
    if (!(err instanceof AppError && err.code === "session_not_found")) throw err;
  }
  return back(r.c, r.account, "session");
}

/** POST /account/consents/revoke: a connected app's access ends (its sessions and refresh tokens too). */
async function accountConsentsRevoke(r: Render, form: Form): Promise<Response> {
  const { account } = r;
  try {
    await revokeOwnConsent(
      r.c.get("deps").sql,
      account.projectId,
      account.userId,
      form.consent_id ?? "",
      account.actor.source,
    );
  } catch (err) {
    if (!(err instanceof AppError && err.code === "consent_not_found")) throw err;
  }
  return back(r.c, account, "consent");
}

/** POST /account/agents/revoke: an agent acting for the user stops: its tokens for them are refused at once. */
async function accountAgentsRevoke(r: Render, form: Form): Promise<Response> {
  const { account } = r;
  try {
    await revokeAgent(
      r.c.get("deps").sql,
      account.projectId,
      account.userId,
      form.client_id ?? "",
      account.actor.source,
    );
  } catch (err) {
    if (!(err instanceof AppError && err.code === "client_not_found")) throw err;
  }
  return back(r.c, account, "agent");
}

/** POST /account/sessions/end-all */
async function accountSessionsEndAll(r: Render): Promise<Response> {
  await endAllOwnSessions(r.c.get("deps").sql, r.account);
  return r.c.html(
    signedOutAccountPage({
      nonce: r.nonce,
      message: "You were signed out everywhere, this browser included.",
    }),
    200,
  );
}

/** POST /account/totp/start */
async function accountTotpStart(r: Render, form: Form): Promise<Response> {
  const { sql } = r.c.get("deps");
  const settings = mfaSettings(r.c);
  let started;
  try {
    started = await startTotpEnrolment(sql, settings, r.account.actor, proofOf(form));
  } catch (err) {
    if (err instanceof AppError && err.code === "totp_already_enrolled") {
      return back(r.c, r.account, "profile");
    }
    const errors = fieldErrors(err, { current_password: "enrol-current" });
    if (!errors) throw err;
    return await showAccount(r, { errors }, statusOf(err));
  }
  return showEnrol(r, started);
}

/** POST /account/totp/confirm */
async function accountTotpConfirm(r: Render, form: Form): Promise<Response> {
  const { sql } = r.c.get("deps");
  const settings = mfaSettings(r.c);
  const pending = await pendingTotp(sql, settings, r.account.actor);
  if (!pending) return back(r.c, r.account, "profile");
  const code = (form.code ?? "").trim();
  if (!/^\d{6}$/.test(code)) return showEnrol(r, pending, "Enter the 6 digits the app shows.");
  try {
    const { recovery_codes } = await confirmTotpEnrolment(sql, settings, r.account.actor, { code });
    return r.c.html(
      recoveryCodesPage({
        nonce: r.nonce,
        brand: await brandOf(r.c, r.account.projectId),
        csrf: accountCsrf(r.browser),
        projectId: r.account.projectId,
        codes: recovery_codes,
      }),
      200,
    );
  } catch (err) {
    if (err instanceof AppError && err.code === "invalid_params") {
      return showEnrol(r, pending, "That is not the app's current code. Check the app and try again.");
    }
    throw err;
  }
}

/** POST /account/totp/remove */
async function accountTotpRemove(r: Render, form: Form): Promise<Response> {
  try {
    await removeCurrentTotp(r.c.get("deps").sql, mfaSettings(r.c), r.account.actor, proofOf(form));
  } catch (err) {
    if (err instanceof AppError && err.code === "second_factor_not_found") {
      return back(r.c, r.account, "profile");
    }
    if (err instanceof AppError && err.code === "second_factor_required") {
      return await showAccount(r, {
        errors: {
          "remove-current": "This project requires two-step verification: the authenticator stays.",
        },
      }, 409);
    }
    const errors = fieldErrors(err, { current_password: "remove-current" });
    if (!errors) throw err;
    return await showAccount(r, { errors }, statusOf(err));
  }
  return back(r.c, r.account, "totp_removed");
}

/** POST /account/recovery-codes */
async function accountRecoveryCodes(r: Render, form: Form): Promise<Response> {
  let codes;
  try {
    codes = await regenerateRecoveryCodes(
      r.c.get("deps").sql,
      mfaSettings(r.c),
      r.account.actor,
      proofOf(form),
    );
  } catch (err) {
    if (err instanceof AppError && err.code === "second_factor_not_found") {
      return back(r.c, r.account, "profile");
    }
    const errors = fieldErrors(err, { current_password: "codes-current" });
    if (!errors) throw err;
    return await showAccount(r, { errors }, statusOf(err));
  }
  return r.c.html(
    recoveryCodesPage({
      nonce: r.nonce,
      brand: await brandOf(r.c, r.account.projectId),
      csrf: accountCsrf(r.browser),
      projectId: r.account.projectId,
      codes: codes.recovery_codes,
    }),
    200,
  );
}

/** POST /account/passkeys/remove */
async function accountPasskeysRemove(r: Render, form: Form): Promise<Response> {
  try {
    await removePasskey(
      r.c.get("deps").sql,
      mfaSettings(r.c),
      r.account.actor,
      form.passkey_id ?? "",
      proofOf(form),
    );
  } catch (err) {
    if (err instanceof AppError && err.code === "second_factor_not_found") {
      return back(r.c, r.account, "profile");
    }
    if (err instanceof AppError && err.code === "second_factor_required") {
      return await showAccount(r, {
        errors: { passkeys: "This project requires two-step verification: your last factor stays." },
      }, 409);
    }
    const errors = fieldErrors(err, { current_password: "passkeys" });
    if (!errors) throw err;
    return await showAccount(r, { errors }, statusOf(err));
  }
  return back(r.c, r.account, "passkey_removed");
}

/** POST /account/reauthenticate: to the linked provider, to sign in again (a user without a password). */
async function accountReauthenticate(r: Render, form: Form): Promise<Response> {
  const { account } = r;
  try {
    const location = await startReauthentication(r.c.get("deps").sql, providerSettings(r.c.get("deps")), {
      projectId: account.projectId,
      userId: account.userId,
      ssoSessionId: account.ssoSessionId,
      source: account.actor.source,
    }, form.provider_id ?? "");
    r.c.header("Cache-Control", "no-store");
    r.c.header("Referrer-Policy", "no-referrer");
    return r.c.redirect(location, 303);
  } catch (err) {
    if (!(err instanceof ReauthFailure)) throw err;
    return await showAccount(r, { errors: { reauth: err.message } }, 400);
  }
}

/** POST /account/identities/unlink */
async function accountIdentitiesUnlink(r: Render, form: Form): Promise<Response> {
  try {
    await unlinkCurrentIdentity(r.c.get("deps").sql, r.account.principal, form.provider_id ?? "");
  } catch (err) {
    if (
      err instanceof AppError && (err.code === "last_sign_in_method" || err.code === "identity_not_found")
    ) {
      return await showAccount(r, {
        errors: {
          identities: err.code === "last_sign_in_method"
            ? "This is your only way to sign in: set a password or link another identity first."
            : "That identity is not linked.",
        },
      }, 400);
    }
    throw err;
  }
  return back(r.c, r.account, "identity");
}

export function registerAccountRoutes(app: App) {
  app.get("/account", pageErrors(showAccountPage));
  app.post("/account/*", formLimit("The form is too large."));
  const actions: [string, Action][] = [
    ["/account/profile", accountProfile],
    ["/account/password", accountPassword],
    ["/account/sessions/end", accountSessionsEnd],
    ["/account/sessions/end-all", accountSessionsEndAll],
    ["/account/consents/revoke", accountConsentsRevoke],
    ["/account/agents/revoke", accountAgentsRevoke],
    ["/account/totp/start", accountTotpStart],
    ["/account/totp/confirm", accountTotpConfirm],
    ["/account/totp/remove", accountTotpRemove],
    ["/account/recovery-codes", accountRecoveryCodes],
    ["/account/passkeys/remove", accountPasskeysRemove],
    ["/account/identities/unlink", accountIdentitiesUnlink],
    ["/account/reauthenticate", accountReauthenticate],
  ];
  for (const [path, handle] of actions) app.post(path, accountAction(handle));
}
