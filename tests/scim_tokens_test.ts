/**
 * SCIM tokens: a client's long-lived bearer token for its project's SCIM endpoints only, as Entra ID's Secret
 * Token and Okta's HTTP Header send one (docs/provisioning.md § The client and its token).
 */
import assert from "node:assert/strict";
import { Api, clientWith, expectError, http, newProject, permissionIds, service, test } from "./helpers.ts";
import { address, expectJson, expectScimError, scim, scimProject, USER } from "./scim_support.ts";

type Made = {
  id: string;
  token: string;
  client_id: string;
  expires_at: string | null;
  description: string | null;
};

async function makeToken(
  token: string,
  projectId: string,
  clientId: string,
  body: Record<string, unknown> = {},
): Promise<Response> {
  return await http(`/api/v1/projects/${projectId}/clients/${clientId}/scim-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function auditEvents(token: string, projectId: string, query: string): Promise<Api.AuditEvent[]> {
  const res = await http(`/api/v1/projects/${projectId}/audit-events?${query}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

const tokensPath = (projectId: string, clientId: string) =>
  `/api/v1/projects/${projectId}/clients/${clientId}/scim-tokens`;

test("a SCIM token works at the SCIM endpoints of its project only, as its client, until revoked", async () => {
  const p = await scimProject();
  const res = await makeToken(p.token, p.project.id, p.scimClientId, {
    description: "Entra ID provisioning",
    expires_in_days: 365,
  });
  const made = await res.json() as Made;
  assert.equal(res.status, 201, JSON.stringify(made));
  assert.match(made.token, /^scim_[A-Za-z0-9_-]{43}$/);
  assert.equal(made.client_id, p.scimClientId);
  assert.equal(made.description, "Entra ID provisioning");
  const days = (Date.parse(made.expires_at!) - Date.now()) / 86_400_000;
  assert.ok(days > 364.9 && days <= 365, String(days));
  const { db } = await service();
  const [stored] = await db.sql<
    { token_hash: Uint8Array }[]
  >`select token_hash from scim_tokens where id = ${made.id}`;
  assert.equal(stored.token_hash.length, 32, "only the SHA-256 is kept");

  // It acts as the client: a create is audited with the client as the actor.
  const withToken = { ...p, scimToken: made.token };
  const email = address("entra");
  const created = await expectJson(
    await scim(withToken, "POST", "/Users", { schemas: [USER], userName: email, active: true }),
    201,
  );
  const events = await auditEvents(p.token, p.project.id, `type=user.created&target_id=${created.id}`);
  assert.deepEqual(events.map((e) => e.actor), [
    { type: "client", id: p.scimClientId, token_jti: made.id },
  ], "the client, and which of its tokens");

  // Listed without the token, and marked used.
  const list = await (await http(tokensPath(p.project.id, p.scimClientId), {
    headers: { authorization: `Bearer ${p.token}` },
  })).json() as { data: (Made & { last_used_at: string | null })[] };
  assert.equal(list.data.length, 1);
  assert.equal("token" in list.data[0], false, "never shown again");
  assert.ok(list.data[0].last_used_at, "last used");

  // Nowhere but the SCIM endpoints of its project.
  const admin = await http(`/api/v1/projects/${p.project.id}/users`, {
    headers: { authorization: `Bearer ${made.token}` },
  });
  assert.equal(admin.status, 401, "not an access token of the admin API");
  await admin.body?.cancel();
  const other = await scimProject();
  await expectScimError(await scim({ ...other, scimToken: made.token }, "GET", "/Users"), 401);

  // Revoked: refused on the next request.
  const revoked = await http(`${tokensPath(p.project.id, p.scimClientId)}/${made.id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(revoked.status, 204);
  const refused = await scim(withToken, "GET", "/Users");
  await expectScimError(refused, 401);
  assert.match(refused.headers.get("www-authenticate")!, /error="invalid_token"/);
  const again = await http(`${tokensPath(p.project.id, p.scimClientId)}/${made.id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(again.status, 404);
  assert.equal((await again.json()).error, "scim_token_not_found");
});

test("a SCIM token follows its client live: permissions, deactivation, a rotated secret, deletion", async () => {
  const p = await newProject();
  const ids = await permissionIds(p);
  const client = await p.api.clients.createClient(p.project.id, {
    name: "Okta",
    permission_ids: [ids["scim:read"], ids["scim:write"]],
  });
  const token = (await (await makeToken(p.token, p.project.id, client.id)).json() as Made).token;
  const sp = { ...p, scimToken: token, scimClientId: client.id };
  await expectJson(await scim(sp, "GET", "/Users"), 200);

  // Read only now: reads pass, writes are refused at once.
  await p.api.clients.updateClient(p.project.id, client.id, {
    name: "Okta",
    is_active: true,
    permission_ids: [ids["scim:read"]],
  });
  await expectJson(await scim(sp, "GET", "/Users"), 200);
  await expectScimError(await scim(sp, "POST", "/Users", { schemas: [USER], userName: address("o") }), 403);

  // Deactivated: refused; active again: still refused (made before the cutoff), as the client's access tokens.
  await p.api.clients.updateClient(p.project.id, client.id, {
    name: "Okta",
    is_active: false,
    permission_ids: [ids["scim:read"]],
  });
  await expectScimError(await scim(sp, "GET", "/Users"), 401);
  await p.api.clients.updateClient(p.project.id, client.id, {
    name: "Okta",
    is_active: true,
    permission_ids: [ids["scim:read"]],
  });
  await expectScimError(await scim(sp, "GET", "/Users"), 401);

  // A new token works; rotating the client's secret refuses it.
  const fresh = (await (await makeToken(p.token, p.project.id, client.id)).json() as Made).token;
  await expectJson(await scim({ ...sp, scimToken: fresh }, "GET", "/Users"), 200);
  await p.api.clients.rotateClientSecret(p.project.id, client.id);
  await expectScimError(await scim({ ...sp, scimToken: fresh }, "GET", "/Users"), 401);

  // Deleting the client deletes its tokens.
  const last = (await (await makeToken(p.token, p.project.id, client.id)).json() as Made).token;
  await p.api.clients.deleteClient(p.project.id, client.id);
  await expectScimError(await scim({ ...sp, scimToken: last }, "GET", "/Users"), 401);
  const { db } = await service();
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from scim_tokens where client_id = ${client.id}`;
  assert.equal(n, 0);
});

test("making SCIM tokens: least privilege, bad input, the limit, unknown clients", async () => {
  const p = await scimProject();
  // A caller that does not cover the client's permissions cannot mint a token carrying them.
  const clientsOnly = await clientWith(p, ["clients:read", "clients:update"]);
  const refused = await makeToken(clientsOnly.token, p.project.id, p.scimClientId);
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).error, "insufficient_permission");
  const reader = await clientWith(p, ["clients:read"]);
  assert.equal((await makeToken(reader.token, p.project.id, p.scimClientId)).status, 403);

  for (
    const [body, field] of [
      [{ expires_in_days: 0 }, "expires_in_days"],
      [{ expires_in_days: 3651 }, "expires_in_days"],
      [{ expires_in_days: 1.5 }, "expires_in_days"],
      [{ description: "x".repeat(201) }, "description"],
      [{ scope: "scim" }, "scope"],
    ] as const
  ) {
    const res = await makeToken(p.token, p.project.id, p.scimClientId, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    const error = await res.json();
    assert.equal(error.error, "invalid_params");
    assert.ok(error.details.some((d: { field: string }) => d.field === field), JSON.stringify(error));
  }
  const missing = await makeToken(p.token, p.project.id, "no-such-client");
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error, "client_not_found");

  for (let i = 0; i < 5; i++) {
    assert.equal((await makeToken(p.token, p.project.id, p.scimClientId)).status, 201);
  }
  const sixth = await makeToken(p.token, p.project.id, p.scimClientId);
  assert.equal(sixth.status, 400);
  assert.match(JSON.stringify(await sixth.json()), /revoke one/);

  // Through the SDK too.
  const sdkList = await p.api.clients.listScimTokens(p.project.id, p.scimClientId);
  assert.equal(sdkList.data.length, 5);
  await expectError(
    p.api.clients.revokeScimToken(p.project.id, p.scimClientId, "no-such-token"),
    404,
    "scim_token_not_found",
  );
  const events = await auditEvents(
    p.token,
    p.project.id,
    `type=scim_token.created&target_id=${p.scimClientId}`,
  );
  assert.equal(events.length, 5);
  assert.equal(events[0].actor.id, p.clientId, "the admin client made them");
});
