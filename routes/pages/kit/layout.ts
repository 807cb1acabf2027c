/** The document around every page (one nonce'd style sheet, no inline script) and the passkey button. */
import { html } from "hono/html";
import { type Brand, BRAND_STYLE, brandColors, brandFooter, brandHeader } from "./brand.ts";

/** The pages' one style sheet (sent under the page's nonce). */
export const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
  body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: Canvas; color: CanvasText; }
  *, *::before, *::after { box-sizing: border-box; }
  main { width: min(100% - 2rem, 24rem); padding: 2rem 1.5rem; border: 1px solid GrayText; border-radius: .75rem; }
  h1 { margin: 0 0 .25rem; font-size: 1.5rem; }
  p.lead { margin: 0 0 1.5rem; }
  label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
  input { width: 100%; padding: .65rem; font: inherit; border: 1px solid GrayText; border-radius: .4rem; }
  input:focus-visible, button:focus-visible { outline: 3px solid Highlight; outline-offset: 2px; }
  button { margin-top: 1.5rem; width: 100%; padding: .75rem; font: inherit; font-weight: 600; border: 0; border-radius: .4rem;
           background: var(--brand, #1a56db); color: var(--brand-text, #fff); cursor: pointer; }
  .providers { margin-top: 1.5rem; border-top: 1px solid GrayText; padding-top: 1rem; }
  .providers p { margin: 0 0 .5rem; text-align: center; }
  a.provider { display: block; margin-top: .5rem; padding: .7rem; border: 1px solid GrayText; border-radius: .4rem;
               text-align: center; color: CanvasText; text-decoration: none; font-weight: 600; overflow-wrap: anywhere; }
  a.provider:focus-visible { outline: 3px solid Highlight; outline-offset: 2px; }
  button.secondary { background: transparent; color: CanvasText; border: 1px solid GrayText; }
  .passkey { margin-top: 1rem; }
  .passkey button { margin-top: .5rem; }
  .field-error { margin: .35rem 0 0; color: #9b1c1c; font-weight: 600; }
  input[aria-invalid="true"] { border-color: #9b1c1c; border-width: 2px; }
  .hint { margin: .35rem 0 0; font-size: .9rem; }
  #permissions { padding-left: 1.25rem; } #permissions li { margin: .35rem 0; }
  #permissions code, #client-host, #client-name, #api { overflow-wrap: anywhere; }
  .qr { display: block; margin: 1rem auto; text-align: center; }
  code.key { display: block; padding: .6rem; border: 1px dashed GrayText; border-radius: .4rem; overflow-wrap: anywhere; }
  ol.codes { columns: 2; font-family: ui-monospace, monospace; padding-left: 1.5rem; }
  .error { margin: 0 0 1rem; padding: .75rem; border-radius: .4rem; background: #fde8e8; color: #9b1c1c; }
  .field-error { margin: .35rem 0 0; color: #c81e1e; font-size: .9rem; }
  @media (prefers-color-scheme: dark) { .field-error { color: #f98080; } }
  .aside { margin: 1rem 0 0; text-align: center; }
  .notice { margin: 0 0 1rem; padding: .75rem; border-radius: .4rem; background: #e1effe; color: #1e429f; }
  a { color: var(--brand-link, LinkText); }
  h2 { margin: 1.25rem 0 .25rem; font-size: 1.1rem; }
  code, a { overflow-wrap: anywhere; }
`;

/**
 * The passkey button of a page: hidden until /passkey.js (this origin's only script) finds WebAuthn, then it asks
 * `options` for a challenge and sends the browser's answer to `verify`.
 */
export function passkeyBlock(p: {
  label: string;
  options: string;
  verify: string;
  requestId?: string;
  csrf: string;
  project?: string;
  register?: boolean;
}) {
  return html`
    <div id="passkey" class="passkey" hidden data-options="${p.options}" data-verify="${p.verify}"
      data-csrf="${p.csrf}" ${p.requestId ? html`data-request-id="${p.requestId}"` : ""}
      ${p.project ? html`data-project="${p.project}"` : ""} ${p.register ? html`data-mode="register"` : ""}>
      <button type="button" class="secondary">${p.label}</button>
      <p class="field-error" id="passkey-error" role="alert" hidden></p>
    </div>
    <script src="/passkey.js" defer></script>
  `;
}

/**
 * The document around every page: no inline script, one nonce'd style sheet, no referrer. A project's page
 * passes its `brand` (kit/brand.ts): its heading and logo above the body, its links below, its colour in the
 * style sheet.
 */
export function layout(
  p: { nonce: string; title: string; wide?: boolean; extraStyle?: string; brand?: Brand | null },
  body: ReturnType<typeof html>,
) {
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>${p.title}</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml">
        <style nonce="${p.nonce}">${STYLE}${BRAND_STYLE}${brandColors(
          p.brand?.primary_color ?? null,
        )}${p.extraStyle ?? ""}</style>
      </head>
      <body>
        <main ${p.wide ? html`class="wide"` : ""}>
          ${p.brand ? brandHeader(p.brand) : ""}
          ${body}
          ${p.brand ? brandFooter(p.brand) : ""}
        </main>
      </body>
    </html>
  `;
}
