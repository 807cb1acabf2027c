/**
 * The account page's HTML: profile, password, two-step verification, sessions and linked identities, each a
 * form of its own posting to /account/… with the page's CSRF token. No script; errors sit under their fields.
 */
import { readableUserAgent } from "../../../domain/shared/user_agent.ts";
import { html, raw } from "hono/html";
import type { AccountView } from "../../../domain/signin/account.ts";
import type { Brand } from "../kit/brand.ts";
import { layout, passkeyBlock } from "../kit/layout.ts";

const STYLE = `
  main.wide { width: min(100% - 2rem, 44rem); margin: 1rem 0; }
  section { margin-top: 1.75rem; padding-top: 1rem; border-top: 1px solid GrayText; }
  h2 { margin: 0 0 .5rem; font-size: 1.15rem; }
  button.secondary { background: transparent; color: CanvasText; border: 1px solid GrayText; }
  button.small { width: auto; margin-top: .5rem; padding: .45rem .9rem; }
  ul.plain { list-style: none; padding: 0; margin: 0; }
  ul.plain li { padding: .6rem 0; border-bottom: 1px solid GrayText; overflow-wrap: anywhere; }
  .muted { opacity: .8; font-size: .9rem; }
  .notice { margin: 0 0 1rem; padding: .75rem; border-radius: .4rem; background: #def7ec; color: #03543f; }
  nav.projects a { margin-right: .75rem; color: LinkText; }
  ol.codes { columns: 2; font-family: ui-monospace, monospace; font-size: 1.05rem; padding-left: 1.5rem; }
  code.key { display: block; padding: .6rem; border: 1px dashed GrayText; border-radius: .4rem;
             font-size: 1.05rem; letter-spacing: .05em; overflow-wrap: anywhere; }
  .qr { display: block; margin: 1rem auto; max-width: 100%; height: auto; }
`;

type Common = { nonce: string; brand?: Brand | null; csrf: string; projectId: string };

/** Hidden fields of every form on the page. */
const hidden = (p: Common) =>
  html`<input type="hidden" name="csrf" value="${p.csrf}"><input type="hidden" name="project" value="${p.projectId}">`;

/** A labelled input with its error under it (`aria-invalid`, `aria-describedby`). */
function field(
  f: { id: string; name: string; label: string; type: string; autocomplete: string; value?: string },
  error: string | undefined,
) {
  return html`
    <label for="${f.id}">${f.label}</label>
    <input id="${f.id}" name="${f.name}" type="${f.type}" autocomplete="${f.autocomplete}" required
      maxlength="1024"
      value="${f.value ?? ""}" ${error ? html`aria-invalid="true" aria-describedby="${f.id}-error"` : ""}>
    ${error ? html`<p class="field-error" id="${f.id}-error" role="alert">${error}</p>` : ""}
  `;
}

const when = (iso: string | null) => iso ? new Date(iso).toUTCString().replace(/:\d\d GMT$/, " UTC") : "";

type Page = Common & {
  projectName: string;
  view: AccountView;
  currentSession: string;
  notice?: string;
  /** Field errors by input id. */
  errors?: Record<string, string>;
  values?: Record<string, string>;
};

/** The current password's field, under the id of its form. */
const currentPassword = (id: string, e: Record<string, string>) =>
  field(
    {
      id,
      name: "current_password",
      label: "Current password",
      type: "password",
      autocomplete: "current-password",
    },
    e[id],
  );

/**
 * The fresh proof a form of sign-in methods carries: the current password; for a user without one, nothing once
 * freshly proven (signed in again at their provider), else the code of their authenticator or a recovery code.
 */
function proofField(p: Page, id: string) {
  const e = p.errors ?? {};
  const v = p.view;
  if (v.hasPassword) return currentPassword(id, e);
  if (v.freshUntil || !v.factors.totp) {
    return e[id] ? html`<p class="field-error" role="alert">${e[id]}</p>` : "";
  }
  return field(
    {
      id,
      name: "code",
      label: "A code of your authenticator app, or a recovery code",
      type: "text",
      autocomplete: "one-time-code",
    },
    e[id],
  );
}

/**
 * For a user without a password: how to prove it is them before changing how they sign in: signing in again at
 * a linked provider (or a code of their authenticator, asked by each form).
 */
