/**
 * Pieces of the identity provider tests: the service under test ("downstream": its own database, loopback
 * targets allowed, a KEY_ENCRYPTION_KEY, at http://localhost:…), the shared test service as a real upstream
 * OpenID Provider (another instance of this service, at http://127.0.0.1:…), a hand-made upstream whose ID
 * tokens a test writes (for forged answers), and a cookie-keeping user agent that follows redirects across both.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import type { Service } from "../service.ts";
import {
  ADMIN_SECRET,
  atModuleEnd,
  basic,
  challengeOf,
  freePort,
  isolatedDatabase,
  loginProject,
  mutableLog,
  newVerifier,
  service,
  startWith,
  systemTokenAt,
} from "./helpers.ts";

export const APP_REDIRECT = "http://127.0.0.1:9/callback";

let downstream: Promise<Service> | undefined;

/** The service under test, started once per test file. */
export function down(): Promise<Service> {
  downstream ??= (async () => {
    const db = await isolatedDatabase();
    const port = freePort();
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
      .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const log = mutableLog();
    const svc = await startWith({
      ...db.env,
      PORT: String(port),
      PUBLIC_URL: `http://localhost:${port}`,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      KEY_ENCRYPTION_KEY: key,
    }, { write: log.write });
    atModuleEnd(() => {
      log.mute();
      void svc.close().catch(() => {});
      db.dropSync();
    });
    return svc;
  })();
  return downstream;
}

/** JSON over HTTP to a service, with a bearer token. */
export async function call(
  base: string,
  token: string | null,
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  return await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export async function json<T = Record<string, unknown>>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  return text ? JSON.parse(text) : undefined as T;
}

