/** Every page's nonce and security headers: a strict CSP (a nonce'd style, this origin's scripts), no framing, no caching. */
import type { Context } from "hono";
import { encodeBase64Url } from "../../../domain/shared/base64.ts";
import type { AppEnv } from "../../env.ts";
import type { html } from "hono/html";

/** Security headers of every login and error page; `form-action` must allow the redirect's origin too. */
export function pageHeaders(c: Context<AppEnv>, nonce: string, redirectUri?: string) {
  let formAction = "'self'";
  if (redirectUri) {
    // Chrome follows form-action through the redirect after the POST, so the redirect URI's origin must be
    // allowed. Browsers cannot parse an IPv6 literal in a source expression: for those, the scheme.
    const url = new URL(redirectUri);
    formAction += url.hostname.startsWith("[") ? ` ${url.protocol}` : ` ${url.origin}`;
  }
  c.header(
    "Content-Security-Policy",
    `default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'nonce-${nonce}'; img-src 'self'; ` +
      `form-action ${formAction}; ` +
      "frame-ancestors 'none'; base-uri 'none'",
  );
  c.header("X-Frame-Options", "DENY");
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", "no-store");
  c.header("Pragma", "no-cache");
}

/** A fresh nonce for one page's style sheet. */
export const newNonce = () => encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));

/** A page's nonce, with the pages' headers set for it (and for a form that may lead to `redirectUri`). */
export function startPage(c: Context<AppEnv>, redirectUri?: string): string {
  const nonce = newNonce();
  pageHeaders(c, nonce, redirectUri);
  return nonce;
}

/** The statuses a page answers with. */
export type PageStatus = 200 | 400 | 403 | 429;

/** A page with a fresh nonce and the pages' headers. */
export function page(
  c: Context<AppEnv>,
  render: (nonce: string) => ReturnType<typeof html>,
  status: PageStatus = 200,
  redirectUri?: string,
) {
  const nonce = startPage(c, redirectUri);
  return c.html(render(nonce), status);
}
