/**
 * Fresh proof for changing how a user signs in (domain/factors/proof.ts): a user without a password (made
 * through an upstream provider) cannot add or remove a factor, nor set a password or change the address, with an
 * access token or a browser session alone (403 `reauthentication_required`); a code of an existing factor, or a
 * sign-in again at the linked provider from the account page (`prompt=login`, `max_age=0`, `auth_time` checked)
 * proves it. Every change of a factor or a password mails the user a notice.
 */
import assert from "node:assert/strict";
import { expectError, loginProject, sdk, service, test, userTokens } from "./helpers.ts";
import { totp } from "./mfa_support.ts";
import {
  Agent,
  APP_REDIRECT,
  call,
  clickProvider,
  createProvider,
  type DownProject,
  downProject,
  events,
  fakeUpstream,
  json,
  redeemAt,
} from "./idp_support.ts";

type Fake = Awaited<ReturnType<typeof fakeUpstream>>;

/** A user made just now through the fake upstream (JIT, no password): their browser, token and ids. */
async function passwordlessUser(d: DownProject, fake: Fake, providerId: string) {
  const sub = `sub-${crypto.randomUUID()}`;
  const email = `${sub}@example.com`;
  fake.state.claims = () => ({ sub, email, email_verified: true, auth_time: Math.floor(Date.now() / 1000) });
  const agent = new Agent();
  const { location, verifier } = await clickProvider(agent, d, "Fake");
  const done = await agent.follow(location);
  assert.ok(done.url.startsWith(APP_REDIRECT), `${done.res.status} ${await done.res.text()}`);
  const tokens = await redeemAt(d, done.url, verifier);
  const me = await json<{ id: string }>(
    await call(d.url, tokens.access_token, "GET", "/api/v1/users/current"),
    200,
  );
  return { agent, token: tokens.access_token, userId: me.id, sub, email, providerId };
}

/** The account page's CSRF token, and the page. */
async function accountPage(agent: Agent, d: DownProject) {
  const res = await agent.get(`${d.publicUrl}/account?project=${d.projectId}`);
  const html = await res.text();
  assert.equal(res.status, 200, html);
  return { html, csrf: /name="csrf" value="([^"]+)"/.exec(html)![1] };
}

/** POSTs a form of the account page, as the browser would. */
async function accountPost(agent: Agent, d: DownProject, path: string, form: Record<string, string> = {}) {
  const { csrf } = await accountPage(agent, d);
  return await agent.post(`${d.publicUrl}${path}`, { csrf, project: d.projectId, ...form });
}

async function notices(d: DownProject, userId: string): Promise<string[]> {
  const rows = await d.svc.db.sql<{ params: { change: string } }[]>`
    select params from mail_outbox where user_id = ${userId} and kind = 'security_notice' order by created_at`;
  return rows.map((r) => r.params.change);
}

async function withFake(fn: (d: DownProject, fake: Fake, providerId: string) => Promise<void>) {
  const d = await downProject();
  const fake = await fakeUpstream();
  try {
    const provider = await createProvider(d, {
      display_name: "Fake",
      issuer: fake.base,
      client_id: "rp",
      client_secret: "s3cret value",
      jit_provisioning: true,
    });
    await fn(d, fake, provider.id);
  } finally {
    await fake.stop();
  }
}

test("a passwordless user's token alone never changes how they sign in: 403 reauthentication_required", async () => {
  await withFake(async (d, fake, providerId) => {
    const u = await passwordlessUser(d, fake, providerId);
    const refused = async (method: string, path: string, body: unknown) =>
      await expectError(await call(d.url, u.token, method, path, body), 403, "reauthentication_required");
    await refused("POST", "/api/v1/users/current/totp", {});
    await refused("POST", "/api/v1/users/current/totp", { current_password: "" });
    await refused("PUT", "/api/v1/users/current", {
      display_name: "Me",
      email: u.email,
      password: "a stolen token's choice",
    });
    await refused("PUT", "/api/v1/users/current", { display_name: "Me", email: "thief@example.com" });
    // What does not change how they sign in still works with the token.
    const me = await json<{ display_name: string }>(
      await call(d.url, u.token, "PUT", "/api/v1/users/current", { display_name: "Renamed", email: u.email }),
      200,
    );
    assert.equal(me.display_name, "Renamed");
    // The account page's session alone neither.
    const page = await accountPage(u.agent, d);
    assert.match(page.html, /Confirm it is you/);
    assert.match(page.html, /Sign in again with Fake/);
    const start = await accountPost(u.agent, d, "/account/totp/start");
    assert.equal(start.status, 403);
    assert.match(await start.text(), /needs fresh proof/);
    const cookie = [...u.agent.cookies("localhost")].map(([k, v]) => `${k}=${v}`).join("; ");
    const options = await fetch(`${d.publicUrl}/account/passkeys/options`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", origin: d.publicUrl },
      body: JSON.stringify({ csrf: page.csrf, project: d.projectId }),
    });
    assert.equal(options.status, 403, await options.text());
    assert.deepEqual(await notices(d, u.userId), []);
  });
});

