/**
 * What `deno task bench` (bench/bench.ts) and `deno task soak` (bench/soak.ts) both do to a running service: make a
 * project with roles and users, take client-credentials tokens, and log a user in through the login page
 * (authorization code with PKCE). Each request goes through a `Send`, so the soak can time, label and bound it.
 */

/** Sends one request; `label` names it for whoever counts them (bench ignores it). */
export type Send = (label: string, url: string, init?: RequestInit) => Promise<Response>;

export const plainSend: Send = (_label, url, init) => fetch(url, init);

export const FORM = { "content-type": "application/x-www-form-urlencoded" };

export const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

export function newVerifier(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

export async function challengeOf(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

/** A client-credentials access token, or null when the answer is not 200. */
export async function clientToken(
  send: Send,
  base: string,
  clientId: string,
  secret: string,
  label = "POST /api/v1/tokens client_credentials",
): Promise<string | null> {
  const res = await send(label, `${base}/api/v1/tokens`, {
    method: "POST",
    headers: { ...FORM, ...basic(clientId, secret) },
    body: "grant_type=client_credentials",
  });
  if (res.status !== 200) return (await res.body?.cancel(), null);
  return (await res.json()).access_token as string;
}

export type Project = {
  id: string;
  clientId: string;
  clientSecret: string;
  /** A token of the project's admin client. */
  token: string;
  roles: string[];
  /** Users `u{i}@{domain}` with `password`, for logins. */
  users: string[];
};

/**
 * A project (made with the system admin's `adminSecret`) whose admin client may log users in at `redirect`, with
 * `roles` roles `role-{i}` and `users` users `u{i}@{domain}` with `password`.
 */
export async function setUpProject(
  base: string,
  adminSecret: string,
  opts: { name: string; redirect: string; roles: number; users: number; password: string; domain: string },
): Promise<Project> {
  const admin = await clientToken(plainSend, base, "system-admin", adminSecret);
  if (!admin) throw new Error("no system token: is BOOTSTRAP_ADMIN_SECRET the system admin's secret?");
  const created = await fetch(`${base}/api/v1/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify({ name: opts.name, redirect_uris: [opts.redirect] }),
  });
  if (created.status !== 201) {
    throw new Error(`creating a project: ${created.status} ${await created.text()}`);
  }
  const project = await created.json();
  const clientId = project.admin_client.client_id as string;
  const clientSecret = project.admin_client.client_secret as string;
  const token = await clientToken(plainSend, base, clientId, clientSecret);
  if (!token) throw new Error("no token for the project's admin client");
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}/api/v1/projects/${project.id}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return await res.json();
  };
  const roles: string[] = [];
  for (let i = 0; i < opts.roles; i++) {
    roles.push((await post("/roles", { code: `role-${i}`, name: `Role ${i}`, description: opts.name })).id);
  }
  const users: string[] = [];
  for (let i = 0; i < opts.users; i++) {
    const email = `u${i}@${opts.domain}`;
    await post("/users", { display_name: `U${i}`, email, password: opts.password });
    users.push(email);
  }
  return { id: project.id, clientId, clientSecret, token, roles, users };
}

export type Tokens = { access_token: string; refresh_token: string };

/**
 * The whole user login: the authorize page, the form post (one password check), the code exchange. `from` is
 * sent as X-Forwarded-For (a service behind TRUST_PROXY_HOPS=1 counts each login page against that address).
 * Null when a step does not answer as a login that succeeds does.
 */
export async function login(
  send: Send,
  base: string,
  p: { clientId: string; redirect: string; email: string; password: string; from: string; scope?: string },
): Promise<Tokens | null> {
  const from = { "x-forwarded-for": p.from };
  const verifier = newVerifier();
  const page = await send(
    "GET /authorize (login page)",
    `${base}/authorize?${new URLSearchParams({
      client_id: p.clientId,
      redirect_uri: p.redirect,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      ...(p.scope ? { scope: p.scope } : {}),
    })}`,
    { headers: from },
  );
  const html = await page.text();
  if (page.status !== 200) return null;
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const submitted = await send("POST /authorize (password)", `${base}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { ...FORM, ...from, cookie: (page.headers.get("set-cookie") ?? "").split(";")[0] },
    body: new URLSearchParams({
      request_id: field("request_id"),
      csrf: field("csrf"),
      email: p.email,
      password: p.password,
    }),
  });
  await submitted.body?.cancel();
  const code = new URL(submitted.headers.get("location") ?? "http://x/").searchParams.get("code");
  if (!code) return null;
  const res = await send("POST /api/v1/tokens authorization_code", `${base}/api/v1/tokens`, {
    method: "POST",
    headers: FORM,
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: p.clientId,
      code,
      redirect_uri: p.redirect,
      code_verifier: verifier,
    }),
  });
  return res.status === 200 ? await res.json() : (await res.body?.cancel(), null);
}
