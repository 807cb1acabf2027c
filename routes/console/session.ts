/**
 * The console's plumbing: its cookies and security headers, the signed-in session behind every page (CSRF on
 * every form), and the one way it acts: the admin API, called in-process with the user's token, refreshed when
 * it expires. An ended session, a revoked token or a stale form leads back to sign-in, then to the wanted page.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import { encodeBase64Url } from "../../domain/shared/base64.ts";
import { consoleClientId } from "../../domain/console/client.ts";
import {
  type ConsoleSession,
  consoleSession,
  type ConsoleTokens,
  csrfMatches,
  csrfOf,
  refreshConsoleSession,
} from "../../domain/console/sessions.ts";
import type { App, AppEnv } from "../env.ts";
import { type ApiAnswer, Layout } from "./layout.tsx";

export type C = Context<AppEnv>;

/** `__Host-` cookies on https, which no sibling domain can plant; sent only to /console otherwise. */
const secureOf = (c: C) => c.get("deps").config.publicUrl.startsWith("https:");
export const sessionCookie = (c: C) => secureOf(c) ? "__Host-acs_console" : "acs_console";
export const pendingCookie = (c: C) => secureOf(c) ? "__Host-acs_console_login" : "acs_console_login";
/** Not secret: which project's sign-in to go back to when a session ends. */
export const projectCookie = (c: C) => secureOf(c) ? "__Host-acs_console_project" : "acs_console_project";

export function putCookie(c: C, name: string, value: string, maxAge: number) {
  const secure = secureOf(c);
  setCookie(c, name, value, {
    httpOnly: true,
    sameSite: "Lax",
    secure,
    path: secure ? "/" : "/console",
    maxAge,
  });
}

export function dropCookie(c: C, name: string) {
  const secure = secureOf(c);
  deleteCookie(c, name, { path: secure ? "/" : "/console", secure });
}

export const newNonce = () => encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));

