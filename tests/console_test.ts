/**
 * The admin console in a real browser (Debian's Chromium via playwright-core) on a service of its own with a
 * first operator, and raw HTTP for its CSRF refusal and headers. Screenshots go to a temporary directory, or
 * with UPDATE_SCREENSHOTS=1 to docs/console/ (the README's), so that a test run leaves the checkout as it was.
 */
import assert from "node:assert/strict";
import { chromium, type Page } from "./deps.ts";
import { ADMIN_SECRET, basic, isolatedDatabase, startWith, test } from "./helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();
const OPERATOR = { email: "operator@example.com", password: "operator password 1" };
const SHOTS = Deno.env.get("UPDATE_SCREENSHOTS") === "1"
  ? new URL("../docs/console/", import.meta.url)
  : new URL(`file://${Deno.makeTempDirSync({ prefix: "console-screenshots-" })}/`);

async function signIn(page: Page, email: string, password: string) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** A tab of the project's navigation. */
const tab = (page: Page, name: string) =>
  page.getByRole("navigation", { name: /^Project / }).getByRole("link", { name }).click();

test(
  "an operator manages a project in the console, and a read-only user sees but cannot change",
  async () => {
    const iso = await isolatedDatabase();
    const svc = await startWith({
      ...iso.env,
      BOOTSTRAP_ADMIN_EMAIL: OPERATOR.email,
      BOOTSTRAP_ADMIN_PASSWORD: OPERATOR.password,
    });
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    });
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      ctx.setDefaultTimeout(15_000);
      const page = await ctx.newPage();
      const violations: string[] = [];
      page.on(
        "console",
        (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()),
      );
      await page.goto(`${svc.url}/console`);
      await page.getByRole("button", { name: "Continue to sign-in" }).click();
      await signIn(page, OPERATOR.email, OPERATOR.password);
      await page.waitForURL(/\/console\/projects$/);
      assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Projects");

      // A project; its admin client's secret is shown once.
      await page.getByRole("link", { name: "Create project" }).click();
      await page.getByLabel("Name").fill("Shop");
      await page.getByRole("button", { name: "Create project" }).click();
      assert.match((await page.locator("#client-secret").textContent())!, /^[A-Za-z0-9_-]{43}$/);
      await page.getByRole("link", { name: "Go to the project" }).click();
      const projectUrl = page.url();
      const projectId = projectUrl.split("/").pop()!;

      // A resource with two permissions; a bad code first re-renders with the error next to the field.
      await tab(page, "Resources");
      await page.getByRole("link", { name: "Create resource" }).click();
      await page.getByLabel("Name", { exact: true }).fill("Orders");
      await page.getByLabel("Code", { exact: true }).fill("orders!");
      await page.getByLabel("Code 1").fill("read");
      await page.getByLabel("Code 2").fill("write");
      await page.getByRole("button", { name: "Create resource" }).click();
      assert.ok(await page.locator("#f-code-error").isVisible());
      assert.equal(await page.getByLabel("Code", { exact: true }).getAttribute("aria-invalid"), "true");
      await page.getByLabel("Code", { exact: true }).fill("orders");
      await page.getByRole("button", { name: "Create resource" }).click();
      await page.waitForURL(/resources\?done=1/);
      assert.ok(await page.getByRole("cell", { name: "read, write" }).isVisible());

      // A role holding one of them.
      await tab(page, "Roles");
      await page.getByRole("link", { name: "Create role" }).click();
      await page.getByLabel("Name", { exact: true }).fill("Reader");
      await page.getByLabel("Code", { exact: true }).fill("reader");
      await page.getByLabel(/^orders:read/).check();
      assert.equal(await page.getByLabel(/^orders:write/).isChecked(), false);
      // And the reading of the project's lists, for the read-only user below.
      for (const code of ["resources", "roles", "users", "clients"]) {
        await page.getByLabel(new RegExp(`^${code}:read`)).check();
      }
      await page.getByRole("button", { name: "Create role" }).click();
      await page.waitForURL(/roles\?done=1/);

      // A user with that role.
      await tab(page, "Users");
      await page.getByRole("link", { name: "Create user" }).click();
      await page.getByLabel("Display name").fill("Rita");
      await page.getByLabel("Email").fill("rita@example.com");
      await page.getByLabel("Role").selectOption({ label: "Reader (reader)" });
      await page.getByLabel("Password").fill("rita password 1");
      await page.getByRole("button", { name: "Create user" }).click();
      await page.waitForURL(/users\?done=1/);

      // A client: its secret once, then deactivated.
      await tab(page, "Clients");
      await page.getByRole("link", { name: "Create client" }).click();
      await page.getByLabel("Name", { exact: true }).fill("Billing");
      await page.getByRole("button", { name: "Create client" }).click();
      const secret = (await page.locator("#client-secret").textContent())!;
      assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
      await page.screenshot({ path: new URL("client-secret-desktop.png", SHOTS).pathname });
      await page.getByLabel(/^Active/).uncheck();
      await page.getByRole("button", { name: "Save client" }).click();
      await page.waitForURL(/done=1/);
      assert.equal(await page.locator("#client-secret").count(), 0, "the secret is not shown again");
      assert.equal(await page.getByLabel(/^Active/).isChecked(), false);

      // The audit trail shows it all.
      await tab(page, "Audit trail");
      for (
        const type of [
          "resource.created",
          "role.created",
          "user.created",
          "client.created",
          "client.deactivated",
        ]
      ) {
        assert.ok(await page.getByRole("cell", { name: type, exact: true }).first().isVisible(), type);
      }
      await page.getByLabel("Event type").fill("client.*");
      await page.getByRole("button", { name: "Filter" }).click();
      assert.equal(await page.getByRole("cell", { name: "role.created", exact: true }).count(), 0);
      await page.screenshot({ path: new URL("audit-desktop.png", SHOTS).pathname });

      // Phone width: nothing overflows sideways.
      await page.setViewportSize({ width: 360, height: 720 });
      await page.goto(`${projectUrl}/users`);
      assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
      await page.screenshot({ path: new URL("users-phone.png", SHOTS).pathname });
      assert.deepEqual(violations, []);

      // Sign-out ends the session: the old cookie opens nothing, and the refresh token is revoked.
      const cookies = await ctx.cookies();
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.waitForURL(/signed_out=1/);
      const old = cookies.find((c) => c.name === "acs_console")!;
      const after = await fetch(`${svc.url}/console/projects`, {
        headers: { cookie: `acs_console=${old.value}` },
        redirect: "manual",
      });
      assert.equal(after.status, 303);
      assert.match(after.headers.get("location")!, /^\/console\/signin/);
      await after.body?.cancel();

      // The read-only user: lists, no create buttons, and a crafted POST refused by the API.
      const ctx2 = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const rita = await ctx2.newPage();
      await rita.goto(`${svc.url}/console/signin?project=${projectId}`);
      await signIn(rita, "rita@example.com", "rita password 1");
      await rita.waitForURL(new RegExp(`/console/projects/${projectId}$`));
      await tab(rita, "Resources");
      assert.ok(await rita.getByRole("link", { name: "Orders" }).isVisible());
      assert.equal(await rita.getByRole("link", { name: "Create resource" }).count(), 0);
      await rita.screenshot({ path: new URL("read-only-desktop.png", SHOTS).pathname });
      // The form is not offered; posting it anyway (with a valid CSRF token of this session) is refused by the API.
      await rita.goto(`${svc.url}/console/projects/${projectId}/roles`);
      assert.equal(await rita.getByRole("link", { name: "Create role" }).count(), 0);
      const csrf = await rita.locator("input[name=csrf]").first().getAttribute("value");
      const cookie = (await ctx2.cookies()).find((c) => c.name === "acs_console")!;
      const crafted = await fetch(`${svc.url}/console/projects/${projectId}/roles/new`, {
        method: "POST",
        headers: {
          cookie: `acs_console=${cookie.value}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ csrf: csrf!, back: "/console", name: "Boss", code: "boss" }).toString(),
      });
      assert.equal(crafted.status, 400);
      assert.match(
        await crafted.text(),
        /You are not allowed to do this: the token lacks the permission roles:create/,
      );
      await ctx2.close();
    } finally {
      await browser.close();
      await svc.close();
      await iso.drop();
    }
  },
  { ignore: !hasChromium },
);

test("console forms without the session's CSRF token lead back to sign-in, and pages carry a strict CSP", async () => {
  const iso = await isolatedDatabase();
  const svc = await startWith(iso.env);
  try {
    const res = await fetch(`${svc.url}/console/signin`);
    const csp = res.headers.get("content-security-policy")!;
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.doesNotMatch(await res.text(), /<script>|<script [^>]*>[^<]/, "no inline script");
    // Unsigned: any page or form goes to sign-in, keeping the wanted page.
    const page = await fetch(`${svc.url}/console/projects?search=x`, { redirect: "manual" });
    assert.equal(page.status, 303);
    assert.equal(
      page.headers.get("location"),
      `/console/signin?${new URLSearchParams({ next: "/console/projects?search=x" })}`,
    );
    await page.body?.cancel();
    const post = await fetch(`${svc.url}/console/projects/new`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: "acs_console=" + "a".repeat(43),
      },
      body: "csrf=forged&back=%2Fconsole%2Fprojects%2Fnew&name=Evil",
    });
    assert.equal(post.status, 303);
    assert.match(post.headers.get("location")!, /next=%2Fconsole%2Fprojects%2Fnew/);
    await post.body?.cancel();
    // The sign-in starts the service's own flow with the console client and its built-in redirect URI.
    const start = await fetch(`${svc.url}/console/signin?project=system`, { redirect: "manual" });
    const to = new URL(start.headers.get("location")!, svc.url);
    assert.equal(to.pathname, "/authorize");
    assert.equal(to.searchParams.get("client_id"), "console-system");
    assert.equal(to.searchParams.get("redirect_uri"), `${svc.url}/console/callback`);
    await start.body?.cancel();
    const login = await fetch(to, { redirect: "manual" });
    assert.equal(login.status, 200);
    await login.body?.cancel();
    // That redirect URI is the console client's only: another client of the project cannot use it.
    const other = await fetch(
      `${svc.url}/authorize?${new URLSearchParams({
        ...Object.fromEntries(to.searchParams),
        client_id: "system-admin",
      })}`,
      { redirect: "manual" },
    );
    assert.equal(other.status, 400);
    await other.body?.cancel();
  } finally {
    await svc.close();
    await iso.drop();
  }
});

/** Signs in to the console over raw HTTP; returns the console session's cookie. */
async function consoleSignIn(url: string, email: string, password: string): Promise<string> {
  const start = await fetch(`${url}/console/signin?project=system&next=%2Fconsole%2Fprojects`, {
    redirect: "manual",
  });
  const pending = start.headers.getSetCookie().map((c) => c.split(";")[0]).filter((c) =>
    c.startsWith("acs_console_login")
  );
  await start.body?.cancel();
  const page = await fetch(new URL(start.headers.get("location")!, url), { redirect: "manual" });
  const html = await page.text();
  const field = (n: string) => new RegExp(`name="${n}" value="([^"]*)"`).exec(html)![1];
  const login = await fetch(`${url}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: page.headers.getSetCookie()[0].split(";")[0],
    },
    body: new URLSearchParams({ request_id: field("request_id"), csrf: field("csrf"), email, password })
      .toString(),
  });
  await login.body?.cancel();
  const callback = await fetch(login.headers.get("location")!, {
    redirect: "manual",
    headers: { cookie: pending.join("; ") },
  });
  await callback.body?.cancel();
  assert.equal(callback.status, 303);
  assert.equal(callback.headers.get("location"), "/console/projects");
  return callback.headers.getSetCookie().map((c) => c.split(";")[0]).find((c) =>
    c.startsWith("acs_console=")
  )!;
}

test("a console session whose user is deactivated, or whose row is gone, leads back to sign-in and the page", async () => {
  const iso = await isolatedDatabase();
  const svc = await startWith({
    ...iso.env,
    BOOTSTRAP_ADMIN_EMAIL: OPERATOR.email,
    BOOTSTRAP_ADMIN_PASSWORD: OPERATOR.password,
  });
  try {
    const cookie = await consoleSignIn(svc.url, OPERATOR.email, OPERATOR.password);
    const ok = await fetch(`${svc.url}/console/projects`, { headers: { cookie }, redirect: "manual" });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    // The database holds no usable token: only the cookie's hash and sealed bytes.
    const [row] = await svc.db.sql<
      { id_hash: Uint8Array; sealed: Uint8Array }[]
    >`select id_hash, sealed from console_sessions`;
    assert.equal(row.id_hash.length, 32);
    assert.doesNotMatch(new TextDecoder().decode(row.sealed), /eyJ/);
    // The operator is deactivated: the token is refused, the refresh too, so the console asks to sign in again.
    const token = (await (await fetch(`${svc.url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: basic("system-admin", ADMIN_SECRET),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    })).json()).access_token;
    const users = await (await fetch(`${svc.url}/api/v1/projects/system/users?search=operator`, {
      headers: { authorization: `Bearer ${token}` },
    })).json();
    const operator = users.data[0];
    const off = await fetch(`${svc.url}/api/v1/projects/system/users/${operator.id}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ display_name: operator.display_name, email: operator.email, is_active: false }),
    });
    assert.equal(off.status, 200);
    await off.body?.cancel();
    const refused = await fetch(`${svc.url}/console/projects?search=a`, {
      headers: { cookie },
      redirect: "manual",
    });
    assert.equal(refused.status, 303);
    assert.equal(
      refused.headers.get("location"),
      `/console/signin?${new URLSearchParams({ next: "/console/projects?search=a" })}`,
    );
    await refused.body?.cancel();
    const gone = await fetch(`${svc.url}/console/projects`, { headers: { cookie }, redirect: "manual" });
    assert.equal(gone.status, 303, "the ended console session was deleted");
    await gone.body?.cancel();
  } finally {
    await svc.close();
    await iso.drop();
  }
});