test("signing in again at the provider proves it: prompt=login, max_age=0, auth_time checked; then a notice", async () => {
  await withFake(async (d, fake, providerId) => {
    const u = await passwordlessUser(d, fake, providerId);
    /** Clicks "Sign in again" with the ID token `claims` writes; where the browser ends. */
    const reauthenticate = async (claims: (auth: URLSearchParams) => Record<string, unknown>) => {
      fake.state.claims = claims;
      const res = await accountPost(u.agent, d, "/account/reauthenticate", { provider_id: providerId });
      assert.equal(res.status, 303, await res.text());
      const sent = new URL(res.headers.get("location")!);
      assert.equal(sent.origin, fake.base);
      assert.equal(sent.searchParams.get("prompt"), "login");
      assert.equal(sent.searchParams.get("max_age"), "0");
      assert.equal(sent.searchParams.get("code_challenge_method"), "S256");
      const back = await u.agent.get(sent.href);
      const callback = back.headers.get("location")!;
      const landed = await u.agent.get(callback);
      assert.equal(landed.status, 303, await landed.text());
      return new URL(landed.headers.get("location")!, d.publicUrl);
    };
    const now = () => Math.floor(Date.now() / 1000);
    const reasons = async () =>
      (await events(d, "user.reauthentication_failed")).map((e) => e.details?.reason);

    // A provider that did not authenticate again (an old auth_time, or none) proves nothing.
    let to = await reauthenticate(() => ({ sub: u.sub, email: u.email, auth_time: now() - 3600 }));
    assert.equal(to.searchParams.get("reauth"), "stale_auth_time");
    to = await reauthenticate(() => ({ sub: u.sub, email: u.email }));
    assert.equal(to.searchParams.get("reauth"), "stale_auth_time");
    // Someone else at the provider proves nothing for this user.
    to = await reauthenticate(() => ({ sub: "someone-else", auth_time: now() }));
    assert.equal(to.searchParams.get("reauth"), "another_identity");
    assert.deepEqual((await reasons()).sort(), ["another_identity", "stale_auth_time", "stale_auth_time"]);
    const failedPage = await u.agent.get(to.href);
    assert.match(await failedPage.text(), /signed in at the identity provider as someone else/);
    assert.equal((await accountPost(u.agent, d, "/account/totp/start")).status, 403);

    // A fresh sign-in: the page may now add an authenticator, and the user is told.
    to = await reauthenticate(() => ({ sub: u.sub, email: u.email, auth_time: now() }));
    assert.equal(to.searchParams.get("done"), "reauthenticated");
    assert.equal((await events(d, "user.reauthenticated")).length, 1);
    const page = await accountPage(u.agent, d);
    assert.match(page.html, /Confirmed: you can change how you sign in until/);
    const enrol = await accountPost(u.agent, d, "/account/totp/start");
    const enrolHtml = await enrol.text();
    assert.equal(enrol.status, 200, enrolHtml);
    const secret = /id="secret"[^>]*>([^<]+)</.exec(enrolHtml)![1].replace(/\s/g, "");
    const confirmed = await accountPost(u.agent, d, "/account/totp/confirm", { code: await totp(secret) });
    assert.equal(confirmed.status, 200, await confirmed.text());
    assert.deepEqual(await notices(d, u.userId), ["An authenticator app was added to your account."]);
    const [mail] = await d.svc.db.sql<{ params: Record<string, string>; to_address: string }[]>`
      select params, to_address from mail_outbox where user_id = ${u.userId} and kind = 'security_notice'`;
    assert.equal(mail.to_address, u.email);
    assert.match(mail.params.when, /UTC$/);
    assert.match(mail.params.device, /address/);
    assert.ok(mail.params.account_url.includes(`/account?project=${d.projectId}`));

    // The token still cannot: a fresh sign-in counts for the account page's browser only.
    await expectError(
      await call(d.url, u.token, "POST", "/api/v1/users/current/recovery-codes", {}),
      403,
      "reauthentication_required",
    );
    // With a code of the authenticator it can (each code once), and a wrong code is a field error.
    await expectError(
      await call(d.url, u.token, "POST", "/api/v1/users/current/recovery-codes", { code: "000000" }),
      400,
      "invalid_params",
    );
    const codes = await json<{ recovery_codes: string[] }>(
      await call(d.url, u.token, "POST", "/api/v1/users/current/recovery-codes", {
        code: await totp(secret, Date.now() + 30_000),
      }),
      200,
    );
    // A recovery code proves it too, and is spent.
    const recovery = codes.recovery_codes[0];
    await json(
      await call(d.url, u.token, "PUT", "/api/v1/users/current", {
        display_name: "Me",
        email: u.email,
        password: "a password of my own",
        code: recovery,
      }),
      200,
    );
    assert.deepEqual(await notices(d, u.userId), [
      "An authenticator app was added to your account.",
      "New recovery codes were made for your account; the old ones no longer work.",
      "A password was set for your account.",
    ]);
    const spent = await events(d, "recovery_code.used");
    assert.equal(spent[0]?.details?.for, "fresh_proof");
  });
});