function proofSection(p: Page) {
  const v = p.view;
  if (v.hasPassword) return "";
  const e = p.errors ?? {};
  return html`
    <section aria-labelledby="proof-title">
      <h2 id="proof-title">Confirm it is you</h2>
      ${v.freshUntil
        ? html`<p id="fresh" role="status">Confirmed: you can change how you sign in until ${
          when(v.freshUntil)
        }.</p>`
        : html`
          <p>Changing how you sign in (an authenticator app, passkeys, recovery codes) needs fresh proof that it
            is you${v.factors.totp ? ": a code of your authenticator app, or" : ":"} signing in again at your
            identity provider.</p>
          ${v.identities.map((i) =>
            html`<form method="post" action="/account/reauthenticate">
              ${hidden(p)}<input type="hidden" name="provider_id" value="${i.provider_id}">
              <button type="submit" class="small">Sign in again with ${i.provider_display_name}</button>
            </form>`
          )}
        `}
      ${e.reauth ? html`<p class="field-error" role="alert" id="reauth-error">${e.reauth}</p>` : ""}
    </section>
  `;
}

/** Profile: the name. */
function profileSection(p: Page) {
  const e = p.errors ?? {};
  const v = p.view;
  return html`
    <section aria-labelledby="profile-title">
      <h2 id="profile-title">Profile</h2>
      <form method="post" action="/account/profile">
        ${hidden(p)}
        ${field({
          id: "display_name",
          name: "display_name",
          label: "Name",
          type: "text",
          autocomplete: "name",
          value: p.values?.display_name ?? v.displayName,
        }, e.display_name)}
        <button type="submit" class="small">Save</button>
      </form>
    </section>
  `;
}

/** Password: a change, which signs the user out everywhere (users with a password only). */
function passwordSection(p: Page) {
  const e = p.errors ?? {};
  const v = p.view;
  const current = (id: string) => currentPassword(id, e);
  return html`
    ${v.hasPassword
      ? html`
        <section aria-labelledby="password-title">
          <h2 id="password-title">Password</h2>
          <form method="post" action="/account/password">
                    ${hidden(p)}
                    ${current("password-current")}
                    ${field({
                      id: "new_password",
                      name: "password",
                      label: "New password",
                      type: "password",
                      autocomplete: "new-password",
                    }, e.new_password)}
                    ${field({
                      id: "repeat_password",
                      name: "password_repeat",
                      label: "New password again",
                      type: "password",
                      autocomplete: "new-password",
                    }, e.repeat_password)}
                    <p class="hint">At least 8 characters. Changing it signs you out everywhere.</p>
                    <button type="submit" class="small">Change password</button>
                  </form>
        </section>
      `
      : ""}
  `;
}

/** Two-step verification: an authenticator app and its recovery codes. */
function factorsSection(p: Page) {
  const v = p.view;
  const current = (id: string) => proofField(p, id);
  return html`
    <section aria-labelledby="mfa-title">
      <h2 id="mfa-title">Two-step verification</h2>
      ${v.factors.totp
        ? html`
          <p id="totp-status">An authenticator app is set up${v.factors.totp_enrolled_at
            ? html`
              (since ${when(v.factors.totp_enrolled_at)})
            `
            : ""}.
            Recovery codes left: <strong id="recovery-left">${v.factors.recovery_codes_left}</strong>.</p>
          <form method="post" action="/account/recovery-codes">
            ${hidden(p)} ${current("codes-current")}
            <button type="submit" class="small secondary">Get new recovery codes</button>
          </form>
          <form method="post" action="/account/totp/remove">
            ${hidden(p)} ${current("remove-current")}
            <button type="submit" class="small secondary">Remove the authenticator</button>
          </form>
        `
        : html`
          <p
            id="totp-status">Not set up. With an authenticator app, signing in asks for its code after your password.</p>
          <form method="post" action="/account/totp/start">
            ${hidden(p)} ${current("enrol-current")}
            <button type="submit" class="small">Set up an authenticator app</button>
          </form>
        `}
    </section>
  `;
}

