/** How a page's errors become answers: an error page, a redirect back to the client, or a 429 page. */
import type { Context } from "hono";
import { AuthorizePageError, AuthorizeRedirectError, redirectWith } from "../../../domain/signin/login.ts";
import { AppError } from "../../../domain/shared/errors.ts";
import type { AppEnv } from "../../env.ts";
import { startPage } from "./headers.ts";
import { html } from "hono/html";
import { layout } from "./layout.ts";

/** The statuses of an error page: a refused request, a form of another browser, too large, too many. */
export type ErrorPageStatus = 400 | 403 | 413 | 429;

/** A page's own refusal with a status other than 400, decided here at the edge (the domain's are all 400). */
export class PageRefusal extends AuthorizePageError {
  constructor(message: string, readonly status: ErrorPageStatus) {
    super(message);
  }
}

/** The error page of a refusal: its message, and 400 unless the page said otherwise. */
export function showError(c: Context<AppEnv>, err: AuthorizePageError) {
  const nonce = startPage(c);
  return c.html(errorPage({ nonce, message: err.message }), err instanceof PageRefusal ? err.status : 400);
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
          redirectWith(err.redirectUri, { ...params, iss: c.var.deps.config.publicUrl }),
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

export function errorPage(p: { nonce: string; message: string }) {
  return layout(
    { nonce: p.nonce, title: "Sign-in problem" },
    html`
      <h1>Sign-in problem</h1>
      <p class="error" role="alert">${p.message}</p>
    `,
  );
}
