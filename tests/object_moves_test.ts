/**
 * Moving an object never widens access silently: a move under an object whose grants (or its ancestors')
 * would reach the moved subtree needs `grants:create` and the roles' permissions, as creating those grants
 * would; the `object.updated` event lists the grants that now reach it.
 */
import assert from "node:assert/strict";
import { Api, clientWith, expectError, http, newProject, test } from "./helpers.ts";

test("moving an object where grants would reach it needs grants:create and the roles' permissions; the event lists them", async () => {
  const p = await newProject();
  const folder = await p.api.resources.createResource(p.project.id, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
  });
  const perm = Object.fromEntries(folder.permissions.map((x) => [x.code, x.id]));
  const editor = await p.api.roles.createRole(p.project.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [perm.read, perm.write],
  });
  const viewer = await p.api.roles.createRole(p.project.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [perm.read],
  });
  const carol = await p.api.users.createUser(p.project.id, {
    display_name: "Carol",
    external_user_id: "carol",
  });
  const dave = await p.api.users.createUser(p.project.id, { display_name: "Dave", external_user_id: "dave" });
  // secret → inner; public → doc → page. Carol edits `secret`, Dave views `public` (and so `doc`).
  await p.api.objects.createObjects(p.project.id, folder.id, {
    objects: [
      { id: "secret" },
      { id: "inner", parent_id: "secret" },
      { id: "public" },
      { id: "doc", parent_id: "public" },
      { id: "page", parent_id: "doc" },
    ],
  });
  const grant = (userId: string, roleId: string, object: string) =>
    p.api.grants.createGrant(p.project.id, {
      subject: { type: Api.GrantSubject.TypeEnum.User, id: userId },
      role_id: roleId,
      object: { type: "folder", id: object },
    });
  const carols = await grant(carol.id, editor.id, "secret");
  const daves = await grant(dave.id, viewer.id, "public");
  const move = (api: typeof p.api, id: string, parent_id: string | null) =>
    api.objects.updateObject(p.project.id, folder.id, id, { parent_id });
  // objects:update and every folder permission, but not grants:create.
  const mover = await clientWith(p, ["objects:update", "objects:read", "folder:read", "folder:write"]);
  // grants:create, but not the editor role's folder:write.
  const narrow = await clientWith(p, ["objects:update", "grants:create", "folder:read"]);
  try {
    const noGrants = await expectError(move(mover.api, "doc", "inner"), 403, "insufficient_permission");
    assert.deepEqual(noGrants.details, [{
      field: "parent_id",
      issue: "the caller does not hold grants:create",
    }]);
    const uncovered = await expectError(move(narrow.api, "doc", "inner"), 403, "insufficient_permission");
    assert.deepEqual(uncovered.details, [{
      field: "parent_id",
      issue: "the caller does not hold folder:write",
    }]);
    // Nothing moved.
    assert.equal((await p.api.objects.getObject(p.project.id, folder.id, "doc")).parent_id, "public");
    assert.equal((await p.api.objects.getObject(p.project.id, folder.id, "page")).depth, 3);

    // To the top no grant reaches it anew: objects:update is enough. Back under `public`, Dave's viewer grant
    // reaches it again: the narrow client covers folder:read and holds grants:create.
    assert.equal((await move(mover.api, "doc", null)).depth, 1);
    await expectError(move(mover.api, "doc", "public"), 403, "insufficient_permission");
    assert.equal((await move(narrow.api, "doc", "public")).parent_id, "public");

    // The project's admin client covers everything: the move happens, and the event lists Carol's grant only
    // (Dave's reached `doc` before the move; it does not after, which widens nothing).
    const moved = await move(p.api, "doc", "inner");
    assert.deepEqual([moved.parent_id, moved.depth], ["inner", 3]);
    assert.equal((await p.api.objects.getObject(p.project.id, folder.id, "page")).depth, 4);
    // Within the subtree of `secret` no grant reaches it anew: objects:update is enough again.
    await p.api.objects.createObject(p.project.id, folder.id, { id: "inner-2", parent_id: "secret" });
    await move(mover.api, "doc", "inner-2");

    const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=object.updated&limit=10`, {
      headers: { authorization: `Bearer ${p.token}` },
    });
    assert.equal(res.status, 200);
    const events = (await res.json()).data as { details: Record<string, unknown> }[];
    assert.deepEqual(events.map((e) => e.details.grants_now_reaching).reverse(), [
      [],
      [{
        id: daves.id,
        subject: { type: "user", id: dave.id },
        role_id: viewer.id,
        object_id: "public",
      }],
      [{
        id: carols.id,
        subject: { type: "user", id: carol.id },
        role_id: editor.id,
        object_id: "secret",
      }],
      [],
    ]);
  } finally {
    await p.api.resources.deleteResource(p.project.id, folder.id);
    for (const u of [carol, dave]) await p.api.users.deleteUser(p.project.id, u.id);
    for (const r of [editor, viewer]) await p.api.roles.deleteRole(p.project.id, r.id, undefined);
    for (const c of [mover, narrow]) await p.api.clients.deleteClient(p.project.id, c.id);
  }
});
