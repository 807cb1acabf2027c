/**
 * Signing in through panva's oidc-provider (npm `oidc-provider`, the reference OpenID Provider of Node) as the
 * upstream: JIT users, linking by verified email, single sign-on afterwards, a replayed code refused by the
 * provider, its `error` answer shown. The provider runs in this process (Deno's Node compatibility), with its
 * development login and consent pages, and registers the service's client dynamically (RFC 7591).
 */
import assert from "node:assert/strict";
import { OidcProvider } from "./oidc_provider_dep.ts";
import { freePort, test } from "./helpers.ts";
import {
  Agent,
  APP_REDIRECT,
  call,
  claimsOf,
  type DownProject,
  downProject,
  json,
  openDownLogin,
  pageOf,
  redeemAt,
} from "./idp_support.ts";

type Provider = { id: string; redirect_uri: string };

/** oidc-provider on loopback; accounts named by their login, `unverified-…` ones without a verified email. */
function startProvider() {
  const port = freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new OidcProvider(issuer, {
    features: { registration: { enabled: true }, devInteractions: { enabled: true } },
    findAccount: (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: () => ({
        sub: id,
        email: `${id}@op.example.com`,
        email_verified: !id.startsWith("unverified"),
        name: `OP ${id}`,
      }),
    }),
    claims: { email: ["email", "email_verified"], profile: ["name"] },
    // Silence the provider's own log of expected refusals.
    renderError: (ctx: { type: string; body: string }, out: Record<string, string>) => {
      ctx.type = "html";
      ctx.body = `<!doctype html><title>${out.error}</title><p>${out.error}</p>`;
    },
  });
  provider.on("server_error", (_ctx: unknown, err: Error) => console.error("oidc-provider:", err));
  const server = provider.listen(port);
  return { issuer, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Registers the service's client at the provider (RFC 7591), for this redirect URI. */
async function register(issuer: string, redirectUri: string) {
  const res = await fetch(`${issuer}/reg`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: "client_secret_basic" }),
  });
  return await json<{ client_id: string; client_secret: string }>(res, 201);
}

/** Goes through the provider's development login and consent; answers the URL of the service's callback. */
async function providerLogin(agent: Agent, authorizeUrl: string, login: string): Promise<string> {
  let url = authorizeUrl;
  for (let step = 0; step < 12; step++) {
    if (url.includes("/authorize/idp/")) return url;
    const res = await agent.get(url);
    const location = res.headers.get("location");
    if (location) {
      await res.body?.cancel();
      url = new URL(location, url).href;
      continue;
    }
    const html = await res.text();
    assert.equal(res.status, 200, html);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    assert.ok(action, html);
    const form: Record<string, string> = Object.fromEntries(
      [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (form.prompt === "login") Object.assign(form, { login, password: "any" });
    const posted = await agent.post(new URL(action, url).href, form);
    assert.ok([302, 303].includes(posted.status), `${posted.status} ${await posted.text()}`);
    url = new URL(posted.headers.get("location")!, url).href;
  }
  throw new Error("the provider's login did not end");
}

async function setUp(d: DownProject, issuer: string, body: Record<string, unknown> = {}) {
  const base = `/api/v1/projects/${d.projectId}/identity-providers`;
  const settings = { display_name: "OP", issuer, jit_provisioning: true, ...body };
  const created = await json<Provider>(
    await call(d.url, d.token, "POST", base, { kind: "oidc", client_id: "pending", ...settings }),
    201,
  );
  const client = await register(issuer, created.redirect_uri);
  await json(
    await call(d.url, d.token, "PUT", `${base}/${created.id}`, {
      ...settings,
      client_id: client.client_id,
      client_secret: client.client_secret,
    }),
    200,
  );
  return created;
}

async function signIn(d: DownProject, login: string, agent = new Agent()) {
  const { html, verifier } = await openDownLogin(agent, d);
  const link = pageOf(html).links.find((l) => l.label === "Sign in with OP");
  assert.ok(link, html);
  const start = await agent.get(link.href);
  assert.equal(start.status, 303, await start.text());
  const callback = await providerLogin(agent, start.headers.get("location")!, login);
  const done = await agent.follow(callback);
  return { agent, done, verifier, callback };
}

test("oidc-provider upstream: JIT sign-in, then single sign-on; a replayed code is refused by the provider", async () => {
  const op = startProvider();
  try {
    const d = await downProject();
    const provider = await setUp(d, op.issuer);
    const { agent, done, verifier, callback } = await signIn(d, "alice");
    assert.ok(done.url.startsWith(APP_REDIRECT), `${done.res.status} ${await done.res.text()}`);
    const claims = claimsOf((await redeemAt(d, done.url, verifier)).id_token);
    assert.equal(claims.email, "alice@op.example.com");
    assert.equal(claims.email_verified, true);
    assert.equal(claims.name, "OP alice");
    assert.deepEqual(claims.amr, ["fed"]);
    assert.equal(claims.idp, provider.id);

    // Single sign-on at the service: no page at all.
    const again = await openDownLogin(agent, d);
    assert.equal(again.res.status, 302);
    assert.equal(
      claimsOf((await redeemAt(d, again.res.headers.get("location")!, again.verifier)).id_token).sub,
      claims.sub,
    );

    // The spent code under a fresh state of this browser: the provider refuses it, the page says so.
    const code = new URL(callback).searchParams.get("code")!;
    const page = await openDownLogin(agent, d, { prompt: "login" });
    const link = pageOf(page.html).links[0];
    const start = await agent.get(link.href);
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const replay = await agent.get(
      `${provider.redirect_uri}?code=${encodeURIComponent(code)}&state=${state}&iss=${
        encodeURIComponent(op.issuer)
      }`,
    );
    assert.equal(replay.status, 400);
    assert.match(pageOf(await replay.text()).error ?? "", /refused to complete/);
    const failed = await json<{ data: { details: Record<string, unknown> }[] }>(
      await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/audit-events?type=login.failed`),
      200,
    );
    assert.ok(failed.data.some((e) => e.details.reason === "token_error"));
  } finally {
    await op.stop();
  }
});

test("oidc-provider upstream: linking by verified email on, and refused for an unverified upstream email", async () => {
  const op = startProvider();
  try {
    const d = await downProject();
    await setUp(d, op.issuer, { link_by_verified_email: true });
    const users = `/api/v1/projects/${d.projectId}/users`;
    const bob = await json<{ id: string }>(
      await call(d.url, d.token, "POST", users, {
        display_name: "Bob",
        email: "bob@op.example.com",
        password: "long enough password",
      }),
      201,
    );
    await d.svc.db.sql`update users set email_verified = true where id = ${bob.id}`;
    const linked = await signIn(d, "bob");
    assert.ok(linked.done.url.startsWith(APP_REDIRECT), `${linked.done.res.status}`);
    assert.equal(claimsOf((await redeemAt(d, linked.done.url, linked.verifier)).id_token).sub, bob.id);

    await json(
      await call(d.url, d.token, "POST", users, {
        display_name: "U",
        email: "unverified-carol@op.example.com",
        password: "long enough password",
      }),
      201,
    );
    const refused = await signIn(d, "unverified-carol");
    assert.equal(refused.done.res.status, 400);
    assert.match(pageOf(await refused.done.res.text()).error ?? "", /not linked/);
    assert.equal(refused.agent.cookies("localhost").has("acs_sso"), false);
  } finally {
    await op.stop();
  }
});