/** Passkeys: the list, and adding one through /passkey.js. */
function passkeysSection(p: Page) {
  const e = p.errors ?? {};
  const v = p.view;
  const current = (id: string) => proofField(p, id);
  return html`
    <section aria-labelledby="passkeys-title">
      <h2 id="passkeys-title">Passkeys</h2>
      <p>Sign in with your device's screen lock instead of a password; a passkey also serves as the second step.</p>
      ${v.factors.passkeys.length === 0
        ? html`<p id="no-passkeys">No passkey yet.</p>`
        : html`<ul class="plain" id="passkeys">${
          v.factors.passkeys.map((k, i) =>
            html`<li><strong>${k.name}</strong>
                <span class="muted">· ${k.synced ? "synced" : "this device only"} · added ${
              when(k.created_at)
            }${
              k.last_used_at
                ? html`
                  · last used ${when(k.last_used_at)}
                `
                : ""
            }</span>
                <form method="post" action="/account/passkeys/remove">
                  ${hidden(p)}<input type="hidden" name="passkey_id" value="${k.id}">
                  ${current(`passkey-current-${i}`)}
                  <button type="submit" class="small secondary">Remove</button>
                </form></li>`
          )
        }</ul>`}
      ${e.passkeys ? html`<p class="field-error" role="alert">${e.passkeys}</p>` : ""}
      <label for="passkey-name">Name of a new passkey</label>
      <input id="passkey-name" name="passkey_name" type="text" maxlength="50" autocomplete="off"
        placeholder="My phone">
      ${v.hasPassword
        ? html`
          <label for="passkey-password">Current password</label>
          <input id="passkey-password" type="password" autocomplete="current-password" maxlength="1024">
        `
        : !v.freshUntil && v.factors.totp
        ? html`
          <label for="passkey-code">A code of your authenticator app, or a recovery code</label>
          <input id="passkey-code" type="text" autocomplete="one-time-code" maxlength="40">
        `
        : ""}
      ${passkeyBlock({
        label: "Add a passkey",
        options: "/account/passkeys/options",
        verify: "/account/passkeys",
        csrf: p.csrf,
        project: p.projectId,
        register: true,
      })}
    </section>
  `;
}

/** Where the user is signed in: each session, and signing out everywhere. */
function sessionsSection(p: Page) {
  const v = p.view;
  return html`
    <section aria-labelledby="sessions-title">
      <h2 id="sessions-title">Where you are signed in</h2>
      <ul class="plain" id="sessions">
        ${v.sessions.map((s) =>
          html`
            <li>
              <strong title="${s.user_agent ?? ""}">${readableUserAgent(s.user_agent)}</strong>
              <span class="muted">· ${s.ip ?? "unknown address"} · since ${when(
                s.created_at,
              )} · last used ${when(s.last_used_at)}</span>
              <form method="post" action="/account/sessions/end">
                            ${hidden(p)}<input type="hidden" name="session_id" value="${s.id}">
                            <button type="submit" class="small secondary" aria-label="Sign out of the session started ${when(
                              s.created_at,
                            )}">Sign out</button>
                          </form>
            </li>
          `
        )}
      </ul>
      ${v.sessions.length === 0 ? html`<p>No application sessions.</p>` : ""}
      <form method="post" action="/account/sessions/end-all">
        ${hidden(p)}
        <button type="submit" class="small secondary">Sign out everywhere</button>
      </form>
    </section>
  `;
}

/** Connected apps: the third-party applications the user allowed, each revocable. */
function connectedAppsSection(p: Page) {
  const v = p.view;
  return html`
    <section aria-labelledby="apps-title">
      <h2 id="apps-title">Connected apps</h2>
      <ul class="plain" id="connected-apps">
        ${v.consents.map((k) =>
          html`
            <li>
              <strong>${k.client_name}</strong>
              <span class="muted">· ${k.resource_name ?? p.projectName}${k.permissions.length > 0
                ? html`
                  · ${k.permissions.join(", ")}
                `
                : ""} · since ${when(k.created_at)}</span>
              <form method="post" action="/account/consents/revoke">
                ${hidden(p)}<input type="hidden" name="consent_id" value="${k.id}">
                <button type="submit" class="small secondary" aria-label="Remove access of ${k
                  .client_name}">Remove access</button>
              </form>
            </li>
          `
        )}
      </ul>
      ${v.consents.length === 0 ? html`<p>No connected apps.</p>` : ""}
    </section>
  `;
}

/** Agents acting for the user (token exchange): each one stoppable. */
function agentsSection(p: Page) {
  const v = p.view;
  return html`
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents acting for you</h2>
      <ul class="plain" id="acting-agents">
        ${v.agents.map((a) =>
          html`
            <li>
              <strong>${a.client_name}</strong>
              <span class="muted">· ${a.tokens} live ${a.tokens === 1 ? "token" : "tokens"} · last ${when(
                a.last_at,
              )}</span>
              <form method="post" action="/account/agents/revoke">
                ${hidden(p)}<input type="hidden" name="client_id" value="${a.client_id}">
                <button type="submit" class="small secondary" aria-label="Stop ${a.client_name}">Stop</button>
              </form>
            </li>
          `
        )}
      </ul>
      ${v.agents.length === 0 ? html`<p>No agent acts for you.</p>` : ""}
    </section>
  `;
}

