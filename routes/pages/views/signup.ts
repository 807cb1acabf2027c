/** The sign-up page (a login page's "Create an account") and its "check your mail" answer. No script. */
import { html } from "hono/html";
import { layout } from "../kit/layout.ts";

/** The honeypot sits off the screen: humans never see or fill it, and screen readers skip it. */
const HONEYPOT_STYLE = `
  .hp { position: absolute; left: -10000px; top: auto; width: 1px; height: 1px; overflow: hidden; }
`;

type Field = "email" | "name" | "password" | "password_repeat";

export function signupPage(p: {
  nonce: string;
  action: string;
  projectName: string;
  requestId: string;
  csrf: string;
  honeypot: string;
  email?: string;
  name?: string;
  /** Each field's problem, shown under it. */
  errors?: Partial<Record<Field, string>>;
  /** A problem of the whole form (too many attempts). */
  error?: string;
}) {
  const errors = p.errors ?? {};
  const invalid = (f: Field) => errors[f] ? html`aria-invalid="true" aria-describedby="${f}-error"` : "";
  const under = (f: Field) =>
    errors[f] ? html`<p class="field-error" id="${f}-error" role="alert">${errors[f]}</p>` : "";
  return layout(
    { nonce: p.nonce, title: `Create an account: ${p.projectName}`, extraStyle: HONEYPOT_STYLE },
    html`
      <h1>Create an account</h1>
      <p class="lead">to continue to <strong>${p.projectName}</strong></p>
      ${p.error ? html`<p class="error" role="alert" id="error">${p.error}</p>` : ""}
      <form method="post" action="${p.action}" novalidate>
        <input type="hidden" name="request_id" value="${p.requestId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="email" required maxlength="100"
          value="${p.email ?? ""}" ${invalid("email")} autofocus>
        ${under("email")}
        <label for="name">Name</label>
        <input id="name" name="name" type="text" autocomplete="name" required maxlength="50"
          value="${p.name ?? ""}" ${invalid("name")}>
        ${under("name")}
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8"
          maxlength="1024" ${invalid("password")}>
        <p class="hint">At least 8 characters.</p>
        ${under("password")}
        <label for="password_repeat">Repeat the password</label>
        <input id="password_repeat" name="password_repeat" type="password" autocomplete="new-password" required
          maxlength="1024" ${invalid("password_repeat")}>
        ${under("password_repeat")}
        <div class="hp" aria-hidden="true">
          <label for="${p.honeypot}">Leave this field empty</label>
          <input id="${p.honeypot}" name="${p.honeypot}" type="text" tabindex="-1" autocomplete="off">
        </div>
        <button type="submit">Create the account</button>
      </form>
    `,
  );
}

/**
 * After a sign-up that did not sign in at once: the same page whether the address was new (a confirmation link
 * went to it), already registered (a note went to it) or the form came from a robot (nothing went anywhere).
 */
export function signupSentPage(p: { nonce: string; projectName: string; email: string }) {
  return layout(
    { nonce: p.nonce, title: "Check your mail" },
    html`
      <h1>Check your mail</h1>
      <p class="notice" role="status">We sent a message to <strong>${p.email}</strong> about your account at
        <strong>${p.projectName}</strong>. Follow the link in it to confirm your address, then go back to the
        application and sign in.</p>
      <p class="hint">Nothing came? Check your spam folder, and that the address is spelt right.</p>
    `,
  );
}
