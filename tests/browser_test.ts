/**
 * The login in a real browser: Debian's Chromium driven by playwright-core. It fills the form by keyboard,
 * follows the redirect to a local listener standing in for the application, and exchanges the code. Without
 * /usr/bin/chromium (`apt-get install chromium`; CI installs it) the test is skipped.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import { challengeOf, exchangeCode, freePort, newProject, newVerifier, service, test } from "./helpers.ts";

test(
  "a real browser logs in, is redirected to the application with a code, and the code is exchanged",
  async () => {
    // The application: a listener that receives the redirect.
    const port = freePort();
    const callback = `http://127.0.0.1:${port}/callback`;
    const received: URL[] = [];
    const app = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, (req) => {
      const url = new URL(req.url);
      if (url.pathname === "/callback") received.push(url); // not the browser's /favicon.ico
      return new Response("<!doctype html><title>App</title><h1>Signed in</h1>", {
        headers: { "content-type": "text/html" },
      });
    });
    const p = await newProject({ name: "Browser Shop", redirect_uris: [callback] });
    await p.api.users.createUser(p.project.id, {
      display_name: "Ada",
      email: "ada@example.com",
      password: "correct horse",
    });
    const verifier = newVerifier();
    const authorize = `${(await service()).url}/authorize?${new URLSearchParams({
      client_id: p.clientId,
      redirect_uri: callback,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      state: "xyz",
    })}`;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const violations: string[] = [];
      page.on(
        "console",
        (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()),
      );
      await page.goto(authorize);
      assert.match(await page.title(), /Browser Shop/);
      // A wrong password first: the page comes back with the generic message, announced as an alert.
      await page.getByLabel("Email").fill("ada@example.com");
      await page.getByLabel("Password").fill("wrong password");
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      assert.equal((await page.getByRole("alert").textContent())?.trim(), "Invalid email or password.");
      // Then by keyboard only: the email field keeps its value, Tab to the password, Enter submits.
      assert.equal(await page.getByLabel("Email").inputValue(), "ada@example.com");
      await page.getByLabel("Email").focus();
      await page.keyboard.press("Tab");
      await page.keyboard.type("correct horse");
      await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.keyboard.press("Enter")]);
      assert.equal(await page.textContent("h1"), "Signed in");
      assert.deepEqual(violations, [], `no CSP violation on the way: ${violations.join(" | ")}`);
    } finally {
      await browser.close();
      await app.shutdown();
    }
    assert.equal(received.length, 1);
    const code = received[0].searchParams.get("code")!;
    assert.equal(received[0].searchParams.get("state"), "xyz");
    assert.equal(received[0].searchParams.get("iss"), (await service()).url);
    const tokens = await exchangeCode(p.clientId, code, verifier, callback);
    assert.equal(tokens.status, 200);
    assert.ok((await tokens.json()).refresh_token);
  },
  { ignore: !hasChromium },
);

test("the login page is usable on a phone-sized screen", async () => {
  const p = await newProject({ name: "Small Screen", redirect_uris: ["http://127.0.0.1:9/cb"] });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 360, height: 640 } });
    await page.goto(`${(await service()).url}/authorize?${new URLSearchParams({
      client_id: p.clientId,
      redirect_uri: "http://127.0.0.1:9/cb",
      response_type: "code",
      code_challenge: await challengeOf(newVerifier()),
      code_challenge_method: "S256",
    })}`);
    // Nothing overflows sideways, and the fields and the button are fully in view.
    // The expression runs in the page, as a string: Deno's types know no DOM.
    assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
    for (
      const locator of [
        page.getByLabel("Email"),
        page.getByLabel("Password"),
        page.getByRole("button", { name: "Sign in", exact: true }),
      ]
    ) {
      const box = (await locator.boundingBox())!;
      assert.ok(box.x >= 0 && box.x + box.width <= 360, JSON.stringify(box));
    }
    const shot = Deno.env.get("LOGIN_SCREENSHOT");
    if (shot) await page.screenshot({ path: shot, fullPage: true });
  } finally {
    await browser.close();
  }
}, { ignore: !hasChromium });
