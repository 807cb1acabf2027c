/**
 * OpenID Connect driven by openid-client 6, unmodified (only http on localhost allowed): discovery, the code
 * flow with PKCE and nonce (the library validates the ID token), userinfo, refresh and RP-initiated logout.
 */
import assert from "node:assert/strict";
import { oidc } from "./deps.ts";
import { baseUrl, http, REDIRECT_URI, test } from "./helpers.ts";
import {
  Browser,
  currentUserStatus,
  LOGOUT_URI,
  oidcProject,
  payloadOf,
  refreshStatus,
  submitForm,
} from "./oidc_support.ts";

test("openid-client: discovery, code + PKCE + nonce, ID token, userinfo, refresh, end session", async () => {
  const p = await oidcProject();
  const issuer = await baseUrl();
  const config = await oidc.discovery(new URL(issuer), p.clientId, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
  const meta = config.serverMetadata();
  assert.equal(meta.issuer, issuer);
  assert.equal(meta.userinfo_endpoint, `${issuer}/userinfo`);
  assert.equal(meta.end_session_endpoint, `${issuer}/logout`);
  assert.deepEqual(meta.scopes_supported, ["openid", "profile", "email"]);
  assert.deepEqual(meta.subject_types_supported, ["public"]);
  assert.deepEqual(meta.prompt_values_supported, ["none", "login"]);
  assert.ok((meta.claims_supported as string[]).includes("sid"));
  assert.ok((meta.claims_supported as string[]).includes("given_name"));
  assert.deepEqual(meta.id_token_signing_alg_values_supported, ["EdDSA"]);

  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: "openid profile email offline_access",
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    nonce,
    state,
  });

  // The browser: the login page, the form, the redirect back.
  const browser = new Browser();
  const page = await browser.get(`${url.pathname}${url.search}`);
  assert.equal(page.status, 200);
  const callback = await submitForm(browser, await page.text(), p.email, p.password);

  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  });
  const claims = tokens.claims()!;
  assert.equal(claims.sub, p.userId);
  assert.equal(claims.aud, p.clientId);
  assert.equal(claims.iss, issuer);
  assert.equal(claims.nonce, nonce);
  assert.equal(claims.email, p.email);
  assert.equal(claims.email_verified, false);
  assert.equal(claims.name, "Login User");
  assert.equal(typeof claims.auth_time, "number");
  assert.equal(typeof claims.sid, "string");
  // at_hash: the left half of SHA-512 of the access token for EdDSA (Ed25519), base64url.
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-512", new TextEncoder().encode(tokens.access_token)),
  );
  const half = btoa(String.fromCharCode(...digest.slice(0, 32)))
    .replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  assert.equal(claims.at_hash, half);
  assert.equal(tokens.scope, "openid profile email", "offline_access, unknown here, is ignored");
  // Permissions stay out of every token.
  assert.equal(payloadOf(tokens.access_token).permissions, undefined);
  assert.equal(claims.permissions, undefined);

  const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
  // A claim without a value is left out (OpenID Connect Core §5.3.2): this user has no avatar.
  assert.deepEqual(info, {
    sub: p.userId,
    name: "Login User",
    email: p.email,
    email_verified: false,
  });
  assert.equal("picture" in claims, false, "the ID token has no picture: null either");

  // A refresh returns a fresh ID token for the same user and login, validated by the library again.
  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
  const again = refreshed.claims()!;
  assert.equal(again.sub, p.userId);
  assert.equal(again.auth_time, claims.auth_time);
  assert.equal(again.sid, claims.sid);
  assert.equal(again.nonce, undefined);

  assert.ok(browser.jar.has("acs_sso"));
  // RP-initiated logout: back to the registered URI with the state; the session's tokens are refused.
  const end = oidc.buildEndSessionUrl(config, {
    id_token_hint: refreshed.id_token!,
    post_logout_redirect_uri: LOGOUT_URI,
    state: "bye",
  });
  const out = await browser.get(`${end.pathname}${end.search}`);
  assert.equal(out.status, 303);
  assert.equal(out.headers.get("location"), `${LOGOUT_URI}?state=bye`);
  assert.ok(!browser.jar.has("acs_sso"), "the single sign-on cookie is gone");
  assert.equal(
    (await refreshStatus(p.clientId, refreshed.refresh_token!)).error_code,
    "invalid_refresh_token",
  );
  assert.equal(await currentUserStatus(refreshed.access_token), 401);
  const res = await http("/userinfo", { headers: { authorization: `Bearer ${refreshed.access_token}` } });
  assert.equal(res.status, 401);
  assert.match(res.headers.get("www-authenticate")!, /^Bearer error="invalid_token"/);
  await res.body?.cancel();
});

test("claims without a value are left out of the ID token and userinfo, and those with one are there", async () => {
  const p = await oidcProject();
  const config = await oidc.discovery(new URL(await baseUrl()), p.clientId, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: "openid profile email",
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
  });
  const browser = new Browser();
  const page = await browser.get(`${url.pathname}${url.search}`);
  const callback = await submitForm(browser, await page.text(), p.email, p.password);
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier });
  // The user gets an avatar and loses the email: the next ID token and userinfo say so.
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    is_active: true,
    avatar_url: "https://example.com/a.png",
    email: null,
    external_user_id: `ext-${p.userId}`,
    given_name: "Login",
    family_name: "User",
  });
  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
  const claims = refreshed.claims()!;
  assert.equal(claims.picture, "https://example.com/a.png");
  assert.deepEqual([claims.given_name, claims.family_name], ["Login", "User"], "the name in parts (profile)");
  for (const absent of ["email", "email_verified"]) assert.equal(absent in claims, false, absent);
  const info = await oidc.fetchUserInfo(config, refreshed.access_token, claims.sub);
  assert.deepEqual(info, {
    sub: p.userId,
    name: "Login User",
    given_name: "Login",
    family_name: "User",
    picture: "https://example.com/a.png",
  });
});

test("GET /.well-known/openid-configuration extends the RFC 8414 document", async () => {
  const oidcDoc = await (await http("/.well-known/openid-configuration")).json();
  const oauthDoc = await (await http("/.well-known/oauth-authorization-server")).json();
  for (const [k, v] of Object.entries(oauthDoc)) assert.deepEqual(oidcDoc[k], v, k);
  assert.equal(oauthDoc.userinfo_endpoint, undefined, "the OAuth document is unchanged");
});
