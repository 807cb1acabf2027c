/**
 * What the tests of conditions share (tests/conditions_test.ts, tests/search_conditions_test.ts): a project
 * whose `doc` resource (read, write, delete) an editor role holds with conditions, and two editors.
 */
import { type Api, clientWith, newProject, type TestProject } from "./helpers.ts";

export const OWNER = "resource.properties.owner == subject.id";
export const REGION = "resource.properties.region == subject.properties.region";

export type Editors = TestProject & {
  doc: Api.Resource;
  perm: Record<string, string>;
  editor: Api.Role;
  alice: Api.User;
  bob: Api.User;
  /** A token holding access:evaluate and access:search. */
  access: string;
};

/**
 * `doc` (read, write, delete); the editor role: read outright, write only on documents the subject owns
 * (OWNER), delete only in the subject's region (REGION). Alice (`alice`, region eu) and Bob (`bob`, region us)
 * are editors.
 */
export async function editors(): Promise<Editors> {
  const p = await newProject();
  const doc = await p.api.resources.createResource(p.project.id, {
    name: "Document",
    code: "doc",
    permissions: [
      { name: "Read", code: "read" },
      { name: "Write", code: "write" },
      { name: "Delete", code: "delete" },
    ],
  });
  const perm = Object.fromEntries(doc.permissions.map((x) => [x.code, x.id]));
  const editor = await p.api.roles.createRole(p.project.id, {
    code: "editor",
    name: "Editor",
    permission_ids: [perm.read, perm.write, perm.delete],
    conditions: [
      { permission_id: perm.write, expression: OWNER },
      { permission_id: perm.delete, expression: REGION },
    ],
  });
  const alice = await p.api.users.createUser(p.project.id, {
    display_name: "Alice",
    external_user_id: "alice",
    role_id: editor.id,
    properties: { region: "eu" },
  });
  const bob = await p.api.users.createUser(p.project.id, {
    display_name: "Bob",
    external_user_id: "bob",
    role_id: editor.id,
    properties: { region: "us" },
  });
  const access = (await clientWith(p, ["access:evaluate", "access:search"])).token;
  return { ...p, doc, perm, editor, alice, bob, access };
}

/**
 * A `folder` resource (read, write) whose member role holds write only on what is not archived, and folders
 * under `root`: `open` and `old` (archived) at 9 hours, `late` at 22, then `more` as they are given.
 */
export async function folders(s: Editors, more: Api.CreateObjectRequest[] = []) {
  const folder = await s.api.resources.createResource(s.project.id, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
  });
  const [read, write] = [folder.permissions[0].id, folder.permissions[1].id];
  const member = await s.api.roles.createRole(s.project.id, {
    code: "member",
    name: "Member",
    permission_ids: [read, write],
    conditions: [{ permission_id: write, expression: 'resource.properties.status != "archived"' }],
  });
  await s.api.objects.createObjects(s.project.id, folder.id, {
    objects: [
      { id: "root" },
      { id: "open", parent_id: "root", properties: { status: "open", hours: 9 } },
      { id: "old", parent_id: "root", properties: { status: "archived", hours: 9 } },
      { id: "late", parent_id: "root", properties: { status: "open", hours: 22 } },
      ...more,
    ],
  });
  return { folder, read, write, member };
}
