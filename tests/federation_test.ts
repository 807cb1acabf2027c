/**
 * Signing in through an upstream OpenID Provider: another instance of this service as the upstream (JIT users,
 * linking by verified email on and off, single sign-on afterwards, `amr`/`idp` in the ID token, a replayed
 * callback, logout), and a hand-made upstream for the discovery's refresh and a run under `deno serve`. The
 * forged and failed callbacks are in federation_refusals_test.ts.
 */
import assert from "node:assert/strict";
import type { Service } from "../service.ts";
import { ADMIN_SECRET, DATABASE_URL, expectError, isolatedDatabase, service, test } from "./helpers.ts";
import { spawn } from "./processes.ts";
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
  json,
  openDownLogin,
  pageOf,
  projectAt,
  redeemAt,
  upstreamLogin,
  upstreamProject,
} from "./idp_support.ts";

test("JIT sign-in through another instance of this service, then single sign-on; a replayed callback is refused", async () => {
  const d = await downProject();
  const up = await upstreamProject();
  const provider = await createProvider(d, {
    display_name: "Upstream",
    issuer: up.issuer,
    client_id: up.rpClientId,
    client_secret: up.rpSecret,
    jit_provisioning: true,
  });
  await up.allow(provider.redirect_uri);
  const agent = new Agent();
  const { location, verifier } = await clickProvider(agent, d, "Upstream");
  const sent = new URL(location);
  assert.equal(sent.origin, up.issuer);
  assert.equal(sent.searchParams.get("code_challenge_method"), "S256");
  assert.ok(sent.searchParams.get("nonce") && sent.searchParams.get("state"));
  assert.equal(sent.searchParams.get("redirect_uri"), provider.redirect_uri);
  const callback = await upstreamLogin(agent, location, up.email, up.password);
  assert.ok(callback.startsWith(provider.redirect_uri), callback);
  const done = await agent.follow(callback);
  assert.ok(done.url.startsWith(APP_REDIRECT), `${done.res.status} ${await done.res.text()}`);
  assert.equal(new URL(done.url).searchParams.get("state"), "app-state");
  const tokens = await redeemAt(d, done.url, verifier);
  const claims = claimsOf(tokens.id_token);
  assert.deepEqual(claims.amr, ["fed"]);
  assert.equal(claims.idp, provider.id);
  assert.equal(claims.email, up.email);
  assert.equal(claims.email_verified, false, "the upstream does not say it is verified");
  assert.equal(claims.nonce, "app-nonce");
  const userId = claims.sub as string;
  // The user was created, linked to the upstream account (its sub is the upstream user's id).
  const identities = await json<{ data: { subject: string; provider_id: string }[] }>(
    await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/users/${userId}/identities`),
    200,
  );
  assert.deepEqual(identities.data.map((i) => [i.provider_id, i.subject]), [[provider.id, up.userId]]);
  // The user sees their identity, and cannot unlink their only way to sign in.
  const own = await json<{ data: { provider_id: string }[] }>(
    await call(d.url, tokens.access_token, "GET", "/api/v1/users/current/identities"),
    200,
  );
  assert.deepEqual(own.data.map((i) => i.provider_id), [provider.id]);
  await expectError(
    await call(d.url, tokens.access_token, "DELETE", `/api/v1/users/current/identities/${provider.id}`),
    409,
    "last_sign_in_method",
  );
  await expectError(
    await call(d.url, d.token, "GET", "/api/v1/users/current/identities"),
    404,
    "user_not_found",
  );
  const succeeded = await events(d, "login.succeeded");
  assert.ok(succeeded.some((e) => e.target?.id === userId && e.details?.provider_id === provider.id));
  assert.ok((await events(d, "user.identity_linked")).some((e) => e.details?.how === "jit"));

  // Single sign-on: the next OpenID request is answered without any page, still federated.
  const again = await openDownLogin(agent, d);
  assert.equal(again.res.status, 302, again.html);
  const location2 = again.res.headers.get("location")!;
  assert.ok(location2.startsWith(APP_REDIRECT));
  const second = claimsOf((await redeemAt(d, location2, again.verifier)).id_token);
  assert.equal(second.sub, userId);
  assert.deepEqual(second.amr, ["fed"]);

  // Logout (RP-initiated, with the ID token) ends the browser session: the next request shows the page again.
  const out = await agent.get(
    `${d.publicUrl}/logout?${new URLSearchParams({ id_token_hint: tokens.id_token })}`,
  );
  assert.equal(out.status, 200, await out.text());
  assert.equal(hasSso(agent), false);
  const afterLogout = await openDownLogin(agent, d);
  assert.equal(afterLogout.res.status, 200);
  assert.equal(pageOf(afterLogout.html).links.length, 1);

  // The same callback again (a replayed state and code): refused, audited, no session.
  const fresh = new Agent();
  fresh.jars.set("localhost", new Map(agent.cookies("localhost")));
  fresh.cookies("localhost").delete("acs_sso");
  const replay = await fresh.get(callback);
  assert.equal(replay.status, 400);
  assert.match(await replay.text(), /already used/);
  assert.equal(hasSso(fresh), false);
  const failed = await events(d, "login.failed");
  assert.ok(
    failed.some((e) => e.details?.reason === "state_replayed" && e.details?.provider_id === provider.id),
  );
});

test("linking by verified email: off by default, on only when both sides hold the email verified", async () => {
  const d = await downProject();
  const up = await upstreamProject();
  const provider = await createProvider(d, {
    display_name: "Upstream",
    issuer: up.issuer,
    client_id: up.rpClientId,
    client_secret: up.rpSecret,
    jit_provisioning: true,
  });
  await up.allow(provider.redirect_uri);
  const existing = await json<{ id: string }>(
    await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/users`, {
      display_name: "Existing",
      email: up.email,
      password: "another password here",
    }),
    201,
  );
  await d.svc.db.sql`update users set email_verified = true where id = ${existing.id}`;
  const attempt = async () => {
    const agent = new Agent();
    const { location, verifier } = await clickProvider(agent, d, "Upstream");
    const done = await agent.follow(await upstreamLogin(agent, location, up.email, up.password));
    return { agent, done, verifier };
  };
  const refusedWith = async (reason: string) => {
    const { agent, done } = await attempt();
    assert.equal(done.res.status, 400);
    const page = pageOf(await done.res.text());
    assert.match(page.error ?? "", /exists but is not linked/);
    assert.ok(page.requestId && page.csrf, "the login page again, usable");
    assert.equal(hasSso(agent), false);
    const failed = await events(d, "login.failed");
    assert.ok(failed.some((e) => e.details?.reason === reason && e.target?.id === existing.id));
  };
  // Off: an account with the email exists, and is not linked.
  await refusedWith("email_not_linkable");
  // On, but the upstream does not say the email is verified.
  const put = (link: boolean) =>
    call(d.url, d.token, "PUT", `/api/v1/projects/${d.projectId}/identity-providers/${provider.id}`, {
      display_name: "Upstream",
      issuer: up.issuer,
      client_id: up.rpClientId,
      link_by_verified_email: link,
    });
  await json(await put(true), 200);
  await refusedWith("email_not_linkable");
  // Both verified: linked to the existing user.
  await (await service()).db.sql`update users set email_verified = true where id = ${up.userId}`;
  await d.svc.db.sql`update users set email_verified = false where id = ${existing.id}`;
  await refusedWith("email_not_linkable"); // …not while this side does not hold it verified
  await d.svc.db.sql`update users set email_verified = true where id = ${existing.id}`;
  const { done, verifier } = await attempt();
  assert.ok(done.url.startsWith(APP_REDIRECT), `${done.res.status}`);
  const claims = claimsOf((await redeemAt(d, done.url, verifier)).id_token);
  assert.equal(claims.sub, existing.id);
  assert.equal(claims.idp, provider.id);
  assert.ok((await events(d, "user.identity_linked")).some((e) => e.details?.how === "verified_email"));
});

