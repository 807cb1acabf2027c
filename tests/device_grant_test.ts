/**
 * The device authorization grant (RFC 8628), driven by the unmodified oauth4webapi on the device's side and raw
 * HTTP with a cookie jar on the user's: the code entered at /device, a sign-in through /authorize, Approve or Deny;
 * the polls' answers (`authorization_pending`, `slow_down`, `access_denied`, `expired_token`, `invalid_grant`),
 * tokens once, `unauthorized_client` without `device_grant`, one answer for every code that is not valid, throttled
 * guessing, and stale forms. One Chromium test approves and denies as a user would.
 */
import assert from "node:assert/strict";
import { oauth } from "./deps.ts";
import { Browser, payloadOf } from "./oidc_support.ts";
import { hasChromium, launchChromium } from "./chromium.ts";
import { ApiError, deviceAuthorization, pollDeviceToken } from "../sdk/src/mod.ts";
import {
  Api,
  baseUrl,
  basic,
  expectOAuthError,
  http,
  loginProject,
  postToken,
  service,
  test,
} from "./helpers.ts";

const GRANT = "urn:ietf:params:oauth:grant-type:device_code";
type Project = Awaited<ReturnType<typeof loginProject>>;

/** A project with a login user and a public client allowed the device grant (`cli`). */
async function deviceProject(): Promise<Project & { cli: string }> {
  const p = await loginProject();
  const client = await p.api.clients.createClient(p.project.id, { name: "Acme CLI", device_grant: true });
  assert.equal(client.device_grant, true);
  return { ...p, cli: client.id };
}

/** POST /api/v1/tokens/device_authorization as a raw form. */
async function askDevice(form: Record<string, string>, headers: Record<string, string> = {}) {
  return await http("/api/v1/tokens/device_authorization", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

async function startDevice(clientId: string, form: Record<string, string> = {}) {
  const res = await askDevice({ client_id: clientId, ...form });
  assert.equal(res.status, 200);
  return await res.json() as {
    device_code: string;
    user_code: string;
    verification_uri: string;
    verification_uri_complete: string;
    expires_in: number;
    interval: number;
  };
}

const poll = (clientId: string, deviceCode: string) =>
  postToken({ grant_type: GRANT, client_id: clientId, device_code: deviceCode });

const hidden = (html: string) =>
  Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]),
  );
const pathOf = (location: string) => {
  const url = new URL(location);
  return url.pathname + url.search;
};

/** Opens /device and enters the code: the answer of POST /device. */
async function enterCode(browser: Browser, userCode: string): Promise<Response> {
  const page = await browser.get(`/device?${new URLSearchParams({ user_code: userCode })}`);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.ok(html.includes(`value="${userCode}"`), "the form is pre-filled from verification_uri_complete");
  return await browser.post("/device", { csrf: hidden(html).csrf, user_code: userCode });
}

/** The user's side up to the confirmation page: the code, the sign-in; the page's HTML and its form. */
async function signInAtPage(browser: Browser, p: Project, userCode: string) {
  const entered = await enterCode(browser, userCode);
  assert.equal(entered.status, 303, await entered.text());
  const authorize = new URL(entered.headers.get("location")!);
  assert.equal(authorize.pathname, "/authorize");
  assert.equal(authorize.searchParams.get("redirect_uri"), `${await baseUrl()}/device/callback`);
  const login = await browser.get(pathOf(authorize.href));
  assert.equal(login.status, 200);
  const form = hidden(await login.text());
  const signedIn = await browser.post("/authorize", {
    request_id: form.request_id,
    csrf: form.csrf,
    email: p.email,
    password: p.password,
  });
  assert.equal(signedIn.status, 303, await signedIn.text());
  const callback = new URL(signedIn.headers.get("location")!);
  assert.equal(callback.pathname, "/device/callback");
  const confirm = await browser.get(pathOf(callback.href));
  const html = await confirm.text();
  assert.equal(confirm.status, 200, html);
  return { html, form: hidden(html), callback: pathOf(callback.href) };
}

async function decide(browser: Browser, form: Record<string, string>, decision: "approve" | "deny") {
  const res = await browser.post("/device/confirm", { ...form, decision });
  const html = await res.text();
  assert.equal(res.status, 200, html);
  return html;
}

