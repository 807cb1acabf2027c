/**
 * What ID tokens say after a second step (RFC 8176, OpenID Connect Core §2): after a `max_age` re-authentication
 * or a step-up (`acr_values=2`) of a browser session, `amr` lists only the methods presented at the new
 * `auth_time`; after an upstream sign-in and a second step, `idp` names the provider, and the browser session
 * keeps it for single sign-on and later step-ups.
 */
import assert from "node:assert/strict";
import { Api, loginProject, test } from "./helpers.ts";
import { authorizeOidc, Browser, payloadOf, redeem } from "./oidc_support.ts";
import { codeStep, enrolTotp, passwordStep, totp } from "./mfa_support.ts";
import {
  Agent,
  APP_REDIRECT,
  call,
  claimsOf,
  clickProvider,
  createProvider,
  downProject,
  fakeUpstream,
  json,
  openDownLogin,
  pageOf,
  redeemAt,
} from "./idp_support.ts";

const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];
const stepOf = (html: string) => ({ requestId: field(html, "request_id"), csrf: field(html, "csrf") });

test("after a max_age re-authentication, amr lists only the code presented at the new auth_time", async () => {
  const p = await loginProject();
  const { secret, recoveryCodes } = await enrolTotp(p);
  const browser = new Browser();
  // The first sign-in: the password, then the code.
  const first = await passwordStep(browser, p);
  assert.match(first.html, /<h1>Verify it is you<\/h1>/);
  const coded = await codeStep(browser, first, await totp(secret, Date.now() + 30_000));
  assert.equal(coded.res.status, 303);
  const one = payloadOf(
    (await redeem(p.clientId, new URL(coded.res.headers.get("location")!), first.verifier)).id_token,
  );
  assert.deepEqual([one.amr, one.acr], [["pwd", "otp", "mfa"], "2"]);
  // max_age=0 a second later: the code page only (no password), answered with a recovery code.
  await new Promise((r) => setTimeout(r, 1100));
  const stale = await authorizeOidc(browser, p.clientId, { max_age: "0" });
  assert.equal(stale.res.status, 200);
  assert.doesNotMatch(stale.html, /type="password"/);
  const again = await codeStep(browser, stepOf(stale.html), recoveryCodes[0]);
  assert.equal(again.res.status, 303);
  const fresh = payloadOf(
    (await redeem(p.clientId, new URL(again.res.headers.get("location")!), stale.verifier)).id_token,
  );
  assert.ok((fresh.auth_time as number) > (one.auth_time as number), "a new auth_time");
  assert.deepEqual([fresh.amr, fresh.acr], [["otp"], "2"], "not the password of the earlier login");
  // Single sign-on from that session says the same, and acr_values=2 is answered without a new step.
  const sso = await authorizeOidc(browser, p.clientId, { acr_values: "2" });
  assert.equal(sso.res.status, 302, sso.html);
  const reused = payloadOf(
    (await redeem(p.clientId, new URL(sso.res.headers.get("location")!), sso.verifier)).id_token,
  );
  assert.deepEqual([reused.amr, reused.acr, reused.auth_time], [["otp"], "2", fresh.auth_time]);
});

test("after a step-up of a password session, amr lists only the code; acr says the session reached 2", async () => {
  const p = await loginProject();
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Off,
  });
  const { secret } = await enrolTotp(p);
  const browser = new Browser();
  const first = await passwordStep(browser, p);
  assert.equal(first.res.status, 303, "the policy is off: the password alone");
  const one = payloadOf(
    (await redeem(p.clientId, new URL(first.res.headers.get("location")!), first.verifier)).id_token,
  );
  assert.deepEqual([one.amr, one.acr], [["pwd"], "1"]);
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Optional,
  });
  await new Promise((r) => setTimeout(r, 1100));
  const up = await authorizeOidc(browser, p.clientId, { acr_values: "2" });
  assert.equal(up.res.status, 200);
  const done = await codeStep(browser, stepOf(up.html), await totp(secret, Date.now() + 30_000));
  assert.equal(done.res.status, 303);
  const strong = payloadOf(
    (await redeem(p.clientId, new URL(done.res.headers.get("location")!), up.verifier)).id_token,
  );
  assert.ok((strong.auth_time as number) > (one.auth_time as number));
  assert.deepEqual([strong.amr, strong.acr], [["otp"], "2"]);
});

