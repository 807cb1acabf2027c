/**
 * The console's object browser (a resource's tree, one level at a time) and a user's grants (grant with an
 * expiry, refusals next to the fields, revoke), in Chromium at desktop and phone width, under the strict CSP.
 */
import assert from "node:assert/strict";
import { baseUrl, newProject, test } from "./helpers.ts";
import { hasChromium, launch, sharedOperator, signIn } from "./console_support.ts";

test(
  "console: browse a resource's objects as a tree, add and delete; grant a user a role on one and revoke it",
  async () => {
    const url = await baseUrl();
    const operator = await sharedOperator();
    const p = await newProject();
    const folder = await p.api.resources.createResource(p.project.id, {
      name: "Folder",
      code: "folder",
      permissions: [{ name: "Read", code: "read" }],
    });
    await p.api.roles.createRole(p.project.id, {
      code: "viewer",
      name: "Viewer",
      permission_ids: [folder.permissions[0].id],
    });
    const carol = await p.api.users.createUser(p.project.id, {
      display_name: "Carol",
      external_user_id: "carol",
    });
    await p.api.objects.createObjects(p.project.id, folder.id, {
      objects: [{ id: "root", name: "Root folder" }, { id: "root/team", parent_id: "root" }],
    });
    const browser = await launch();
    try {
      for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
        const ctx = await browser.newContext({ viewport });
        ctx.setDefaultTimeout(15_000);
        const page = await ctx.newPage();
        const violations: string[] = [];
        page.on(
          "console",
          (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()),
        );
        await page.goto(`${url}/console`);
        await page.getByRole("button", { name: "Continue to sign-in" }).click();
        await signIn(page, operator.email, operator.password);
        await page.waitForURL(/\/console\/projects/);
        const noOverflow = async () =>
          assert.ok(
            (await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")) as number <= 0,
            `${page.url()} overflows at ${viewport.width} px`,
          );
        const tag = viewport.width;

        // From the resource's page to its tree; the top level, then one level down.
        await page.goto(`${url}/console/projects/${p.project.id}/resources/${folder.id}`);
        await page.getByRole("link", { name: "Objects of Folder" }).click();
        assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Objects of Folder");
        await noOverflow();
        await page.getByLabel("Object id", { exact: true }).fill(`top-${tag}`);
        await page.getByRole("button", { name: "Add object" }).click();
        assert.equal(await page.getByRole("status").textContent(), "The object was added.");
        assert.ok(await page.getByRole("link", { name: `top-${tag}` }).isVisible());
        await page.getByRole("link", { name: "Root folder" }).click();
        assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Folder: Root folder");
        assert.ok(await page.getByRole("link", { name: "root/team" }).isVisible());
        // A bad id is refused next to its field, and nothing is added.
        await page.getByLabel("Object id", { exact: true }).fill("has space");
        await page.getByRole("button", { name: "Add object" }).click();
        assert.ok(await page.locator("#f-id-error").isVisible());
        await page.getByLabel("Object id", { exact: true }).fill(`root/doc-${tag}`);
        await page.getByRole("button", { name: "Add object" }).click();
        assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Folder: Root folder");
        await page.getByRole("link", { name: `root/doc-${tag}` }).click();
        assert.ok(
          await page.getByRole("navigation", { name: "Path" }).getByRole("link", { name: "Root folder" })
            .isVisible(),
        );
        await noOverflow();

        // Carol's grants: grant the viewer role on root with an expiry, a refusal first, then revoke.
        await page.goto(`${url}/console/projects/${p.project.id}/users/${carol.id}`);
        await page.getByRole("link", { name: "Roles of Carol on objects" }).click();
        assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Grants of Carol");
        await page.getByLabel("Role").selectOption({ label: "Viewer (viewer)" });
        await page.getByLabel("Resource").selectOption({ label: "Folder" });
        await page.getByLabel("Object id", { exact: true }).fill("nowhere");
        await page.getByRole("button", { name: "Grant" }).click();
        assert.match((await page.getByRole("alert").textContent())!, /no such object/);
        assert.equal(await page.locator("#f-object-error").textContent(), "no object of folder has this id");
        await page.getByLabel("Object id", { exact: true }).fill("root");
        await page.getByLabel(/^Expires/).fill("2099-01-31T12:00");
        // A condition CEL refuses is shown next to its field with its position; then a good one.
        await page.getByLabel(/^Condition/).fill("resource.status ==");
        await page.getByRole("button", { name: "Grant" }).click();
        assert.match((await page.locator("#f-condition-error").textContent())!, /line 1, column/);
        await page.getByLabel(/^Condition/).fill("resource.properties.status != 'archived'");
        await page.getByRole("button", { name: "Grant" }).click();
        assert.equal(await page.getByRole("status").textContent(), "The role was granted.");
        assert.ok(
          await page.getByRole("cell", { name: "resource.properties.status != 'archived'" }).isVisible(),
        );
        assert.ok(await page.locator('time[datetime="2099-01-31T12:00:00.000Z"]').isVisible());
        await noOverflow();
        const grants = await p.api.grants.listGrants(
          p.project.id,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          carol.id,
          undefined,
          undefined,
          undefined,
          undefined,
        );
        assert.equal(grants.data.length, 1);
        assert.equal(grants.data[0].expires_at, "2099-01-31T12:00:00.000Z");
        assert.equal(grants.data[0].condition, "resource.properties.status != 'archived'");
        // The grant shows on the object's page too.
        await page.getByRole("link", { name: "root", exact: true }).click();
        assert.ok(await page.getByRole("cell", { name: /carol|Carol|[0-9a-f-]{36}/ }).first().isVisible());
        await page.getByRole("button", { name: /^Revoke the grant to / }).click();
        assert.equal(await page.getByRole("status").textContent(), "The grant was revoked.");

        // Delete an object with what is inside it.
        await page.goto(
          `${url}/console/projects/${p.project.id}/resources/${folder.id}/objects?at=root%2Fteam`,
        );
        await page.getByRole("button", { name: "Delete object" }).click();
        assert.equal(await page.getByRole("status").textContent(), "The object was deleted.");
        assert.deepEqual(violations, []);
        await ctx.close();
        if (tag === 1280) {
          await p.api.objects.createObject(p.project.id, folder.id, { id: "root/team", parent_id: "root" });
        }
      }
    } finally {
      await browser.close();
    }
  },
  { ignore: !hasChromium },
);
