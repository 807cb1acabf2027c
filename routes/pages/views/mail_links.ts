/**
 * The pages a mailed link opens, and the "Forgot your password?" page: the login page's look (layout), no
 * script, labels on every field, an error under the field it is about.
 */
import { html } from "hono/html";
import type { Brand } from "../kit/brand.ts";
import { layout } from "../kit/layout.ts";

type Page = { nonce: string; brand?: Brand | null; action: string; csrf: string };

/** "Back to sign-in", when the login request is known and still open in this browser. */
const backLink = (url: string | null | undefined) =>
  url ? html`<p class="aside"><a href="${url}" id="back-to-sign-in">Back to sign-in</a></p>` : "";

const fieldError = (id: string, error?: string) =>
  error ? html`<p class="field-error" id="${id}-error">${error}</p>` : "";
const describedBy = (id: string, error?: string) =>
  error ? html`aria-describedby="${id}-error" aria-invalid="true"` : "";

/** "Forgot your password?": the address to mail a link to. */
export function resetRequestPage(
  p: Page & {
    projectName: string;
    requestId: string | null;
    projectId: string;
    email?: string;
    error?: string;
    /** The sign-in this request came from, asked again; null when none is open for this browser. */
    backUrl?: string | null;
  },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Reset your password for ${p.projectName}` },
    html`
      <h1>Reset your password</h1>
      <p class="lead">for <strong>${p
        .projectName}</strong>. Enter your account's email address and we will mail
        you a link to choose a new password.</p>
      <form method="post" action="${p.action}" novalidate>
        ${p.requestId ? html`<input type="hidden" name="request_id" value="${p.requestId}">` : ""}
        <input type="hidden" name="project_id" value="${p.projectId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required maxlength="100"
          value="${p.email ?? ""}" ${describedBy("email", p.error)} autofocus>
        ${fieldError("email", p.error)}
        <button type="submit">Send the link</button>
      </form>
      ${backLink(p.backUrl)}
    `,
  );
}

/** The answer to a reset request: the same whether or not the address has an account. */
export function resetSentPage(
  p: { nonce: string; brand?: Brand | null; projectName: string; validFor: string; backUrl: string | null },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Check your mail" },
    html`
      <h1>Check your mail</h1>
      <p class="notice" role="status">If the address belongs to an account of <strong>${p
        .projectName}</strong>,
        a link to choose a new password is on its way. It works once, for ${p.validFor}.</p>
      <p>No mail after a few minutes? Check your spam folder, or ask again.</p>
      ${backLink(p.backUrl)}
    `,
  );
}

/** Choose a password (reset or invitation). */
export function choosePasswordPage(
  p: Page & { projectName: string; email: string; token: string; invitation: boolean; error?: string },
) {
  const title = p.invitation ? "Choose your password" : "Choose a new password";
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `${title} for ${p.projectName}` },
    html`
      <h1>${title}</h1>
      <p class="lead">for <strong>${p.email}</strong> at <strong>${p.projectName}</strong></p>
      <form method="post" action="${p.action}" novalidate>
        <input type="hidden" name="token" value="${p.token}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <input type="email" name="username" value="${p.email}" autocomplete="username" hidden readonly>
        <label for="password">New password</label>
        <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8"
          maxlength="1024" ${describedBy("password", p.error)} autofocus>
        ${fieldError("password", p.error)}
        <button type="submit">${p.invitation ? "Set my password" : "Set the new password"}</button>
      </form>
    `,
  );
}

/** A link that no longer works (or never did): says so, and offers a new one when the project is known. */
export function staleLinkPage(
  p: { nonce: string; brand?: Brand | null; newLinkUrl: string | null; verification: boolean },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "This link does not work" },
    html`
      <h1>This link does not work</h1>
      <p class="error" role="alert">The link has expired, was already used, or is not complete. Each link works
        once, for a limited time.</p>
      ${p.newLinkUrl
        ? p.verification
          ? html`<p>Sign in to the application and ask for a new confirmation mail, or
            <a href="${p.newLinkUrl}">reset your password</a>, which confirms your address too.</p>`
          : html`<p><a href="${p.newLinkUrl}">Ask for a new link</a></p>`
        : html`<p>Go back to the application's sign-in page and choose “Forgot your password?” to get a new
          link.</p>`}
    `,
  );
}

/** Done: the password is set and the browser signed in, with no login page to go back to. */
export function passwordSetPage(
  p: {
    nonce: string;
    brand?: Brand | null;
    projectName: string;
    signedIn?: boolean;
    /** Not signed in: the sign-in the reset was asked from, when it is still open in this browser. */
    backUrl?: string | null;
    /** Signed in: the account page of the project. */
    accountUrl?: string;
  },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Your password is set" },
    p.signedIn === false
      ? html`
        <h1>Your password is set</h1>
        <p class="notice" role="status">Every session of your account at <strong>${p.projectName}</strong> was
          signed out. Go back to the application and sign in with your new password and your second factor.</p>
        ${backLink(p.backUrl)}
      `
      : html`
        <h1>Your password is set</h1>
        <p class="notice" role="status">You are signed in to <strong>${p.projectName}</strong>. Every other
          session of your account was signed out. You can go back to the application now.</p>
        ${p.accountUrl ? html`<p class="aside"><a href="${p.accountUrl}">Your account</a></p>` : ""}
      `,
  );
}

/** Confirm an address: a button, so that a mail scanner opening the link does not spend it. */
export function verifyPage(p: Page & { projectName: string; email: string; token: string }) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Confirm your email address for ${p.projectName}` },
    html`
      <h1>Confirm your email address</h1>
      <p class="lead"><strong>${p.email}</strong> for your account at <strong>${p.projectName}</strong></p>
      <form method="post" action="${p.action}">
        <input type="hidden" name="token" value="${p.token}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <button type="submit">Confirm</button>
      </form>
    `,
  );
}

export function verifiedPage(p: { nonce: string; brand?: Brand | null; projectName: string; email: string }) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Email address confirmed" },
    html`
      <h1>Email address confirmed</h1>
      <p class="notice" role="status"><strong>${p.email}</strong> is confirmed for your account at
        <strong>${p.projectName}</strong>. You can close this page.</p>
    `,
  );
}

/** The right password in a project that wants a verified address first: offers to mail the link. */
export function verifyFirstPage(
  p: Page & { projectName: string; requestId: string; email: string },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Confirm your email address for ${p.projectName}` },
    html`
      <h1>Confirm your email address first</h1>
      <p class="error" role="alert" id="error"><strong>${p
        .projectName}</strong> asks you to confirm your email
        address before you sign in.</p>
      <form method="post" action="${p.action}">
        <input type="hidden" name="request_id" value="${p.requestId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <p>We can mail a confirmation link to <strong>${p.email}</strong>.</p>
        <button type="submit">Mail me a confirmation link</button>
      </form>
    `,
  );
}

/** The confirmation link is on its way (or was sent recently). */
export function verifySentPage(
  p: {
    nonce: string;
    brand?: Brand | null;
    projectName: string;
    email: string;
    validFor: string;
    backUrl?: string | null;
  },
) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Check your mail" },
    html`
      <h1>Check your mail</h1>
      <p class="notice" role="status">A link to confirm <strong>${p.email}</strong> for
        <strong>${p.projectName}</strong> is on its way. It works once, for ${p.validFor}. Once you have
        confirmed, go back to the sign-in page and sign in again.</p>
      ${backLink(p.backUrl)}
    `,
  );
}