/** Headers of every console answer: no inline script, no framing, nothing cached. */
export function consoleHeaders(c: C, nonce: string) {
  c.header(
    "Content-Security-Policy",
    `default-src 'none'; script-src 'self'; style-src 'nonce-${nonce}'; img-src 'self'; ` +
      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  c.header("X-Frame-Options", "DENY");
  c.header("X-Content-Type-Options", "nosniff");
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on form posts, which the
  // origin check below would refuse; other origins still get no referrer.
  c.header("Referrer-Policy", "same-origin");
  c.header("Cache-Control", "no-store");
}

/** Renders a page with the console's headers. */
export function html(c: C, page: (nonce: string) => Child, status: 200 | 400 | 403 | 404 | 409 | 422 = 200) {
  const nonce = newNonce();
  consoleHeaders(c, nonce);
  return c.html(`<!doctype html>${page(nonce)}`, status);
}

/** A path of the console to come back to: nothing else (no other origin, no scheme-relative `//`). */
export function safeNext(next: string | undefined | null): string {
  return next && /^\/console(\/|\?|$)/.test(next) && !next.includes("//") && !next.includes("\\")
    ? next
    : "/console";
}

/** Thrown anywhere a page needs the user to sign in again. */
export class SignInAgain extends Error {
  constructor(readonly next: string) {
    super("sign in again");
  }
}

export function toSignIn(c: C, next: string) {
  c.header("Cache-Control", "no-store");
  return c.redirect(`/console/signin?${new URLSearchParams({ next: safeNext(next) })}`, 303);
}

export type Form = Record<string, string | string[]>;

/** An API answer: its status and JSON body. */
export type { ApiAnswer, ApiError } from "./layout.tsx";

/** The signed-in user, as `GET /api/v1/users/current` answers. */
export type Me = { id: string; email: string | null; display_name: string; permissions: string[] };

/** A signed-in request: the session, the form when posted, and the admin API under the user's token. */
export class Console {
  private mine?: Promise<Me>;
  /** The signed-in user's email (or name), once `me()` has been read: the page header shows it. */
  who: string | null = null;

  constructor(
    readonly app: App,
    readonly c: C,
    public session: ConsoleSession,
    readonly form: Form,
    readonly next: string,
  ) {}

  /** The signed-in user, read once per request. */
  me(): Promise<Me> {
    this.mine ??= this.get<Me>("/api/v1/users/current").then((me) => {
      this.who = me.email ?? me.display_name;
      return me;
    });
    return this.mine;
  }

  get csrf() {
    return csrfOf(this.session.secret);
  }

  /** A 404 page for a record that is not there (or not visible to this user). */
  notFound(): Response {
    return html(
      this.c,
      (nonce) =>
        Layout({
          nonce,
          title: "Not found",
          k: this,
          children: raw(
            "<h1>Not found</h1><p>There is nothing here, or it is not yours to see.</p>" +
              '<p><a href="/console">Back to the console</a></p>',
          ),
        }),
      404,
    );
  }

  field(name: string): string {
    const v = this.form[name];
    return (Array.isArray(v) ? v[0] : v ?? "").trim();
  }

  list(name: string): string[] {
    const v = this.form[name];
    return v === undefined ? [] : Array.isArray(v) ? v : [v];
  }

  /** Calls the admin API as the user; refreshes the tokens once when they expired or were refused. */
  async api<T = unknown>(method: string, path: string, body?: unknown, type?: string): Promise<ApiAnswer<T>> {
    if (this.session.stale) await this.refresh();
    let res = await this.send(method, path, body, type);
    if (res.status === 401) {
      await this.refresh();
      res = await this.send(method, path, body, type);
      if (res.status === 401) throw new SignInAgain(this.next);
    }
    const text = await res.text();
    return { ok: res.ok, status: res.status, body: text ? JSON.parse(text) : {} };
  }

  /** Like `api`, for reads a page cannot do without: any refusal becomes the page's error. */
  async get<T>(path: string): Promise<T> {
    const res = await this.api<T>("GET", path);
    if (!res.ok) throw new ApiRefusal(res);
    return res.body;
  }

  /** A JSON body, or with `type` the bytes as they are (an uploaded image). */
  private send(method: string, path: string, body?: unknown, type?: string): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.session.accessToken}` };
    const ua = this.c.req.header("user-agent");
    if (ua) headers["user-agent"] = ua;
    if (body !== undefined) headers["content-type"] = type ?? "application/json";
    const sent = body === undefined
      ? undefined
      : type
      ? body as Uint8Array<ArrayBuffer>
      : JSON.stringify(body);
    return Promise.resolve(this.app.request(path, { method, headers, body: sent }, this.c.env));
  }

  /** A file of a posted multipart form, or null. */
  upload(name: string): File | null {
    const v = (this.form as Record<string, unknown>)[name];
    return v instanceof File && v.size > 0 ? v : null;
  }

  private refreshing?: Promise<void>;

  /** One refresh at a time: calls made together (a page's look-ups) share it, never spending a token twice. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.refreshNow().finally(() => this.refreshing = undefined);
    return this.refreshing;
  }

  private async refreshNow() {
    const { sql } = this.c.get("deps");
    const projectId = this.session.projectId;
    const fresh = await refreshConsoleSession(
      sql,
      this.session,
      (refreshToken) =>
        tokenRequest(this.app, this.c, {
          grant_type: "refresh_token",
          refresh_token: refreshToken,
          client_id: consoleClientId(projectId),
        }),
    );
    if (!fresh) throw new SignInAgain(this.next);
    this.session = fresh;
  }
}

/** A read the page needed was refused by the API: shown as the page's error. */
export class ApiRefusal extends Error {
  constructor(readonly answer: ApiAnswer) {
    super(answer.body.error_description ?? "refused");
  }
}

/** POSTs a form to the token endpoint (in-process); the tokens, or null when refused. */
export async function tokenRequest(
  app: App,
  c: C,
  form: Record<string, string>,
): Promise<ConsoleTokens | null> {
  const res = await app.request(
    "/api/v1/tokens",
    {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    },
    c.env,
  );
  if (!res.ok) return null;
  return await res.json() as ConsoleTokens;
}

/** Revokes a token (RFC 7009) as the console client of its project. */
export async function revoke(app: App, c: C, projectId: string, token: string): Promise<void> {
  await app.request(
    "/api/v1/tokens/revoke",
    {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token, client_id: consoleClientId(projectId) }).toString(),
    },
    c.env,
  );
}

/** The path and query of this request, to come back to. */
export const here = (c: C) => {
  const url = new URL(c.req.url);
  return url.pathname + url.search;
};

/**
 * Wraps a console page: no session → sign-in (and back here after); a POST must carry the session's CSRF
 * token and come from this origin, or it leads back to sign-in and then to the form's page.
 */
export function signedIn(app: App, handler: (k: Console) => Promise<Response>) {
  return async (c: C): Promise<Response> => {
    const post = c.req.method === "POST";
    let form: Form = {};
    if (post) {
      const type = c.req.header("content-type") ?? "";
      // Multipart only carries a file (the branding page's logo); its text fields read as any form's.
      if (/^(application\/x-www-form-urlencoded|multipart\/form-data)(;|$)/i.test(type)) {
        form = await c.req.parseBody({ all: true }) as Form;
      }
    }
    const back = post ? safeNext(typeof form.back === "string" ? form.back : null) : here(c);
    const session = await consoleSession(c.get("deps").sql, getCookie(c, sessionCookie(c)));
    if (!session) return toSignIn(c, back);
    if (post) {
      const origin = c.req.header("origin");
      const sameOrigin = !origin || origin === new URL(c.get("deps").config.publicUrl).origin ||
        origin === new URL(c.req.url).origin;
      if (!sameOrigin || !csrfMatches(session.secret, form.csrf)) return toSignIn(c, back);
    }
    try {
      return await handler(new Console(app, c, session, form, back));
    } catch (err) {
      if (err instanceof SignInAgain) return toSignIn(c, err.next);
      throw err;
    }
  };
}

/** One record of an area by id (`GET {listPath}/{id}`), or null when the API does not know it. */
export async function findIn<T extends { id: string }>(
  k: Console,
  listPath: string,
  id: string,
): Promise<T | null> {
  const res = await k.api<T>("GET", `${listPath}/${encodeURIComponent(id)}`);
  if (res.status === 404) return null;
  if (!res.ok) throw new ApiRefusal(res);
  return res.body;
}
