/**
 * The project's `mfa` policy and step-up: `required` makes a user without a factor enrol right after the
 * password; `off` never asks; `acr_values=2` and an exceeded `max_age` ask a signed-in user for the code again
 * (not the password); the last factor of a `required` project stays (409); changing the policy needs covering
 * the whole project.
 */
import assert from "node:assert/strict";
import { oidc } from "./deps.ts";
import { Api, baseUrl, clientWith, expectError, loginProject, REDIRECT_URI, test } from "./helpers.ts";
import { authorizeOidc, Browser, payloadOf, redeem } from "./oidc_support.ts";
import { asUser, codeStep, decodeQrSvg, enrolTotp, passwordStep, totp } from "./mfa_support.ts";

const NEXT = () => Date.now() + 30_000;
const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];

async function setPolicy(p: Awaited<ReturnType<typeof loginProject>>, mfa: "off" | "optional" | "required") {
  const updated = await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    mfa: mfa as Api.UpdateProjectRequest.MfaEnum,
  });
  assert.equal(updated.mfa, mfa);
}

test("mfa is optional by default, and only a caller covering the project may change it", async () => {
  const p = await loginProject();
  assert.equal(p.project.mfa, "optional");
  assert.equal((await p.api.projects.getProject(p.project.id)).mfa, "optional");
  const narrow = await clientWith(p, ["projects:update", "projects:read"]);
  await expectError(
    narrow.api.projects.updateProject(p.project.id, {
      name: p.project.name,
      mfa: Api.UpdateProjectRequest.MfaEnum.Off,
    }),
    403,
    "insufficient_permission",
  );
  // Renaming alone is still fine for it.
  await narrow.api.projects.updateProject(p.project.id, { name: "renamed" });
  assert.equal((await p.api.projects.getProject(p.project.id)).mfa, "optional");
  const bad = await (await fetch(`${await baseUrl()}/api/v1/projects/${p.project.id}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "x", mfa: "always" }),
  })).json();
  assert.equal(bad.error, "invalid_params");
  assert.equal(bad.details[0].field, "mfa");
});

test("required: a user without a factor enrols after the password, sees the recovery codes, then goes on", async () => {
  const p = await loginProject();
  await setPolicy(p, "required");
  const browser = new Browser();
  const step = await passwordStep(browser, p);
  assert.equal(step.res.status, 200);
  assert.match(step.html, /<h1>Set up two-step verification<\/h1>/);
  assert.doesNotMatch(step.html, /<script(?! src="\/passkey\.js" defer><\/script>)/);
  const key = /<code class="key" id="secret">([A-Z2-7 ]+)<\/code>/.exec(step.html)![1].replace(/ /g, "");
  const uri = new URL(decodeQrSvg(/<svg[\s\S]*?<\/svg>/.exec(step.html)![0]));
  assert.equal(uri.searchParams.get("secret"), key);
  // A wrong code: the enrolment page again, with the same key and the field's error.
  const good = await totp(key);
  const wrong = await codeStep(browser, step, good === "000000" ? "111111" : "000000");
  assert.equal(wrong.res.status, 400);
  assert.match(wrong.html, /id="code-error" role="alert"/);
  assert.ok(wrong.html.includes(key.match(/.{1,4}/g)!.join(" ")));
  // The right code: the recovery codes, once, and a button that goes on.
  const enrolled = await codeStep(browser, step, good);
  assert.equal(enrolled.res.status, 200);
  const codes = [...enrolled.html.matchAll(/<li><code>([A-Z2-7-]+)<\/code><\/li>/g)].map((m) => m[1]);
  assert.equal(codes.length, 10);
  const on = await browser.post("/authorize/mfa", {
    request_id: step.requestId,
    csrf: step.csrf,
    continue: "1",
  });
  assert.equal(on.status, 303);
  const tokens = await redeem(p.clientId, new URL(on.headers.get("location")!), step.verifier);
  assert.deepEqual([payloadOf(tokens.id_token).amr, payloadOf(tokens.id_token).acr], [
    ["pwd", "otp", "mfa"],
    "2",
  ]);

  // The next sign-in asks for the code; the last factor cannot be removed (409).
  const next = new Browser();
  const again = await passwordStep(next, p);
  assert.match(again.html, /<h1>Verify it is you<\/h1>/);
  const removed = await asUser(tokens.access_token, "DELETE", "/api/v1/users/current/totp", {
    current_password: p.password,
  });
  assert.equal(removed.status, 409);
  assert.equal((await removed.json()).error, "second_factor_required");
});

test("off: no second step even for a user with a factor; acr_values is then ignored", async () => {
  const p = await loginProject();
  await enrolTotp(p);
  await setPolicy(p, "off");
  const browser = new Browser();
  const step = await passwordStep(browser, p, { acr_values: "2" });
  assert.equal(step.res.status, 303);
  const tokens = await redeem(p.clientId, new URL(step.res.headers.get("location")!), step.verifier);
  assert.deepEqual([payloadOf(tokens.id_token).amr, payloadOf(tokens.id_token).acr], [["pwd"], "1"]);
});

test("step-up: acr_values=2 asks a signed-in user for the code only; max_age exceeded too", async () => {
  const p = await loginProject();
  await setPolicy(p, "off");
  const { secret, recoveryCodes } = await enrolTotp(p);
  const browser = new Browser();
  // Signed in with the password only (the policy was off then).
  const first = await passwordStep(browser, p);
  assert.equal(first.res.status, 303);
  await setPolicy(p, "optional");
  // Single sign-on without acr_values: straight back, acr 1.
  const plain = await authorizeOidc(browser, p.clientId);
  assert.equal(plain.res.status, 302);
  const sso = await redeem(p.clientId, new URL(plain.res.headers.get("location")!), plain.verifier);
  assert.equal(payloadOf(sso.id_token).acr, "1");
  // acr_values=2: the code page at once, no password form.
  const up = await authorizeOidc(browser, p.clientId, { acr_values: "2" });
  assert.equal(up.res.status, 200);
  assert.match(up.html, /<h1>Verify it is you<\/h1>/);
  assert.doesNotMatch(up.html, /type="password"/);
  const upCode = await totp(secret, NEXT());
  const done = await codeStep(browser, {
    requestId: field(up.html, "request_id"),
    csrf: field(up.html, "csrf"),
  }, upCode);
  assert.equal(done.res.status, 303);
  const strong = await redeem(p.clientId, new URL(done.res.headers.get("location")!), up.verifier);
  const claims = payloadOf(strong.id_token);
  // RFC 8176: the methods presented at this auth_time, the code alone (the password was an earlier login's);
  // the session reached the multi-factor level.
  assert.deepEqual([claims.amr, claims.acr], [["otp"], "2"]);
  // Now the browser session is multi-factor: acr_values=2 is answered at once.
  const again = await authorizeOidc(browser, p.clientId, { acr_values: "2" });
  assert.equal(again.res.status, 302);
  // prompt=none with a step-up needed and max_age exceeded: login_required, no page.
  await new Promise((r) => setTimeout(r, 1100));
  const none = await authorizeOidc(browser, p.clientId, { max_age: "0", prompt: "none" });
  assert.equal(none.res.status, 302);
  assert.equal(new URL(none.res.headers.get("location")!).searchParams.get("error"), "login_required");
  // max_age exceeded: the code again (a factor the user holds), not the password.
  const stale = await authorizeOidc(browser, p.clientId, { max_age: "0" });
  assert.equal(stale.res.status, 200);
  assert.match(stale.html, /<h1>Verify it is you<\/h1>/);
  // The code of the step already spent is refused; a recovery code confirms it, with a new auth_time.
  const staleStep = { requestId: field(stale.html, "request_id"), csrf: field(stale.html, "csrf") };
  assert.equal((await codeStep(browser, staleStep, upCode)).res.status, 400);
  const confirmed = await codeStep(browser, staleStep, recoveryCodes[0]);
  assert.equal(confirmed.res.status, 303);
  const fresh = payloadOf(
    (await redeem(p.clientId, new URL(confirmed.res.headers.get("location")!), stale.verifier)).id_token,
  );
  assert.deepEqual([fresh.amr, fresh.acr], [["otp"], "2"]);
  assert.ok((fresh.auth_time as number) > (claims.auth_time as number));
});

test("acr_values=2 for a user without a factor: the password, then enrolment, in an optional project", async () => {
  const p = await loginProject();
  const browser = new Browser();
  const step = await passwordStep(browser, p, { acr_values: "1 2" });
  assert.equal(step.res.status, 200);
  assert.match(step.html, /<h1>Set up two-step verification<\/h1>/);
  // Without acr_values, the same user signs in with the password alone.
  const other = await passwordStep(new Browser(), p);
  assert.equal(other.res.status, 303);
});

test("openid-client: acr_values=2 and max_age step-up, the library checking nonce, state and auth_time", async () => {
  const p = await loginProject();
  const { secret, recoveryCodes } = await enrolTotp(p);
  const config = await oidc.discovery(new URL(await baseUrl()), p.clientId, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
  assert.deepEqual(config.serverMetadata().acr_values_supported, ["1", "2"]);
  const browser = new Browser();
  const start = async (extra: Record<string, string>) => {
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: "openid",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      nonce,
      state,
      ...extra,
    });
    const res = await browser.get(`${url.pathname}${url.search}`);
    const finish = async (location: string, maxAge?: number) =>
      await oidc.authorizationCodeGrant(config, new URL(location), {
        pkceCodeVerifier: verifier,
        expectedNonce: nonce,
        expectedState: state,
        idTokenExpected: true,
        ...(maxAge !== undefined ? { maxAge } : {}),
      });
    return { res, html: res.status === 200 ? await res.text() : "", finish };
  };
  // The first sign-in: password, then the code.
  const first = await start({ acr_values: "2" });
  const afterPassword = await browser.post("/authorize", {
    request_id: field(first.html, "request_id"),
    csrf: field(first.html, "csrf"),
    email: p.email,
    password: p.password,
  });
  const page = await afterPassword.text();
  const coded = await codeStep(browser, {
    requestId: field(page, "request_id"),
    csrf: field(page, "csrf"),
  }, await totp(secret, NEXT()));
  const one = (await first.finish(coded.res.headers.get("location")!)).claims()!;
  assert.deepEqual([one.acr, one.amr], ["2", ["pwd", "otp", "mfa"]]);
  // The session is multi-factor: acr_values=2 again is answered at once.
  const sso = await start({ acr_values: "2" });
  assert.equal(sso.res.status, 302);
  assert.equal((await sso.finish(sso.res.headers.get("location")!)).claims()!.acr, "2");
  // max_age=1 two seconds later: the code page (no password), then a fresh auth_time.
  await new Promise((r) => setTimeout(r, 2100));
  const stale = await start({ max_age: "1" });
  assert.equal(stale.res.status, 200);
  assert.doesNotMatch(stale.html, /type="password"/);
  const again = await codeStep(browser, {
    requestId: field(stale.html, "request_id"),
    csrf: field(stale.html, "csrf"),
  }, recoveryCodes[0]);
  assert.equal(again.res.status, 303);
  const fresh = (await stale.finish(again.res.headers.get("location")!, 1)).claims()!;
  assert.equal(fresh.acr, "2");
  assert.ok(fresh.auth_time! > one.auth_time!);
});