test("the discovery document is used as saved, and fetched again at a sign-in once a day old", async () => {
  const d = await downProject();
  const fake = await fakeUpstream();
  try {
    const provider = await createProvider(d, {
      display_name: "Fake",
      issuer: fake.base,
      client_id: "rp",
      jit_provisioning: true,
    });
    fake.state.claims = () => ({ sub: "refresh", email: "refresh@example.com" });
    fake.state.tokenPath = "/token2";
    const signIn = async () => {
      const agent = new Agent();
      const { location } = await clickProvider(agent, d, "Fake");
      const done = await agent.follow(location);
      assert.ok(done.url.startsWith(APP_REDIRECT), `${done.res.status}`);
      return fake.state.tokenRequests.at(-1)!.path;
    };
    assert.equal(await signIn(), "/token", "the saved document");
    await d.svc.db.sql`
      update identity_providers set metadata_fetched_at = now() - interval '25 hours' where id = ${provider.id}`;
    assert.equal(await signIn(), "/token2", "fetched again");
    const read = await json<{ metadata_fetched_at: string }>(
      await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/identity-providers/${provider.id}`),
      200,
    );
    assert.ok(Date.now() - Date.parse(read.metadata_fetched_at) < 60_000);
  } finally {
    await fake.stop();
  }
});

test("an inactive provider shows no button, and its start and callback are refused", async () => {
  const d = await downProject();
  const fake = await fakeUpstream();
  try {
    const provider = await createProvider(d, {
      display_name: "Gone",
      issuer: fake.base,
      client_id: "rp",
      is_active: false,
    });
    const agent = new Agent();
    const { html } = await openDownLogin(agent, d);
    const page = pageOf(html);
    assert.deepEqual(page.links, []);
    const res = await agent.get(
      `${d.publicUrl}/authorize/idp/${provider.id}?request_id=${page.requestId}&csrf=${page.csrf}`,
    );
    assert.equal(res.status, 400);
    assert.match(pageOf(await res.text()).error ?? "", /not available/);
    // A made-up request id or CSRF token: the page's own error.
    const bad = await agent.get(`${d.publicUrl}/authorize/idp/${provider.id}?request_id=x&csrf=y`);
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  } finally {
    await fake.stop();
  }
});

test(
  "under deno serve --allow-net --allow-env --allow-read: a provider is saved and a sign-in through it completes",
  async () => {
    const db = await isolatedDatabase();
    const fake = await fakeUpstream();
    const proc = await spawn({
      ...db.env,
      BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    }, { mode: "serve" });
    try {
      const d = await projectAt({ url: proc.url } as Service, proc.url);
      await createProvider(d, {
        display_name: "Fake",
        issuer: fake.base,
        client_id: "rp",
        jit_provisioning: true,
      });
      fake.state.claims = () => ({ sub: "served", email: "served@example.com", email_verified: true });
      const agent = new Agent();
      const { location, verifier } = await clickProvider(agent, d, "Fake");
      const done = await agent.follow(location);
      assert.ok(done.url.startsWith(APP_REDIRECT), `${done.res.status} ${proc.output()}`);
      assert.deepEqual(claimsOf((await redeemAt(d, done.url, verifier)).id_token).amr, ["fed"]);
    } finally {
      await proc.stop();
      await fake.stop();
      await db.drop();
    }
  },
  { ignore: !DATABASE_URL },
);
