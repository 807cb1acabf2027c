/**
 * Admins and a user's second factors: read them (`users:read`), remove the authenticator (`users:update` and
 * covering the user), refused otherwise, audited; an admin's password reset or deactivation leaves them.
 */
import assert from "node:assert/strict";
import { clientToken, expectError, http, loginProject, permissionIds, test } from "./helpers.ts";
import { Browser } from "./oidc_support.ts";
import { enrolTotp, passwordStep } from "./mfa_support.ts";

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

test("an admin reads a user's second factors and removes the authenticator; audited", async () => {
  const p = await loginProject();
  const base = `/api/v1/projects/${p.project.id}/users/${p.userId}/second-factors`;
  const before = await http(base, { headers: bearer(p.token) });
  assert.equal(before.status, 200);
  assert.deepEqual(await before.json(), {
    totp: false,
    totp_enrolled_at: null,
    recovery_codes_left: 0,
    passkeys: [],
  });
  await enrolTotp(p);
  const after = await (await http(base, { headers: bearer(p.token) })).json();
  assert.equal(after.totp, true);
  assert.equal(after.recovery_codes_left, 10);
  assert.ok(!Number.isNaN(Date.parse(after.totp_enrolled_at)));

  // The admin's password reset and a deactivation leave the factors.
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: false,
    password: "another password 1",
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: true,
  });
  assert.equal((await (await http(base, { headers: bearer(p.token) })).json()).totp, true);
  const step = await passwordStep(new Browser(), { ...p, password: "another password 1" });
  assert.match(step.html, /Verify it is you/);

  const removed = await http(`${base}/totp`, { method: "DELETE", headers: bearer(p.token) });
  assert.equal(removed.status, 204);
  assert.deepEqual(await (await http(base, { headers: bearer(p.token) })).json(), {
    totp: false,
    totp_enrolled_at: null,
    recovery_codes_left: 0,
    passkeys: [],
  });
  const events = await (await http(`/api/v1/projects/${p.project.id}/audit-events?type=mfa.removed`, {
    headers: bearer(p.token),
  })).json();
  assert.equal(events.data.length, 1);
  assert.deepEqual(events.data[0].details, { factor: "totp", by: "admin" });
  assert.deepEqual(events.data[0].actor.type, "client");
  assert.equal(events.data[0].target.id, p.userId);
  assert.equal((await passwordStep(new Browser(), { ...p, password: "another password 1" })).res.status, 303);
  await expectError(
    http(`${base}/totp`, { method: "DELETE", headers: bearer(p.token) }),
    404,
    "second_factor_not_found",
  );
  await expectError(
    http(`/api/v1/projects/${p.project.id}/users/nope/second-factors`, { headers: bearer(p.token) }),
    404,
    "user_not_found",
  );
});

test("removing a user's factors needs users:update and covering the user; reading needs users:read", async () => {
  const p = await loginProject();
  await enrolTotp(p);
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "auditor",
    name: "Auditor",
    permission_ids: [ids["audit:read"]],
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: true,
    role_id: role.id,
  });
  const base = `/api/v1/projects/${p.project.id}/users/${p.userId}/second-factors`;
  const client = async (codes: string[]) => {
    const c = await p.api.clients.createClient(p.project.id, {
      name: codes.join(" "),
      token_endpoint_auth_method: "client_secret_basic" as never,
      permission_ids: codes.map((code) => ids[code]),
    });
    return await clientToken(c.id, c.client_secret!);
  };
  const helpdesk = await client(["users:read", "users:update"]);
  assert.equal((await http(base, { headers: bearer(helpdesk) })).status, 200);
  // It does not hold audit:read, which the user holds.
  await expectError(
    http(`${base}/totp`, { method: "DELETE", headers: bearer(helpdesk) }),
    403,
    "insufficient_permission",
  );
  const reader = await client(["users:read"]);
  await expectError(
    http(`${base}/totp`, { method: "DELETE", headers: bearer(reader) }),
    403,
    "insufficient_permission",
  );
  const none = await client(["roles:read"]);
  await expectError(http(base, { headers: bearer(none) }), 403, "insufficient_permission");
  // Another project's admin.
  const other = await loginProject();
  await expectError(http(base, { headers: bearer(other.token) }), 403, "insufficient_permission");
  await expectError(
    http(`${base}/totp`, { method: "DELETE", headers: bearer(other.token) }),
    403,
    "insufficient_permission",
  );
  // Covering the user: allowed.
  const full = await client(["users:read", "users:update", "audit:read"]);
  assert.equal((await http(`${base}/totp`, { method: "DELETE", headers: bearer(full) })).status, 204);
});
