/**
 * The console's settings pages of a project in Chromium at desktop (1280 px) and phone (390 px) width, on the
 * shared test service: sign-in settings (second factor, verified addresses, sign-up), each change seen through the
 * admin API, its field errors shown; branding (its fields, a logo uploaded, shown and removed); identity providers (on a service of its own
 * that may reach a fake upstream's discovery); and a read-only operator (no projects:update) sees the form disabled.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { SYSTEM_PROJECT_ID } from "../openapi/projects.ts";
import {
  baseUrl,
  isolatedDatabase,
  projectPermissions,
  sdk,
  startWith,
  systemToken,
  systemTokenAt,
  test,
} from "./helpers.ts";
import { fakeUpstream } from "./idp_support.ts";
import { hasChromium, launch, sharedOperator, signIn } from "./console_support.ts";
import type { Browser, Page } from "./browser_deps.ts";

const WIDTHS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

/** The admin API of a service (the shared one by default) as the system admin client. */
async function adminApi(at?: string) {
  const url = at ?? await baseUrl();
  const token = at ? await systemTokenAt(at) : await systemToken();
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
  at?: string,
) {
  const url = at ?? await baseUrl();
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

test("sign-in settings in the console: second factor, verified addresses, sign-up and its role", async () => {
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
      const member = await admin("POST", `${api}/roles`, {
        code: "member",
        name: "Member",
        permission_ids: [],
      });
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
      await page.getByRole("status").getByText("Saved.").waitFor();
      const saved = await admin("GET", api);
      assert.equal(saved.mfa, "required");
      assert.equal(saved.require_verified_email, true);
      assert.deepEqual(saved.signup, { domains: ["example.com", "shop.example"] });
      assert.equal(await page.getByLabel("Allowed domains").inputValue(), "example.com\nshop.example");

      await page.getByLabel("Open: anyone may create an account").check();
      await page.getByLabel("Second factor").selectOption("off");
      await page.getByLabel("Role of new accounts").selectOption({ label: "Member" });
      await page.getByRole("button", { name: "Save sign-in settings" }).click();
      await page.getByRole("status").getByText("Saved.").waitFor();
      const open = await admin("GET", api);
      assert.equal(open.signup, "open");
      assert.equal(open.mfa, "off");
      assert.equal(open.default_role_id, member.id);
      assert.equal(await page.getByLabel("Role of new accounts").inputValue(), member.id);

      // Applications identified by a URL: admitted from these hosts only.
      await page.getByLabel("Only documents on these hosts").check();
      await page.getByLabel("Allowed hosts").fill("Agents.Example.com\nmcp.example\n");
      await page.getByRole("button", { name: "Save sign-in settings" }).click();
      await page.getByRole("status").getByText("Saved.").waitFor();
      assert.deepEqual((await admin("GET", api)).client_metadata_documents, {
        hosts: ["agents.example.com", "mcp.example"],
      });
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
        // The image loads after the page shows it: its size is known once it is complete.
        await page.waitForFunction("document.getElementById('logo-preview')?.complete === true");
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

/** A user of the project whose role may read its providers, not create or change them. */
// deno-lint-ignore no-explicit-any
async function projectReader(admin: (m: string, p: string, b?: unknown) => Promise<any>, projectId: string) {
  const api = `/api/v1/projects/${projectId}`;
  const resources = await admin("GET", `${api}/resources?page_size=100`);
  const ids: Record<string, string> = {};
  for (const r of resources.data) for (const p of r.permissions) ids[`${r.code}:${p.code}`] = p.id;
  const role = await admin("POST", `${api}/roles`, {
    code: "idp_reader",
    name: "Provider reader",
    permission_ids: [ids["projects:read"], ids["identity_providers:read"]].filter(Boolean),
  });
  const who = { email: "reader@example.com", password: "reader password 2" };
  await admin("POST", `${api}/users`, { display_name: "Reader", ...who, role_id: role.id });
  return who;
}

/** A browser page signed in to the console of a project (not the system project). */
async function projectPage(
  browser: Browser,
  viewport: { width: number; height: number },
  who: { email: string; password: string },
  url: string,
  projectId: string,
  violations: string[],
) {
  const ctx = await browser.newContext({ viewport });
  ctx.setDefaultTimeout(15_000);
  const page = await ctx.newPage();
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  const next = `/console/projects/${projectId}`;
  await page.goto(`${url}/console/signin?${new URLSearchParams({ project: projectId, next })}`);
  await signIn(page, who.email, who.password);
  await page.waitForURL(new RegExp(`${next}$`));
  return page;
}

const FIRST = { email: "ida@example.com", password: "operator password 1" };

test(
  "identity providers in the console: created, refused, deactivated, deleted; read-only without the permission",
  async () => {
    const iso = await isolatedDatabase();
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
      .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const svc = await startWith({
      ...iso.env,
      BOOTSTRAP_ADMIN_EMAIL: FIRST.email,
      BOOTSTRAP_ADMIN_PASSWORD: FIRST.password,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      KEY_ENCRYPTION_KEY: key,
    });
    const fake = await fakeUpstream();
    const browser = await launch();
    const violations: string[] = [];
    try {
      const admin = await adminApi(svc.url);
      for (const [name, viewport] of Object.entries(WIDTHS)) {
        const project = await admin("POST", "/api/v1/projects", { name: `Federated ${name}` });
        const api = `/api/v1/projects/${project.id}/identity-providers`;
        const reader = await projectReader(admin, project.id);
        const page = await signedInPage(browser, viewport, FIRST, violations, svc.url);
        await page.goto(`${svc.url}/console/projects/${project.id}`);
        await page.getByRole("navigation", { name: /^Project / }).getByRole("link", {
          name: "Identity providers",
        })
          .click();
        await page.getByText("No identity providers yet.").waitFor();
        await page.getByRole("link", { name: "Add identity provider" }).click();
        await noOverflow(page, `new identity provider at ${name}`);

        // An issuer with a query: its field's error, nothing created.
        await page.getByLabel(/^Button label/).fill("Upstream");
        await page.getByLabel(/^Issuer/).fill("https://issuer.example/?tenant=1");
        await page.getByLabel(/^Client id at the provider/).fill("console-client");
        await page.getByLabel(/^Client secret at the provider/).fill("upstream secret 1");
        await page.getByRole("button", { name: "Create provider" }).click();
        assert.match((await page.locator("#f-issuer-error").textContent())!, /must be an absolute https URL/);
        assert.equal((await admin("GET", api)).data.length, 0);
        assert.equal(
          await page.getByLabel(/^Client secret at the provider/).inputValue(),
          "",
          "never shown back",
        );

        await page.getByLabel(/^Issuer/).fill(fake.base);
        await page.getByLabel(/^Client secret at the provider/).fill("upstream secret 1");
        await page.getByLabel(/Create a user at the first sign-in/).check();
        await page.getByRole("button", { name: "Create provider" }).click();
        await page.getByRole("status").getByText("Saved.").waitFor();
        const [created] = (await admin("GET", api)).data;
        assert.equal(created.display_name, "Upstream");
        assert.equal(created.issuer, fake.base);
        assert.equal(created.has_client_secret, true);
        assert.equal(created.jit_provisioning, true);
        assert.equal(created.is_active, true);
        assert.ok(!(await page.content()).includes("upstream secret 1"), "the secret is never shown");
        assert.ok(await page.getByText(created.redirect_uri).first().isVisible());
        await noOverflow(page, `identity provider at ${name}`);

        await page.getByRole("button", { name: "Deactivate" }).click();
        await page.getByRole("status").getByText("Saved.").waitFor();
        const off = await admin("GET", `${api}/${created.id}`);
        assert.equal(off.is_active, false);
        assert.equal(off.has_client_secret, true, "the secret is kept");

        // The reader sees the provider, its form disabled, and no way to add one.
        // A user of the project itself: an operator of another project reaches it only holding every permission.
        const read = await projectPage(browser, viewport, reader, svc.url, project.id, violations);
        await read.goto(`${svc.url}/console/projects/${project.id}/identity-providers`);
        assert.equal(await read.getByRole("link", { name: "Add identity provider" }).count(), 0);
        await read.getByRole("link", { name: "Upstream" }).click();
        assert.equal(await read.getByLabel(/^Issuer/).isDisabled(), true);
        assert.equal(await read.getByRole("button", { name: "Save provider" }).count(), 0);
        const refused = await read.goto(`${svc.url}/console/projects/${project.id}/identity-providers/new`);
        assert.equal(refused?.status(), 200);
        assert.equal(await read.getByLabel(/^Issuer/).isDisabled(), true);
        await read.context().close();

        await page.getByRole("link", { name: "Delete provider…" }).click();
        await page.getByRole("button", { name: "Delete provider" }).click();
        await page.getByText("No identity providers yet.").waitFor();
        assert.equal((await admin("GET", api)).data.length, 0);
        await page.context().close();
      }
      assert.deepEqual(violations, []);
    } finally {
      await browser.close();
      await fake.stop();
      await svc.close();
      await iso.drop();
    }
  },
  { ignore: !hasChromium },
);
