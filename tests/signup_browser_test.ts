/**
 * Sign-up in a real browser (Chromium through playwright-core), against a service whose mails go to a real SMTP
 * server of the test: "Create an account" on the login page, errors under their fields, a domain-limited project
 * that requires verified addresses (the confirmation mail's link, then the first sign-in lands on the
 * application), the same answer for a registered address, and an open project whose new user lands on the
 * application at once. No CSP violation, and the pages fit 390 px. Without /usr/bin/chromium they are skipped.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import { challengeOf, freePort, newVerifier, test } from "./helpers.ts";
import { api, type MailProject, mailService, projectAt, userAt } from "./mail_support.ts";
import { linkIn } from "./smtp_catcher.ts";

const launch = () => launchChromium();

const PASSWORD = "correct horse battery";

/** The code exchange for the application's own callback; the access token. */
async function exchange(url: string, clientId: string, code: string, verifier: string, callback: string) {
  const res = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: clientId,
      code,
      redirect_uri: callback,
      code_verifier: verifier,
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).access_token as string;
}

/** An application at a free port that records the callbacks it receives. */
function application() {
  const port = freePort();
  const received: URL[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/callback") received.push(url);
    return new Response("<!doctype html><title>App</title><h1>Signed in</h1>", {
      headers: { "content-type": "text/html" },
    });
  });
  return { callback: `http://127.0.0.1:${port}/callback`, received, server };
}

async function authorizeUrl(url: string, p: MailProject, callback: string) {
  const verifier = newVerifier();
  const href = `${url}/authorize?${new URLSearchParams({
    client_id: p.clientId,
    redirect_uri: callback,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    state: "abc",
  })}`;
  return { href, verifier };
}

test("a real browser signs up with a mailed confirmation, enumeration-safe, then signs in", async () => {
  const s = await mailService();
  const app = application();
  const browser = await launch();
  try {
    const p = await projectAt(s.url);
    const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
      name: p.name,
      redirect_uris: [app.callback],
      signup: { domains: ["example.com"] },
      require_verified_email: true,
    });
    assert.equal(put.status, 200, await put.clone().text());
    const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
    const violations: string[] = [];
    page.on(
      "console",
      (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()),
    );
    const fits = async () => {
      assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), page.url());
    };
    const start = await authorizeUrl(s.url, p, app.callback);
    await page.goto(start.href);
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.waitForURL(/\/authorize\/signup/);
    assert.equal(await page.textContent("h1"), "Create an account");
    await fits();
    // The honeypot is off the screen and out of the tab order.
    const box = await page.locator("#website").boundingBox();
    assert.ok(box && box.x + box.width <= 0, "the honeypot is off the screen");
    const fill = async (email: string, password: string, repeat = password) => {
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Name").fill("Ann Example");
      await page.getByLabel("Password", { exact: true }).fill(password);
      await page.getByLabel("Repeat the password").fill(repeat);
      await page.getByRole("button", { name: "Create the account" }).click();
    };
    // A short password, then an address of another domain: the errors under their fields.
    await fill("ann@example.com", "short");
    assert.match((await page.locator("#password-error").textContent())!, /at least 8 characters/);
    await fill("ann@example.org", PASSWORD);
    assert.match((await page.locator("#email-error").textContent())!, /cannot be created with addresses/);
    const email = `u-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await fill(email, PASSWORD);
    assert.equal(await page.textContent("h1"), "Check your mail");
    const answerForNew = (await page.locator("main").innerText()).replace(email, "ADDRESS");
    await fits();
    // A registered address: the same page; its owner gets a mail instead.
    const taken = `u-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await userAt(p, { email: taken, password: "the owner's password", email_verified: true });
    const again = await authorizeUrl(s.url, p, app.callback);
    await page.goto(again.href);
    await page.getByRole("link", { name: "Create an account" }).click();
    await fill(taken, PASSWORD);
    assert.equal((await page.locator("main").innerText()).replace(taken, "ADDRESS"), answerForNew);
    assert.match((await s.catcher.mailTo(taken)).subject, /Someone tried to create an account/);
    // The confirmation mail, through the SMTP server; the button confirms.
    const link = linkIn(await s.catcher.mailTo(email));
    await page.goto(link);
    await page.getByRole("button", { name: /Confirm/ }).click();
    assert.equal(await page.textContent("h1"), "Email address confirmed");
    // Now the password signs in and the browser lands on the application with a code.
    const login = await authorizeUrl(s.url, p, app.callback);
    await page.goto(login.href);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(/\/callback\?/);
    const code = app.received.at(-1)!.searchParams.get("code")!;
    assert.ok(await exchange(s.url, p.clientId, code, login.verifier, app.callback));
    assert.deepEqual(violations, []);
  } finally {
    await browser.close();
    await app.server.shutdown();
    await s.close();
  }
}, { ignore: !hasChromium });

test("a real browser signs up in an open project and lands on the application", async () => {
  const s = await mailService();
  const app = application();
  const browser = await launch();
  try {
    const p = await projectAt(s.url);
    const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
      name: p.name,
      redirect_uris: [app.callback],
      signup: "open",
    });
    assert.equal(put.status, 200, await put.clone().text());
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const start = await authorizeUrl(s.url, p, app.callback);
    await page.goto(start.href);
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Email").fill(`u-${crypto.randomUUID().slice(0, 8)}@anywhere.test`);
    await page.getByLabel("Name").fill("Bo");
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByLabel("Repeat the password").fill(PASSWORD);
    await page.getByRole("button", { name: "Create the account" }).click();
    await page.waitForURL(/\/callback\?/);
    const code = app.received.at(-1)!.searchParams.get("code")!;
    assert.ok(await exchange(s.url, p.clientId, code, start.verifier, app.callback));
  } finally {
    await browser.close();
    await app.server.shutdown();
    await s.close();
  }
}, { ignore: !hasChromium });
