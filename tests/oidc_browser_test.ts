/**
 * Single sign-on and logout in a real browser (Debian's Chromium through playwright-core): a second client of
 * the project signs in without the form, `prompt=login` shows it, `prompt=none` without a session answers
 * `login_required`, and a logout ends the browser session and the refresh tokens; at desktop and phone width.
 * Skipped without /usr/bin/chromium.
 */
import assert from "node:assert/strict";
import { type Page } from "./browser_deps.ts";
import { hasChromium, launchChromium } from "./chromium.ts";
import { challengeOf, exchangeCode, freePort, loginProject, newVerifier, service, test } from "./helpers.ts";
import { currentUserStatus, refreshStatus } from "./oidc_support.ts";

for (const viewport of [{ width: 1280, height: 800 }, { width: 360, height: 640 }]) {
  test(
    `in Chromium at ${viewport.width}px: single sign-on across two clients, prompt=login, logout, prompt=none`,
    async () => {
      const port = freePort();
      const app = `http://127.0.0.1:${port}`;
      const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, (req) => {
        const title = new URL(req.url).pathname === "/signed-out" ? "Goodbye" : "App";
        return new Response(`<!doctype html><title>${title}</title><h1>${title}</h1>`, {
          headers: { "content-type": "text/html" },
        });
      });
      const p = await loginProject();
      await p.api.projects.updateProject(p.project.id, {
        name: p.project.name,
        redirect_uris: [`${app}/callback`],
        post_logout_redirect_uris: [`${app}/signed-out`],
      });
      const second = await p.api.clients.createClient(p.project.id, { name: "second app" });
      const base = (await service()).url;
      const verifiers = new Map<string, string>();
      const authorize = async (clientId: string, extra: Record<string, string> = {}) => {
        const verifier = newVerifier();
        const state = crypto.randomUUID();
        verifiers.set(state, verifier);
        return `${base}/authorize?${new URLSearchParams({
          client_id: clientId,
          redirect_uri: `${app}/callback`,
          response_type: "code",
          code_challenge: await challengeOf(verifier),
          code_challenge_method: "S256",
          scope: "openid profile",
          nonce: "n1",
          state,
          ...extra,
        })}`;
      };
      const redeem = async (url: string, clientId: string) => {
        const callback = new URL(url);
        const res = await exchangeCode(
          clientId,
          callback.searchParams.get("code")!,
          verifiers.get(callback.searchParams.get("state")!)!,
          `${app}/callback`,
        );
        assert.equal(res.status, 200);
        return await res.json();
      };

      /** Fills and sends the login form, and waits for the application's callback. */
      const submitLogin = async (page: Page) => {
        await page.getByLabel("Email").fill(p.email);
        await page.getByLabel("Password").fill(p.password);
        await Promise.all([
          page.waitForURL((u) => u.href.startsWith(`${app}/callback`)),
          page.getByRole("button", { name: "Sign in", exact: true }).click(),
        ]);
      };

      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport });
        // The first application: the form.
        await page.goto(await authorize(p.clientId));
        assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
        await submitLogin(page);
        const first = await redeem(page.url(), p.clientId);
        assert.ok(first.id_token);

        // The second application: straight back with a code, no form.
        await page.goto(await authorize(second.id));
        assert.ok(page.url().startsWith(`${app}/callback`), page.url());
        assert.equal(await page.textContent("h1"), "App");
        const other = await redeem(page.url(), second.id);

        // prompt=login shows the form even so.
        await page.goto(await authorize(second.id, { prompt: "login" }));
        assert.match(await page.title(), /Sign in/);
        await page.getByLabel("Password").waitFor();

        // Logout: to the registered page; the refresh tokens of both applications are revoked.
        await page.goto(`${base}/logout?${new URLSearchParams({
          id_token_hint: first.id_token,
          post_logout_redirect_uri: `${app}/signed-out`,
          state: "bye",
        })}`);
        assert.equal(page.url(), `${app}/signed-out?state=bye`);
        assert.equal(
          (await refreshStatus(p.clientId, first.refresh_token)).error_code,
          "invalid_refresh_token",
        );
        assert.equal(
          (await refreshStatus(second.id, other.refresh_token)).error_code,
          "invalid_refresh_token",
        );

        // prompt=none now: back to the application with login_required.
        await page.goto(await authorize(second.id, { prompt: "none" }));
        assert.equal(new URL(page.url()).searchParams.get("error"), "login_required");

        // And the form again without prompt, fully in view.
        await page.goto(await authorize(p.clientId));
        const box = (await page.getByRole("button", { name: "Sign in", exact: true }).boundingBox())!;
        assert.ok(box.x >= 0 && box.x + box.width <= viewport.width, JSON.stringify(box));

        // Signed in again, a logout without an ID token asks first; confirmed, it goes to the registered page.
        await submitLogin(page);
        const again = await redeem(page.url(), p.clientId);
        await page.goto(`${base}/logout?${new URLSearchParams({
          client_id: p.clientId,
          post_logout_redirect_uri: `${app}/signed-out`,
          state: "asked",
        })}`);
        assert.equal(await page.textContent("h1"), "Sign out?");
        assert.equal(await currentUserStatus(again.access_token), 200);
        const signOut = page.getByRole("button", { name: "Sign out" });
        const button = (await signOut.boundingBox())!;
        assert.ok(button.x >= 0 && button.x + button.width <= viewport.width, JSON.stringify(button));
        await Promise.all([page.waitForURL(`${app}/signed-out?state=asked`), signOut.click()]);
        assert.equal(await currentUserStatus(again.access_token), 401);

        // The plain sign-out page, without a redirect URI.
        await page.goto(`${base}/logout`);
        assert.equal(await page.textContent("h1"), "Signed out");
        assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
      } finally {
        await browser.close();
        await server.shutdown();
      }
    },
    { ignore: !hasChromium },
  );
}
