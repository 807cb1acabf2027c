/** The server-rendered login and error pages: no script, no third-party asset, escaped by `html`. */
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { Brand } from "../kit/brand.ts";
import { layout, passkeyBlock, STYLE } from "../kit/layout.ts";

export function loginPage(p: {
  nonce: string;
  brand?: Brand | null;
  action: string;
  projectName: string;
  /** For the console's login: the project's ID, shown (names are not unique; IDs are). */
  consoleOf?: string;
  requestId: string;
  csrf: string;
  email?: string;
  error?: string;
  /** The project's active identity providers: a button each (a link carrying the page's request and CSRF). */
  providers?: { id: string; display_name: string }[];
  /** "Forgot your password?": the page that mails a reset link. */
  resetUrl?: string;
  /** "Create an account": the sign-up page of this login, when the project's `signup` is not "off". */
  signupUrl?: string;
  /** A sign-in to an organization: its name. */
  organizationName?: string;
  /** "Use my company's sign-in": an organization of the project has its own provider, found by the address. */
  companySignIn?: boolean;
}) {
  const base = p.action.replace(/\/authorize$/, "");
  const providerHref = (id: string) =>
    `${base}/authorize/idp/${encodeURIComponent(id)}?${new URLSearchParams({
      request_id: p.requestId,
      csrf: p.csrf,
    })}`;
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Sign in to ${p.projectName}` },
    html`
      <h1>Sign in</h1>
      <p class="lead">to continue to <strong>${p.projectName}</strong>${p.organizationName
        ? html`, in <strong id="organization">${p.organizationName}</strong>`
        : ""}</p>
      ${p.consoleOf
        ? html`<p class="lead" id="project">The admin console of the project with ID <code>${p.consoleOf}</code></p>`
        : ""}
      ${p.error ? html`<p class="error" role="alert" id="error">${p.error}</p>` : ""}
      <form method="post" action="${p.action}">
        <input type="hidden" name="request_id" value="${p.requestId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required maxlength="100"
          value="${p
            .email ?? ""}"
          ${p.error ? html`aria-describedby="error"` : ""} autofocus>
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required
          maxlength="1024">
        <button type="submit">Sign in</button>
        ${p.companySignIn
          ? html`
            <button type="submit" name="company" value="1" formnovalidate class="secondary"
              id="company-sign-in">Use my company's sign-in</button>
          `
          : ""}
      </form>
      ${p.resetUrl ? html`<p class="aside"><a href="${p.resetUrl}">Forgot your password?</a></p>` : ""}
      ${p.signupUrl
        ? html`<p class="aside">New here? <a id="signup" href="${p.signupUrl}">Create an account</a></p>`
        : ""}
      ${passkeyBlock({
        label: "Sign in with a passkey",
        options: `${p.action}/passkey/options`,
        verify: `${p.action}/passkey`,
        requestId: p.requestId,
        csrf: p.csrf,
      })}
      ${p.providers && p.providers.length > 0
        ? html`<nav class="providers" aria-label="Other ways to sign in">
          <p>or</p>
          ${
          p.providers.map((provider) =>
            html`<a class="provider" href="${
              providerHref(provider.id)
            }">Sign in with ${provider.display_name}</a>`
          )
        }
        </nav>`
        : ""}
    `,
  );
}

/**
 * The second step of a login: a code of the user's authenticator app, or one of their recovery codes. The form
 * carries the same request and CSRF token as the password's; its error sits under the field.
 */
