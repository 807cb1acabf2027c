/**
 * The console's organization pages in Chromium, on the shared test service, each test with a project of its own:
 * an operator creates an organization, edits it (its second-factor policy too), adds members by address and by id
 * with organization roles, changes and removes them, invites an address, resends and revokes, sees the user's
 * organizations on the user's page, creates an organization role, and deletes the organization after its
 * confirmation, every step seen through the admin API; at phone width nothing overflows. A project's own user
 * without organizations:update sees no buttons and a crafted form is refused in plain words; one with it is
 * refused the second-factor policy and a role whose permissions it lacks, in the API's words.
 */
import assert from "node:assert/strict";
import { baseUrl, newProject, permissionIds, test, type TestProject } from "./helpers.ts";
import { hasChromium, launch, sharedOperator, SHOTS, signIn, tab } from "./console_support.ts";
import type { Browser, Page } from "./browser_deps.ts";

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

/** The admin API of the test's project, as its admin client; a refusal fails the test. */
function adminOf(url: string, p: TestProject) {
  // deno-lint-ignore no-explicit-any
  return async (method: string, path: string, body?: unknown): Promise<any> => {
    const answer = await fetch(`${url}/api/v1/projects/${p.project.id}${path}`, {
      method,
      headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await answer.text();
    assert.ok(answer.ok, `${method} ${path}: ${answer.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
}

/** A project with a resource, two organization roles and two users (Alice, Bob). */
async function seeded(url: string) {
  const p = await newProject();
  const admin = adminOf(url, p);
  const board = await admin("POST", "/resources", {
    code: "board",
    name: "Board",
    permissions: [{ code: "read", name: "Read" }, { code: "write", name: "Write" }],
  });
  const perm = (code: string) => board.permissions.find((x: { code: string }) => x.code === code).id;
  const orgAdmin = await admin("POST", "/roles", {
    code: "org-admin",
    name: "Company admin",
    scope: "organization",
    permission_ids: [perm("read"), perm("write")],
  });
  const orgMember = await admin("POST", "/roles", {
    code: "org-member",
    name: "Company member",
    scope: "organization",
    permission_ids: [perm("read")],
  });
  const alice = await admin("POST", "/users", {
    display_name: "Alice",
    email: "alice@acme.example",
    password: "alice password 1",
  });
  const bob = await admin("POST", "/users", { display_name: "Bob", external_user_id: "bob-7" });
  return { p, admin, board, perm, orgAdmin, orgMember, alice, bob };
}

/** A page at a width, signed in to the console (the system project's, or with `project` a project's own). */
async function signedIn(
  browser: Browser,
  viewport: { width: number; height: number },
  who: { email: string; password: string },
  violations: string[],
  project?: string,
) {
  const url = await baseUrl();
  const ctx = await browser.newContext({ viewport });
  ctx.setDefaultTimeout(15_000);
  const page = await ctx.newPage();
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  if (project) {
    await page.goto(`${url}/console/signin?project=${project}`);
  } else {
    await page.goto(`${url}/console`);
    await page.getByRole("button", { name: "Continue to sign-in" }).click();
  }
  await signIn(page, who.email, who.password);
  await page.waitForURL(project ? new RegExp(`/console/projects/${project}$`) : /\/console\/projects$/);
  return page;
}

async function noOverflow(page: Page) {
  const wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth");
  assert.ok((wide as number) <= 0, `${page.url()}: ${wide} px too wide`);
}

/**
 * A screenshot of the viewport into docs/console/, with UPDATE_SCREENSHOTS=1 only: nothing reads it otherwise,
 * and Chromium's capture can fail on a loaded machine (`Page.captureScreenshot`), which is not this test's subject.
 */
const shot = async (page: Page, name: string) => {
  if (Deno.env.get("UPDATE_SCREENSHOTS") !== "1") return;
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname });
};

const status = async (page: Page) => (await page.getByRole("status").textContent())?.trim();
const alert = async (page: Page) => (await page.getByRole("alert").first().textContent())?.trim();
const section = (page: Page, name: string) =>
  page.getByRole("navigation", { name: /^Organization / }).getByRole("link", { name, exact: true }).click();

test(
  "console: an operator creates an organization, edits it, adds members with roles, changes and removes them, invites, resends, revokes and deletes it",
  async () => {
    const url = await baseUrl();
    const { p, admin, board, orgAdmin, orgMember, alice, bob } = await seeded(url);
    const operator = await sharedOperator();
    const browser = await launch();
    const violations: string[] = [];
    const tag = crypto.randomUUID().slice(0, 8);
    try {
      const page = await signedIn(browser, DESKTOP, operator, violations);
      await page.goto(`${url}/console/projects/${p.project.id}`);
      await tab(page, "Organizations");
      assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Organizations");

      // Create: a public mail domain is refused next to the field, nothing is created; then created.
      await page.getByRole("link", { name: "Create organization" }).click();
      await page.getByLabel("Name", { exact: true }).fill("Acme");
      await page.getByLabel(/^Description/).fill("Our first customer");
      await page.getByLabel(/^Domains/).fill(`acme-${tag}.example\ngmail.com`);
      await page.getByRole("button", { name: "Create organization" }).click();
      assert.match((await page.locator("#f-domains-error").textContent())!, /^domains\.1: /);
      assert.equal((await admin("GET", "/organizations")).pagination.total, 0);
      await page.getByLabel(/^Domains/).fill(`acme-${tag}.example`);
      await page.getByRole("button", { name: "Create organization" }).click();
      await page.waitForURL(/\/organizations\/[^/]+\?done=created$/);
      assert.equal(await status(page), "The organization was created.");
      const orgId = new URL(page.url()).pathname.split("/").pop()!;
      const created = await admin("GET", `/organizations/${orgId}`);
      assert.equal(created.name, "Acme");
      assert.equal(created.description, "Our first customer");
      assert.deepEqual(created.domains, [`acme-${tag}.example`]);

      // Edit: name, domains and the second-factor policy (an operator covers the whole project).
      await page.getByLabel("Name", { exact: true }).fill("Acme Corp");
      await page.getByLabel(/^Domains/).fill(`acme-${tag}.example\nACME-${tag}.co.uk`);
      await page.getByLabel("Second factor for its members").selectOption("required");
      // Joining by domain, with the role members who join get.
      await page.getByLabel(/^A user who signs in with a verified address of these domains joins/).check();
      await page.getByLabel("Company member (org-member)").check();
      await page.getByRole("button", { name: "Save organization" }).click();
      await page.waitForURL(/done=saved$/);
      assert.equal(await status(page), "Saved.");
      const saved = await admin("GET", `/organizations/${orgId}`);
      assert.equal(saved.name, "Acme Corp");
      assert.equal(saved.mfa, "required");
      assert.equal(saved.join_by_domain, true);
      assert.deepEqual(saved.default_role_ids, [orgMember.id]);
      assert.match(
        (await page.locator("dl.facts").textContent())!,
        /Joining by domainon, with Company member/,
      );
      assert.deepEqual(saved.domains, [`acme-${tag}.co.uk`, `acme-${tag}.example`]);
      assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Organization Acme Corp");

      // The list finds it by a domain.
      await tab(page, "Organizations");
      await page.getByLabel(/^Search organizations/).fill(`${tag}.co.uk`);
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByRole("link", { name: "Acme Corp" }).click();

      // Members: Alice by address as an admin, Bob by id as a member; an unknown address is refused.
      await section(page, "Members");
      assert.match((await page.locator("main .card").textContent())!, /No members yet/);
      await page.getByLabel(/^User \(email or user id\)/).fill("nobody@acme.example");
      await page.getByRole("button", { name: "Add member" }).click();
      assert.match(
        (await page.locator("#f-user-error").textContent())!,
        /no user of this project has this address/,
      );
      await page.getByLabel(/^User \(email or user id\)/).fill("ALICE@acme.example");
      await page.getByLabel("Company admin (org-admin)").check();
      await page.getByRole("button", { name: "Add member" }).click();
      await page.waitForURL(/done=added$/);
      assert.equal(await status(page), "The member was added.");
      await page.getByLabel(/^User \(email or user id\)/).fill(bob.id);
      await page.getByLabel("Company member (org-member)").check();
      await page.getByRole("button", { name: "Add member" }).click();
      await page.waitForURL(/done=added$/);
      const row = (name: string) => page.getByRole("row").filter({ has: page.getByRole("link", { name }) });
      assert.match((await row("Alice").textContent())!, /Company admin/);
      assert.match((await row("Bob").textContent())!, /Company member/);
      assert.deepEqual((await admin("GET", `/organizations/${orgId}/members/${alice.id}`)).role_ids, [
        orgAdmin.id,
      ]);
      // Adding her again: the API's conflict, in its words.
      await page.getByLabel(/^User \(email or user id\)/).fill(alice.id);
      await page.getByRole("button", { name: "Add member" }).click();
      assert.equal(await alert(page), "The user is already a member of this organization.");
      assert.equal(
        await page.locator("#f-user-error").textContent(),
        "is a member of this organization already",
      );

      // Alice's roles change: member instead of admin.
      await page.goto(`${url}/console/projects/${p.project.id}/organizations/${orgId}/members`);
      await page.getByRole("link", { name: "Alice" }).click();
      assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Alice in Acme Corp");
      await page.getByLabel("Company admin (org-admin)").uncheck();
      await page.getByLabel("Company member (org-member)").check();
      await page.getByRole("button", { name: "Save roles" }).click();
      await page.waitForURL(/done=saved$/);
      assert.equal(await status(page), "The member's roles were saved.");
      assert.deepEqual((await admin("GET", `/organizations/${orgId}/members/${alice.id}`)).role_ids, [
        orgMember.id,
      ]);

      // Bob is removed.
      await page.getByRole("link", { name: "Bob" }).click();
      await page.getByRole("button", { name: "Remove member" }).click();
      await page.waitForURL(/done=removed$/);
      assert.equal(await status(page), "The member was removed.");
      const members = await admin("GET", `/organizations/${orgId}/members`);
      assert.deepEqual(members.data.map((m: { user_id: string }) => m.user_id), [alice.id]);

      // Alice's page lists her organization with her role there, linked.
      await page.goto(`${url}/console/projects/${p.project.id}/users/${alice.id}`);
      const orgs = page.locator("#organization-list");
      assert.match((await orgs.textContent())!, /Acme Corp:\s*Company member/);
      await orgs.getByRole("link", { name: "Acme Corp" }).click();
      assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Organization Acme Corp");

      // Invitations: invite an address with a role; resend; revoke.
      await section(page, "Invitations");
      await page.getByLabel(/^Email address/).fill(`carol@acme-${tag}.example`);
      await page.getByLabel("Company member (org-member)").check();
      await page.getByLabel("The link works for").selectOption("3");
      await page.getByRole("button", { name: "Send invitation" }).click();
      await page.waitForURL(/done=sent$/);
      assert.equal(await status(page), "The invitation is on its way.");
      const invitation = (await admin("GET", `/organizations/${orgId}/invitations`)).data[0];
      assert.equal(invitation.email, `carol@acme-${tag}.example`);
      assert.equal(invitation.status, "pending");
      assert.deepEqual(invitation.role_ids, [orgMember.id]);
      const hours = (Date.parse(invitation.expires_at) - Date.now()) / 3_600_000;
      assert.ok(hours > 71 && hours <= 72, `expires in ${hours} h`);
      const carolRow = page.getByRole("row").filter({ hasText: `carol@acme-${tag}.example` });
      assert.match((await carolRow.textContent())!, /pending/);
      await page.getByRole("button", { name: `Resend the invitation to carol@acme-${tag}.example` }).click();
      await page.waitForURL(/done=resent$/);
      assert.equal(await status(page), "The invitation was mailed again, with a new link.");
      assert.equal(
        (await admin("GET", `/organizations/${orgId}/invitations/${invitation.id}`)).sent_count,
        2,
      );
      await page.getByRole("button", { name: `Revoke the invitation to carol@acme-${tag}.example` }).click();
      await page.waitForURL(/done=revoked$/);
      assert.equal(
        (await admin("GET", `/organizations/${orgId}/invitations/${invitation.id}`)).status,
        "revoked",
      );
      assert.match((await carolRow.textContent())!, /revoked/);
      assert.equal(await page.getByRole("button", { name: /^Revoke the invitation/ }).count(), 0);
      // The status filter.
      await page.getByLabel("Status").selectOption("pending");
      await page.getByRole("button", { name: "Search" }).click();
      assert.match((await page.locator("main .card").textContent())!, /No invitations found/);

      // Its own sign-in: none yet, and the way to add one, for this organization.
      await section(page, "Details");
      assert.match((await page.locator("main").textContent())!, /No identity provider of its own/);
      await page.getByRole("link", { name: "Add an identity provider for Acme Corp" }).click();
      assert.equal(await page.getByLabel("Whose sign-in").inputValue(), orgId);

      // An object of the organization, added in the object browser; then the project's again.
      await page.goto(`${url}/console/projects/${p.project.id}/resources/${board.id}/objects`);
      await page.getByLabel("Object id", { exact: true }).fill("board-17");
      await page.getByLabel("Organization", { exact: true }).selectOption({ label: "Acme Corp" });
      await page.getByRole("button", { name: "Add object" }).click();
      await page.waitForURL(/done=added$/);
      const object = () => admin("GET", `/resources/${board.id}/objects/board-17`);
      assert.equal((await object()).organization_id, orgId);
      await page.getByRole("link", { name: "board-17" }).click();
      const itsOrganization = page.getByLabel("Organization of this object");
      assert.equal(await itsOrganization.inputValue(), orgId);
      await itsOrganization.selectOption({ label: "None: the project's" });
      await page.getByRole("button", { name: "Save properties" }).click();
      await page.waitForURL(/done=saved$/);
      assert.equal((await object()).organization_id, null);

      // Roles: the scope of each, and a new organization role.
      await tab(page, "Roles");
      const roleRow = page.getByRole("row").filter({
        has: page.getByRole("link", { name: "Company admin" }),
      });
      assert.match((await roleRow.textContent())!, /organization/);
      await page.getByRole("link", { name: "Create role" }).click();
      await page.getByLabel("Name", { exact: true }).fill("Company auditor");
      await page.getByLabel("Code", { exact: true }).fill("org-auditor");
      await page.getByLabel("Scope").selectOption("organization");
      await page.getByRole("button", { name: "Create role" }).click();
      await page.waitForURL(/roles\?done=1/);
      const roles = await admin("GET", "/roles?scope=organization&page_size=100");
      assert.deepEqual(roles.data.map((r: { code: string }) => r.code).sort(), [
        "org-admin",
        "org-auditor",
        "org-member",
      ]);
      await page.getByRole("link", { name: "Company auditor" }).click();
      assert.match((await page.locator("main").textContent())!, /Scope: organization/);
      // A user's role is chosen among the project's roles only.
      await page.goto(`${url}/console/projects/${p.project.id}/users/${alice.id}`);
      assert.equal(
        await page.getByLabel("Role", { exact: true }).locator("option", { hasText: "Company" }).count(),
        0,
      );

      // Each organization page at desktop and phone width: no sideways overflow, a screenshot.
      const phone = await signedIn(browser, PHONE, operator, violations);
      const base = `${url}/console/projects/${p.project.id}/organizations`;
      const pages: [string, string][] = [
        ["organizations", ""],
        ["organization-new", "/new"],
        ["organization", `/${orgId}`],
        ["organization-members", `/${orgId}/members`],
        ["organization-member", `/${orgId}/members/${alice.id}`],
        ["organization-invitations", `/${orgId}/invitations`],
        ["delete-organization", `/${orgId}/delete`],
      ];
      for (const [name, path] of pages) {
        for (const [width, at] of [["desktop", page], ["phone", phone]] as const) {
          const res = await at.goto(`${base}${path}`);
          assert.equal(res?.status(), 200, `${path} at ${width}`);
          await noOverflow(at);
          await shot(at, `${name}-${width}`);
        }
      }
      await phone.context().close();

      // Delete, after the confirmation page that says what goes with it.
      await page.goto(`${base}/${orgId}`);
      await page.getByRole("link", { name: "Delete this organization…" }).click();
      assert.match((await page.locator("main").textContent())!, /its members \(1 member\)/);
      await page.getByRole("button", { name: "Delete organization" }).click();
      await page.waitForURL(/organizations\?deleted=1$/);
      assert.equal(await status(page), "Deleted.");
      const gone = await fetch(`${url}/api/v1/projects/${p.project.id}/organizations/${orgId}`, {
        headers: { authorization: `Bearer ${p.token}` },
      });
      assert.equal(gone.status, 404);
      await gone.body?.cancel();
      assert.deepEqual(violations, []);
      await page.context().close();
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);

/** A user of the project who signs in to its console, with a role of exactly these admin permissions. */
async function projectUser(url: string, p: TestProject, codes: string[], name: string) {
  const ids = await permissionIds(p);
  const admin = adminOf(url, p);
  const role = await admin("POST", "/roles", {
    code: name.toLowerCase(),
    name,
    permission_ids: codes.map((c) => ids[c]),
  });
  const email = `${name.toLowerCase()}@example.com`;
  const password = `${name} password 1`;
  await admin("POST", "/users", { display_name: name, email, password, role_id: role.id });
  return { email, password };
}

test(
  "console: without organizations:update the organization pages show no buttons and a crafted form is refused in plain words; with it, mfa and an uncovered role are refused",
  async () => {
    const url = await baseUrl();
    const { p, admin, orgAdmin, orgMember, alice } = await seeded(url);
    const org = await admin("POST", "/organizations", { name: "Globex", domains: ["globex.example"] });
    await admin("POST", `/organizations/${org.id}/members`, { user_id: alice.id, role_ids: [orgMember.id] });
    await admin("POST", `/organizations/${org.id}/invitations`, {
      email: "dan@globex.example",
      role_ids: [orgMember.id],
    });
    const reader = await projectUser(url, p, ["organizations:read", "roles:read", "users:read"], "Reader");
    const manager = await projectUser(
      url,
      p,
      ["organizations:read", "organizations:update", "roles:read", "users:read", "board:read"],
      "Manager",
    );
    const browser = await launch();
    const violations: string[] = [];
    const base = `${url}/console/projects/${p.project.id}/organizations`;
    try {
      // The reader: every page, no button that changes anything.
      const page = await signedIn(browser, DESKTOP, reader, violations, p.project.id);
      await tab(page, "Organizations");
      assert.equal(await page.getByRole("link", { name: "Create organization" }).count(), 0);
      await page.getByRole("link", { name: "Globex" }).click();
      assert.equal(await page.getByRole("button", { name: "Save organization" }).count(), 0);
      assert.equal(await page.getByRole("link", { name: /^Delete this organization/ }).count(), 0);
      assert.ok(await page.getByLabel("Name", { exact: true }).isDisabled());
      await section(page, "Members");
      assert.ok(await page.getByRole("link", { name: "Alice" }).isVisible());
      assert.equal(await page.getByRole("button", { name: "Add member" }).count(), 0);
      await page.getByRole("link", { name: "Alice" }).click();
      assert.equal(await page.getByRole("button", { name: "Save roles" }).count(), 0);
      assert.equal(await page.getByRole("button", { name: "Remove member" }).count(), 0);
      await section(page, "Invitations");
      assert.ok(await page.getByRole("cell", { name: "dan@globex.example" }).isVisible());
      assert.equal(await page.getByRole("button", { name: "Send invitation" }).count(), 0);
      assert.equal(await page.getByRole("button", { name: /^(Resend|Revoke) the invitation/ }).count(), 0);
      // The form is not offered; posting it anyway (with this session's CSRF token) is refused by the API.
      const csrf = await page.locator("input[name=csrf]").first().getAttribute("value");
      const cookie = (await page.context().cookies()).find((c) => c.name === "acs_console")!;
      const crafted = await fetch(`${base}/${org.id}/members/new`, {
        method: "POST",
        headers: {
          cookie: `acs_console=${cookie.value}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ csrf: csrf!, back: "/console", user: alice.id }).toString(),
      });
      assert.equal(crafted.status, 403);
      assert.match(
        await crafted.text(),
        /You are not allowed to do this: the token lacks the permission organizations:update/,
      );
      assert.deepEqual(violations, []);
      await page.context().close();

      // The manager may change the organization, but not its second-factor policy (only a caller covering the
      // whole project may), and may not give a role holding what they do not hold.
      const m = await signedIn(browser, DESKTOP, manager, violations, p.project.id);
      await m.goto(`${base}/${org.id}`);
      await m.getByLabel("Second factor for its members").selectOption("required");
      await m.getByRole("button", { name: "Save organization" }).click();
      assert.match(
        (await alert(m))!,
        /^You are not allowed to do this: setting an organization's second-factor policy is reserved to the project's admin client and the system project's operators\.$/,
      );
      assert.match((await m.locator("#f-mfa-error").textContent())!, /covers every permission/);
      assert.equal((await admin("GET", `/organizations/${org.id}`)).mfa, "inherit");
      // The same form without the policy's change saves.
      await m.getByLabel("Second factor for its members").selectOption("inherit");
      await m.getByLabel(/^Description/).fill("Second customer");
      await m.getByRole("button", { name: "Save organization" }).click();
      await m.waitForURL(/done=saved$/);
      assert.equal((await admin("GET", `/organizations/${org.id}`)).description, "Second customer");
      // Giving the admin role (board:write, which the manager lacks) is refused with the codes.
      await m.goto(`${base}/${org.id}/members/${alice.id}`);
      await m.getByLabel("Company admin (org-admin)").check();
      await m.getByRole("button", { name: "Save roles" }).click();
      assert.match((await alert(m))!, /^You are not allowed to do this: .*board:write/);
      assert.deepEqual((await admin("GET", `/organizations/${org.id}/members/${alice.id}`)).role_ids, [
        orgMember.id,
      ]);
      assert.notEqual(orgAdmin.id, orgMember.id);
      assert.deepEqual(violations, []);
      await m.context().close();
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);
