/**
 * Signing in through an upstream identity provider in a real browser (Debian's Chromium through playwright-core):
 * the downstream (this service at http://localhost:…) shows the provider's button, the upstream (another
 * instance of this service at http://127.0.0.1:…) its own form, and the browser comes back to the application
 * signed in, at desktop and phone width. Skipped without /usr/bin/chromium.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import { challengeOf, freePort, newVerifier, test } from "./helpers.ts";
import { call, claimsOf, downProject, json, redeemAt, upstreamProject } from "./idp_support.ts";

for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 700 }]) {
  test(
    `in Chromium at ${viewport.width}px: the provider's button, the upstream's form, back signed in; SSO after`,
    async () => {
      // The application: a page of its own at its redirect URI.
      const appPort = freePort();
      const app = `http://127.0.0.1:${appPort}/callback`;
      const server = Deno.serve(
        { hostname: "127.0.0.1", port: appPort, onListen: () => {} },
        () =>
          new Response("<!doctype html><title>App</title><h1>App</h1>", {
            headers: { "content-type": "text/html" },
          }),
      );
      const d = await downProject([app]);
      const up = await upstreamProject();
      const provider = await json<{ id: string; redirect_uri: string }>(
        await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/identity-providers`, {
          kind: "oidc",
          display_name: "Upstream Corp",
          issuer: up.issuer,
          client_id: up.rpClientId,
          client_secret: up.rpSecret,
          jit_provisioning: true,
        }),
        201,
      );
      await up.allow(provider.redirect_uri);
      const authorize = async () => {
        const verifier = newVerifier();
        const url = `${d.publicUrl}/authorize?${new URLSearchParams({
          client_id: d.clientId,
          redirect_uri: app,
          response_type: "code",
          code_challenge: await challengeOf(verifier),
          code_challenge_method: "S256",
          scope: "openid email profile",
          nonce: "n1",
          state: "s1",
        })}`;
        return { url, verifier };
      };
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport });
        // The application: a page of its own at its redirect URI.
        await page.route(
          `${app}**`,
          (route) =>
            route.fulfill({
              contentType: "text/html",
              body: "<!doctype html><title>App</title><h1>App</h1>",
            }),
        );
        const first = await authorize();
        await page.goto(first.url);
        const button = page.getByRole("link", { name: "Sign in with Upstream Corp" });
        await button.waitFor();
        assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
        const box = (await button.boundingBox())!;
        assert.ok(box.x >= 0 && box.x + box.width <= viewport.width, JSON.stringify(box));
        await button.click();
        // The upstream's own login page.
        await page.waitForURL((u) => u.origin === up.issuer);
        await page.getByLabel("Email").fill(up.email);
        await page.getByLabel("Password").fill(up.password);
        await Promise.all([
          page.waitForURL((u) => u.href.startsWith(app), { timeout: 15_000 }),
          page.getByRole("button", { name: "Sign in", exact: true }).click(),
        ]);
        assert.equal(await page.textContent("h1"), "App");
        const claims = claimsOf((await redeemAt(d, page.url(), first.verifier, app)).id_token);
        assert.deepEqual(claims.amr, ["fed"]);
        assert.equal(claims.idp, provider.id);
        assert.equal(claims.email, up.email);

        // Single sign-on at the downstream: straight back to the application.
        const second = await authorize();
        await page.goto(second.url);
        assert.ok(page.url().startsWith(app), page.url());
        assert.equal(
          claimsOf((await redeemAt(d, page.url(), second.verifier, app)).id_token).sub,
          claims.sub,
        );

        // A forged callback: an error page, no script, no session.
        await page.goto(`${d.publicUrl}/authorize/idp/${provider.id}/callback?state=forged&code=x`);
        assert.equal(await page.textContent("h1"), "Sign-in problem");
      } finally {
        await browser.close();
        await server.shutdown();
      }
    },
    { ignore: !hasChromium },
  );
}
