/** How a page's errors become answers: an error page, a redirect back to the client, or a 429 page. */
import type { Context } from "hono";
import {
  AuthorizePageError,
  AuthorizeRedirectError,
  RedirectUriNotRegistered,
  redirectWith,
} from "../../../domain/signin/login.ts";
import type { UnregisteredUri } from "../../../domain/projects/redirect_uris.ts";
import { AppError } from "../../../domain/shared/errors.ts";
import type { AppEnv } from "../../env.ts";
import { startPage } from "./headers.ts";
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { layout } from "./layout.ts";

/** The statuses of an error page: a refused request, a form of another browser, no such page, too large, too many. */
export type ErrorPageStatus = 400 | 403 | 404 | 413 | 429;

/** A page's own refusal with a status other than 400, decided here at the edge (the domain's are all 400). */
export class PageRefusal extends AuthorizePageError {
  constructor(message: string, readonly status: ErrorPageStatus) {
    super(message);
  }
}

/**
 * The error page of a refusal: its message, and 400 unless the page said otherwise; an unregistered redirect URI
 * also says what was received and where to register it. The refusal's reason goes to the request log.
 */
export function showError(c: Context<AppEnv>, err: AuthorizePageError) {
  const nonce = startPage(c);
  if (err.reason) c.set("reason", err.reason);
  const help = err instanceof RedirectUriNotRegistered
    ? unregisteredHelp(c.get("deps").config.publicUrl, err.unregistered)
    : undefined;
  return c.html(
    errorPage({ nonce, message: err.message, help }),
    err instanceof PageRefusal ? err.status : 400,
  );
}

/** How much of a received URI a page shows: enough to recognise it, never a page of attacker's text. */
const SHOWN = 200;

/**
 * What an unregistered `redirect_uri` or `post_logout_redirect_uri` page tells whoever opened it: the URI
 * received (escaped by the template, shortened), the byte-for-byte rule, and where the application's developer
 * registers it (the client's or the project's console page, or the admin API). It lists none of the registered
 * URIs: an anonymous visitor learns nothing about the application's other addresses.
 */
export function unregisteredHelp(
  publicUrl: string,
  u: UnregisteredUri,
): HtmlEscapedString | Promise<HtmlEscapedString> {
  const field = u.kind === "redirect_uri" ? "redirect_uris" : "post_logout_redirect_uris";
  const shown = u.received.length > SHOWN
    ? `${u.received.slice(0, SHOWN)}… (the first ${SHOWN} of ${u.received.length} characters)`
    : u.received;
  const pid = encodeURIComponent(u.projectId);
  const projectPage = `${publicUrl}/console/projects/${pid}`;
  const clientPage = `${projectPage}/clients/${encodeURIComponent(u.clientId)}`;
  const clientApi = `PUT /api/v1/projects/${u.projectId}/clients/${u.clientId}`;
  const projectApi = `PUT /api/v1/projects/${u.projectId}`;
  const where = u.owner === "client"
    ? html`<p>This application (client <code>${u.clientId}</code>) has a list of its own, so only that list
        applies: add the URI to its <code>${field}</code> on its console page
        <a href="${clientPage}">${clientPage}</a>, or with <code>${clientApi}</code> (field
        <code>${field}</code>).</p>`
    : html`<p>This application (client <code>${u.clientId}</code>) uses its project's list: add the URI to the
        project's <code>${field}</code> on the project's console page <a href="${projectPage}">${projectPage}</a>,
        or with <code>${projectApi}</code> (field <code>${field}</code>)${
      u.consoleClient ? "" : html`; or give this client a list of its own on its page
        <a href="${clientPage}">${clientPage}</a> (<code>${clientApi}</code>)`
    }.</p>`;
  return html`
    <p>Received <code>${u.kind}</code>: <code class="received">${shown}</code></p>
    <p>It must match one registered for this client byte for byte (scheme, host, port, path, query, a trailing
      slash, letter case), so the browser was not sent there.</p>
    <h2>To fix it (the application's developer)</h2>
    ${where}
  `;
}

/** The `Retry-After` of a 429 `too_many_requests`, or null for any other error. */
export function retryAfter(err: unknown): string | null {
  return err instanceof AppError && err.code === "too_many_requests" ? String(err.retryAfter ?? 1) : null;
}

/**
 * The one place where /authorize's errors become answers: a request error the redirect URI can be trusted
 * with goes back to it (RFC 6749 §4.1.2.1); anything about the client or the page is shown on our own page;
 * too many login pages is a 429 page. Anything else is a server error, answered by the app's error handler.
 */
export function pageErrors(handler: (c: Context<AppEnv>) => Promise<Response>) {
  return async (c: Context<AppEnv>): Promise<Response> => {
    try {
      return await handler(c);
    } catch (err) {
      if (err instanceof AuthorizeRedirectError) {
        c.header("Cache-Control", "no-store");
        const params = { error: err.code, error_description: err.message, state: err.state };
        return c.redirect(
          redirectWith(err.redirectUri, { ...params, iss: c.get("deps").config.publicUrl }),
          302,
        );
      }
      if (err instanceof AuthorizePageError) return showError(c, err);
      const wait = retryAfter(err);
      if (wait === null) throw err;
      c.header("Retry-After", wait);
      return showError(
        c,
        new PageRefusal(`Too many sign-in pages opened. Try again in ${wait} seconds.`, 429),
      );
    }
  };
}

export function errorPage(
  p: { nonce: string; message: string; help?: HtmlEscapedString | Promise<HtmlEscapedString> },
) {
  return layout(
    { nonce: p.nonce, title: "Sign-in problem" },
    html`
      <h1>Sign-in problem</h1>
      <p class="error" role="alert">${p.message}</p>
      ${p.help ?? ""}
    `,
  );
}
