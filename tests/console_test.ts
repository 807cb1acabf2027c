/**
 * The admin console in a real browser (Debian's Chromium via playwright-core): on a service of its own with a
 * first operator, and on the shared test service with an operator made through the API (a user's sessions
 * signed out); raw HTTP for its CSRF refusal and headers. Screenshots go to a temporary directory, or with
 * UPDATE_SCREENSHOTS=1 to docs/console/ (docs/console.md's; console_pages_test.ts takes one of every page), so
 * that a test run leaves the checkout as it was.
 */
import assert from "node:assert/strict";
import {
  ADMIN_SECRET,
  baseUrl,
  basic,
  challengeOf,
  http,
  isolatedDatabase,
  loginProject,
  newVerifier,
  openLoginPage,
  REDIRECT_URI,
  startWith,
  test,
  userTokens,
} from "./helpers.ts";
import {
  consoleSignIn,
  hasChromium,
  launch,
  refreshWith,
  sharedOperator,
  SHOTS,
  sidOf,
  signIn,
  tab,
} from "./console_support.ts";
import { Browser } from "./oidc_support.ts";

const OPERATOR = { email: "operator@example.com", password: "operator password 1" };

test(
  "an operator manages a project in the console, and a read-only user sees but cannot change",
  async () => {
    const iso = await isolatedDatabase();
    const svc = await startWith({
      ...iso.env,
      BOOTSTRAP_ADMIN_EMAIL: OPERATOR.email,
      BOOTSTRAP_ADMIN_PASSWORD: OPERATOR.password,
    });
    const browser = await launch();
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

      // A project; its admin client's secret is shown once. The created page is reached by a redirect after the
      // post: a reload creates no second project and does not show the secret again.
      const projects = async () =>
        Number(/Projects, (\d+) in all/.exec((await page.locator("caption").textContent())!)![1]);
      const before = await projects();
      await page.getByRole("link", { name: "Create project" }).click();
      await page.getByLabel("Name").fill("Shop");
      await page.getByRole("button", { name: "Create project" }).click();
      await page.waitForURL(/\/created\?once=/);
      assert.match((await page.locator("#client-secret").textContent())!, /^[A-Za-z0-9_-]{43}$/);
      const createdUrl = page.url();
      await page.reload();
      assert.equal(await page.locator("#client-secret").count(), 0, "the secret is shown once");
      assert.match((await page.locator("#secret-shown").textContent())!, /was shown once/);
      const rotate = page.getByRole("link", { name: "rotate the admin client's secret" });
      assert.match((await rotate.getAttribute("href"))!, /\/clients\/[^/]+$/);
      await page.goto(`${svc.url}/console/projects`);
      assert.equal(await projects(), before + 1, "the reload created no second project");
      await page.goto(createdUrl);
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
      // An API of its own: its indicator, shown again on its page.
      const indicator = `https://orders-${crypto.randomUUID().slice(0, 8)}.example.com/api`;
      await page.getByLabel("API indicator").fill(indicator);
      await page.getByRole("button", { name: "Create resource" }).click();
      await page.waitForURL(/resources\?done=1/);
      assert.ok(
        await page.getByRole("row", { name: /^Orders/ }).getByRole("cell", { name: "read, write" })
          .isVisible(),
      );
      await page.getByRole("link", { name: "Orders", exact: true }).click();
      assert.equal(await page.getByLabel("API indicator").inputValue(), indicator);

      // A role holding one of them.
      await tab(page, "Roles");
      await page.getByRole("link", { name: "Create role" }).click();
      await page.getByLabel("Name", { exact: true }).fill("Reader");
      await page.getByLabel("Code", { exact: true }).fill("reader");
      await page.getByLabel(/^orders:read/).check();
      assert.equal(await page.getByLabel(/^orders:write/).isChecked(), false);
      // And the reading of the project's lists, for the read-only user below: the admin API's permissions, in
      // a group of their own that is folded until opened.
      await page.locator("summary", { hasText: /^Admin API permissions/ }).click();
      for (const code of ["resources", "roles", "users", "clients"]) {
        await page.getByLabel(new RegExp(`^${code}:read`)).check();
      }
      // A condition on orders:read (CEL): refused with its position next to it, then accepted.
      const condition = page.getByLabel("Condition on orders:read (CEL, optional)");
      await condition.fill("resource.owner ==");
      await page.getByRole("button", { name: "Create role" }).click();
      assert.match(await page.locator(".condition .field-error").innerText(), /line 1, column/);
      assert.equal(await condition.getAttribute("aria-invalid"), "true");
      assert.ok(await page.getByLabel(/^orders:read/).isChecked(), "the form kept what was entered");
      await condition.fill("resource.properties.owner == subject.id");
      await page.getByRole("button", { name: "Create role" }).click();
      await page.waitForURL(/roles\?done=1/);
      await page.getByRole("link", { name: "Reader", exact: true }).click();
      assert.equal(await condition.inputValue(), "resource.properties.owner == subject.id");
      await tab(page, "Roles");

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
      // A reload of the client's page after the create neither creates another nor shows the secret again.
      await page.reload();
      assert.equal(await page.locator("#client-secret").count(), 0, "the client's secret is shown once");
      assert.match((await page.locator("#secret-shown").textContent())!, /was shown once/);
      await page.getByLabel(/^Active/).uncheck();
      await page.getByRole("button", { name: "Save client" }).click();
      await page.waitForURL(/done=1/);
      assert.equal(await page.locator("#client-secret").count(), 0, "the secret is not shown again");
      assert.equal(await page.getByLabel(/^Active/).isChecked(), false);
      // Deleted, after a confirmation page that says what goes with it.
      await page.getByRole("link", { name: "Delete this client…" }).click();
      assert.ok(await page.getByText(/its tokens are refused from its next request/).isVisible());
      await page.getByRole("button", { name: "Delete client" }).click();
      await page.waitForURL(/clients\?deleted=1/);
      assert.equal(await page.getByRole("link", { name: "Billing" }).count(), 0);

      // The audit trail shows it all.
      await tab(page, "Audit trail");
      for (
        const type of [
          "resource.created",
          "role.created",
          "user.created",
          "client.created",
          "client.deactivated",
          "client.deleted",
        ]
      ) {
        assert.ok(await page.getByRole("cell", { name: type, exact: true }).first().isVisible(), type);
      }
      await page.getByLabel("Event type").fill("client.*");
      await page.getByRole("button", { name: "Filter" }).click();
      assert.equal(await page.getByRole("cell", { name: "role.created", exact: true }).count(), 0);

      // Phone width: nothing overflows sideways.
      await page.setViewportSize({ width: 360, height: 720 });
      await page.goto(`${projectUrl}/users`);
      assert.ok(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"));
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
      // Her own sessions page (her console sign-in is one) lists them, without sign-out buttons (no users:update).
      await tab(rita, "Users");
      await rita.getByRole("link", { name: "Rita" }).click();
      assert.equal(await rita.getByRole("link", { name: /^Delete this/ }).count(), 0, "no users:delete");
      await rita.getByRole("link", { name: "Sessions of Rita" }).click();
      assert.equal(await rita.getByRole("cell", { name: `console-${projectId}` }).count(), 1);
      assert.equal(await rita.getByRole("button", { name: /^Sign out (the session|everywhere)/ }).count(), 0);
      await ctx2.close();
    } finally {
      await browser.close();
      await svc.close();
      await iso.drop();
    }
  },
  { ignore: !hasChromium },
);