test("a passwordless user with an authenticator removes it with its code; the notice says so", async () => {
  await withFake(async (d, fake, providerId) => {
    const u = await passwordlessUser(d, fake, providerId);
    // Enrolled directly in the database is not what is tested: enrol after a fresh sign-in, as a user would.
    fake.state.claims = () => ({ sub: u.sub, auth_time: Math.floor(Date.now() / 1000) });
    const go = await accountPost(u.agent, d, "/account/reauthenticate", { provider_id: providerId });
    await u.agent.follow(go.headers.get("location")!);
    // The token cannot start it even now: the fresh sign-in counts for the account page's browser only.
    await expectError(
      await call(d.url, u.token, "POST", "/api/v1/users/current/totp", {}),
      403,
      "reauthentication_required",
    );
    const started = await accountPost(u.agent, d, "/account/totp/start");
    const secret = /id="secret"[^>]*>([^<]+)</.exec(await started.text())![1].replace(/\s/g, "");
    await accountPost(u.agent, d, "/account/totp/confirm", { code: await totp(secret) });
    await expectError(
      await call(d.url, u.token, "DELETE", "/api/v1/users/current/totp", {}),
      403,
      "reauthentication_required",
    );
    const removed = await call(d.url, u.token, "DELETE", "/api/v1/users/current/totp", {
      code: await totp(secret, Date.now() + 30_000),
    });
    assert.equal(removed.status, 204, await removed.text());
    assert.deepEqual(
      (await notices(d, u.userId)).at(-1),
      "The authenticator app of your account was removed, with its recovery codes.",
    );
  });
});

test("a password change mails a notice: by the user (with the current password), and by an admin", async () => {
  const p = await loginProject();
  const { db } = await service();
  const changes = async () =>
    (await db.sql<{ params: { change: string; device: string } }[]>`
      select params from mail_outbox where user_id = ${p.userId} and kind = 'security_notice' order by created_at`)
      .map((r) => r.params);
  const t = await userTokens(p);
  const api = (await sdk(t.access_token)).users;
  await api.updateCurrentUser({
    display_name: "Me",
    email: p.email,
    password: "a new password of mine",
    current_password: p.password,
  });
  let sent = await changes();
  assert.deepEqual(sent.map((c) => c.change), ["The password of your account was changed."]);
  assert.doesNotMatch(sent[0].device, /administrator/);
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Me",
    email: p.email,
    password: "an admin's choice for me",
    is_active: true,
  });
  sent = await changes();
  assert.equal(sent.length, 2);
  assert.match(sent[1].device, /an administrator of/);
  // A profile change that leaves the password sends nothing.
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Renamed",
    email: p.email,
    is_active: true,
  });
  assert.equal((await changes()).length, 2);
});