/** A client-credentials token of a client of the service at `base`. */
export async function tokenAt(base: string, clientId: string, secret: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/tokens`, {
    method: "POST",
    headers: { authorization: basic(clientId, secret), "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
  return (await json<{ access_token: string }>(res, 200)).access_token;
}

export type DownProject = {
  /** Where the tests call its API (answers checked against the document). */
  url: string;
  /** Its PUBLIC_URL (http://localhost:…), where a browser goes: cookies apart from the upstream's. */
  publicUrl: string;
  projectId: string;
  token: string;
  clientId: string;
  svc: Service;
};

/** A project of the service under test with a public client for the application at APP_REDIRECT. */
export async function downProject(redirectUris = [APP_REDIRECT]): Promise<DownProject> {
  const svc = await down();
  return await projectAt(svc, svc.url.replace("127.0.0.1", "localhost"), redirectUris);
}

/** A project, as downProject makes it, of the service at `svc.url` (public at `publicUrl`). */
export async function projectAt(
  svc: Service,
  publicUrl: string,
  redirectUris = [APP_REDIRECT],
): Promise<DownProject> {
  const system = await systemTokenAt(svc.url);
  const project = await json<{ id: string; admin_client: { client_id: string; client_secret: string } }>(
    await call(svc.url, system, "POST", "/api/v1/projects", {
      name: `idp ${crypto.randomUUID().slice(0, 8)}`,
      redirect_uris: redirectUris,
    }),
    201,
  );
  const token = await tokenAt(svc.url, project.admin_client.client_id, project.admin_client.client_secret);
  const client = await json<{ id: string }>(
    await call(svc.url, token, "POST", `/api/v1/projects/${project.id}/clients`, { name: "app" }),
    201,
  );
  return { url: svc.url, publicUrl, projectId: project.id, token, clientId: client.id, svc };
}

/** A project of the upstream (the shared service) with a user and a confidential client for the downstream. */
export async function upstreamProject() {
  const p = await loginProject();
  const client = await p.api.clients.createClient(p.project.id, {
    name: "downstream",
    token_endpoint_auth_method: "client_secret_basic",
  } as never);
  const base = (await service()).url;
  return {
    ...p,
    issuer: base,
    rpClientId: client.id,
    rpSecret: client.client_secret,
    /** Registers the downstream's redirect URI at the upstream project. */
    allow: async (redirectUri: string) => {
      await p.api.projects.updateProject(p.project.id, {
        name: p.project.name,
        redirect_uris: [p.project.redirect_uris[0], redirectUri],
      });
    },
  };
}

/** A user agent: cookies per host (as browsers keep them, whatever the port), redirects followed by hand. */
export class Agent {
  readonly jars = new Map<string, Map<string, string>>();

  async get(url: string): Promise<Response> {
    return await this.request(url, { method: "GET" });
  }

  async post(url: string, form: Record<string, string>): Promise<Response> {
    return await this.request(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    });
  }

  /** Follows redirects until an answer that is not one, or until a URL of the application. */
  async follow(url: string): Promise<{ res: Response; url: string }> {
    let current = url;
    for (let i = 0; i < 10; i++) {
      if (current.startsWith(APP_REDIRECT)) return { res: new Response(null), url: current };
      const res = await this.get(current);
      let location = res.headers.get("location");
      if (res.status === 200 && !location) {
        // The page after an upstream sign-in moves on by a refresh.
        const html = await res.clone().text();
        const refresh = /<meta http-equiv="refresh" content="0; url=([^"]+)">/.exec(html)?.[1];
        if (refresh) location = refresh.replaceAll("&amp;", "&");
      }
      if (!location || (res.status === 200 ? false : res.status < 300 || res.status >= 400)) {
        return { res, url: current };
      }
      await res.body?.cancel();
      current = new URL(location, current).href;
    }
    throw new Error("too many redirects");
  }

  cookies(host: string): Map<string, string> {
    let jar = this.jars.get(host);
    if (!jar) this.jars.set(host, jar = new Map());
    return jar;
  }

  private async request(url: string, init: RequestInit): Promise<Response> {
    const host = new URL(url).hostname;
    const jar = this.cookies(host);
    const headers = new Headers(init.headers);
    if (jar.size) headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const name = pair.slice(0, pair.indexOf("="));
      const value = pair.slice(pair.indexOf("=") + 1);
      if (value === "" || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  }
}

/** The hidden fields and provider links of a login page. */
export function pageOf(html: string) {
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const links = [...html.matchAll(/<a class="provider" href="([^"]+)">([^<]*)<\/a>/g)].map((m) => ({
    href: m[1].replaceAll("&amp;", "&"),
    label: m[2],
  }));
  const error = /<p class="error" role="alert"[^>]*>([^<]*)<\/p>/.exec(html)?.[1] ?? null;
  return { requestId: field("request_id"), csrf: field("csrf"), links, error };
}

/** Opens the downstream's login page for an OpenID request of its application; the verifier to redeem with. */
export async function openDownLogin(agent: Agent, d: DownProject, extra: Record<string, string> = {}) {
  const verifier = newVerifier();
  const query = new URLSearchParams({
    client_id: d.clientId,
    redirect_uri: APP_REDIRECT,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    scope: "openid email profile",
    state: "app-state",
    nonce: "app-nonce",
    ...extra,
  });
  const res = await agent.get(`${d.publicUrl}/authorize?${query}`);
  return { res, verifier, html: await res.text() };
}

/** Exchanges the application's code at the downstream: the token answer. */
export async function redeemAt(
  d: DownProject,
  location: string,
  verifier: string,
  redirectUri = APP_REDIRECT,
) {
  const code = new URL(location).searchParams.get("code");
  assert.ok(code, location);
  const res = await fetch(`${d.url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: d.clientId,
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }).toString(),
  });
  return await json<{ access_token: string; id_token: string; refresh_token: string }>(res, 200);
}

export function claimsOf(jwt: string): Record<string, unknown> {
  const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
  return JSON.parse(atob(part + "==".slice(0, (4 - part.length % 4) % 4)));
}

/**
 * A hand-made upstream: discovery, JWKS and a token endpoint whose ID token a test writes (`claims` gets the
 * nonce and code_verifier the downstream sent). `issuerOverride` makes its discovery lie about its issuer.
 */