test("after an upstream sign-in and a second step, idp names the provider, and the session keeps it", async () => {
  const d = await downProject();
  const fake = await fakeUpstream();
  try {
    await json(
      await call(d.url, d.token, "PUT", `/api/v1/projects/${d.projectId}`, {
        name: `idp ${crypto.randomUUID().slice(0, 8)}`,
        mfa: "required",
      }),
      200,
    );
    const provider = await createProvider(d, {
      display_name: "Fake",
      issuer: fake.base,
      client_id: "rp",
      jit_provisioning: true,
    });
    fake.state.claims = () => ({
      sub: `mfa-${crypto.randomUUID()}`,
      email: `${crypto.randomUUID()}@example.com`,
    });
    const agent = new Agent();
    const { location, verifier } = await clickProvider(agent, d, "Fake");
    // A user made just in time enrols a factor right after the provider (the project requires one).
    const enrol = await agent.follow(location);
    assert.equal(enrol.res.status, 200);
    const html = await enrol.res.text();
    assert.match(html, /<h1>Set up two-step verification<\/h1>/);
    const key = /<code class="key" id="secret">([A-Z2-7 ]+)<\/code>/.exec(html)![1].replace(/ /g, "");
    const page = pageOf(html);
    const form = { request_id: page.requestId, csrf: page.csrf };
    const enrolled = await agent.post(`${d.publicUrl}/authorize/mfa`, { ...form, code: await totp(key) });
    assert.equal(enrolled.status, 200, await enrolled.clone().text());
    await enrolled.body?.cancel();
    const on = await agent.post(`${d.publicUrl}/authorize/mfa`, { ...form, continue: "1" });
    assert.equal(on.status, 303, await on.clone().text());
    const back = on.headers.get("location")!;
    assert.ok(back.startsWith(APP_REDIRECT));
    const claims = claimsOf((await redeemAt(d, back, verifier)).id_token);
    assert.deepEqual([claims.amr, claims.acr, claims.idp], [["fed", "otp", "mfa"], "2", provider.id]);
    // Single sign-on from the browser session: the provider is still the session's.
    const sso = await openDownLogin(agent, d);
    assert.equal(sso.res.status, 302, sso.html);
    const reused = claimsOf((await redeemAt(d, sso.res.headers.get("location")!, sso.verifier)).id_token);
    assert.deepEqual([reused.amr, reused.idp], [["fed", "otp", "mfa"], provider.id]);
    // A max_age step-up of that session: the code alone at the new auth_time, the session's provider kept.
    await new Promise((r) => setTimeout(r, 1100));
    const stale = await openDownLogin(agent, d, { max_age: "0" });
    assert.equal(stale.res.status, 200);
    const stalePage = pageOf(stale.html);
    const confirmed = await agent.post(`${d.publicUrl}/authorize/mfa`, {
      request_id: stalePage.requestId,
      csrf: stalePage.csrf,
      code: await totp(key, Date.now() + 30_000),
    });
    assert.equal(confirmed.status, 303, await confirmed.clone().text());
    const fresh = claimsOf((await redeemAt(d, confirmed.headers.get("location")!, stale.verifier)).id_token);
    assert.deepEqual([fresh.amr, fresh.acr, fresh.idp], [["otp"], "2", provider.id]);
    assert.ok((fresh.auth_time as number) > (claims.auth_time as number));
  } finally {
    await fake.stop();
  }
});