export function secondFactorPage(p: {
  nonce: string;
  brand?: Brand | null;
  action: string;
  projectName: string;
  requestId: string;
  csrf: string;
  error?: string;
}) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Verify it is you: ${p.projectName}` },
    html`
      <h1>Verify it is you</h1>
      <p class="lead">to continue to <strong>${p.projectName}</strong></p>
      <form method="post" action="${p.action}">
        <input type="hidden" name="request_id" value="${p.requestId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <label for="code">Authentication code</label>
        <input id="code" name="code" type="text" autocomplete="one-time-code" required maxlength="40"
          autocapitalize="none" spellcheck="false" aria-describedby="code-hint${p.error ? " code-error" : ""}"
          ${p.error ? html`aria-invalid="true"` : ""} autofocus>
        <p class="hint" id="code-hint">The 6-digit code from your authenticator app, or one of your recovery codes.</p>
        ${p.error ? html`<p class="field-error" id="code-error" role="alert">${p.error}</p>` : ""}
        <button type="submit">Verify</button>
      </form>
      ${passkeyBlock({
        label: "Use a passkey",
        options: p.action.replace(/\/mfa$/, "/passkey/options"),
        verify: p.action.replace(/\/mfa$/, "/passkey"),
        requestId: p.requestId,
        csrf: p.csrf,
      })}
    `,
  );
}

/**
 * A project that requires a second factor, for a user without one: right after the password, the QR code and
 * the key of a new authenticator, and the field for its first code (posted to /authorize/mfa).
 */
export function enrolInLoginPage(p: {
  nonce: string;
  brand?: Brand | null;
  action: string;
  projectName: string;
  requestId: string;
  csrf: string;
  qrSvg: string;
  secret: string;
  error?: string;
}) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Set up two-step verification: ${p.projectName}` },
    html`
      <h1>Set up two-step verification</h1>
      <p class="lead"><strong>${p
        .projectName}</strong> asks for a code from an authenticator app at each sign-in.
        Scan this code with the app (Google Authenticator, 1Password, Aegis, …):</p>
      <div class="qr">${raw(p.qrSvg)}</div>
      <p>Or type this key into the app:</p>
      <code class="key" id="secret">${p.secret.match(/.{1,4}/g)!.join(" ")}</code>
      <form method="post" action="${p.action}">
        <input type="hidden" name="request_id" value="${p.requestId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <label for="code">The 6-digit code the app shows</label>
        <input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required
          maxlength="6" ${p.error ? html`aria-invalid="true" aria-describedby="code-error"` : ""} autofocus>
        ${p.error ? html`<p class="field-error" id="code-error" role="alert">${p.error}</p>` : ""}
        <button type="submit">Turn on and continue</button>
      </form>
    `,
  );
}

/** After the enrolment at sign-in: the recovery codes, shown once, and the button that goes on. */
export function loginRecoveryCodesPage(p: {
  nonce: string;
  brand?: Brand | null;
  action: string;
  requestId: string;
  csrf: string;
  codes: string[];
}) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Your recovery codes" },
    html`
      <h1>Your recovery codes</h1>
      <p class="lead">Keep these somewhere safe. Each works once, in place of the app's code, if you lose your
        phone. They are shown only now.</p>
      <ol class="codes" id="recovery-codes">${p.codes.map((c) => html`<li><code>${c}</code></li>`)}</ol>
      <form method="post" action="${p.action}">
        <input type="hidden" name="request_id" value="${p.requestId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <input type="hidden" name="continue" value="1">
        <button type="submit">I have saved them: continue</button>
      </form>
    `,
  );
}

/**
 * After an upstream provider's sign-in: on to the application by a refresh of this page, not by a redirect.
 * The browser got here by the provider's own form, and a provider whose page sets `form-action` (this service
 * does) blocks a redirect chain that leaves the origins it allows; a new navigation is not bound by it.
 */
export function forwardPage(p: { nonce: string; brand?: Brand | null; location: string }) {
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <meta http-equiv="refresh" content="0; url=${p.location}">
        <title>Signing you in…</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml">
        <style nonce="${p.nonce}">${STYLE}</style>
      </head>
      <body>
        <main>
          <h1>Signed in</h1>
          <p class="lead" role="status">Taking you back to the application…</p>
          <a class="provider" id="continue" href="${p.location}">Continue</a>
        </main>
      </body>
    </html>
  `;
}

/** What /logout shows when it does not send the browser back to an application. */
export function signedOutPage(
  p: {
    nonce: string;
    brand?: Brand | null;
    message: string;
    ok: boolean;
    help?: HtmlEscapedString | Promise<HtmlEscapedString>;
  },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Signed out" },
    html`
      <h1>Signed out</h1>
      <p ${p.ok ? html`role="status"` : html`class="error" role="alert"`}>${p.message}</p>
      ${p.help ?? ""}
    `,
  );
}

/**
 * What /logout shows when the user must confirm (no trusted `id_token_hint`): the request's parameters go back
 * as hidden fields, with the browser's confirmation token.
 */
export function signOutConfirmPage(p: {
  nonce: string;
  brand?: Brand | null;
  action: string;
  /** Why the page asks again, if it does. */
  notice: string | null;
  projectName: string | null;
  token: string;
  params: Record<string, string>;
}) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Sign out?" },
    html`
      <h1>Sign out?</h1>
      ${p.notice ? html`<p class="error" role="alert">${p.notice}</p>` : ""}
      <p class="lead">${p.projectName
        ? html`You will be signed out of <strong>${p.projectName}</strong>.`
        : "You will be signed out of every application you signed in to here."}
        If you did not ask for this, close this page.</p>
      <form method="post" action="${p.action}">
        ${Object.entries(p.params).map(([name, value]) =>
          html`<input type="hidden" name="${name}" value="${value}">`
        )}
        <input type="hidden" name="confirmation" value="${p.token}">
        <button type="submit">Sign out</button>
      </form>
    `,
  );
}
