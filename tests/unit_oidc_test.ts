/**
 * Unit tests of OpenID Connect's request parsing and claim building that need no database (domain/oauth/oidc.ts,
 * domain/factors/mfa.ts): the parameters refused outright, the request read from valid ones, and `amr`/`acr`.
 */
import assert from "node:assert/strict";
import { authContext, hasOpenId, oidcParamIssue, oidcRequest } from "../domain/oauth/oidc.ts";
import { ACR_MULTI, ACR_SINGLE, acrOf, AMR_PASSWORD, AMR_TOTP } from "../domain/oauth/acr.ts";

const params = (p: Record<string, string>) => (name: string) => p[name];

Deno.test("oidcParamIssue: prompt values, max_age, and the lengths of nonce and acr_values", () => {
  const accepted: Record<string, string>[] = [
    {},
    { prompt: "login" },
    { prompt: "none" },
    { prompt: " login  " },
    { max_age: "0" },
    { max_age: "999999999" },
    { nonce: "n".repeat(512) },
    { acr_values: "2 1" },
  ];
  for (const ok of accepted) {
    assert.equal(oidcParamIssue(params(ok)), null, JSON.stringify(ok));
  }
  const refused: [Record<string, string>, RegExp][] = [
    [{ prompt: "consent" }, /prompt=consent is not supported/],
    [{ prompt: "login select_account" }, /prompt=select_account/],
    [{ prompt: "none login" }, /cannot be combined/],
    [{ max_age: "-1" }, /max_age/],
    [{ max_age: "1.5" }, /max_age/],
    [{ max_age: "1000000000" }, /max_age/],
    [{ max_age: "" }, /max_age/],
    [{ nonce: "n".repeat(513) }, /nonce/],
    [{ acr_values: "2 ".repeat(257) }, /acr_values/],
  ];
  for (const [p, message] of refused) assert.match(oidcParamIssue(params(p)) ?? "passed", message);
  // The unsupported value is cut, never echoed whole.
  assert.ok(oidcParamIssue(params({ prompt: "x".repeat(1000) }))!.length < 120);
});

Deno.test("oidcRequest: null without openid; the known scopes in their order, prompt, max_age, hint and acr", () => {
  assert.equal(oidcRequest(params({})), null);
  assert.equal(oidcRequest(params({ scope: "profile email" })), null);
  assert.equal(oidcRequest(params({ scope: "openidx" })), null);
  assert.deepEqual(oidcRequest(params({ scope: "email openid unknown profile" })), {
    scope: "openid profile email",
    nonce: null,
    prompt: null,
    maxAge: null,
    loginHint: null,
    acr: null,
  });
  assert.deepEqual(
    oidcRequest(params({
      scope: "openid",
      nonce: "abc",
      prompt: "login",
      max_age: "300",
      login_hint: "ada@example.com",
      acr_values: "1 2",
    })),
    {
      scope: "openid",
      nonce: "abc",
      prompt: "login",
      maxAge: 300,
      loginHint: "ada@example.com",
      acr: ACR_MULTI,
    },
  );
  const odd = oidcRequest(
    params({ scope: "openid", nonce: "", login_hint: "h".repeat(101), acr_values: "3" }),
  )!;
  assert.equal(odd.nonce, null, "an empty nonce is none");
  assert.equal(odd.loginHint, null, "a hint over 100 characters is ignored");
  assert.equal(odd.acr, null, "an unknown acr value is ignored");
  assert.equal(oidcRequest(params({ scope: "openid", prompt: "none" }))!.prompt, "none");
});

Deno.test("hasOpenId looks for the whole scope token", () => {
  assert.equal(hasOpenId(null), false);
  assert.equal(hasOpenId(""), false);
  assert.equal(hasOpenId("openid"), true);
  assert.equal(hasOpenId("profile openid"), true);
  assert.equal(hasOpenId("openids profile"), false);
});

Deno.test("authContext: the login's methods as stored (fed for an upstream login that stored none), and the acr they reach", () => {
  assert.deepEqual(authContext({ amr: null, provider_id: null }), {});
  assert.deepEqual(authContext({ amr: AMR_PASSWORD, provider_id: null }), { amr: ["pwd"], acr: ACR_SINGLE });
  assert.deepEqual(authContext({ amr: AMR_TOTP, provider_id: null }), { amr: AMR_TOTP, acr: ACR_MULTI });
  // An upstream sign-in followed by a second step stores what was presented: its amr stands (with the idp).
  assert.deepEqual(authContext({ amr: ["fed", "otp", "mfa"], provider_id: "p1" }), {
    amr: ["fed", "otp", "mfa"],
    acr: ACR_MULTI,
  });
  assert.deepEqual(authContext({ amr: null, provider_id: "p1" }), { amr: ["fed"], acr: ACR_SINGLE });
  assert.equal(acrOf(null), ACR_SINGLE);
  assert.equal(acrOf(["pwd", "mfa"]), ACR_MULTI);
});
