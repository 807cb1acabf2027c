/**
 * Forged and failed callbacks of a sign-in through an upstream provider, against a hand-made upstream whose
 * answers a test writes: each is refused with a message, recorded as `login.failed` with its reason, and opens
 * no session.
 */
import assert from "node:assert/strict";
import { test } from "./helpers.ts";
import {
  Agent,
  APP_REDIRECT,
  call,
  claimsOf,
  clickProvider,
  createProvider,
  downProject,
  events,
  fakeUpstream,
  hasSso,
  pageOf,
  redeemAt,
} from "./idp_support.ts";

test("forged and failed callbacks are refused and audited, never a session: state, audience, nonce, signature, errors, a provider down", async () => {
  const d = await downProject();
  const fake = await fakeUpstream();
  const provider = await createProvider(d, {
    display_name: "Fake",
    issuer: fake.base,
    client_id: "rp",
    client_secret: "s3cret value",
    jit_provisioning: true,
  });
  const cb = `${d.publicUrl}/authorize/idp/${provider.id}/callback`;
  const reasons = async () => (await events(d, "login.failed")).map((e) => e.details?.reason);

  // A state nobody issued.
  const stranger = new Agent();
  const forged = await stranger.get(`${cb}?state=forged&code=abc`);
  assert.equal(forged.status, 400);
  assert.match(await forged.text(), /Sign-in problem/);
  assert.ok((await reasons()).includes("state_mismatch"));

  /** One attempt through the fake upstream with the ID token `claims` writes; the final answer. */
  const through = async (claims: (auth: URLSearchParams) => Record<string, unknown>) => {
    fake.state.claims = claims;
    const agent = new Agent();
    const { location, verifier } = await clickProvider(agent, d, "Fake");
    const done = await agent.follow(location);
    return { agent, done, verifier };
  };
  const count = async (reason: string) => (await reasons()).filter((r) => r === reason).length;
  const refused = async (claims: (auth: URLSearchParams) => Record<string, unknown>, reason: string) => {
    const before = await count(reason);
    const { agent, done } = await through(claims);
    assert.equal(done.res.status, 400, done.url);
    const page = pageOf(await done.res.text());
    assert.ok(page.error, "a message on the login page");
    assert.equal(hasSso(agent), false);
    assert.equal(await count(reason), before + 1, `one more ${reason} in ${await reasons()}`);
  };
  const now = () => Math.floor(Date.now() / 1000);
  await refused(() => ({ aud: "someone-else" }), "invalid_id_token");
  await refused(() => ({ nonce: "not-the-one" }), "nonce_mismatch");
  await refused(() => ({ aud: ["rp", "other"], azp: "other" }), "invalid_id_token");
  await refused(() => ({ azp: "other" }), "invalid_id_token");
  await refused(() => ({ iss: "https://evil.example.com" }), "invalid_id_token");
  await refused(() => ({ exp: now() - 120, iat: now() - 400 }), "invalid_id_token");
  const { privateKey: otherKey } = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
  const ownKey = fake.state.signWith;
  fake.state.signWith = otherKey;
  await refused(() => ({ email: "x@example.com" }), "invalid_id_token");
  fake.state.signWith = ownKey;
  fake.state.tokenStatus = 400;
  await refused(() => ({}), "token_error");
  fake.state.tokenStatus = 200;
  // No email and no link: nothing to create the user from.
  await refused(() => ({}), "no_email");

  // The upstream answers with an error.
  {
    const agent = new Agent();
    const { location } = await clickProvider(agent, d, "Fake");
    const state = new URL(location).searchParams.get("state")!;
    const res = await agent.get(`${cb}?state=${state}&error=access_denied&error_description=nope`);
    assert.equal(res.status, 400);
    assert.match(pageOf(await res.text()).error ?? "", /did not sign you in/);
    assert.ok((await reasons()).includes("upstream_error"));
  }
  // An authorization response naming another issuer (RFC 9207, a mix-up): refused.
  {
    const agent = new Agent();
    const { location } = await clickProvider(agent, d, "Fake");
    const state = new URL(location).searchParams.get("state")!;
    const res = await agent.get(
      `${cb}?state=${state}&code=abc&iss=${encodeURIComponent("https://other.example")}`,
    );
    assert.equal(res.status, 400);
    assert.ok(pageOf(await res.text()).error);
    assert.ok((await reasons()).includes("issuer_mismatch"));
    assert.equal(
      fake.state.tokenRequests.filter((r) => r.form.get("code") === "abc").length,
      0,
      "no code sent",
    );
  }
  // The state of one browser, used by another: refused.
  {
    const agent = new Agent();
    const { location } = await clickProvider(agent, d, "Fake");
    const res = await new Agent().get(`${cb}?state=${new URL(location).searchParams.get("state")}&code=abc`);
    assert.equal(res.status, 400);
    await res.body?.cancel();
  }

  // The good one: PKCE verifier and Basic client authentication with the (sealed) secret.
  const ok = await through(() => ({
    sub: "fake-sub",
    email: "Fed.User@Example.com",
    email_verified: true,
    name: "Fed",
  }));
  assert.ok(ok.done.url.startsWith(APP_REDIRECT), `${ok.done.res.status}`);
  const last = fake.state.tokenRequests.at(-1)!;
  assert.equal(last.authorization, `Basic ${btoa("rp:s3cret+value")}`);
  const challenge = fake.state.lastAuthorize!.get("code_challenge")!;
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(last.form.get("code_verifier")!)),
  );
  assert.equal(
    btoa(String.fromCharCode(...digest)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""),
    challenge,
  );
  const claims = claimsOf((await redeemAt(d, ok.done.url, ok.verifier)).id_token);
  assert.equal(claims.email, "fed.user@example.com");
  assert.equal(claims.email_verified, true, "JIT: email_verified from upstream");
  assert.equal(claims.name, "Fed");

  // The provider goes down mid-login: the page says so.
  const agent = new Agent();
  const { location } = await clickProvider(agent, d, "Fake");
  await fake.stop();
  const res = await agent.get(`${cb}?state=${new URL(location).searchParams.get("state")}&code=abc`);
  assert.equal(res.status, 400);
  assert.match(pageOf(await res.text()).error ?? "", /could not be reached/);
  assert.equal(hasSso(agent), false);
  assert.ok((await reasons()).includes("provider_unreachable"));
});