export async function fakeUpstream() {
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const state = {
    issuerOverride: null as string | null,
    discoveryStatus: 200,
    /** What the next ID token says, from the authorization request the downstream sent. */
    claims: (_auth: URLSearchParams): Record<string, unknown> => ({}),
    /** The authorization request the downstream last sent the browser with. */
    lastAuthorize: null as URLSearchParams | null,
    tokenRequests: [] as { form: URLSearchParams; authorization: string | null; path: string }[],
    /** Where the discovery document says the token endpoint is (both paths answer). */
    tokenPath: "/token",
    tokenStatus: 200,
    signWith: privateKey as CryptoKey,
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/.well-known/openid-configuration") {
      return Response.json({
        issuer: state.issuerOverride ?? base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}${state.tokenPath}`,
        jwks_uri: `${base}/jwks`,
        response_types_supported: ["code"],
        code_challenge_methods_supported: ["S256"],
        id_token_signing_alg_values_supported: ["RS256"],
        token_endpoint_auth_methods_supported: ["client_secret_basic"],
      }, { status: state.discoveryStatus });
    }
    if (url.pathname === "/jwks") return Response.json({ keys: [jwk] });
    if (url.pathname === "/authorize") {
      state.lastAuthorize = url.searchParams;
      // Back to the downstream's callback with a code, as a provider does after its own login.
      const back = new URL(url.searchParams.get("redirect_uri")!);
      back.searchParams.set("code", `code-${crypto.randomUUID()}`);
      back.searchParams.set("state", url.searchParams.get("state")!);
      return new Response(null, { status: 302, headers: { location: back.href } });
    }
    if ((url.pathname === "/token" || url.pathname === "/token2") && req.method === "POST") {
      const form = new URLSearchParams(await req.text());
      state.tokenRequests.push({ form, authorization: req.headers.get("authorization"), path: url.pathname });
      if (state.tokenStatus !== 200) {
        return Response.json({ error: "invalid_grant" }, { status: state.tokenStatus });
      }
      const auth = state.lastAuthorize!;
      const now = Math.floor(Date.now() / 1000);
      const claims = {
        iss: base,
        aud: auth.get("client_id"),
        sub: "upstream-user-1",
        nonce: auth.get("nonce"),
        iat: now,
        exp: now + 300,
        ...state.claims(auth),
      };
      const idToken = await new SignJWT(claims as never).setProtectedHeader({ alg: "RS256", kid: "k1" })
        .sign(state.signWith);
      return Response.json({ access_token: "at", token_type: "Bearer", expires_in: 300, id_token: idToken });
    }
    return new Response("not found", { status: 404 });
  });
  return { base, state, stop: () => server.shutdown() };
}

export type Provider = { id: string; redirect_uri: string };

export async function createProvider(d: DownProject, body: Record<string, unknown>): Promise<Provider> {
  return await json<Provider>(
    await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/identity-providers`, {
      kind: "oidc",
      ...body,
    }),
    201,
  );
}

export type Event = {
  type: string;
  target: { id: string | null } | null;
  details: Record<string, unknown> | null;
};

export async function events(d: DownProject, type: string): Promise<Event[]> {
  const res = await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/audit-events?type=${type}`);
  return (await json<{ data: Event[] }>(res, 200)).data;
}

/** The downstream's login page, its provider button clicked: the answer (a redirect to the upstream). */
export async function clickProvider(agent: Agent, d: DownProject, label: string) {
  const { html, verifier } = await openDownLogin(agent, d);
  const page = pageOf(html);
  const link = page.links.find((l) => l.label === `Sign in with ${label}`);
  assert.ok(link, `a button for ${label} in ${JSON.stringify(page.links)}`);
  const res = await agent.get(link.href);
  assert.equal(res.status, 303, await res.text());
  return { location: res.headers.get("location")!, verifier };
}

/** Signs in at the upstream (this service's login form), and returns the URL of the downstream's callback. */
export async function upstreamLogin(agent: Agent, authorizeUrl: string, email: string, password: string) {
  const shown = await agent.follow(authorizeUrl);
  if (shown.res.status === 200) {
    const page = pageOf(await shown.res.text());
    const res = await agent.post(new URL("/authorize", authorizeUrl).href, {
      request_id: page.requestId,
      csrf: page.csrf,
      email,
      password,
    });
    assert.equal(res.status, 303, await res.text());
    return res.headers.get("location")!;
  }
  return shown.url; // signed in at the upstream already: straight back
}

export const hasSso = (agent: Agent) => agent.cookies("localhost").has("acs_sso");

export { ADMIN_SECRET };
