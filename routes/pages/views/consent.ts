/** The consent page: what a third-party client asks of the user, and the two buttons. No script. */
import { html } from "hono/html";
import type { Brand } from "../kit/brand.ts";
import { layout } from "../kit/layout.ts";

export function consentPage(p: {
  nonce: string;
  brand?: Brand | null;
  action: string;
  projectName: string;
  requestId: string;
  csrf: string;
  clientName: string;
  /** The host of the redirect URI: where the answer goes. */
  host: string;
  /** The API asked for, or null: the project. */
  resourceName: string | null;
  permissions: { code: string; description: string | null }[];
}) {
  const api = p.resourceName ?? p.projectName;
  return layout(
    { nonce: p.nonce, brand: p.brand, title: `Allow ${p.clientName}?` },
    html`
      <h1>Allow <span id="client-name">${p.clientName}</span>?</h1>
      <p
        class="lead"><strong id="client-host">${p.host}</strong> asks to use <strong id="api">${api}</strong>
        on your behalf.</p>
      ${p.permissions.length > 0
        ? html`
          <p>It will be able to:</p>
          <ul id="permissions">
                      ${p.permissions.map((x) =>
                        html`<li><span class="permission">${x.description || x.code}</span>
                ${
                          x.description
                            ? html`
                              <code>${x.code}</code>
                            `
                            : ""
                        }</li>`
                      )}
                    </ul>
        `
        : html`<p id="permissions-none">It asks for no permissions beyond signing you in.</p>`}
      <p class="hint">You can remove this access later under Connected apps on your account page.</p>
      <form method="post" action="${p.action}">
        <input type="hidden" name="request_id" value="${p.requestId}">
        <input type="hidden" name="csrf" value="${p.csrf}">
        <input type="hidden" name="permissions" value="${p.permissions.map((x) => x.code).join(" ")}">
        <button type="submit" name="decision" value="allow" id="allow">Allow</button>
        <button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
      </form>
    `,
  );
}
