/**
 * Consent in a real browser (Chromium through playwright-core): the login form, the consent page of a third-party
 * client (its name, host and permissions), "Allow", and the callback with a code; at 390 px without horizontal
 * overflow or a CSP violation. Without /usr/bin/chromium it is skipped.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import {
  baseUrl,
  challengeOf,
  exchangeCode,
  loginProject,
  newVerifier,
  REDIRECT_URI,
  test,
} from "./helpers.ts";

test(
  "a real browser signs in, sees the consent page of a third-party client, allows it and reaches the callback",
  async () => {
    const p = await loginProject();
    const client = await p.api.clients.createClient(p.project.id, { name: "Acme Notes", third_party: true });
    const url = await baseUrl();
    const verifier = newVerifier();
    const href = `${url}/authorize?${new URLSearchParams({
      client_id: client.id,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      scope: "openid email",
      state: "abc",
    })}`;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
      const violations: string[] = [];
      page.on(
        "console",
        (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()),
      );
      // The application's callback: answered here (nothing listens on REDIRECT_URI's port).
      await page.route(
        `${new URL(REDIRECT_URI).origin}/**`,
        (route) =>
          route.fulfill({
            contentType: "text/html",
            body: "<!doctype html><title>App</title><h1>Signed in</h1>",
          }),
      );
      await page.goto(href);
      await page.getByLabel("Email").fill(p.email);
      await page.getByLabel("Password").fill(p.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL(/\/authorize\/consent/);
      assert.equal((await page.textContent("h1"))?.trim(), "Allow Acme Notes?");
      assert.equal(await page.textContent("#client-host"), new URL(REDIRECT_URI).host);
      assert.match((await page.textContent("#permissions"))!, /See your email address/);
      assert.ok(
        await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"),
        "fits 390 px",
      );
      await page.getByRole("button", { name: "Allow" }).click();
      await page.waitForURL((u) => u.href.startsWith(REDIRECT_URI));
      const landed = new URL(page.url());
      assert.equal(landed.searchParams.get("state"), "abc");
      const code = landed.searchParams.get("code");
      assert.ok(code);
      const res = await exchangeCode(client.id, code, verifier);
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      assert.deepEqual(violations, []);
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);
