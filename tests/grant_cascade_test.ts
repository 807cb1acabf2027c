/**
 * Every ended grant is recorded: deleting a user, a client, a role, an object (with its subtree) or a resource
 * ends the grants on it or of it, each with its own `grant.deleted` event naming the cause, and so with its
 * webhooks' deliveries, in the deletion's transaction.
 */
import assert from "node:assert/strict";
import { Api, expectError, http, newProject, test } from "./helpers.ts";

type Event = {
  id: string;
  type: string;
  target: { type: string; id: string };
  details: Record<string, unknown>;
};

test("deleting a user, client, role, object or resource records one grant.deleted per grant it ends, with webhooks", async () => {
  const p = await newProject();
  const pid = p.project.id;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await http(`/api/v1/projects/${pid}${path}`, {
      method,
      headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
    return res.status === 204 ? null : await res.json();
  };
  const hook = await call("POST", "/webhooks", {
    url: "https://example.com/hook",
    event_types: ["grant.deleted"],
  });
  const folder = await p.api.resources.createResource(pid, {
    name: "Folder",
    code: "folder",
    permissions: [{ name: "Read", code: "read" }],
  });
  const role = await p.api.roles.createRole(pid, {
    code: "r",
    name: "R",
    permission_ids: [folder.permissions[0].id],
  });
  const other = await p.api.roles.createRole(pid, {
    code: "o",
    name: "O",
    permission_ids: [folder.permissions[0].id],
  });
  const ann = await p.api.users.createUser(pid, { display_name: "Ann", external_user_id: "ann" });
  const bob = await p.api.users.createUser(pid, { display_name: "Bob", external_user_id: "bob" });
  const client = await p.api.clients.createClient(pid, { name: "worker" });
  // a → b → c; d.
  await p.api.objects.createObjects(pid, folder.id, {
    objects: [{ id: "a" }, { id: "b", parent_id: "a" }, { id: "c", parent_id: "b" }, { id: "d" }],
  });
  const grant = (type: "user" | "client", id: string, roleId: string, object: string) =>
    p.api.grants.createGrant(pid, {
      subject: { type: type as Api.GrantSubject.TypeEnum, id },
      role_id: roleId,
      object: { type: "folder", id: object },
    });
  const ofAnn = await grant("user", ann.id, role.id, "d");
  const ofClient = await grant("client", client.id, role.id, "d");
  const ofOther = await grant("user", bob.id, other.id, "d");
  const onB = await grant("user", bob.id, role.id, "b");
  const onC = await grant("client", client.id, role.id, "c");
  const onA = await grant("user", bob.id, role.id, "a");
  const onD = await grant("user", bob.id, role.id, "d");
  try {
    await p.api.users.deleteUser(pid, ann.id);
    await p.api.clients.deleteClient(pid, client.id);
    await p.api.roles.deleteRole(pid, other.id, undefined);
    await p.api.objects.deleteObject(pid, folder.id, "b", true);
    await p.api.resources.deleteResource(pid, folder.id);
    for (const g of [ofAnn, ofClient, ofOther, onB, onC, onA, onD]) {
      await expectError(p.api.grants.getGrant(pid, g.id), 404, "grant_not_found");
    }

    const events = (await call("GET", "/audit-events?type=grant.deleted&limit=50")).data as Event[];
    const expected = new Map([
      [ofAnn.id, { type: "user", id: ann.id }],
      [ofClient.id, { type: "client", id: client.id }],
      // The client's grant on c ends with the client, before the object's deletion.
      [onC.id, { type: "client", id: client.id }],
      [ofOther.id, { type: "role", id: other.id }],
      [onB.id, { type: "object", id: "b" }],
      [onA.id, { type: "resource", id: folder.id }],
      [onD.id, { type: "resource", id: folder.id }],
    ]);
    assert.deepEqual(events.map((e) => e.target.id).sort(), [...expected.keys()].sort());
    for (const e of events) {
      assert.equal(e.target.type, "grant");
      assert.deepEqual(e.details.cause, expected.get(e.target.id), e.target.id);
    }
    const annEvent = events.find((e) => e.target.id === ofAnn.id)!;
    assert.deepEqual(annEvent.details, {
      subject: { type: "user", id: ann.id },
      role_id: role.id,
      resource_id: folder.id,
      object_id: "d",
      expires_at: null,
      condition: null,
      cause: { type: "user", id: ann.id },
    });
    // The object's deletion counts the grant it ended.
    const [objectDeleted] = (await call("GET", "/audit-events?type=object.deleted&limit=1")).data as Event[];
    assert.equal(objectDeleted.details.grants_deleted, 1);
    assert.equal(objectDeleted.details.objects_deleted, 2);

    // Each event has its delivery to the webhook that subscribes to grant.deleted.
    const deliveries = (await call("GET", `/webhooks/${hook.id}/deliveries?page_size=100`)).data as {
      event_id: string;
      event_type: string;
    }[];
    assert.deepEqual(
      deliveries.map((d) => d.event_id).sort(),
      events.map((e) => e.id).sort(),
    );
    assert.ok(deliveries.every((d) => d.event_type === "grant.deleted"));
  } finally {
    await call("DELETE", `/webhooks/${hook.id}`);
    await p.api.users.deleteUser(pid, bob.id);
    await p.api.roles.deleteRole(pid, role.id, undefined);
  }
});
