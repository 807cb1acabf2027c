/**
 * Every console page in Chromium at desktop (1280 px) and phone (390 px) width, on a service of its own seeded
 * through the admin API: no sideways overflow, no CSP violation, and what each page promises (the navigation,
 * the signed-in user and project, ids to copy, client types, effective permissions, the audit trail by name in
 * local time, date filters). Screenshots of each page go to a temporary directory, or with UPDATE_SCREENSHOTS=1
 * to docs/console/ (docs/console.md's).
 */
import assert from "node:assert/strict";
import {
  challengeOf,
  isolatedDatabase,
  newVerifier,
  REDIRECT_URI,
  startWith,
  systemTokenAt,
  test,
} from "./helpers.ts";
import { hasChromium, launch, SHOTS, signIn } from "./console_support.ts";
import type { Page } from "./browser_deps.ts";

const OPERATOR = { email: "ada@example.com", password: "operator password 1" };
const WIDTHS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

/** The admin API of a service, as the system admin client. */
async function adminOf(url: string) {
  const token = await systemTokenAt(url);
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

/** A user's login through a public client (code + PKCE) over raw HTTP: one session for the sessions page. */
async function logIn(url: string, clientId: string, email: string, password: string) {
  const verifier = newVerifier();
  const page = await fetch(
    `${url}/authorize?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
    })}`,
    { headers: { "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0" } },
  );
  const html = await page.text();
  const field = (n: string) => new RegExp(`name="${n}" value="([^"]*)"`).exec(html)![1];
  const login = await fetch(`${url}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: (page.headers.get("set-cookie") ?? "").split(";")[0],
      "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
    },
    body: new URLSearchParams({ request_id: field("request_id"), csrf: field("csrf"), email, password })
      .toString(),
  });
  await login.body?.cancel();
  const code = new URL(login.headers.get("location")!).searchParams.get("code")!;
  const tokens = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: clientId,
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    }).toString(),
  });
  assert.equal(tokens.status, 200);
  await tokens.body?.cancel();
}

test(
  "every console page reads at desktop and phone width, without overflow or CSP violation, and shows what it promises",
  async () => {
    const iso = await isolatedDatabase();
    const svc = await startWith({
      ...iso.env,
      BOOTSTRAP_ADMIN_EMAIL: OPERATOR.email,
      BOOTSTRAP_ADMIN_PASSWORD: OPERATOR.password,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    });
    const browser = await launch();
    try {
      // Two projects of one name, told apart by their ids; the second is the one walked through.
      const admin = await adminOf(svc.url);
      await admin("POST", "/api/v1/projects", { name: "Shop", description: "The staging shop" });
      const shop = await admin("POST", "/api/v1/projects", {
        name: "Shop",
        description: "The online shop",
        redirect_uris: [REDIRECT_URI],
      });
      const api = `/api/v1/projects/${shop.id}`;
      const orders = await admin("POST", `${api}/resources`, {
        code: "orders",
        name: "Orders",
        description: "Customer orders",
        permissions: [
          { code: "read", name: "Read orders" },
          { code: "refund", name: "Refund orders" },
          { code: "ship", name: "Ship orders" },
        ],
      });
      const perm = (code: string) => orders.permissions.find((p: { code: string }) => p.code === code).id;
      const support = await admin("POST", `${api}/roles`, {
        code: "support",
        name: "Support",
        description: "Answers customers; may refund",
        permission_ids: [perm("read"), perm("refund")],
      });
      await admin("POST", `${api}/roles`, { code: "viewer", name: "Viewer", permission_ids: [perm("read")] });
      const defaults = await admin("GET", `${api}/resources?is_default=true&page_size=100`);
      const usersRead = defaults.data.find((r: { code: string }) => r.code === "users").permissions
        .find((p: { code: string }) => p.code === "read").id;
      const auditor = await admin("POST", `${api}/roles`, {
        code: "auditor",
        name: "Auditor",
        permission_ids: [usersRead],
      });
      const grace = await admin("POST", `${api}/users`, {
        display_name: "Grace",
        email: "grace@example.com",
        password: "grace password 1",
        role_id: support.id,
      });
      await admin("POST", `${api}/users`, { display_name: "Warehouse sync", external_user_id: "wh-42" });
      const web = await admin("POST", `${api}/clients`, {
        name: "Shop web app",
        token_endpoint_auth_method: "none",
      });
      const backend = await admin("POST", `${api}/clients`, {
        name: "Order backend",
        token_endpoint_auth_method: "client_secret_basic",
        permission_ids: [perm("read"), perm("ship")],
      });
      const hook = await admin("POST", `${api}/webhooks`, {
        url: "http://127.0.0.1:9/hooks/access",
        description: "Order service",
        event_types: ["user.*", "role.*"],
      });
      await admin("PUT", `${api}/users/${grace.id}`, {
        display_name: "Grace Hopper",
        email: "grace@example.com",
        role_id: support.id,
        is_active: true,
      });
      await logIn(svc.url, web.id, "grace@example.com", "grace password 1");

      const violations: string[] = [];
      const overflow: string[] = [];
      const shots: string[] = [];
      const contexts = await Promise.all(
        Object.entries(WIDTHS).map(async ([name, viewport]) => {
          const ctx = await browser.newContext({ viewport, timezoneId: "Europe/Paris", locale: "en-GB" });
          await ctx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: svc.url });
          ctx.setDefaultTimeout(15_000);
          const page = await ctx.newPage();
          page.on("console", (m) => {
            if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(`${name}: ${m.text()}`);
          });
          return { name, ctx, page };
        }),
      );
      /** Opens a page at each width: no overflow, a screenshot of the viewport, then the checks at desktop. */
      const visit = async (shot: string, path: string, check?: (page: Page) => Promise<void>) => {
        for (const { name, page } of contexts) {
          const res = await page.goto(`${svc.url}${path}`);
          assert.equal(res?.status(), 200, `${path}: ${res?.status()}`);
          const wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth");
          if ((wide as number) > 0) overflow.push(`${shot} at ${name}: ${wide} px too wide`);
          const file = `${shot}-${name}.png`;
          await page.screenshot({ path: new URL(file, SHOTS).pathname });
          shots.push(file);
          if (name === "desktop" && check) await check(page);
        }
      };

      // The sign-in page: for the operators' project, without asking for an id; then each width signs in.
      for (const { name, page } of contexts) {
        await page.goto(`${svc.url}/console`);
        assert.match(
          (await page.locator("#signin-project").textContent())!,
          /project with ID system \(the system project, where operators sign in\)/,
        );
        assert.equal(await page.getByLabel("Project ID").isVisible(), false, "no project id asked");
        await page.screenshot({ path: new URL(`sign-in-${name}.png`, SHOTS).pathname });
        shots.push(`sign-in-${name}.png`);
        await page.getByRole("button", { name: "Continue to sign-in" }).click();
        await page.waitForURL(/\/authorize/);
        await page.screenshot({ path: new URL(`login-${name}.png`, SHOTS).pathname });
        shots.push(`login-${name}.png`);
        await signIn(page, OPERATOR.email, OPERATOR.password);
        await page.waitForURL(/\/console\/projects$/);
      }

      await visit("projects", "/console/projects", async (page) => {
        assert.ok(await page.getByText(`Signed in as ${OPERATOR.email}`).isVisible());
        // The stylesheet applies as written (a sans-serif font, not the browser's default serif).
        assert.match(
          String(await page.evaluate("getComputedStyle(document.body).fontFamily")),
          /sans-serif$/,
        );
        assert.equal(await page.getByRole("link", { name: "Shop", exact: true }).count(), 2);
        assert.equal(await page.locator("code", { hasText: shop.id }).count(), 1, "the ids tell them apart");
        // console.js shows the copy buttons (hidden without script).
        const copy = page.getByRole("button", { name: `Copy id of Shop ${shop.id}` });
        await copy.click();
        // The clipboard's write is asynchronous: the button says so once it is done.
        for (let i = 0; i < 50 && (await copy.textContent()) !== "Copied"; i++) {
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(await copy.textContent(), "Copied");
        assert.equal(await page.evaluate("navigator.clipboard.readText()"), shop.id);
      });
      const base = `/console/projects/${shop.id}`;
      await visit("overview", base, async (page) => {
        const nav = page.getByRole("navigation", { name: "Project Shop" });
        for (
          const tab of [
            "Overview",
            "Resources",
            "Roles",
            "Users",
            "Clients",
            "Sessions",
            "Audit trail",
            "Webhooks",
          ]
        ) {
          assert.ok(await nav.getByRole("link", { name: tab, exact: true }).isVisible(), tab);
        }
        assert.equal(await nav.getByRole("link", { name: "Overview" }).getAttribute("aria-current"), "page");
        assert.match(
          (await page.locator("#current-project").textContent())!,
          new RegExp(`Shop\\s*${shop.id}`),
        );
        const glance = page.getByRole("list", { name: "At a glance" });
        assert.ok(await glance.getByRole("link", { name: "3 roles" }).isVisible());
        assert.ok(await glance.getByRole("link", { name: "1 webhook" }).isVisible());
      });
      await visit("resources", `${base}/resources`);
      await visit("resource", `${base}/resources/${orders.id}`);
      await visit("roles", `${base}/roles`, async (page) => {
        // Counts with their plurals: two permissions, one permission.
        const row = (name: string) => page.getByRole("row").filter({ has: page.getByRole("link", { name }) });
        assert.match((await row("Support").textContent())!, /2 permissions/);
        assert.match((await row("Viewer").textContent())!, /1 permission(?!s)/);
        assert.match((await page.getByRole("navigation", { name: "Pages" }).textContent())!, /· 3 roles/);
      });
      await visit("role", `${base}/roles/${support.id}`);
      // The application's permissions first; the admin API's in a group of their own, folded unless one is held.
      for (const { name, page } of contexts) {
        await page.goto(`${svc.url}${base}/roles/${support.id}`);
        const values = await page.locator('input[name="permission_ids"]').evaluateAll((els) =>
          els.map((e) => e.getAttribute("value"))
        );
        assert.deepEqual(values.slice(0, 3), [perm("read"), perm("refund"), perm("ship")], name);
        const group = page.locator("details.admin-permissions");
        assert.equal(await group.getAttribute("open"), null, `${name}: the admin API's group is folded`);
        assert.match(
          (await group.locator("summary").textContent())!,
          /^Admin API permissions \(\d+ permissions\)/,
        );
        assert.ok(await page.getByLabel(/^orders:refund/).isVisible(), name);
        assert.equal(await page.getByLabel(/^users:read/).isVisible(), false, name);
        await group.locator("summary").click();
        assert.ok(await page.getByLabel(/^users:read/).isVisible(), `${name}: unfolded on a click`);
        await page.goto(`${svc.url}${base}/roles/${auditor.id}`);
        assert.equal(await page.locator("details.admin-permissions").getAttribute("open"), "", name);
        assert.ok(await page.getByLabel(/^users:read/).isChecked(), name);
      }
      await visit("users", `${base}/users`);
      await visit("user", `${base}/users/${grace.id}`, async (page) => {
        const held = await page.locator("#permission-list li").allTextContents();
        assert.deepEqual(held, ["orders:read", "orders:refund"]);
      });
      await visit("clients", `${base}/clients`, async (page) => {
        const row = (name: string) => page.getByRole("row").filter({ has: page.getByRole("link", { name }) });
        assert.match((await row("Shop web app").textContent())!, /public\s*none/);
        assert.match((await row("Order backend").textContent())!, /confidential\s*client_secret_basic/);
      });
      await visit("client", `${base}/clients/${backend.id}`, async (page) => {
        // The type is editable: the backend becomes a public client.
        await page.getByLabel("Type and authentication at the token endpoint").selectOption("none");
        await page.getByRole("button", { name: "Save client" }).click();
        await page.waitForURL(/done=1/);
        const saved = await admin("GET", `${api}/clients/${backend.id}`);
        assert.equal(saved.token_endpoint_auth_method, "none");
        await page.getByLabel("Type and authentication at the token endpoint").selectOption(
          "client_secret_basic",
        );
        await page.getByRole("button", { name: "Save client" }).click();
        await page.waitForURL(/done=1/);
        // Marked another party's application: its users will be asked for consent.
        await page.getByLabel(/^Third-party application/).check();
        await page.getByRole("button", { name: "Save client" }).click();
        await page.waitForURL(/done=1/);
        assert.equal((await admin("GET", `${api}/clients/${backend.id}`)).third_party, true);
        assert.ok(await page.getByLabel(/^Third-party application/).isChecked());
        // Its own redirect URIs, one a line: a bad one is shown next to the field, nothing is saved.
        const uris = page.getByRole("textbox", { name: /^Redirect URIs of this client/ });
        await uris.fill("https://shop.example/cb\nhttp://shop.example/cb");
        await page.getByRole("button", { name: "Save client" }).click();
        assert.match(
          (await page.locator("#f-redirect_uris-error").textContent())!,
          /redirect_uris\.1: must use https/,
        );
        assert.deepEqual((await admin("GET", `${api}/clients/${backend.id}`)).redirect_uris, []);
        await uris.fill(
          "https://shop.example/cb\n\n  https://shop.example/cb2 ",
        );
        await page.getByRole("button", { name: "Save client" }).click();
        await page.waitForURL(/done=1/);
        assert.deepEqual((await admin("GET", `${api}/clients/${backend.id}`)).redirect_uris, [
          "https://shop.example/cb",
          "https://shop.example/cb2",
        ]);
        assert.equal(
          await uris.inputValue(),
          "https://shop.example/cb\nhttps://shop.example/cb2",
        );
        // Emptied again: the project's list applies.
        await uris.fill("");
        await page.getByRole("button", { name: "Save client" }).click();
        await page.waitForURL(/done=1/);
        assert.deepEqual((await admin("GET", `${api}/clients/${backend.id}`)).redirect_uris, []);
        // Claims from decisions, one "claim resource action" a line: a line of other words, or a code the project
        // lacks, is shown next to the field and nothing is saved.
        const claims = page.getByRole("textbox", { name: /^Claims from decisions/ });
        await claims.fill("readable orders");
        await page.getByRole("button", { name: "Save client" }).click();
        assert.match((await page.locator("#f-decision_claims-error").textContent())!, /line 1 is not/);
        await claims.fill("readable orders read\nshippable orders fly");
        await page.getByRole("button", { name: "Save client" }).click();
        assert.match(
          (await page.locator("#f-decision_claims-error").textContent())!,
          /decision_claims\.1\.action: no permission of orders/,
        );
        assert.deepEqual((await admin("GET", `${api}/clients/${backend.id}`)).decision_claims, []);
        await claims.fill("  readable   orders read \n\nshippable orders ship");
        await page.getByRole("button", { name: "Save client" }).click();
        await page.waitForURL(/done=1/);
        assert.deepEqual((await admin("GET", `${api}/clients/${backend.id}`)).decision_claims, [
          { claim: "readable", action: "read", resource_type: "orders" },
          { claim: "shippable", action: "ship", resource_type: "orders" },
        ]);
        assert.equal(await claims.inputValue(), "readable orders read\nshippable orders ship");
      });
      await visit("sessions", `${base}/sessions`);
      await visit("user-sessions", `${base}/users/${grace.id}/sessions`, async (page) => {
        const rows = page.getByRole("row").filter({ hasText: "Shop web app" });
        assert.equal(await rows.count(), 1, "the session's client by name");
        assert.match((await rows.textContent())!, new RegExp(web.id));
        // The browser and system in words, the raw header kept as the title.
        const agent = rows.getByText("Firefox 140 on Linux", { exact: true });
        assert.ok(await agent.isVisible());
        assert.equal(await agent.getAttribute("title"), "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0");
      });
      await visit("audit", `${base}/audit`, async (page) => {
        // Actors and targets by name; the operator's system admin client is the actor of the seeding.
        const row = page.getByRole("row").filter({
          has: page.getByRole("cell", { name: "user.updated", exact: true }),
        });
        assert.match((await row.textContent())!, /Grace Hopper\s*user\s*changed: display_name/);
        assert.ok(await row.getByRole("link", { name: "Grace Hopper" }).isVisible());
        // Local time with its zone (the browser's: Paris), the UTC text kept as the title.
        const time = row.locator("time");
        assert.match((await time.textContent())!, /CES?T|GMT\+[12]/);
        assert.match((await time.getAttribute("title"))!, /UTC$/);
        // Days as filters: nothing from tomorrow on, everything of today.
        const today = new Date().toISOString().slice(0, 10);
        const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
        await page.getByLabel("Since").fill(tomorrow);
        await page.getByRole("button", { name: "Filter" }).click();
        assert.ok(await page.getByText("No events match.").isVisible());
        await page.getByLabel("Since").fill(today);
        await page.getByLabel("Until").fill(today);
        await page.getByRole("button", { name: "Filter" }).click();
        assert.ok(await page.getByRole("cell", { name: "user.updated", exact: true }).isVisible());
      });
      await visit("webhooks", `${base}/webhooks`);
      await visit("webhook", `${base}/webhooks/${hook.id}`, async (page) => {
        assert.ok(await page.getByRole("heading", { name: "Deliveries" }).isVisible());
      });
      await visit("delete-role", `${base}/roles/${support.id}/delete`);
      // A record that is not there: a page of the console all the same, with the way back.
      const { page } = contexts[0];
      const missing = await page.goto(`${svc.url}${base}/users/01a00000-0000-7000-8000-000000000000`);
      assert.equal(missing?.status(), 404);
      assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Not found");
      assert.ok(await page.getByRole("button", { name: "Sign out" }).isVisible());

      assert.deepEqual(overflow, []);
      assert.deepEqual(violations, []);
      for (const { ctx } of contexts) await ctx.close();
      console.log(
        `screenshots taken (UPDATE_SCREENSHOTS=1 keeps them in docs/console/): ${shots.join(", ")}`,
      );
    } finally {
      await browser.close();
      await svc.close();
      await iso.drop();
    }
  },
  { ignore: !hasChromium },
);
