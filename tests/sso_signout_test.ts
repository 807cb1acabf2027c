/**
 * Signing out reaches codes and browsers too: a code issued before a logout is refused afterwards, and an admin
 * ending one login session also ends the browser session that opened it, so that browser cannot sign in again
 * without the form.
 */
import assert from "node:assert/strict";
import { exchangeCode, http, test } from "./helpers.ts";
import { authorizeOidc, Browser, LOGOUT_URI, oidcProject, payloadOf, signIn } from "./oidc_support.ts";

test("a code issued before a logout cannot be exchanged after it", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  await signIn(browser, p);
  // The second app gets a code without the form, but exchanges it only after the user has signed out.
  const { res, verifier } = await authorizeOidc(browser, p.secondClientId);
  const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
  assert.ok(code);
  const out = await browser.confirmLogout(
    `/logout?${new URLSearchParams({ client_id: p.clientId, post_logout_redirect_uri: LOGOUT_URI })}`,
  );
  assert.equal(out.status, 303);
  const late = await exchangeCode(p.secondClientId, code, verifier);
  assert.equal(late.status, 400);
  const body = await late.json();
  assert.deepEqual([body.error, body.error_code], ["invalid_grant", "invalid_authorization_code"]);
});

test("an admin ending one login session also signs its browser out of single sign-on", async () => {
  const p = await oidcProject();
  const browser = new Browser();
  const tokens = await signIn(browser, p);
  const sessionId = payloadOf(tokens.access_token).sid as string;
  const ended = await http(`/api/v1/projects/${p.project.id}/users/${p.userId}/sessions/${sessionId}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.ok(ended.status === 200 || ended.status === 204, `${ended.status} ${await ended.text()}`);
  await ended.body?.cancel();
  // The browser's next authorization request shows the form instead of issuing a code silently.
  const again = await authorizeOidc(browser, p.secondClientId);
  assert.equal(again.res.status, 200, again.res.headers.get("location") ?? "");
  assert.match(again.html, /name="password"/);
  const silent = await authorizeOidc(browser, p.secondClientId, { prompt: "none" });
  assert.equal(new URL(silent.res.headers.get("location")!).searchParams.get("error"), "login_required");
});