async function events(p: Project, type: string): Promise<{ details: Record<string, unknown> | null }[]> {
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=${type}`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

/** Earlier runs on the same database must not have throttled this address's codes. */
async function clearCodeThrottle() {
  await (await service()).db.sql`delete from login_failures where key like 'device:%'`;
}

test("the metadata names the device authorization endpoint and the grant type", async () => {
  for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
    const m = await (await http(path)).json();
    assert.equal(
      m.device_authorization_endpoint,
      `${await baseUrl()}/api/v1/tokens/device_authorization`,
      path,
    );
    assert.ok(m.grant_types_supported.includes(GRANT), path);
  }
});

test("oauth4webapi: a device approved by its user signing in at /device gets the user's tokens, once", async () => {
  await clearCodeThrottle();
  const p = await deviceProject();
  const issuer = new URL(await baseUrl());
  const options = { [oauth.allowInsecureRequests]: true };
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options }),
  );
  const client: oauth.Client = { client_id: p.cli };
  const started = await oauth.processDeviceAuthorizationResponse(
    as,
    client,
    await oauth.deviceAuthorizationRequest(as, client, oauth.None(), { scope: "openid" }, options),
  );
  assert.match(started.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  assert.equal(started.verification_uri, `${issuer.origin}/device`);
  assert.equal(
    started.verification_uri_complete,
    `${issuer.origin}/device?user_code=${encodeURIComponent(started.user_code)}`,
  );
  assert.equal(started.expires_in, 600);
  assert.equal(started.interval, 5);

  // Before the user decides: authorization_pending, which oauth4webapi reports as an OAuth error body.
  const pending = await oauth.processDeviceCodeResponse(
    as,
    client,
    await oauth.deviceCodeGrantRequest(as, client, oauth.None(), started.device_code, options),
  ).catch((e) => e);
  assert.ok(pending instanceof oauth.ResponseBodyError, String(pending));
  assert.equal(pending.error, "authorization_pending");

  // The user enters the code in lower case without its dash, signs in, and approves.
  const browser = new Browser();
  const { html, form } = await signInAtPage(browser, p, started.user_code.replace("-", "").toLowerCase());
  assert.match(html, /<span id="client-name">Acme CLI<\/span>/);
  assert.match(html, /id="approve"/);
  assert.match(html, /id="deny"/);
  assert.match(await decide(browser, form, "approve"), /Device connected/);

  const tokens = await oauth.processDeviceCodeResponse(
    as,
    client,
    await oauth.deviceCodeGrantRequest(as, client, oauth.None(), started.device_code, options),
  );
  assert.equal(payloadOf(tokens.access_token).sub, p.userId);
  assert.equal(payloadOf(tokens.access_token).client_id, p.cli);
  assert.ok(tokens.refresh_token);
  assert.ok(tokens.id_token);
  assert.equal(payloadOf(tokens.id_token!).aud, p.cli);
  assert.equal((await events(p, "device.approved")).length, 1);
  // The refresh token works as any user session's.
  const refreshed = await postToken({
    grant_type: "refresh_token",
    client_id: p.cli,
    refresh_token: tokens.refresh_token!,
  });
  assert.equal(refreshed.status, 200);

  // A code gives tokens once (RFC 8628 §3.5).
  await expectOAuthError(poll(p.cli, started.device_code), 400, "invalid_grant", "invalid_device_code");
});

test("the SDK: deviceAuthorization, then pollDeviceToken waits the interval, 5 s more after slow_down, until approved", async () => {
  await clearCodeThrottle();
  const p = await deviceProject();
  const issuer = await baseUrl();
  const started = await deviceAuthorization({ issuer, clientId: p.cli, scope: "openid" });
  assert.equal(started.interval, 5);
  const waits: number[] = [];
  const tokens = await pollDeviceToken({
    issuer,
    clientId: p.cli,
    deviceCode: started.device_code,
    interval: started.interval,
    // No real waiting: the first poll is pending, the second too soon (slow_down); the user approves before the third.
    sleep: async (ms) => {
      waits.push(ms);
      if (waits.length === 3) {
        const browser = new Browser();
        const { form } = await signInAtPage(browser, p, started.user_code);
        await decide(browser, form, "approve");
      }
    },
  });
  assert.deepEqual(waits, [5000, 5000, 10000]);
  assert.equal(payloadOf(tokens.access_token).sub, p.userId);
  assert.ok(tokens.id_token);
  // Denied: the poller throws the ApiError.
  const next = await deviceAuthorization({ issuer, clientId: p.cli });
  const err = await pollDeviceToken({
    issuer,
    clientId: p.cli,
    deviceCode: next.device_code,
    sleep: async () => {
      const browser = new Browser();
      const { form } = await signInAtPage(browser, p, next.user_code);
      await decide(browser, form, "deny");
    },
  }).catch((e) => e);
  assert.ok(err instanceof ApiError, String(err));
  assert.equal(err.error, "access_denied");
  const refused = await deviceAuthorization({ issuer, clientId: p.clientId }).catch((e) => e);
  assert.ok(refused instanceof ApiError && refused.error === "unauthorized_client", String(refused));
});

test("polling faster than the interval answers slow_down, and the interval grows by 5 seconds for that code", async () => {
  const p = await deviceProject();
  const started = await startDevice(p.cli);
  await expectOAuthError(
    poll(p.cli, started.device_code),
    400,
    "authorization_pending",
    "authorization_pending",
  );
  const fast = await expectOAuthError(poll(p.cli, started.device_code), 400, "slow_down", "slow_down");
  assert.match(fast.error_description, /10 seconds/);
  const { sql } = (await service()).db;
  const [row] = await sql<{ interval_seconds: number }[]>`
    select interval_seconds from device_codes where client_id = ${p.cli}`;
  assert.equal(row.interval_seconds, 10);
  // Waited longer than the interval (moved back in the database rather than slept): pending again.
  await sql`update device_codes set last_polled_at = now() - interval '11 seconds' where client_id = ${p.cli}`;
  await expectOAuthError(
    poll(p.cli, started.device_code),
    400,
    "authorization_pending",
    "authorization_pending",
  );
  // ...but 5 seconds, enough before, is now too soon.
  await sql`update device_codes set last_polled_at = now() - interval '6 seconds' where client_id = ${p.cli}`;
  await expectOAuthError(poll(p.cli, started.device_code), 400, "slow_down", "slow_down");
});

test("a denied device answers access_denied; an expired code expired_token; unknown or another client's invalid_grant", async () => {
  await clearCodeThrottle();
  const p = await deviceProject();
  const started = await startDevice(p.cli);
  const browser = new Browser();
  const { form } = await signInAtPage(browser, p, started.user_code);
  assert.match(await decide(browser, form, "deny"), /Device refused/);
  await expectOAuthError(poll(p.cli, started.device_code), 400, "access_denied", "access_denied");
  assert.equal((await events(p, "device.denied")).length, 1);
  // A decided code cannot be decided again.
  const again = await browser.post("/device/confirm", { ...form, decision: "approve" });
  assert.equal(again.status, 400);
  await expectOAuthError(poll(p.cli, started.device_code), 400, "access_denied", "access_denied");

  const late = await startDevice(p.cli);
  const { sql } = (await service()).db;
  await sql`update device_codes set expires_at = now() - interval '1 second'
            where client_id = ${p.cli} and status = 'pending'`;
  await expectOAuthError(poll(p.cli, late.device_code), 400, "expired_token", "expired_token");

  await expectOAuthError(poll(p.cli, "no-such-device-code"), 400, "invalid_grant", "invalid_device_code");
  const other = await p.api.clients.createClient(p.project.id, { name: "Other CLI", device_grant: true });
  const mine = await startDevice(p.cli);
  await expectOAuthError(poll(other.id, mine.device_code), 400, "invalid_grant", "invalid_device_code");
});

test("a client without device_grant is unauthorized_client, at both endpoints; a confidential one uses Basic", async () => {
  const p = await deviceProject();
  const plain = await p.api.clients.createClient(p.project.id, { name: "Web app" });
  assert.equal(plain.device_grant, false);
  await expectOAuthError(
    askDevice({ client_id: plain.id }),
    400,
    "unauthorized_client",
    "unauthorized_client",
  );
  await expectOAuthError(poll(plain.id, "whatever"), 400, "unauthorized_client", "unauthorized_client");
  // Allowed later by an update: it may ask.
  const updated = await p.api.clients.updateClient(p.project.id, plain.id, {
    name: "Web app",
    is_active: true,
    device_grant: true,
  });
  assert.equal(updated.device_grant, true);
  assert.equal((await askDevice({ client_id: plain.id })).status, 200);

  const confidential = await p.api.clients.createClient(p.project.id, {
    name: "TV app",
    device_grant: true,
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });
  await expectOAuthError(
    askDevice({ client_id: confidential.id }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  const res = await askDevice({}, { authorization: basic(confidential.id, confidential.client_secret) });
  assert.equal(res.status, 200);
  const { device_code } = await res.json();
  await expectOAuthError(
    postToken({ grant_type: GRANT, device_code }, {
      authorization: basic(confidential.id, confidential.client_secret),
    }),
    400,
    "authorization_pending",
    "authorization_pending",
  );
  await expectOAuthError(askDevice({ client_id: "nope" }), 400, "invalid_client", "invalid_client");
  await expectOAuthError(
    askDevice({ client_id: p.cli, resource: "https://unknown.example/api" }),
    400,
    "invalid_target",
    "invalid_target",
  );
});

test("an unknown, expired or used code shows the same page; a stale CSRF changes nothing", async () => {
  await clearCodeThrottle();
  const p = await deviceProject();
  const browser = new Browser();
  const unknown = await enterCode(browser, "BBBB-BBBB");
  assert.equal(unknown.status, 400);
  const unknownText = (await unknown.text()).replace(/(value|nonce)="[^"]*"/g, "");

  const expired = await startDevice(p.cli);
  const { sql } = (await service()).db;
  await sql`update device_codes set expires_at = now() - interval '1 second' where client_id = ${p.cli}`;
  const expiredRes = await enterCode(browser, expired.user_code);
  assert.equal(expiredRes.status, 400);
  assert.equal((await expiredRes.text()).replace(/(value|nonce)="[^"]*"/g, ""), unknownText);

  const used = await startDevice(p.cli);
  const first = new Browser();
  const { form } = await signInAtPage(first, p, used.user_code);
  await decide(first, form, "approve");
  assert.equal((await poll(p.cli, used.device_code)).status, 200);
  const usedRes = await enterCode(browser, used.user_code);
  assert.equal(usedRes.status, 400);
  assert.equal((await usedRes.text()).replace(/(value|nonce)="[^"]*"/g, ""), unknownText);
  assert.match(unknownText, /This code is not valid/);

  // Stale or foreign forms: the code form without the browser's CSRF, a confirmation of another browser.
  const fresh = await startDevice(p.cli);
  const stranger = new Browser();
  await stranger.get("/device");
  const noCsrf = await stranger.post("/device", { csrf: "forged", user_code: fresh.user_code });
  assert.equal(noCsrf.status, 400);
  const owner = new Browser();
  const confirm = await signInAtPage(owner, p, fresh.user_code);
  const foreign = await stranger.post("/device/confirm", { ...confirm.form, decision: "approve" });
  assert.equal(foreign.status, 400);
  const wrongCsrf = await owner.post("/device/confirm", {
    ...confirm.form,
    csrf: "stale",
    decision: "approve",
  });
  assert.equal(wrongCsrf.status, 400);
  await expectOAuthError(
    poll(p.cli, fresh.device_code),
    400,
    "authorization_pending",
    "authorization_pending",
  );
  // The login's callback replayed in another browser: refused.
  assert.equal((await stranger.get(confirm.callback)).status, 400);
  // The owner's own form still works.
  assert.equal((await owner.post("/device/confirm", { ...confirm.form, decision: "approve" })).status, 200);
  assert.equal((await poll(p.cli, fresh.device_code)).status, 200);
});

test("a third-party device client goes through the consent page: denying it there denies the device", async () => {
  await clearCodeThrottle();
  const p = await loginProject();
  const client = await p.api.clients.createClient(p.project.id, {
    name: "Acme TV",
    device_grant: true,
    third_party: true,
  });
  const started = await startDevice(client.id, { scope: "openid" });
  const browser = new Browser();
  const entered = await enterCode(browser, started.user_code);
  assert.equal(entered.status, 303);
  const login = await browser.get(pathOf(entered.headers.get("location")!));
  const form = hidden(await login.text());
  const signedIn = await browser.post("/authorize", {
    request_id: form.request_id,
    csrf: form.csrf,
    email: p.email,
    password: p.password,
  });
  assert.equal(signedIn.status, 303);
  const consentUrl = new URL(signedIn.headers.get("location")!);
  assert.equal(consentUrl.pathname, "/authorize/consent");
  const consent = await browser.get(pathOf(consentUrl.href));
  const consentHtml = await consent.text();
  assert.match(consentHtml, /Acme TV/);
  const denied = await browser.post("/authorize/consent", { ...hidden(consentHtml), decision: "deny" });
  assert.equal(denied.status, 303);
  const callback = new URL(denied.headers.get("location")!);
  assert.equal(callback.pathname, "/device/callback");
  assert.equal(callback.searchParams.get("error"), "access_denied");
  const end = await browser.get(pathOf(callback.href));
  assert.equal(end.status, 200);
  assert.match(await end.text(), /Device refused/);
  await expectOAuthError(poll(client.id, started.device_code), 400, "access_denied", "access_denied");
  assert.equal((await events(p, "consent.denied")).length, 1);
  assert.equal((await events(p, "device.denied")).length, 1);
});

test("/authorize accepts the internal callback only for a login a device code started", async () => {
  const p = await deviceProject();
  // An authorization request naming the verification page's own callback, as no device code started it.
  const callbackLogin = async (clientId: string) =>
    await http(
      `/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: `${await baseUrl()}/device/callback`,
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        code_challenge_method: "S256",
      })}`,
      { redirect: "manual" },
    );
  const res = await callbackLogin(p.cli);
  assert.equal(res.status, 400);
  assert.match(await res.text(), /not tied to a device code/);
  // A client without the grant: not registered at all.
  const plain = await p.api.clients.createClient(p.project.id, { name: "Web app" });
  const refused = await callbackLogin(plain.id);
  assert.equal(refused.status, 400);
  assert.match(await refused.text(), /not registered/);
});

test("guessing codes is throttled per address: 20 wrong ones, then a 429 page with Retry-After", async () => {
  await clearCodeThrottle();
  const p = await deviceProject();
  const right = await startDevice(p.cli);
  const browser = new Browser();
  try {
    for (let i = 0; i < 20; i++) {
      assert.equal((await enterCode(browser, "BBBB-BBBC")).status, 400, `guess ${i}`);
    }
    const blocked = await enterCode(browser, "BBBB-BBBC");
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers.get("retry-after")) > 0);
    assert.match(await blocked.text(), /Too many wrong codes/);
    // Even the right code waits.
    assert.equal((await enterCode(browser, right.user_code)).status, 429);
  } finally {
    await clearCodeThrottle();
  }
});

test("Chromium: a user approves one device and denies another at /device", async () => {
  await clearCodeThrottle();
  const p = await deviceProject();
  const approved = await startDevice(p.cli);
  const denied = await startDevice(p.cli);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    for (const [started, button] of [[approved, "#approve"], [denied, "#deny"]] as const) {
      await page.goto(started.verification_uri_complete);
      await page.click("#continue");
      await page.waitForSelector("#password");
      await page.fill("#email", p.email);
      await page.fill("#password", p.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForSelector(button);
      assert.equal(await page.textContent("#client-name"), "Acme CLI");
      await page.click(button);
      await page.waitForSelector("#outcome");
    }
    assert.equal(await page.textContent("#outcome"), "Device refused");
  } finally {
    await browser.close();
  }
  const tokens = await poll(p.cli, approved.device_code);
  assert.equal(tokens.status, 200);
  assert.equal(payloadOf((await tokens.json()).access_token).sub, p.userId);
  await expectOAuthError(poll(p.cli, denied.device_code), 400, "access_denied", "access_denied");
}, { ignore: !hasChromium });

test("signing out between approving and the device's poll ends the approval: the poll is invalid_grant", async () => {
  await clearCodeThrottle();
  const p = await deviceProject();
  const started = await startDevice(p.cli, { scope: "openid" });
  const browser = new Browser();
  const { form } = await signInAtPage(browser, p, started.user_code);
  assert.match(await decide(browser, form, "approve"), /Device connected/);
  // The user signs out of this browser (OpenID RP-initiated logout, confirmed on its page).
  const out = await browser.confirmLogout("/logout");
  assert.equal(out.status, 200, await out.text());
  await expectOAuthError(poll(p.cli, started.device_code), 400, "invalid_grant", "invalid_device_code");
});
