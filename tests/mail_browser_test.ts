/**
 * Password reset in a real browser (Chromium through playwright-core), against a service whose mails go to a
 * real SMTP server of the test: "Forgot your password?" on the login page, the mail's link, a weak then a good
 * password, and the browser lands on the application with a code. Also an expired link (its expiry moved into the
 * past in the database, so that no test waits for a clock) and the pages at 390 px. Without /usr/bin/chromium the browser tests are skipped.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import { challengeOf, freePort, newVerifier, test } from "./helpers.ts";
import { exchangeCodeAt } from "./mail_flows.ts";
import { api, mailService, newEmail, projectAt, userAt } from "./mail_support.ts";
import { isNotice, linkIn } from "./smtp_catcher.ts";
import { launch as launchConsole, signIn } from "./console_support.ts";

const launch = () => launchChromium();

test("a real browser resets a forgotten password and continues to the application", async () => {
  const s = await mailService();
  const port = freePort();
  const callback = `http://127.0.0.1:${port}/callback`;
  const received: URL[] = [];
  const app = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/callback") received.push(url);
    return new Response("<!doctype html><title>App</title><h1>Signed in</h1>", {
      headers: { "content-type": "text/html" },
    });
  });
  const browser = await launch();
  try {
    const p = await projectAt(s.url);
    const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
      name: p.name,
      redirect_uris: [callback],
    });
    assert.equal(put.status, 200, await put.clone().text());
    const email = newEmail();
    await userAt(p, { email, password: "the old password" });
    const verifier = newVerifier();
    const authorize = `${s.url}/authorize?${new URLSearchParams({
      client_id: p.clientId,
      redirect_uri: callback,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      state: "abc",
    })}`;
    const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
    const violations: string[] = [];
    page.on(
      "console",
      (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()),
    );
    const fits = async () => {
      assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), page.url());
    };
    await page.goto(authorize);
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    await page.waitForURL(/\/authorize\/reset/);
    await fits();
    // A malformed address: the error under the field.
    await page.getByLabel("Email").fill("not an address");
    await page.getByRole("button", { name: "Send the link" }).click();
    assert.match((await page.locator("#email-error").textContent())!, /Enter the email address/);
    await page.getByLabel("Email").fill(email);
    await page.getByRole("button", { name: "Send the link" }).click();
    assert.equal(await page.textContent("h1"), "Check your mail");
    await fits();

    const link = linkIn(await s.catcher.mailTo(email));
    await page.goto(link);
    assert.equal(await page.textContent("h1"), "Choose a new password");
    await fits();
    await page.getByLabel("New password").fill("short");
    await page.getByRole("button", { name: "Set the new password" }).click();
    assert.match((await page.locator("#password-error").textContent())!, /at least 8 characters/);
    await page.getByLabel("New password").fill("a brand new password");
    await Promise.all([
      page.waitForURL((u) => u.href.startsWith(callback)),
      page.getByRole("button", { name: "Set the new password" }).click(),
    ]);
    assert.equal(await page.textContent("h1"), "Signed in");
    assert.deepEqual(violations, [], violations.join(" | "));

    assert.equal(received.length, 1);
    assert.equal(received[0].searchParams.get("state"), "abc");
    const res = await fetch(`${s.url}/api/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        client_id: p.clientId,
        code: received[0].searchParams.get("code")!,
        redirect_uri: callback,
        code_verifier: verifier,
      }).toString(),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();

    // The same link again: a page that says so, with a way to a new one.
    await page.goto(link);
    assert.equal(await page.textContent("h1"), "This link does not work");
    await fits();
    await page.getByRole("link", { name: "Ask for a new link" }).click();
    assert.equal(await page.textContent("h1"), "Reset your password");

    // An expired link: the new one's expiry moved into the past.
    const sent = await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users?search=${email}`);
    const userId = (await sent.json()).data[0].id;
    const again = await api(
      s.url,
      p.token,
      "POST",
      `/api/v1/projects/${p.projectId}/users/${userId}/password-reset`,
    );
    assert.equal(again.status, 202);
    await again.body?.cancel();
    // Reset mails only: the password set above also mailed a security notice, which has no link.
    const resets = (m: { to: string[]; subject: string }) => m.to.includes(email) && !isNotice(m);
    await s.catcher.waitFor((m) => resets(m) && linkIn(m) !== link);
    const mails = s.catcher.mails.filter(resets);
    const expiring = linkIn(mails[mails.length - 1]);
    await s.svc.db.sql`
      update account_links set expires_at = now() - interval '1 second'
      where project_id = ${p.projectId} and user_id = ${userId} and purpose = 'password_reset' and used_at is null`;
    await page.goto(expiring);
    assert.equal(await page.textContent("h1"), "This link does not work");
  } finally {
    await browser.close();
    await app.shutdown();
    await s.close();
  }
}, { ignore: !hasChromium });

test("the console shows email_verified and mails a user a reset link", async () => {
  const operator = { email: "operator@example.com", password: "operator password 1" };
  const s = await mailService({
    BOOTSTRAP_ADMIN_EMAIL: operator.email,
    BOOTSTRAP_ADMIN_PASSWORD: operator.password,
  });
  const browser = await launchConsole();
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    const user = await userAt(p, { email, password: "a password 123" });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(15_000);
    await page.goto(`${s.url}/console`);
    await page.getByRole("button", { name: "Continue to sign-in" }).click();
    await signIn(page, operator.email, operator.password);
    await page.waitForURL(/\/console\/projects$/);
    await page.goto(`${s.url}/console/projects/${p.projectId}/users/${user.id}`);
    assert.match((await page.locator("dl.facts").textContent())!, /not verified/);
    await page.getByRole("button", { name: "Mail a password reset link" }).click();
    assert.match((await page.getByRole("status").textContent())!, /password reset link is on its way/);
    assert.match((await s.catcher.mailTo(email)).subject, /Reset your password/);
  } finally {
    await browser.close();
    await s.close();
  }
}, { ignore: !hasChromium });

// Kept beside the other flows' helpers.
void exchangeCodeAt;
