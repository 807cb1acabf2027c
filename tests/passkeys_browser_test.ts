/**
 * Passkeys in Chromium with the CDP WebAuthn virtual authenticator (CTAP2, internal, resident keys, user
 * verification): registration on the account page, sign-in without a password, a passkey as the second step,
 * and a cloned authenticator (its counter set back) refused and audited. Skipped without Chromium.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import {
  challengeOf,
  freePort,
  isolatedDatabase,
  newVerifier,
  startWith,
  systemTokenAt,
  test,
} from "./helpers.ts";
import { payloadOf } from "./oidc_support.ts";

test(
  "in Chromium at 390px: a passkey from the account page signs in without a password, serves as second step, and a cloned one is refused",
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
    // WebAuthn needs a domain name as the relying party id (an IP address is refused): a service of its own at
    // http://localhost:…, on a database of its own.
    const db = await isolatedDatabase();
    const servicePort = freePort();
    const svc = await startWith({
      ...db.env,
      PORT: String(servicePort),
      PUBLIC_URL: `http://localhost:${servicePort}`,
    });
    const base = svc.url.replace("127.0.0.1", "localhost");
    const call = async (token: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      assert.ok(res.ok, text);
      return text ? JSON.parse(text) : undefined;
    };
    const system = await systemTokenAt(base);
    const project = await call(system, "POST", "/api/v1/projects", {
      name: "Passkeys",
      redirect_uris: [`${app}/callback`],
    });
    const p = {
      clientId: project.admin_client.client_id,
      email: "ada@example.com",
      password: "correct horse battery",
    };
    const user = await call(system, "POST", `/api/v1/projects/${project.id}/users`, {
      display_name: "Ada",
      email: p.email,
      password: p.password,
    });
    const authorize = async () => {
      const verifier = newVerifier();
      const url = `${base}/authorize?${new URLSearchParams({
        client_id: p.clientId,
        redirect_uri: `${app}/callback`,
        response_type: "code",
        code_challenge: await challengeOf(verifier),
        code_challenge_method: "S256",
        scope: "openid",
        prompt: "login",
      })}`;
      return { url, verifier };
    };
    const redeem = async (pageUrl: string, verifier: string) => {
      const code = new URL(pageUrl).searchParams.get("code")!;
      const res = await fetch(`${base}/api/v1/tokens`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          client_id: p.clientId,
          code,
          redirect_uri: `${app}/callback`,
          code_verifier: verifier,
        }).toString(),
      });
      assert.equal(res.status, 200);
      return payloadOf((await res.json()).id_token);
    };
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      const page = await context.newPage();
      const violations: string[] = [];
      page.on("console", (m) => {
        if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
      });
      const cdp = await context.newCDPSession(page);
      await cdp.send("WebAuthn.enable");
      const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
        options: {
          protocol: "ctap2",
          transport: "internal",
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      });

      // Signed in with the password, the account page registers a passkey.
      const first = await authorize();
      await page.goto(first.url);
      await page.getByLabel("Email").fill(p.email);
      await page.getByLabel("Password").fill(p.password);
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(`${app}/callback`)),
        page.getByRole("button", { name: "Sign in", exact: true }).click(),
      ]);
      await page.goto(`${base}/account`);
      await page.getByLabel("Name of a new passkey").fill("Test key");
      await page.locator("#passkey-password").fill(p.password);
      await page.getByRole("button", { name: "Add a passkey" }).click();
      await page.locator("#notice").waitFor();
      assert.match((await page.locator("#notice").textContent())!, /Your passkey was added/);
      assert.match((await page.locator("#passkeys").textContent())!, /Test key/);
      const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
      assert.equal(credentials.length, 1);
      assert.equal(credentials[0].isResidentCredential, true);

      // Without the password: the passkey alone.
      await context.clearCookies();
      const second = await authorize();
      await page.goto(second.url);
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(`${app}/callback`)),
        page.getByRole("button", { name: "Sign in with a passkey" }).click(),
      ]);
      const passwordless = await redeem(page.url(), second.verifier);
      assert.equal(passwordless.sub, user.id);
      assert.deepEqual([passwordless.amr, passwordless.acr], [["hwk", "mfa"], "2"]);

      // With the password, the passkey is the second step.
      await context.clearCookies();
      const third = await authorize();
      await page.goto(third.url);
      await page.getByLabel("Email").fill(p.email);
      await page.getByLabel("Password").fill(p.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByRole("heading", { name: "Verify it is you" }).waitFor();
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(`${app}/callback`)),
        page.getByRole("button", { name: "Use a passkey" }).click(),
      ]);
      const stepped = await redeem(page.url(), third.verifier);
      assert.deepEqual([stepped.amr, stepped.acr], [["pwd", "hwk", "mfa"], "2"]);

      // A clone: the same key with its counter set back to 0 is refused, and audited.
      const [cred] = (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
      assert.ok(cred.signCount >= 2, `signCount ${cred.signCount}`);
      await cdp.send("WebAuthn.removeCredential", { authenticatorId, credentialId: cred.credentialId });
      await cdp.send("WebAuthn.addCredential", { authenticatorId, credential: { ...cred, signCount: 0 } });
      await context.clearCookies();
      const fourth = await authorize();
      await page.goto(fourth.url);
      await page.getByRole("button", { name: "Sign in with a passkey" }).click();
      await page.locator("#passkey-error").waitFor();
      assert.match((await page.locator("#passkey-error").textContent())!, /refused/);
      assert.ok(page.url().startsWith(base));
      const events = await call(system, "GET", `/api/v1/projects/${project.id}/audit-events?type=passkey.*`);
      const types = events.data.map((e: { type: string; details: { reason?: string } }) =>
        e.type === "passkey.refused" ? `refused:${e.details.reason}` : e.type
      );
      assert.deepEqual(types, ["refused:counter_went_back", "passkey.registered"]);
      assert.deepEqual(violations, []);
    } finally {
      await browser.close();
      await server.shutdown();
      await svc.close();
      await db.drop();
    }
  },
  { ignore: !hasChromium },
);