test("a link to /console/signin?project=… remembers nothing; only a successful sign-in does, and the pages name the project", async () => {
  const mine = await loginProject();
  const other = await loginProject();
  const browser = new Browser();
  const projectCookie = (res: Response) =>
    res.headers.getSetCookie().find((line) => line.startsWith("acs_console_project="));
  const target = (res: Response) => new URL(res.headers.get("location")!, "http://x");
  const clientOf = (res: Response) => target(res).searchParams.get("client_id");

  // Another site links the browser to another tenant's console sign-in: it is sent there once, remembered nowhere.
  const lured = await browser.get(`/console/signin?project=${other.project.id}`);
  assert.equal(lured.status, 302);
  assert.equal(clientOf(lured), `console-${other.project.id}`);
  assert.equal(projectCookie(lured), undefined, "no project cookie before a sign-in");
  await lured.body?.cancel();
  const theirs = await browser.get(target(lured).pathname + target(lured).search);
  const theirPage = await theirs.text();
  assert.match(
    theirPage,
    new RegExp(`project with ID <code>${other.project.id}</code>`),
    "the page names it",
  );
  const later = await browser.get("/console/signin");
  assert.equal(later.status, 200, "the sign-in page, not another tenant's");
  const form = await later.text();
  assert.match(form, /name="project"/);
  assert.doesNotMatch(form, new RegExp(other.project.id));

  // A sign-in that succeeds remembers its project; the next sign-in goes there, and says so on the way.
  const start = await browser.get(`/console/signin?project=${mine.project.id}`);
  assert.equal(projectCookie(start), undefined);
  await start.body?.cancel();
  const login = await browser.get(target(start).pathname + target(start).search);
  const html = await login.text();
  assert.match(html, new RegExp(`project with ID <code>${mine.project.id}</code>`));
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];
  const posted = await browser.post("/authorize", {
    request_id: field("request_id"),
    csrf: field("csrf"),
    email: mine.email,
    password: mine.password,
  });
  assert.equal(posted.status, 303);
  await posted.body?.cancel();
  const callback = await browser.get(target(posted).pathname + target(posted).search);
  assert.equal(callback.status, 303);
  await callback.body?.cancel();
  assert.match(projectCookie(callback) ?? "", new RegExp(`^acs_console_project=${mine.project.id};`));
  const signedOut = await browser.get("/console/signin?signed_out=1");
  const page = await signedOut.text();
  assert.match(page, new RegExp(`This sign-in is for the project with ID <code>${mine.project.id}</code>`));
  const again = await browser.get("/console/signin");
  assert.equal(again.status, 302);
  assert.equal(clientOf(again), `console-${mine.project.id}`);
  await again.body?.cancel();

  // Another client's login page does not show the project's ID.
  const plain = await openLoginPage({
    client_id: mine.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(newVerifier()),
    code_challenge_method: "S256",
  });
  assert.doesNotMatch(plain.html, /project with ID/);
});

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
    // The last operator cannot be deactivated (409 last_operator): a second one first.
    const second = await fetch(`${svc.url}/api/v1/projects/system/users`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ display_name: "Second", external_user_id: "second", role_id: operator.role_id }),
    });
    assert.equal(second.status, 201);
    await second.body?.cancel();
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