test("odd callbacks answer pages, never a 500: an unknown provider, a NUL byte, a repeated or long state", async () => {
  const d = await downProject();
  const agent = new Agent();
  for (
    const path of [
      "/authorize/idp/no-such-provider/callback?state=x&code=y",
      "/authorize/idp/no-such-provider?request_id=x&csrf=y",
      "/authorize/idp/%00/callback?state=x",
      `/authorize/idp/${"x".repeat(5000)}/callback?state=x`,
      "/authorize/idp/no-such-provider/callback",
    ]
  ) {
    const res = await agent.get(`${d.publicUrl}${path}`);
    assert.ok([400, 404].includes(res.status), `${path}: ${res.status}`);
    await res.body?.cancel();
  }
  const fake = await fakeUpstream();
  try {
    const provider = await createProvider(d, { display_name: "Fake", issuer: fake.base, client_id: "rp" });
    const cb = `${d.publicUrl}/authorize/idp/${provider.id}/callback`;
    const { location } = await clickProvider(agent, d, "Fake");
    const state = new URL(location).searchParams.get("state")!;
    for (const query of [`state=${state}&state=${state}&code=a`, `state=${"s".repeat(300)}&code=a`]) {
      const res = await agent.get(`${cb}?${query}`);
      assert.equal(res.status, 400, query);
      await res.body?.cancel();
    }
    assert.equal(hasSso(agent), false);
  } finally {
    await fake.stop();
  }
});

test("the upstream's word replaces the password, not a second factor: a required policy asks for one after it", async () => {
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
    assert.ok(provider.id);
    const put = await call(d.url, d.token, "PUT", `/api/v1/projects/${d.projectId}`, {
      name: `mfa ${crypto.randomUUID().slice(0, 6)}`,
      mfa: "required",
    });
    assert.equal(put.status, 200, await put.clone().text());
    await put.body?.cancel();
    fake.state.claims = () => ({
      email: `m-${crypto.randomUUID().slice(0, 6)}@example.com`,
      email_verified: true,
    });
    const agent = new Agent();
    const { location } = await clickProvider(agent, d, "Fake");
    const done = await agent.follow(location);
    assert.equal(done.res.status, 200, done.url);
    assert.ok(!done.url.startsWith(APP_REDIRECT), "no code for the application yet");
    assert.match(await done.res.text(), /<h1>Set up two-step verification<\/h1>/);
    assert.equal(hasSso(agent), false, "no single sign-on session before the second factor");
  } finally {
    await fake.stop();
  }
});
