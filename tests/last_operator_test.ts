/**
 * The last operator stays: deleting, deactivating or demoting the system project's last active user whose
 * role holds every system permission answers 409 `last_operator` (a user's role changed, the role's
 * permissions cut, the role deleted with its users moved to a lesser one); with a second operator it is
 * allowed, and two changes at once never remove both. On a service and database of the test's own, so that
 * no other test's operator counts.
 */
import assert from "node:assert/strict";
import { isolatedDatabase, startWith, systemTokenAt, test } from "./helpers.ts";

test("the system project's last operator cannot be deleted, deactivated or demoted (409 last_operator); a second one allows it", async () => {
  const iso = await isolatedDatabase();
  const svc = await startWith(iso.env);
  try {
    const token = await systemTokenAt(svc.url);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${svc.url}/api/v1/projects/system${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: res.status === 204 ? null : await res.json() };
    };
    const ok = async (method: string, path: string, body?: unknown) => {
      const res = await call(method, path, body);
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const refused = async (method: string, path: string, body: unknown, field: string) => {
      const res = await call(method, path, body);
      assert.equal(res.status, 409, `${method} ${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, "last_operator");
      assert.deepEqual(res.body.details, [{
        field,
        issue: "would leave no active user whose role holds every system permission",
      }]);
    };
    const resources = (await ok("GET", "/resources?is_default=true&page_size=100")).data as {
      permissions: { id: string }[];
    }[];
    const all = resources.flatMap((r) => r.permissions.map((p) => p.id)).sort();
    const op = await ok("POST", "/roles", { code: "op", name: "Operator", permission_ids: all });
    const lesser = await ok("POST", "/roles", {
      code: "lesser",
      name: "Lesser",
      permission_ids: all.slice(1),
    });
    const user = (name: string, roleId: string | null, isActive = true) =>
      ok("POST", "/users", {
        display_name: name,
        external_user_id: name,
        role_id: roleId,
        is_active: isActive,
      });
    const update = (u: { id: string; display_name: string }, change: Record<string, unknown>) => ({
      display_name: u.display_name,
      external_user_id: u.display_name,
      is_active: true,
      role_id: op.id,
      ...change,
    });
    const ann = await user("ann", op.id);
    // An inactive user with the role is no operator.
    await user("idle", op.id, false);

    await refused("DELETE", `/users/${ann.id}`, undefined, "user_id");
    await refused("PUT", `/users/${ann.id}`, update(ann, { is_active: false }), "is_active");
    await refused("PUT", `/users/${ann.id}`, update(ann, { role_id: lesser.id }), "role_id");
    await refused("PUT", `/users/${ann.id}`, update(ann, { role_id: null }), "role_id");
    await refused(
      "PUT",
      `/roles/${op.id}`,
      { code: "op", name: "Operator", permission_ids: all.slice(1) },
      "permission_ids",
    );
    await refused("DELETE", `/roles/${op.id}?reassign_role_id=${lesser.id}`, undefined, "reassign_role_id");
    // Nothing changed.
    const still = await ok("GET", `/users/${ann.id}`);
    assert.deepEqual([still.is_active, still.role_id], [true, op.id]);
    assert.deepEqual((await ok("GET", `/roles/${op.id}`)).permission_ids, all);
    // Changes that keep her an operator pass.
    await ok("PUT", `/users/${ann.id}`, update(ann, { display_name: "ann" }));
    await ok("PUT", `/roles/${op.id}`, { code: "op", name: "Operators", permission_ids: all });

    // With a second operator, each change is allowed while the other remains.
    const bob = await user("bob", op.id);
    await ok("PUT", `/users/${ann.id}`, update(ann, { is_active: false }));
    await refused("DELETE", `/users/${bob.id}`, undefined, "user_id");
    await ok("PUT", `/users/${ann.id}`, update(ann, {}));
    await ok("PUT", `/users/${ann.id}`, update(ann, { role_id: lesser.id }));
    await refused("PUT", `/users/${bob.id}`, update(bob, { role_id: lesser.id }), "role_id");
    await ok("PUT", `/users/${ann.id}`, update(ann, {}));
    await ok("DELETE", `/users/${bob.id}`);

    // Two operators removed at once: one goes, the other stays.
    const cid = await user("cid", op.id);
    const both = await Promise.all([call("DELETE", `/users/${ann.id}`), call("DELETE", `/users/${cid.id}`)]);
    assert.deepEqual(both.map((r) => r.status).sort(), [204, 409], JSON.stringify(both));
    const left = both[0].status === 409 ? ann : cid;
    assert.equal((await ok("GET", `/users/${left.id}`)).is_active, true);
  } finally {
    await svc.close();
    await iso.drop();
  }
});