/** Identities linked at upstream providers. */
function identitiesSection(p: Page) {
  const e = p.errors ?? {};
  const v = p.view;
  return html`
    <section aria-labelledby="identities-title">
      <h2 id="identities-title">Linked identities</h2>
      ${v.identities.length === 0
        ? html`<p>None.</p>`
        : html`<ul class="plain" id="identities">${
          v.identities.map((i) =>
            html`<li><strong>${i.provider_display_name}</strong> <span class="muted">${
              i.email ?? i.subject
            }</span>
                <form method="post" action="/account/identities/unlink">
                  ${hidden(p)}<input type="hidden" name="provider_id" value="${i.provider_id}">
                  <button type="submit" class="small secondary">Unlink</button>
                </form></li>`
          )
        }</ul>`}
      ${e.identities ? html`<p class="field-error" role="alert">${e.identities}</p>` : ""}
    </section>
  `;
}

export function accountPage(p: Page) {
  const v = p.view;
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Your account", wide: true, extraStyle: STYLE },
    html`
      <h1>Your account</h1>
      <p class="lead">in <strong>${p.projectName}</strong>${v.email
        ? html`, signed in as <strong>${v.email}</strong>`
        : ""}</p>
      ${v.projects.length > 1
        ? html`<nav class="projects" aria-label="Your other accounts">${
          v.projects.filter((x) => x.project_id !== p.projectId).map((x) =>
            html`<a href="/account?${new URLSearchParams({ project: x.project_id })}">${x.project_name}</a>`
          )
        }</nav>`
        : ""}
      ${p.notice ? html`<p class="notice" role="status" id="notice">${p.notice}</p>` : ""}

      ${profileSection(p)} ${proofSection(p)} ${passwordSection(p)} ${factorsSection(p)} ${passkeysSection(p)}
      ${sessionsSection(p)} ${connectedAppsSection(p)} ${agentsSection(p)} ${identitiesSection(p)}
    `,
  );
}

/** The enrolment's second page: the QR code and the key, and the field for the app's first code. */
export function enrolPage(p: Common & { qrSvg: string; secret: string; error?: string }) {
  const grouped = p.secret.match(/.{1,4}/g)!.join(" ");
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Set up an authenticator app", extraStyle: STYLE },
    html`
      <h1>Set up an authenticator app</h1>
      <p>Scan this code with your authenticator app (Google Authenticator, 1Password, Aegis, …):</p>
      <div class="qr">${raw(p.qrSvg)}</div>
      <p>Or type this key into the app:</p>
      <code class="key" id="secret" aria-label="The key">${grouped}</code>
      <form method="post" action="/account/totp/confirm">
        ${hidden(p)}
        <label for="code">The 6-digit code the app shows</label>
        <input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required
          maxlength="6" pattern="[0-9]{6}" ${p.error
            ? html`aria-invalid="true" aria-describedby="code-error"`
            : ""} autofocus>
        ${p.error ? html`<p class="field-error" id="code-error" role="alert">${p.error}</p>` : ""}
        <button type="submit">Turn on two-step verification</button>
      </form>
      <p><a href="/account?${new URLSearchParams({ project: p.projectId })}">Cancel</a></p>
    `,
  );
}

/** The recovery codes, shown once. */
export function recoveryCodesPage(p: Common & { codes: string[] }) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Your recovery codes", extraStyle: STYLE },
    html`
      <h1>Your recovery codes</h1>
      <p class="notice" role="status">Keep these somewhere safe. Each works once, in place of the app's code, if you
        lose your phone. They are shown only now.</p>
      <ol class="codes" id="recovery-codes">${p.codes.map((c) => html`<li><code>${c}</code></li>`)}</ol>
      <p><a href="/account?${new URLSearchParams({ project: p.projectId })}">Back to your account</a></p>
    `,
  );
}

/** The browser has no live session: nothing to show but how to sign in. */
export function signedOutAccountPage(p: { nonce: string; brand?: Brand | null; message: string }) {
  return layout(
    { nonce: p.nonce, brand: p.brand, title: "Your account" },
    html`
      <h1>Your account</h1>
      <p class="error" role="alert">${p.message}</p>
    `,
  );
}
