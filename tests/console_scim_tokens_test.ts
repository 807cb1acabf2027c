/**
 * SCIM tokens in the console, in Chromium on the shared test service: an operator makes one on a client's page
 * (shown once, then only said to have been shown), the directory's request with it is answered, a bad expiry is
 * refused next to its field, and revoking it refuses the next request.
 */
import assert from "node:assert/strict";
import { baseUrl, newProject, permissionIds, test } from "./helpers.ts";
import { hasChromium, launch, sharedOperator, signIn } from "./console_support.ts";

test(
  "console: a client's SCIM token is made (shown once), works at the SCIM endpoint, and is revoked",
  async () => {
    const url = await baseUrl();
    const p = await newProject();
    const ids = await permissionIds(p);
    const client = await p.api.clients.createClient(p.project.id, {
      name: "Entra ID provisioning",
      permission_ids: [ids["scim:read"], ids["scim:write"]],
    });
    const scimUsers = (token: string) =>
      fetch(`${url}/scim/v2/${p.project.id}/Users`, { headers: { authorization: `Bearer ${token}` } });
    const operator = await sharedOperator();
    const browser = await launch();
    const violations: string[] = [];
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      ctx.setDefaultTimeout(15_000);
      const page = await ctx.newPage();
      page.on("console", (m) => {
        if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
      });
      await page.goto(`${url}/console`);
      await page.getByRole("button", { name: "Continue to sign-in" }).click();
      await signIn(page, operator.email, operator.password);
      await page.waitForURL(/\/console\/projects$/);
      const clientPage = `${url}/console/projects/${p.project.id}/clients/${client.id}`;
      await page.goto(clientPage);
      assert.match(await page.locator("#scim-tokens").innerText(), /This client has no SCIM token/);

      // A bad expiry: refused next to its field, nothing made.
      await page.getByLabel("Expires in days").fill("0");
      await page.getByRole("button", { name: "Make a SCIM token" }).click();
      assert.ok(await page.locator("#f-scim_expires_in_days-error").isVisible());
      assert.equal((await p.api.clients.listScimTokens(p.project.id, client.id)).data.length, 0);

      await page.getByLabel("Token description").fill("Entra ID");
      await page.getByLabel("Expires in days").fill("365");
      await page.getByRole("button", { name: "Make a SCIM token" }).click();
      await page.waitForURL(/scim_once=/);
      const token = (await page.locator("#scim-token").textContent())!;
      assert.match(token, /^scim_[A-Za-z0-9_-]{43}$/);
      const answered = await scimUsers(token);
      assert.equal(answered.status, 200);
      await answered.body?.cancel();

      // Shown once: a reload says so and shows no token; the list has it, used.
      await page.reload();
      assert.equal(await page.locator("#scim-token").count(), 0);
      assert.match((await page.locator("#scim-token-shown").textContent())!, /shown once/);
      const row = page.locator("#scim-tokens tbody tr");
      assert.equal(await row.count(), 1);
      assert.match(await row.innerText(), /Entra ID/);
      assert.match(await row.locator("td").nth(3).innerText(), /UTC$/, "last used: just now");
      assert.match(await row.locator("td").nth(2).innerText(), /UTC$/, "expires in a year");

      await page.getByRole("button", { name: "Revoke Entra ID" }).click();
      await page.waitForURL(/done=1/);
      assert.match(await page.locator("#scim-tokens").innerText(), /This client has no SCIM token/);
      const refused = await scimUsers(token);
      assert.equal(refused.status, 401);
      await refused.body?.cancel();
      assert.deepEqual(violations, []);
      await ctx.close();
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);
