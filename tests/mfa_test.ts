/**
 * The second step of a login: TOTP (RFC 6238) and recovery codes after the password, each code good once, the
 * throttle, `amr` and `acr` in ID tokens (read by openid-client) and introspection, and the enrolment API.
 */
import assert from "node:assert/strict";
import { oidc } from "./deps.ts";
import {
  baseUrl,
  clientToken,
  http,
  loginProject,
  REDIRECT_URI,
  service,
  test,
  userTokens,
} from "./helpers.ts";
import { Browser, payloadOf, redeem } from "./oidc_support.ts";
import { asUser, codeStep, enrolTotp, passwordStep, totp } from "./mfa_support.ts";

const NEXT = () => Date.now() + 30_000;

async function auditOf(p: { project: { id: string }; token: string }, type: string) {
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=${type}`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(res.status, 200);
  return (await res.json()).data as {
    type: string;
    target: { id: string };
    details: Record<string, unknown>;
  }[];
}

async function introspect(p: { clientId: string; secret: string }, token: string) {
  const res = await http("/api/v1/tokens/introspect", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${btoa(`${p.clientId}:${p.secret}`)}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  assert.equal(res.status, 200);
  return await res.json();
}

test("a user with an authenticator gives its code after the password; openid-client reads amr and acr", async () => {
  const p = await loginProject();
  const { secret } = await enrolTotp(p);
  const issuer = await baseUrl();
  const config = await oidc.discovery(new URL(issuer), p.clientId, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
  assert.ok((config.serverMetadata().claims_supported as string[]).includes("amr"));
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: "openid",
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    nonce,
    state: "s1",
  });
  const browser = new Browser();
  const login = await (await browser.get(`${url.pathname}${url.search}`)).text();
  const fieldOf = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];
  const afterPassword = await browser.post("/authorize", {
    request_id: fieldOf(login, "request_id"),
    csrf: fieldOf(login, "csrf"),
    email: p.email,
    password: p.password,
  });
  // No code yet: the second step's page, under the login page's headers.
  assert.equal(afterPassword.status, 200);
  assert.equal(afterPassword.headers.get("location"), null);
  const csp = afterPassword.headers.get("content-security-policy")!;
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self';/);
  assert.doesNotMatch(csp, /unsafe-inline|script-src[^;]*nonce/);
  assert.equal(afterPassword.headers.get("x-frame-options"), "DENY");
  assert.equal(afterPassword.headers.get("cache-control"), "no-store");
  const page = await afterPassword.text();
  assert.doesNotMatch(page, /<script(?! src="\/passkey\.js" defer><\/script>)/);
  assert.match(page, /<label for="code">Authentication code<\/label>/);
  assert.match(page, /autocomplete="one-time-code"/);
  assert.match(page, /action="[^"]*\/authorize\/mfa"/);
  const step = { requestId: fieldOf(page, "request_id"), csrf: fieldOf(page, "csrf") };

  // A wrong code: the form again, the error under the field.
  const good = await totp(secret, NEXT());
  const wrong = await codeStep(browser, step, good === "000000" ? "111111" : "000000");
  assert.equal(wrong.res.status, 400);
  assert.match(wrong.html, /aria-invalid="true"/);
  assert.match(wrong.html, /<p class="field-error" id="code-error" role="alert">/);
  assert.match(wrong.html, /aria-describedby="code-hint code-error"/);

  const right = await codeStep(browser, step, good);
  assert.equal(right.res.status, 303);
  const callback = new URL(right.res.headers.get("location")!);
  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: "s1",
    idTokenExpected: true,
  });
  const claims = tokens.claims()!;
  assert.deepEqual(claims.amr, ["pwd", "otp", "mfa"]);
  assert.equal(claims.acr, "2");
  // Introspection says the same, of the access and the refresh token.
  const seen = await introspect(p, tokens.access_token);
  assert.deepEqual([seen.active, seen.amr, seen.acr], [true, ["pwd", "otp", "mfa"], "2"]);
  const refresh = await introspect(p, tokens.refresh_token!);
  assert.deepEqual([refresh.token_type, refresh.amr, refresh.acr], [
    "refresh_token",
    ["pwd", "otp", "mfa"],
    "2",
  ]);
  // A refreshed ID token keeps them.
  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
  assert.deepEqual(refreshed.claims()!.amr, ["pwd", "otp", "mfa"]);

  // Single sign-on: the next login of the browser is as strong as the one that opened it.
  const again = await browser.get(`${url.pathname}${url.search}`);
  assert.equal(again.status, 302);
  const sso = await redeem(p.clientId, new URL(again.headers.get("location")!), verifier);
  assert.deepEqual([payloadOf(sso.id_token).amr, payloadOf(sso.id_token).acr], [["pwd", "otp", "mfa"], "2"]);
});

test("a password-only login says amr pwd and acr 1; the second step without a password is refused", async () => {
  const p = await loginProject();
  const browser = new Browser();
  const first = await passwordStep(browser, p);
  assert.equal(first.res.status, 303);
  const tokens = await redeem(p.clientId, new URL(first.res.headers.get("location")!), first.verifier);
  assert.deepEqual([payloadOf(tokens.id_token).amr, payloadOf(tokens.id_token).acr], [["pwd"], "1"]);
  const seen = await introspect(p, tokens.access_token);
  assert.deepEqual([seen.amr, seen.acr], [["pwd"], "1"]);

  // The second step's form of a request whose password was never given: an error page, no code.
  const other = await loginProject();
  const { secret } = await enrolTotp(other);
  const fresh = new Browser();
  const { authorizeOidc } = await import("./oidc_support.ts");
  const { html } = await authorizeOidc(fresh, other.clientId);
  const fieldOf = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];
  const skipped = await codeStep(
    fresh,
    { requestId: fieldOf("request_id"), csrf: fieldOf("csrf") },
    await totp(secret, NEXT()),
  );
  assert.equal(skipped.res.status, 400);
  assert.match(skipped.html, /Sign-in problem/);
  // Nor from another browser than the one that gave the password.
  const step = await passwordStep(fresh, other);
  assert.equal(step.res.status, 200);
  const stranger = await codeStep(new Browser(), step, await totp(secret, NEXT()));
  assert.equal(stranger.res.status, 400);
  assert.match(stranger.html, /Sign-in problem/);
});

test("each TOTP code signs in once; an older step's code and one outside the window are refused", async () => {
  const p = await loginProject();
  const { secret } = await enrolTotp(p);
  const code = await totp(secret, NEXT());
  const browser = new Browser();
  const a = await passwordStep(browser, p);
  assert.equal(a.res.status, 200);
  assert.equal((await codeStep(browser, a, code)).res.status, 303);
  // The same code in another login: spent.
  const b = new Browser();
  const stepB = await passwordStep(b, p);
  const reused = await codeStep(b, stepB, code);
  assert.equal(reused.res.status, 400);
  assert.match(reused.html, /already used/);
  // The code of the step before the one spent: refused too (steps only move forward).
  assert.equal((await codeStep(b, stepB, await totp(secret))).res.status, 400);
  // Two minutes away: outside the ±1 step window.
  assert.equal((await codeStep(b, stepB, await totp(secret, Date.now() + 120_000))).res.status, 400);
  const failed = await auditOf(p, "mfa.failed");
  assert.ok(failed.length >= 3);
  assert.deepEqual(failed[0].details, { client_id: p.clientId, reason: "wrong_code" });
  assert.equal(failed[0].target.id, p.userId);
});

test("recovery codes: ten, each signs in once, regenerated ones replace them", async () => {
  const p = await loginProject();
  const { recoveryCodes, accessToken } = await enrolTotp(p);
  assert.equal(recoveryCodes.length, 10);
  assert.equal(new Set(recoveryCodes).size, 10);
  for (const c of recoveryCodes) assert.match(c, /^[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}$/);
  // Stored only as hashes.
  const { db } = await service();
  const stored = await db.sql`select code_hash from recovery_codes where user_id = ${p.userId}`;
  assert.equal(stored.length, 10);
  const text = JSON.stringify(stored);
  for (const c of recoveryCodes) assert.ok(!text.includes(c.replace(/-/g, "")));

  const browser = new Browser();
  const step = await passwordStep(browser, p);
  // Typed in lower case with spaces: still the code.
  const used = await codeStep(browser, step, ` ${recoveryCodes[0].toLowerCase()} `);
  assert.equal(used.res.status, 303);
  const tokens = await redeem(p.clientId, new URL(used.res.headers.get("location")!), step.verifier);
  assert.deepEqual(payloadOf(tokens.id_token).amr, ["pwd", "otp", "mfa"]);
  const events = await auditOf(p, "recovery_code.used");
  assert.equal(events.length, 1);
  assert.deepEqual(events[0].details, { client_id: p.clientId, remaining: 9 });

  const b = new Browser();
  const again = await passwordStep(b, p);
  assert.equal((await codeStep(b, again, recoveryCodes[0])).res.status, 400, "spent");
  const summary = await (await asUser(accessToken, "GET", "/api/v1/users/current/second-factors")).json();
  assert.equal(summary.totp, true);
  assert.equal(summary.recovery_codes_left, 9);

  const noPassword = await asUser(accessToken, "POST", "/api/v1/users/current/recovery-codes", {});
  assert.equal(noPassword.status, 400);
  assert.equal((await noPassword.json()).details[0].field, "current_password");
  const regenerated = await asUser(accessToken, "POST", "/api/v1/users/current/recovery-codes", {
    current_password: p.password,
  });
  assert.equal(regenerated.status, 200);
  const fresh = (await regenerated.json()).recovery_codes as string[];
  assert.equal(fresh.length, 10);
  assert.equal((await codeStep(b, again, recoveryCodes[1])).res.status, 400, "replaced");
  assert.equal((await codeStep(b, again, fresh[0])).res.status, 303);
});

test("wrong codes are throttled per user, and a right password does not lift it", async () => {
  const p = await loginProject();
  const { secret } = await enrolTotp(p);
  const browser = new Browser();
  const step = await passwordStep(browser, p);
  const good = await totp(secret, NEXT());
  const bad = good === "000000" ? "111111" : "000000";
  for (let i = 0; i < 5; i++) assert.equal((await codeStep(browser, step, bad)).res.status, 400);
  const throttled = await codeStep(browser, step, good);
  assert.equal(throttled.res.status, 429);
  assert.ok(Number(throttled.res.headers.get("retry-after")) >= 1);
  assert.match(throttled.html, /Too many wrong codes/);
  assert.match(throttled.html, /aria-invalid="true"/);
  // The password again, in a new login: the second step still waits.
  const b = new Browser();
  const other = await passwordStep(b, p);
  assert.equal(other.res.status, 200);
  assert.equal((await codeStep(b, other, good)).res.status, 429);
  const failed = await auditOf(p, "mfa.failed");
  assert.ok(failed.some((e) => e.details.reason === "throttled"));
  // Never a lockout: once the delay passes the right code works (the delay is 1 s after 5 failures).
  await new Promise((r) => setTimeout(r, Number(throttled.res.headers.get("retry-after")) * 1000 + 200));
  assert.equal((await codeStep(b, other, good)).res.status, 303);
});

test("the enrolment API: the current password, a right code, one authenticator, user tokens only", async () => {
  const p = await loginProject();
  const { access_token } = await userTokens(p);
  const start = (body: unknown) => asUser(access_token, "POST", "/api/v1/users/current/totp", body);
  const missing = await start({});
  assert.equal(missing.status, 400);
  assert.deepEqual((await missing.json()).details, [{
    field: "current_password",
    issue: "required to change second factors",
  }]);
  assert.equal((await start({ current_password: "wrong password!" })).status, 400);
  // Confirming before starting.
  const early = await asUser(access_token, "POST", "/api/v1/users/current/totp/confirm", { code: "123456" });
  assert.equal(early.status, 404);
  assert.equal((await early.json()).error, "totp_enrolment_not_found");
  const started = await (await start({ current_password: p.password })).json();
  assert.match(started.secret, /^[A-Z2-7]{32}$/);
  const uri = new URL(started.otpauth_uri);
  assert.equal(uri.searchParams.get("secret"), started.secret);
  assert.equal(uri.searchParams.get("digits"), "6");
  assert.equal(uri.searchParams.get("period"), "30");
  // Not yet confirmed: the login asks for no code.
  const loose = await passwordStep(new Browser(), p);
  assert.equal(loose.res.status, 303);
  const wrong = await asUser(access_token, "POST", "/api/v1/users/current/totp/confirm", { code: "12345" });
  assert.equal(wrong.status, 400);
  const code = await totp(started.secret);
  const off = code === "000000" ? "000001" : "000000";
  const bad = await asUser(access_token, "POST", "/api/v1/users/current/totp/confirm", { code: off });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).details[0].field, "code");
  const ok = await asUser(access_token, "POST", "/api/v1/users/current/totp/confirm", { code });
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  const twice = await start({ current_password: p.password });
  assert.equal(twice.status, 409);
  assert.equal((await twice.json()).error, "totp_already_enrolled");
  const enrolled = await auditOf(p, "mfa.enrolled");
  assert.deepEqual(enrolled.map((e) => e.details), [{ factor: "totp" }]);

  // A client's token has no user.
  const machine = await clientToken(p.clientId, p.secret);
  const none = await asUser(machine, "GET", "/api/v1/users/current/second-factors");
  assert.equal(none.status, 404);
  await none.body?.cancel();

  // Removing it, with the password: logins ask for no code again.
  const removed = await asUser(access_token, "DELETE", "/api/v1/users/current/totp", {
    current_password: p.password,
  });
  assert.equal(removed.status, 204);
  assert.deepEqual((await auditOf(p, "mfa.removed")).map((e) => e.details), [{ factor: "totp" }]);
  assert.equal((await passwordStep(new Browser(), p)).res.status, 303);
  const gone = await asUser(access_token, "DELETE", "/api/v1/users/current/totp", {
    current_password: p.password,
  });
  assert.equal(gone.status, 404);
  assert.equal((await gone.json()).error, "second_factor_not_found");
});
