/**
 * Runs the backend example end to end against a running service: setup, two users who log in (through the
 * service's form, with plain HTTP) and a machine client call the backend; it decides by asking the service.
 * Whether the decision API is expected is read from `/.well-known/authzen-configuration` first: when the
 * service publishes it, every decision must come from it. Exits non-zero when a step fails.
 *
 *   SERVICE_URL=http://localhost:8000 BOOTSTRAP_ADMIN_SECRET=… \
 *     deno run --allow-net --allow-env --lock=examples/deno.lock examples/backend/run.ts
 */
import { createAdminClient } from "../../sdk/src/mod.ts";
import { oidc } from "../deps.ts";
import { Browser, check, freePort, serviceFromEnv } from "../support.ts";
import { createBackend, discoverDecisionApi } from "./server.ts";
import { type BackendSetup, LOGIN_REDIRECT_URI, setupBackend } from "./setup.ts";

export async function runBackend(serviceUrl: string, adminSecret: string): Promise<void> {
  const evaluation = await discoverDecisionApi(serviceUrl);
  const expectedBy = evaluation ? "decision API" : "introspection";
  console.log(
    evaluation
      ? `  the service publishes the decision API (${evaluation}): decisions must come from it`
      : "  the service has no /.well-known/authzen-configuration: decisions come from introspection",
  );
  const s = await setupBackend({ serviceUrl, adminSecret });
  const backend = await createBackend({
    serviceUrl,
    projectId: s.projectId,
    clientId: s.backend.clientId,
    clientSecret: s.backend.clientSecret,
  });
  check(backend.evaluationEndpoint === evaluation, "the backend found what the discovery says");
  const port = freePort();
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, backend.handler);
  const base = `http://127.0.0.1:${port}`;
  const call = async (method: string, path: string, token?: string) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    const ada = await userToken(serviceUrl, s, s.ada);
    const bob = await userToken(serviceUrl, s, s.bob);
    const report = await createAdminClient({ baseUrl: serviceUrl, ...s.report }).accessToken();

    check((await call("GET", "/orders")).status === 401, "no token: 401");
    check(
      (await call("GET", "/orders", "not-a-token")).status === 401,
      "a token the service never issued: 401",
    );

    let r = await call("GET", "/orders", ada);
    check(
      r.status === 200 && r.body.decided_by === expectedBy,
      `Ada (clerk) reads orders, decided by ${expectedBy}`,
    );
    r = await call("POST", "/orders/1001/refund", ada);
    check(r.status === 200 && r.body.decided_by === expectedBy, "Ada refunds an order");
    r = await call("GET", "/orders", bob);
    check(r.status === 200, "Bob (viewer) reads orders");
    r = await call("POST", "/orders/1001/refund", bob);
    check(r.status === 403 && r.body.decided_by === expectedBy, "Bob may not refund: 403");

    r = await call("GET", "/me", ada);
    check(
      r.status === 200 && r.body.id === s.ada.id &&
        same(r.body.permissions, ["orders:read", "orders:refund"]),
      "GET /me: Ada's record and permissions, looked up with users:read",
    );
    r = await call("GET", "/me", bob);
    check(r.status === 200 && same(r.body.permissions, ["orders:read"]), "GET /me: Bob's permissions");

    check(
      (await call("GET", "/orders", report)).status === 200,
      "the nightly report (client credentials) reads",
    );
    check(
      (await call("POST", "/orders/1001/refund", report)).status === 403,
      "the nightly report may not refund",
    );

    // Live: the viewer role gains refund; Bob's same token may refund on the next request.
    await s.admin.roles.updateRole(s.projectId, s.viewerRoleId, {
      code: "viewer",
      name: "Viewer",
      permission_ids: [s.permissionIds.read, s.permissionIds.refund],
    });
    check(
      (await call("POST", "/orders/1001/refund", bob)).status === 200,
      "the viewer role gains refund: Bob may, at once",
    );

    // Live: Bob deactivated; his token is refused on its next request.
    await s.admin.users.updateUser(s.projectId, s.bob.id, {
      display_name: "Bob",
      email: s.bob.email,
      is_active: false,
    });
    check(
      (await call("GET", "/orders", bob)).status === 401,
      "Bob deactivated: his token is refused at once",
    );
  } finally {
    await server.shutdown();
  }
}

/** A user's access token: the authorization code flow with PKCE through the service's login form. */
async function userToken(
  serviceUrl: string,
  s: BackendSetup,
  user: { email: string; password: string },
): Promise<string> {
  const config = await oidc.discovery(new URL(serviceUrl), s.loginClientId, undefined, oidc.None(), {
    execute: serviceUrl.startsWith("http:") ? [oidc.allowInsecureRequests] : [],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const login = oidc.buildAuthorizationUrl(config, {
    redirect_uri: LOGIN_REDIRECT_URI,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
  });
  const browser = new Browser();
  const page = await browser.get(login);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`the login page answered ${page.status}: ${html}`);
  const res = await browser.submitOnly(login, html, { email: user.email, password: user.password });
  await res.body?.cancel();
  const callback = new URL(res.headers.get("location") ?? "about:blank");
  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  return tokens.access_token;
}

function same(a: unknown, b: string[]): boolean {
  return Array.isArray(a) && JSON.stringify([...a].sort()) === JSON.stringify(b);
}

if (import.meta.main) {
  const { serviceUrl, adminSecret } = serviceFromEnv();
  console.log("backend: client credentials, introspection, users lookup, the decision API when published");
  await runBackend(serviceUrl, adminSecret);
  console.log("backend: passed");
}
