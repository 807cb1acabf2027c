/**
 * The console's settings pages of a project in Chromium at desktop (1280 px) and phone (390 px) width, on the
 * shared test service: sign-in settings (second factor, verified addresses, sign-up), each change seen through the
 * admin API, its field errors shown; branding (its fields, a logo uploaded, shown and removed); and a read-only operator (no projects:update) sees the form disabled.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { SYSTEM_PROJECT_ID } from "../openapi/projects.ts";
import { baseUrl, projectPermissions, sdk, systemToken, test } from "./helpers.ts";
import { hasChromium, launch, sharedOperator, signIn } from "./console_support.ts";
import type { Browser, Page } from "./deps.ts";

const WIDTHS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

/** The admin API of the shared service as the system admin client. */
async function adminApi() {
  const url = await baseUrl();
  const token = await systemToken();
  // deno-lint-ignore no-explicit-any
  return async (method: string, path: string, body?: unknown): Promise<any> => {
    const answer = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await answer.text();
    assert.ok(answer.ok, `${method} ${path}: ${answer.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
}

/** A system-project user whose role holds only these permissions. */
async function operatorWith(codes: string[]) {
  const admin = await sdk(await systemToken());
  const { ids } = await projectPermissions(admin, SYSTEM_PROJECT_ID);
  const tag = crypto.randomUUID().slice(0, 8);
  const role = await admin.roles.createRole(SYSTEM_PROJECT_ID, {
    code: `reader_${tag}`,
    name: `Reader ${tag}`,
    permission_ids: codes.map((c) => ids[c]),
  });
  const email = `reader-${tag}@example.com`;
  const password = "reader password 2";
  await admin.users.createUser(SYSTEM_PROJECT_ID, {
    display_name: "Reader",
    email,
    password,
    role_id: role.id,
  });
  return { email, password };
}

/** A browser page at a width, signed in to the console; CSP violations and sideways overflow collected. */
async function signedInPage(
  browser: Browser,
  viewport: { width: number; height: number },
  who: { email: string; password: string },
  violations: string[],
) {
  const url = await baseUrl();
  const ctx = await browser.newContext({ viewport });
  ctx.setDefaultTimeout(15_000);
  const page = await ctx.newPage();
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  await page.goto(`${url}/console`);
  await page.getByRole("button", { name: "Continue to sign-in" }).click();
  await signIn(page, who.email, who.password);
  await page.waitForURL(/\/console\/projects$/);
  return page;
}

async function noOverflow(page: Page, what: string) {
  const wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth");
  assert.ok((wide as number) <= 0, `${what}: ${wide} px too wide`);
}

test("sign-in settings in the console: second factor, verified addresses, sign-up", async () => {
  const url = await baseUrl();
  const admin = await adminApi();
  const operator = await sharedOperator();
  const reader = await operatorWith(["projects:read"]);
  const browser = await launch();
  const violations: string[] = [];
  try {
    for (const [name, viewport] of Object.entries(WIDTHS)) {
      const project = await admin("POST", "/api/v1/projects", { name: `Settings ${name}` });
      const api = `/api/v1/projects/${project.id}`;
      const page = await signedInPage(browser, viewport, operator, violations);
      await page.goto(`${url}/console/projects/${project.id}`);
      await page.getByRole("navigation", { name: /^Project / }).getByRole("link", { name: "Sign-in" })
        .click();
      await page.waitForURL(/\/sign-in$/);
      await noOverflow(page, `sign-in settings at ${name}`);

      // A bad domain: the field's error, nothing saved.
      await page.getByLabel("Only addresses of these domains").check();
      await page.getByLabel("Allowed domains").fill("example.com\nnot a domain");
      await page.getByRole("button", { name: "Save sign-in settings" }).click();
      assert.match((await page.locator("#f-signup-error").textContent())!, /must be a domain name/);
      assert.equal((await admin("GET", api)).signup, "off");

      await page.getByLabel("Second factor").selectOption("required");
      await page.getByLabel(/Require a verified email address/).check();
      await page.getByLabel("Allowed domains").fill("Example.com\nshop.example\n");
      await page.getByRole("button", { name: "Save sign-in settings" }).click();
      await page.getByText("Saved.").waitFor();
      const saved = await admin("GET", api);
      assert.equal(saved.mfa, "required");
      assert.equal(saved.require_verified_email, true);
      assert.deepEqual(saved.signup, { domains: ["example.com", "shop.example"] });
      assert.equal(await page.getByLabel("Allowed domains").inputValue(), "example.com\nshop.example");

      await page.getByLabel("Open: anyone may create an account").check();
      await page.getByLabel("Second factor").selectOption("off");
      await page.getByRole("button", { name: "Save sign-in settings" }).click();
      await page.getByText("Saved.").waitFor();
      const open = await admin("GET", api);
      assert.equal(open.signup, "open");
      assert.equal(open.mfa, "off");
      await page.context().close();

      // An operator who may read projects but not change them sees the settings, disabled, and no button.
      const read = await signedInPage(browser, viewport, reader, violations);
      await read.goto(`${url}/console/projects/${project.id}/sign-in`);
      assert.equal(await read.getByLabel("Second factor").isDisabled(), true);
      assert.equal(await read.getByRole("button", { name: "Save sign-in settings" }).count(), 0);
      assert.equal(await read.getByLabel("Second factor").inputValue(), "off");
      await read.context().close();
    }
    assert.deepEqual(violations, []);
  } finally {
    await browser.close();
  }
}, { ignore: !hasChromium });

/** A 1×1 PNG. */
const PNG = Uint8Array.from(
  atob(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  ),
  (ch) => ch.charCodeAt(0),
);

test(
  "branding in the console: the fields, a bad colour refused, a logo uploaded, shown and removed",
  async () => {
    const url = await baseUrl();
    const admin = await adminApi();
    const operator = await sharedOperator();
    const reader = await operatorWith(["projects:read"]);
    const browser = await launch();
    const violations: string[] = [];
    try {
      for (const [name, viewport] of Object.entries(WIDTHS)) {
        const project = await admin("POST", "/api/v1/projects", { name: `Branding ${name}` });
        const api = `/api/v1/projects/${project.id}`;
        const page = await signedInPage(browser, viewport, operator, violations);
        await page.goto(`${url}/console/projects/${project.id}`);
        await page.getByRole("navigation", { name: /^Project / }).getByRole("link", { name: "Branding" })
          .click();
        await page.waitForURL(/\/branding$/);
        await noOverflow(page, `branding at ${name}`);

        await page.getByLabel(/^Display name/).fill("Shop & Co");
        await page.getByLabel(/^Primary colour/).fill("teal");
        await page.getByRole("button", { name: "Save branding" }).click();
        assert.match((await page.locator("#f-primary_color-error").textContent())!, /must be a colour/);
        assert.equal((await admin("GET", api)).branding.display_name, null);

        await page.getByLabel(/^Primary colour/).fill("#0f766e");
        await page.getByLabel(/^Terms of service URL/).fill("https://shop.example/terms");
        await page.getByLabel(/^Privacy policy URL/).fill("https://shop.example/privacy");
        await page.getByRole("button", { name: "Save branding" }).click();
        await page.getByText("Branding saved.").waitFor();
        const saved = (await admin("GET", api)).branding;
        assert.deepEqual(
          [saved.display_name, saved.primary_color, saved.terms_url, saved.privacy_url],
          ["Shop & Co", "#0f766e", "https://shop.example/terms", "https://shop.example/privacy"],
        );

        // Not an image: the API's refusal beside the file input.
        await page.getByLabel("Upload a logo").setInputFiles({
          name: "logo.png",
          mimeType: "image/png",
          buffer: Buffer.from("not a png"),
        });
        await page.getByRole("button", { name: "Upload logo" }).click();
        assert.ok(await page.locator("#f-logo-error").isVisible());
        assert.equal((await admin("GET", api)).branding.logo_url, null);

        await page.getByLabel("Upload a logo").setInputFiles({
          name: "logo.png",
          mimeType: "image/png",
          buffer: Buffer.from(PNG),
        });
        await page.getByRole("button", { name: "Upload logo" }).click();
        await page.getByText("Logo saved.").waitFor();
        const logoUrl = (await admin("GET", api)).branding.logo_url;
        assert.ok(logoUrl);
        assert.equal(await page.locator("#logo-preview").getAttribute("src"), logoUrl);
        assert.equal(
          await page.evaluate("document.getElementById('logo-preview').naturalWidth"),
          1,
        );
        await noOverflow(page, `branding with a logo at ${name}`);

        await page.getByRole("button", { name: "Remove logo" }).click();
        await page.getByText("No logo").waitFor();
        assert.equal((await admin("GET", api)).branding.logo_url, null);
        await page.context().close();

        const read = await signedInPage(browser, viewport, reader, violations);
        await read.goto(`${url}/console/projects/${project.id}/branding`);
        assert.equal(await read.getByLabel(/^Primary colour/).isDisabled(), true);
        assert.equal(await read.getByLabel("Upload a logo").isDisabled(), true);
        assert.equal(await read.getByRole("button", { name: "Save branding" }).count(), 0);
        await read.context().close();
      }
      assert.deepEqual(violations, []);
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);
