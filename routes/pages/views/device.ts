/** The device grant's verification pages (RFC 8628 §3.3): the code's form, the confirmation, the end. No script. */
import { html } from "hono/html";
import type { Brand } from "../kit/brand.ts";
import { layout } from "../kit/layout.ts";

/** The form where the user enters the code their device shows (pre-filled from `verification_uri_complete`). */
export function deviceCodePage(
  p: { nonce: string; action: string; csrf: string; userCode?: string; error?: string },
) {
  return layout(
    { nonce: p.nonce, title: "Connect a device" },
    html`
      <h1>Connect a device</h1>
      <p class="lead">Enter the code shown on your device.</p>
      ${p.error ? html`<p class="error" role="alert" id="error">${p.error}</p>` : ""}
      <form method="post" action="${p.action}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <label for="user_code">Code</label>
        <input id="user_code" name="user_code" type="text" autocomplete="off" autocapitalize="characters"
          spellcheck="false" required maxlength="20" placeholder="XXXX-XXXX" value="${p.userCode ?? ""}"
          ${p.error ? html`aria-describedby="error"` : ""} autofocus>
        <button type="submit" id="continue">Continue</button>
      </form>
      <p class="hint">Only enter a code that a device of yours is showing you now.</p>
    `,
  );
}

/** After the sign-in: which client asks, for which API and permissions, and the two buttons. */
export function deviceConfirmPage(p: {
  nonce: string;
  brand?: Brand | null;
  action: string;
  state: string;
  csrf: string;
  clientName: string;
  /** The API asked for, or null: the project. */
  resourceName: string | null;
  projectName: string;
  permissions: { code: string; description: string | null }[];
}) {
  const api = p.resourceName ?? p.projectName;
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Connect ${p.clientName}?` },
    html`
      <h1>Connect <span id="client-name">${p.clientName}</span>?</h1>
      <p class="lead">A device asks to use <strong id="api">${api}</strong> on your behalf as
        <strong>${p.clientName}</strong>. Approve only if you started this on a device of yours.</p>
      ${p.permissions.length > 0
        ? html`
          <p>It will be able to:</p>
          <ul id="permissions">
            ${p.permissions.map((x) =>
              html`<li><span class="permission">${x.description || x.code}</span></li>`
            )}
          </ul>
        `
        : html`<p id="permissions-none">It asks for no permissions beyond signing you in.</p>`}
      <form method="post" action="${p.action}">
        <input type="hidden" name="state" value="${p.state}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <button type="submit" name="decision" value="approve" id="approve">Approve</button>
        <button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
      </form>
    `,
  );
}

/** The end: the device gets its tokens at its next poll, or is refused. */
export function deviceDonePage(p: { nonce: string; approved: boolean }) {
  const title = p.approved ? "Device connected" : "Device refused";
  return layout(
    { nonce: p.nonce, title },
    html`
      <h1 id="outcome">${title}</h1>
      <p class="lead">${p.approved
        ? "You can return to your device: it continues on its own."
        : "The device was not given access. You can close this page."}</p>
    `,
  );
}
