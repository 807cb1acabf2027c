/**
 * Passkeys over raw HTTP with a software authenticator (tests/passkey_support.ts: ES256 over node:crypto, CBOR
 * encoded by hand): registration and sign-in, and the refusals a server must make (another challenge, origin or relying
 * party, no user verification, a bad signature, a counter that goes back, another project's passkey), each
 * audited as `passkey.refused`.
 */
import assert from "node:assert/strict";
import {
  Api,
  baseUrl,
  DATABASE_URL,
  eventually,
  exchangeCode,
  http,
  loginProject,
  service,
  test,
} from "./helpers.ts";
import { asUser, enrolTotp } from "./mfa_support.ts";
import { authorizeOidc, Browser, payloadOf, signIn } from "./oidc_support.ts";
import { b64url, SoftKey } from "./passkey_support.ts";

const json = async (res: Response) => ({ status: res.status, body: await res.json() });

test("passkeys over raw HTTP: registration and sign-in checked by the server, every refusal audited", async () => {
  const base = await baseUrl();
  const origin = new URL(base).origin;
  const rpId = new URL(base).hostname;
  const p = await loginProject();
  const browser = new Browser();
  await signIn(browser, p);
  const account = await (await browser.get("/account")).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(account)![1];
  const project = p.project.id;
  const post = async (b: Browser, path: string, body: unknown) =>
    b.take(
      await http(path, {
        method: "POST",
        headers: { ...b.header(), "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  const key = new SoftKey();
  const register = async (
    tweak: Partial<{ origin: string; rpId: string; challenge: string; flags: number }> = {},
  ) => {
    const options = await json(
      await post(browser, "/account/passkeys/options", { csrf, project, current_password: p.password }),
    );
    assert.equal(options.status, 200);
    assert.equal(options.body.rp.id, rpId);
    assert.equal(options.body.authenticatorSelection.userVerification, "required");
    assert.equal(options.body.authenticatorSelection.residentKey, "required");
    const made = key.create({ challenge: options.body.challenge, rpId, origin, ...tweak });
    return await json(await post(browser, "/account/passkeys", { csrf, project, name: "Soft key", ...made }));
  };
  // Another origin, relying party, challenge, or no user verification: refused.
  for (
    const [tweak, reason] of [
      [{ origin: "https://evil.example" }, "wrong_origin"],
      [{ rpId: "evil.example" }, "wrong_rp_id"],
      [{ challenge: "another-challenge" }, "wrong_challenge"],
      [{ flags: 0x41 }, "user_not_verified"],
    ] as const
  ) {
    const refused = await register(tweak);
    assert.equal(refused.status, 400, reason);
    assert.equal(refused.body.error, "passkey_refused");
  }
  // Without the current password, or the account page's CSRF token: refused before anything.
  const noPassword = await json(await post(browser, "/account/passkeys/options", { csrf, project }));
  assert.deepEqual([noPassword.status, noPassword.body.error_description], [
    400,
    "Enter your current password to add a passkey.",
  ]);
  assert.equal((await post(browser, "/account/passkeys/options", { csrf: "x", project })).status, 400);
  const ok = await register();
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.match(ok.body.location, /^\/account\?/);

  // Sign-in with it on a login page, without a password.
  const login = async (
    tweak: Partial<{ origin: string; rpId: string; challenge: string; tamper: boolean }> = {},
  ) => {
    const b = new Browser();
    const { html, verifier } = await authorizeOidc(b, p.clientId);
    const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];
    const form = { request_id: field("request_id"), csrf: field("csrf") };
    const options = await json(await post(b, "/authorize/passkey/options", form));
    assert.equal(options.status, 200);
    assert.deepEqual(options.body.allowCredentials, [], "discoverable: no list of credentials");
    const answer = key.get({ challenge: options.body.challenge, rpId, origin, ...tweak });
    return { ...(await json(await post(b, "/authorize/passkey", { ...form, ...answer }))), verifier };
  };
  const signedIn = await login();
  assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
  const location = new URL(signedIn.body.location);
  const tokens = await (await exchangeCode(p.clientId, location.searchParams.get("code")!, signedIn.verifier))
    .json();
  assert.deepEqual([payloadOf(tokens.id_token).amr, payloadOf(tokens.id_token).acr], [["hwk", "mfa"], "2"]);
  assert.equal(payloadOf(tokens.id_token).sub, p.userId);

  assert.equal((await login({ origin: "https://evil.example" })).status, 400);
  assert.equal((await login({ rpId: "evil.example" })).status, 400);
  assert.equal((await login({ challenge: "not-the-challenge" })).status, 400);
  assert.equal((await login({ tamper: true })).status, 400);
  // A clone: the counter goes back.
  key.counter = 0;
  assert.equal((await login()).status, 400);
  key.counter = 100;
  assert.equal((await login()).status, 200);

  // Another project's login page does not know it.
  const other = await loginProject();
  const ob = new Browser();
  const page = await authorizeOidc(ob, other.clientId);
  const f = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(page.html)![1];
  const form = { request_id: f("request_id"), csrf: f("csrf") };
  const options = await json(await post(ob, "/authorize/passkey/options", form));
  const foreign = await json(
    await post(ob, "/authorize/passkey", {
      ...form,
      ...key.get({ challenge: options.body.challenge, rpId, origin }),
    }),
  );
  assert.equal(foreign.status, 400);

  const events = await (await http(`/api/v1/projects/${project}/audit-events?type=passkey.*&limit=100`, {
    headers: { authorization: `Bearer ${p.token}` },
  })).json();
  const reasons = events.data.filter((e: { type: string }) => e.type === "passkey.refused")
    .map((e: { details: { reason: string } }) => e.details.reason).sort();
  assert.deepEqual(reasons, [
    "bad_signature",
    "counter_went_back",
    "user_not_verified",
    "wrong_challenge",
    "wrong_challenge",
    "wrong_origin",
    "wrong_origin",
    "wrong_rp_id",
    "wrong_rp_id",
  ]);
  assert.equal(events.data.filter((e: { type: string }) => e.type === "passkey.registered").length, 1);
  const otherEvents =
    await (await http(`/api/v1/projects/${other.project.id}/audit-events?type=passkey.refused`, {
      headers: { authorization: `Bearer ${other.token}` },
    })).json();
  assert.equal(otherEvents.data[0].details.reason, "unknown_credential");

  // The account page lists it; removing it needs the password.
  const listed = await (await browser.get("/account")).text();
  assert.match(listed, /<strong>Soft key<\/strong>/);
  // While the project requires a second factor, the user's last one stays.
  await p.api.projects.updateProject(project, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Required,
  });
  const kept = await browser.post("/account/passkeys/remove", {
    csrf,
    project,
    passkey_id: b64url(key.id),
    current_password: p.password,
  });
  assert.equal(kept.status, 409);
  assert.match(await kept.text(), /requires two-step verification/);
  await p.api.projects.updateProject(project, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Optional,
  });
  const removed = await browser.post("/account/passkeys/remove", {
    csrf,
    project,
    passkey_id: b64url(key.id),
    current_password: p.password,
  });
  assert.equal(removed.status, 303);
  const after = await (await http(`/api/v1/projects/${project}/audit-events?type=passkey.removed`, {
    headers: { authorization: `Bearer ${p.token}` },
  })).json();
  assert.equal(after.data.length, 1);
  assert.equal((await login()).status, 400, "removed");
});

test("two factor removals at once under a required policy: the user's row is locked, at most one passes; each change mails a notice", async () => {
  const base = await baseUrl();
  const origin = new URL(base).origin;
  const rpId = new URL(base).hostname;
  const p = await loginProject();
  const project = p.project.id;
  const { db, applicationName } = await service();
  const browser = new Browser();
  await signIn(browser, p);
  const { accessToken } = await enrolTotp(p);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await browser.get("/account")).text())![1];
  const post = async (path: string, body: unknown) =>
    await json(browser.take(
      await http(path, {
        method: "POST",
        headers: { ...browser.header(), "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    ));
  const key = new SoftKey();
  const options = await post("/account/passkeys/options", { csrf, project, current_password: p.password });
  const made = key.create({ challenge: options.body.challenge, rpId, origin });
  assert.equal((await post("/account/passkeys", { csrf, project, name: "Race key", ...made })).status, 200);
  await p.api.projects.updateProject(project, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Required,
  });
  // The authenticator through the API and the passkey on the account page, at the same moment. On PostgreSQL the
  // test holds both factors' rows meanwhile, so that both removals have read what remains before either deletes:
  // without the user's row locked around the check, both would pass.
  const hold = DATABASE_URL ? await db.sql.reserve() : null;
  if (hold) {
    await hold`begin`;
    await hold`select 1 from totp_factors where user_id = ${p.userId} for update`;
    await hold`select 1 from passkeys where user_id = ${p.userId} for update`;
  }
  const both = Promise.all([
    asUser(accessToken, "DELETE", "/api/v1/users/current/totp", { current_password: p.password }),
    browser.post("/account/passkeys/remove", {
      csrf,
      project,
      passkey_id: b64url(key.id),
      current_password: p.password,
    }),
  ]);
  if (hold) {
    await eventually("both removals waiting on a lock", async () =>
      (await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
          and application_name = ${applicationName!}`)[0].n >= 2);
    await hold`rollback`;
    hold.release();
  }
  const [totpGone, passkeyGone] = await both;
  const passed = [totpGone.status === 204, passkeyGone.status === 303];
  assert.deepEqual(passed.filter(Boolean).length, 1, `${totpGone.status} ${passkeyGone.status}`);
  assert.ok([409].includes(passed[0] ? passkeyGone.status : totpGone.status));
  const left = await asUser(accessToken, "GET", "/api/v1/users/current/second-factors");
  const factors = await left.json();
  assert.equal(Number(factors.totp) + factors.passkeys.length, 1, "one factor stays");
  const notices = (await db.sql<{ params: { change: string } }[]>`
    select params from mail_outbox where user_id = ${p.userId} and kind = 'security_notice' order by created_at`)
    .map((r) => r.params.change);
  assert.deepEqual(notices.slice(0, 2), [
    "An authenticator app was added to your account.",
    "A passkey was added to your account. Its name: Race key.",
  ]);
  assert.equal(notices.length, 3);
  assert.match(notices[2], /removed/);
});