test(
  "an operator signs a user's sessions out in the console, one and then everywhere, and edits post-logout URIs",
  async () => {
    const url = await baseUrl();
    const operator = await sharedOperator();
    const p = await loginProject();
    const first = await userTokens(p);
    const second = await userTokens(p);
    const third = await userTokens(p);
    const browser = await launch();
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      ctx.setDefaultTimeout(15_000);
      const page = await ctx.newPage();
      await page.goto(`${url}/console/projects/${p.project.id}/users`);
      await page.getByRole("button", { name: "Continue to sign-in" }).click();
      await signIn(page, operator.email, operator.password);
      await page.waitForURL(new RegExp(`/console/projects/${p.project.id}/users$`));

      // From the users list to the user, to the user's sessions: three logins through the admin client.
      await page.getByRole("link", { name: "Login User" }).click();
      await page.getByRole("link", { name: "Sessions of Login User" }).click();
      await page.waitForURL(/\/sessions$/);
      const rows = page.getByRole("row").filter({ has: page.getByRole("cell", { name: p.clientId }) });
      assert.equal(await rows.count(), 3);
      assert.ok(await page.getByRole("cell", { name: "127.0.0.1" }).first().isVisible());

      // One session signed out: its refresh token is refused, the others still work.
      const button = page.getByRole("button", { name: /^Sign out the session of / }).first();
      const action = await button.locator("xpath=ancestor::form").getAttribute("action");
      const victimSid = action!.split("/").at(-2)!;
      const tokens = [first, second, third];
      const victim = tokens.find((t) => sidOf(t.access_token) === victimSid)!;
      const [one, two] = tokens.filter((t) => t !== victim);
      await button.click();
      await page.waitForURL(/done=one/);
      assert.ok(await page.getByText("The session was signed out.").isVisible());
      assert.equal(await rows.count(), 2);
      assert.equal((await refreshWith(p.clientId, victim.refresh_token)).error_code, "invalid_refresh_token");
      const alive = await refreshWith(p.clientId, one.refresh_token);
      assert.equal(alive.status, 200);

      // A refused action shows the API's words: a crafted post for a session that is not there.
      const csrf = await page.locator("input[name=csrf]").first().getAttribute("value");
      const cookie = (await ctx.cookies()).find((c) => c.name === "acs_console")!;
      const refused = await fetch(
        `${url}/console/projects/${p.project.id}/users/${p.userId}/sessions/${victimSid}/end`,
        {
          method: "POST",
          headers: {
            cookie: `acs_console=${cookie.value}`,
            "content-type": "application/x-www-form-urlencoded",
          },
          body: new URLSearchParams({ csrf: csrf!, back: "/console" }).toString(),
        },
      );
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /class="alert" role="alert"[^>]*>[A-Z][^<]*\.</);
      const list = await (await http(`/api/v1/projects/${p.project.id}/users/${p.userId}/sessions`, {
        headers: { authorization: `Bearer ${p.token}` },
      })).json();
      assert.equal(list.pagination.total, 2, "nothing else ended");

      // Everywhere: the rest end too.
      await page.getByRole("button", { name: "Sign out everywhere" }).click();
      await page.waitForURL(/done=all/);
      assert.ok(await page.getByText("The user was signed out everywhere.").isVisible());
      assert.ok(await page.getByText("No live sessions.").isVisible());
      assert.equal((await refreshWith(p.clientId, alive.refresh)).error_code, "invalid_refresh_token");
      assert.equal((await refreshWith(p.clientId, two.refresh_token)).error_code, "invalid_refresh_token");

      // The project's post-logout redirect URIs: a bad second line is named next to the field, then saved.
      await page.goto(`${url}/console/projects/${p.project.id}`);
      const logoutUris = page.getByLabel(/^Post-logout redirect URIs/);
      await logoutUris.fill("https://app.example.com/bye\nftp://nope.example.com/");
      await page.getByRole("button", { name: "Save settings" }).click();
      assert.match(
        (await page.locator("#f-post_logout_redirect_uris-error").textContent())!,
        /^post_logout_redirect_uris\.1: /,
      );
      assert.equal(await logoutUris.getAttribute("aria-invalid"), "true");
      await logoutUris.fill("https://app.example.com/bye");
      await page.getByRole("button", { name: "Save settings" }).click();
      await page.waitForURL(/done=1/);
      const saved = await p.api.projects.getProject(p.project.id);
      assert.deepEqual(saved.post_logout_redirect_uris, ["https://app.example.com/bye"]);
      assert.deepEqual(saved.redirect_uris, [REDIRECT_URI]);
      await ctx.close();
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);
