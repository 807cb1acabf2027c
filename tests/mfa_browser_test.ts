/**
 * The second step of a login in a real browser (Debian's Chromium through playwright-core): the password, then
 * the authenticator's code computed from the enrolled key; a wrong code shows the field's error; the ID token
 * says `amr` and `acr`. At desktop and phone width (390 px), with no CSP violation. Skipped without Chromium.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import {
  Api,
  challengeOf,
  exchangeCode,
  freePort,
  loginProject,
  newVerifier,
  REDIRECT_URI,
  service,
  test,
} from "./helpers.ts";
import { payloadOf } from "./oidc_support.ts";
import { enrolTotp, totp } from "./mfa_support.ts";

for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
  test(`in Chromium at ${viewport.width}px: the authenticator's code after the password`, async () => {
    const port = freePort();
    const app = `http://127.0.0.1:${port}`;
    const server = Deno.serve(
      { hostname: "127.0.0.1", port, onListen: () => {} },
      () =>
        new Response("<!doctype html><title>App</title><h1>App</h1>", {
          headers: { "content-type": "text/html" },
        }),
    );
    const p = await loginProject();
    await p.api.projects.updateProject(p.project.id, {
      name: p.project.name,
      redirect_uris: [`${app}/callback`, REDIRECT_URI],
    });
    const { secret } = await enrolTotp(p);
    const base = (await service()).url;
    const verifier = newVerifier();
    const url = `${base}/authorize?${new URLSearchParams({
      client_id: p.clientId,
      redirect_uri: `${app}/callback`,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      scope: "openid",
      nonce: "n1",
      state: "s1",
    })}`;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport });
      const violations: string[] = [];
      page.on("console", (m) => {
        if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
      });
      await page.goto(url);
      await page.getByLabel("Email").fill(p.email);
      await page.getByLabel("Password").fill(p.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByRole("heading", { name: "Verify it is you" }).waitFor();
      const field = page.getByLabel("Authentication code");
      assert.equal(await page.evaluate("document.activeElement.id"), "code", "the code field has the focus");
      assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
      const good = await totp(secret, Date.now() + 30_000);
      await field.fill(good === "000000" ? "111111" : "000000");
      await page.getByRole("button", { name: "Verify" }).click();
      const error = page.locator("#code-error");
      await error.waitFor();
      assert.match((await error.textContent())!, /not right/);
      assert.equal(await page.getByLabel("Authentication code").getAttribute("aria-invalid"), "true");
      const box = (await page.getByRole("button", { name: "Verify" }).boundingBox())!;
      assert.ok(box.x >= 0 && box.x + box.width <= viewport.width, JSON.stringify(box));
      await page.getByLabel("Authentication code").fill(good);
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(`${app}/callback`)),
        page.getByRole("button", { name: "Verify" }).click(),
      ]);
      const callback = new URL(page.url());
      assert.equal(callback.searchParams.get("state"), "s1");
      const res = await exchangeCode(
        p.clientId,
        callback.searchParams.get("code")!,
        verifier,
        `${app}/callback`,
      );
      assert.equal(res.status, 200);
      const idToken = payloadOf((await res.json()).id_token);
      assert.deepEqual([idToken.amr, idToken.acr], [["pwd", "otp", "mfa"], "2"]);
      assert.deepEqual(violations, []);
    } finally {
      await browser.close();
      await server.shutdown();
    }
  }, { ignore: !hasChromium });
}

test("in Chromium at 390px: the account page enrols an authenticator from its QR page", async () => {
  const port = freePort();
  const app = `http://127.0.0.1:${port}`;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port, onListen: () => {} },
    () =>
      new Response("<!doctype html><title>App</title><h1>App</h1>", {
        headers: { "content-type": "text/html" },
      }),
  );
  const p = await loginProject();
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    redirect_uris: [`${app}/callback`],
  });
  const base = (await service()).url;
  const verifier = newVerifier();
  const url = `${base}/authorize?${new URLSearchParams({
    client_id: p.clientId,
    redirect_uri: `${app}/callback`,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    scope: "openid",
  })}`;
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    const violations: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(url);
    await page.getByLabel("Email").fill(p.email);
    await page.getByLabel("Password").fill(p.password);
    await Promise.all([
      page.waitForURL((u) => u.href.startsWith(`${app}/callback`)),
      page.getByRole("button", { name: "Sign in", exact: true }).click(),
    ]);
    await page.goto(`${base}/account`);
    await page.getByRole("heading", { name: "Your account" }).waitFor();
    assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
    await page.locator("#enrol-current").fill(p.password);
    await page.getByRole("button", { name: "Set up an authenticator app" }).click();
    await page.getByRole("heading", { name: "Set up an authenticator app" }).waitFor();
    const qr = (await page.locator("#qr").boundingBox())!;
    assert.ok(qr.width >= 200 && qr.x >= 0 && qr.x + qr.width <= 390, JSON.stringify(qr));
    assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
    const key = (await page.locator("#secret").textContent())!.replace(/\s/g, "");
    await page.getByLabel("The 6-digit code the app shows").fill(await totp(key));
    await page.getByRole("button", { name: "Turn on two-step verification" }).click();
    await page.getByRole("heading", { name: "Your recovery codes" }).waitFor();
    assert.equal(await page.locator("#recovery-codes li").count(), 10);
    await page.goto(`${base}/account`);
    assert.match((await page.locator("#totp-status").textContent())!, /An authenticator app is set up/);
    assert.deepEqual(violations, []);
  } finally {
    await browser.close();
    await server.shutdown();
  }
}, { ignore: !hasChromium });

test(
  "in Chromium at 390px: a project that requires a factor has the user enrol right after the password",
  async () => {
    const port = freePort();
    const app = `http://127.0.0.1:${port}`;
    const server = Deno.serve(
      { hostname: "127.0.0.1", port, onListen: () => {} },
      () =>
        new Response("<!doctype html><title>App</title><h1>App</h1>", {
          headers: { "content-type": "text/html" },
        }),
    );
    const p = await loginProject();
    await p.api.projects.updateProject(p.project.id, {
      name: p.project.name,
      redirect_uris: [`${app}/callback`],
      mfa: Api.UpdateProjectRequest.MfaEnum.Required,
    });
    const base = (await service()).url;
    const verifier = newVerifier();
    const url = `${base}/authorize?${new URLSearchParams({
      client_id: p.clientId,
      redirect_uri: `${app}/callback`,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
      scope: "openid",
    })}`;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      const violations: string[] = [];
      page.on("console", (m) => {
        if (/Content Security Policy/i.test(m.text())) {
          violations.push(m.text());
        }
      });
      await page.goto(url);
      await page.getByLabel("Email").fill(p.email);
      await page.getByLabel("Password").fill(p.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByRole("heading", { name: "Set up two-step verification" }).waitFor();
      const qr = (await page.locator("#qr").boundingBox())!;
      assert.ok(qr.width >= 200 && qr.x >= 0 && qr.x + qr.width <= 390, JSON.stringify(qr));
      assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
      const key = (await page.locator("#secret").textContent())!.replace(/\s/g, "");
      await page.getByLabel("The 6-digit code the app shows").fill(await totp(key));
      await page.getByRole("button", { name: "Turn on and continue" }).click();
      await page.getByRole("heading", { name: "Your recovery codes" }).waitFor();
      assert.equal(await page.locator("#recovery-codes li").count(), 10);
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(`${app}/callback`)),
        page.getByRole("button", { name: "I have saved them: continue" }).click(),
      ]);
      const callback = new URL(page.url());
      const res = await exchangeCode(
        p.clientId,
        callback.searchParams.get("code")!,
        verifier,
        `${app}/callback`,
      );
      assert.equal(res.status, 200);
      const idToken = payloadOf((await res.json()).id_token);
      assert.deepEqual([idToken.amr, idToken.acr], [["pwd", "otp", "mfa"], "2"]);
      assert.deepEqual(violations, []);
    } finally {
      await browser.close();
      await server.shutdown();
    }
  },
  { ignore: !hasChromium },
);
