/** Raw-HTTP pieces of the OpenID Connect tests: a browser's cookie jar, OpenID authorize requests, logins. */
import assert from "node:assert/strict";
import {
  challengeOf,
  exchangeCode,
  http,
  loginProject,
  newVerifier,
  postToken,
  REDIRECT_URI,
  type TestProject,
} from "./helpers.ts";

/** The cookies one browser holds (name → value), updated from every answer's Set-Cookie. */
export class Browser {
  readonly jar = new Map<string, string>();

  /** `base`: a service a test started, instead of the file's shared one. */
  constructor(readonly base?: string) {}

  #fetch(path: string, init: RequestInit): Promise<Response> {
    return this.base === undefined ? http(path, init) : fetch(`${this.base}${path}`, init);
  }

  header(): Record<string, string> {
    return this.jar.size ? { cookie: [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ") } : {};
  }

  take(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const [name, value] = [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)];
      const gone = value === "" || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (gone) this.jar.delete(name);
      else this.jar.set(name, value);
    }
    return res;
  }

  async get(path: string): Promise<Response> {
    return this.take(await this.#fetch(path, { redirect: "manual", headers: this.header() }));
  }

  async post(path: string, form: Record<string, string>): Promise<Response> {
    return this.take(
      await this.#fetch(path, {
        method: "POST",
        redirect: "manual",
        headers: { ...this.header(), "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form).toString(),
      }),
    );
  }

  /** /logout at `path` shows the confirmation page; submits its form as the user would. */
  async confirmLogout(path: string): Promise<Response> {
    const asked = await this.get(path);
    assert.equal(asked.status, 200, `${path} did not ask to confirm`);
    const html = await asked.text();
    assert.match(html, /<h1>Sign out\?<\/h1>/);
    const fields = Object.fromEntries(
      [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((
        m,
      ) => [m[1], unescape(m[2])]),
    );
    assert.ok(fields.confirmation, "the form carries the confirmation token");
    return await this.post("/logout", fields);
  }
}

/** Undoes the HTML escaping of an attribute value. */
function unescape(v: string): string {
  return v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

export type OidcProject = Awaited<ReturnType<typeof loginProject>>;

/** A project with a login user and a second public client, and a logout URI registered. */
export async function oidcProject(): Promise<OidcProject & { secondClientId: string }> {
  const p = await loginProject();
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    post_logout_redirect_uris: [LOGOUT_URI],
  });
  const second = await p.api.clients.createClient(p.project.id, { name: "second app" });
  return { ...p, secondClientId: second.id };
}

export const LOGOUT_URI = "http://127.0.0.1:9/signed-out";

/** GET /authorize of an OpenID request (scope openid plus `extra`) in this browser. */
export async function authorizeOidc(
  browser: Browser,
  clientId: string,
  extra: Record<string, string> = {},
): Promise<{ res: Response; verifier: string; html: string }> {
  const verifier = newVerifier();
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    scope: "openid profile email",
    state: "st",
    nonce: "n-0S6_WzA2Mj",
    ...extra,
  });
  const res = await browser.get(`/authorize?${query}`);
  return { res, verifier, html: await res.text() };
}

/** Fills the form of a login page in this browser; answers the redirect's URL. */
export async function submitForm(browser: Browser, html: string, email: string, password: string) {
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const res = await browser.post("/authorize", {
    request_id: field("request_id"),
    csrf: field("csrf"),
    email,
    password,
  });
  assert.equal(res.status, 303, await res.text());
  return new URL(res.headers.get("location")!);
}

export type OidcTokens = {
  access_token: string;
  refresh_token: string;
  id_token: string;
  scope: string;
};

/** Signs in through the form (OpenID request) in this browser and exchanges the code. */
export async function signIn(
  browser: Browser,
  p: { clientId: string; email: string; password: string },
  extra: Record<string, string> = {},
): Promise<OidcTokens> {
  const { res, verifier, html } = await authorizeOidc(browser, p.clientId, extra);
  assert.equal(res.status, 200, html);
  const location = await submitForm(browser, html, p.email, p.password);
  return await redeem(p.clientId, location, verifier);
}

/** Exchanges the code of a redirect. */
export async function redeem(clientId: string, location: URL, verifier: string): Promise<OidcTokens> {
  const code = location.searchParams.get("code");
  assert.ok(code, location.href);
  const res = await exchangeCode(clientId, code, verifier);
  assert.equal(res.status, 200);
  return await res.json();
}

/** The payload of a JWT, unverified (the tests that need verification use openid-client). */
export function payloadOf(jwt: string): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(decodeBase64Url(jwt.split(".")[1])));
}

function decodeBase64Url(s: string): Uint8Array {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "==".slice(0, (4 - (s.length % 4)) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/** A refresh with this token: its status, its RFC 6749 `error` and the service's `error_code`. */
export async function refreshStatus(clientId: string, refreshToken: string) {
  const res = await postToken({
    grant_type: "refresh_token",
    client_id: clientId,
    refresh_token: refreshToken,
  });
  const body = await res.json();
  return {
    status: res.status,
    error: body.error as string | undefined,
    error_code: body.error_code as string | undefined,
    body,
  };
}

/** GET /api/v1/users/current with this access token: its status. */
export async function currentUserStatus(accessToken: string): Promise<number> {
  const res = await http("/api/v1/users/current", { headers: { authorization: `Bearer ${accessToken}` } });
  await res.body?.cancel();
  return res.status;
}

export type { TestProject };
