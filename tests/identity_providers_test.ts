/**
 * Identity providers' admin API: validation (discovery fetched and checked when saved, the address guard, the
 * role), the client secret sealed and never returned, least privilege, and a user's linked identities.
 */
import assert from "node:assert/strict";
import { clientWith, expectError, http, newProject, test } from "./helpers.ts";
import {
  call,
  type DownProject,
  downProject,
  fakeUpstream,
  json,
  tokenAt,
  upstreamProject,
} from "./idp_support.ts";

type Provider = Record<string, unknown> & { id: string; redirect_uri: string };

const providers = (d: { projectId: string }) => `/api/v1/projects/${d.projectId}/identity-providers`;

async function createAt(d: DownProject, body: Record<string, unknown>, token = d.token): Promise<Response> {
  return await call(d.url, token, "POST", providers(d), body);
}

test("POST identity-providers validates the discovery document and never returns the secret, sealed at rest", async () => {
  const d = await downProject();
  const up = await upstreamProject();
  const created = await json<Provider>(
    await createAt(d, {
      kind: "oidc",
      display_name: "Upstream",
      issuer: up.issuer,
      client_id: up.rpClientId,
      client_secret: up.rpSecret,
      jit_provisioning: true,
    }),
    201,
  );
  assert.equal(created.issuer, up.issuer);
  assert.equal(created.has_client_secret, true);
  assert.equal(created.link_by_verified_email, false, "linking by email is off by default");
  assert.equal(created.is_active, true);
  assert.deepEqual(created.scopes, ["openid", "email", "profile"]);
  assert.deepEqual(created.claims, { email: "email", name: "name", picture: "picture" });
  assert.equal(created.redirect_uri, `${d.publicUrl}/authorize/idp/${created.id}/callback`);
  assert.ok(!("client_secret" in created));
  const read = await json<Provider>(await call(d.url, d.token, "GET", `${providers(d)}/${created.id}`), 200);
  assert.ok(!JSON.stringify(read).includes(up.rpSecret));
  const list = await json<{ data: Provider[] }>(await call(d.url, d.token, "GET", providers(d)), 200);
  assert.deepEqual(list.data.map((p) => p.id), [created.id]);
  // KEY_ENCRYPTION_KEY is set: only the sealed secret is stored.
  const [row] = await d.svc.db.sql<{ client_secret: string | null; sealed: boolean }[]>`
    select client_secret, client_secret_sealed is not null as sealed from identity_providers where id = ${created.id}`;
  assert.deepEqual({ ...row }, { client_secret: null, sealed: true });
  // The audit trail has the creation, without the secret.
  const trail = await call(
    d.url,
    d.token,
    "GET",
    `/api/v1/projects/${d.projectId}/audit-events?type=identity_provider.created&target_id=${created.id}`,
  );
  const text = await trail.text();
  assert.equal(trail.status, 200, text);
  assert.equal(JSON.parse(text).data.length, 1);
  assert.ok(!text.includes(up.rpSecret));

  // PUT replaces; an omitted secret is kept; the discovery is checked again.
  const updated = await json<Provider>(
    await call(d.url, d.token, "PUT", `${providers(d)}/${created.id}`, {
      display_name: "Renamed",
      issuer: up.issuer,
      client_id: up.rpClientId,
      is_active: false,
    }),
    200,
  );
  assert.equal(updated.display_name, "Renamed");
  assert.equal(updated.has_client_secret, true);
  assert.equal(updated.is_active, false);
  assert.equal(updated.jit_provisioning, true, "kept");
  const cleared = await json<Provider>(
    await call(d.url, d.token, "PUT", `${providers(d)}/${created.id}`, {
      display_name: "Renamed",
      issuer: up.issuer,
      client_id: up.rpClientId,
      client_secret: null,
    }),
    200,
  );
  assert.equal(cleared.has_client_secret, false);
  assert.equal((await call(d.url, d.token, "DELETE", `${providers(d)}/${created.id}`)).status, 204);
  await expectError(
    await call(d.url, d.token, "GET", `${providers(d)}/${created.id}`),
    404,
    "identity_provider_not_found",
  );
  await expectError(
    await call(d.url, d.token, "DELETE", `${providers(d)}/${created.id}`),
    404,
    "identity_provider_not_found",
  );
});

test("POST identity-providers refuses every bad input with 400 invalid_params and details", async () => {
  const d = await downProject();
  const fake = await fakeUpstream();
  try {
    const base = { kind: "oidc", display_name: "X", client_id: "rp" };
    const refused = async (body: Record<string, unknown>, field: string, issue?: RegExp) => {
      const err = await expectError(await createAt(d, { ...base, ...body }), 400, "invalid_params");
      const detail = err.details?.find((x) => x.field === field);
      assert.ok(detail, `${JSON.stringify(body)} → ${JSON.stringify(err.details)}`);
      if (issue) assert.match(detail.issue, issue);
    };
    // http other than loopback, before any request leaves.
    await refused({ issuer: "http://idp.example.com" }, "issuer", /https/);
    // Discovery fails: nothing there.
    await refused({ issuer: `${fake.base}/nothing-here` }, "issuer", /discovery failed/);
    // Discovery of an address where nothing listens.
    await refused({ issuer: "http://127.0.0.1:9" }, "issuer", /discovery failed/);
    // A document that names another issuer.
    fake.state.issuerOverride = "https://evil.example.com";
    await refused({ issuer: fake.base }, "issuer", /must equal this issuer exactly/);
    fake.state.issuerOverride = `${fake.base}/`;
    await refused({ issuer: fake.base }, "issuer", /must equal this issuer exactly/);
    fake.state.issuerOverride = null;
    // Unknown role.
    await refused({ issuer: fake.base, default_role_id: "no-such-role" }, "default_role_id", /not a role/);
    // Malformed fields.
    await refused({ issuer: "not a url" }, "issuer");
    await refused({ issuer: `${fake.base}?x=1` }, "issuer");
    await refused({ issuer: fake.base, scopes: ["email"] }, "scopes", /openid/);
    await refused({ issuer: fake.base, kind: "saml" }, "kind");
    await refused({ issuer: fake.base, client_id: "" }, "client_id");
    await refused({ display_name: undefined, issuer: fake.base }, "display_name");
    await refused({ issuer: undefined }, "issuer", /required/);
    await refused({ issuer: undefined, preset: "microsoft_entra_id" }, "tenant_id", /required/);
    // And the valid one is accepted.
    const ok = await json<Provider>(await createAt(d, { ...base, issuer: fake.base }), 201);
    assert.equal(ok.has_client_secret, false);
    // An update is checked the same way.
    fake.state.discoveryStatus = 500;
    const { kind: _kind, ...update } = base; // `kind` is chosen at creation, not a field of an update
    const err = await expectError(
      await call(d.url, d.token, "PUT", `${providers(d)}/${ok.id}`, { ...update, issuer: fake.base }),
      400,
      "invalid_params",
    );
    assert.match(err.details![0].issue, /answered 500/);
  } finally {
    await fake.stop();
  }
});

test("the address guard refuses loopback issuers unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true", async () => {
  const p = await newProject();
  const fake = await fakeUpstream();
  try {
    for (const issuer of [fake.base, "https://10.0.0.1", "https://169.254.169.254/latest"]) {
      const err = await expectError(
        await http(`/api/v1/projects/${p.project.id}/identity-providers`, {
          method: "POST",
          headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
          body: JSON.stringify({ kind: "oidc", display_name: "X", issuer, client_id: "rp" }),
        }),
        400,
        "invalid_params",
      );
      assert.equal(err.details![0].field, "issuer");
    }
    assert.equal(fake.state.tokenRequests.length, 0);
  } finally {
    await fake.stop();
  }
});

test("identity providers: least privilege and refusals (401, another project, missing permission)", async () => {
  const d = await downProject();
  const fake = await fakeUpstream();
  try {
    const update = { display_name: "X", issuer: fake.base, client_id: "rp" };
    const body = { kind: "oidc", ...update };
    await expectError(await call(d.url, null, "GET", providers(d)), 401, "invalid_authorization_token");
    await expectError(
      await call(d.url, "bad", "POST", providers(d), body),
      401,
      "invalid_authorization_token",
    );
    const other = await downProject();
    await expectError(await call(d.url, other.token, "GET", providers(d)), 403, "insufficient_permission");
    const created = await json<Provider>(await createAt(d, body), 201);
    // A client with only identity_providers:read reads, and is refused every change.
    const clientWithCodes = async (codes: string[]) => {
      const resources = await json<{ data: { code: string; permissions: { id: string; code: string }[] }[] }>(
        await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/resources?page_size=100`),
        200,
      );
      const ids = resources.data.flatMap((r) =>
        r.permissions.filter((p) => codes.includes(`${r.code}:${p.code}`)).map((p) => p.id)
      );
      assert.equal(ids.length, codes.length, "the default resource has these permissions");
      const c = await json<{ id: string; client_secret: string }>(
        await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/clients`, {
          name: "limited",
          permission_ids: ids,
        }),
        201,
      );
      return await tokenAt(d.url, c.id, c.client_secret);
    };
    const reader = await clientWithCodes(["identity_providers:read"]);
    await json(await call(d.url, reader, "GET", providers(d)), 200);
    await json(await call(d.url, reader, "GET", `${providers(d)}/${created.id}`), 200);
    await expectError(await call(d.url, reader, "POST", providers(d), body), 403, "insufficient_permission");
    await expectError(
      await call(d.url, reader, "PUT", `${providers(d)}/${created.id}`, update),
      403,
      "insufficient_permission",
    );
    await expectError(
      await call(d.url, reader, "DELETE", `${providers(d)}/${created.id}`),
      403,
      "insufficient_permission",
    );
    // Holding identity_providers:create is not enough: a provider decides who signs in as whom, so only a
    // caller covering the whole project adds or changes one.
    const creator = await clientWithCodes([
      "identity_providers:create",
      "identity_providers:update",
      "identity_providers:read",
    ]);
    const before = fake.state.tokenRequests.length;
    await expectError(await call(d.url, creator, "POST", providers(d), body), 403, "insufficient_permission");
    await expectError(
      await call(d.url, creator, "PUT", `${providers(d)}/${created.id}`, update),
      403,
      "insufficient_permission",
    );
    assert.equal(fake.state.tokenRequests.length, before);
    const deleter = await clientWithCodes(["identity_providers:delete"]);
    assert.equal((await call(d.url, deleter, "DELETE", `${providers(d)}/${created.id}`)).status, 204);
  } finally {
    await fake.stop();
  }
});

test("a user's identities: admin pre-link, list, unlink, never the last way to sign in", async () => {
  const d = await downProject();
  const fake = await fakeUpstream();
  try {
    const provider = await json<Provider>(
      await createAt(d, { kind: "oidc", display_name: "Fake", issuer: fake.base, client_id: "rp" }),
      201,
    );
    const users = `/api/v1/projects/${d.projectId}/users`;
    const withPassword = await json<{ id: string }>(
      await call(d.url, d.token, "POST", users, {
        display_name: "P",
        email: `p-${crypto.randomUUID().slice(0, 6)}@example.com`,
        password: "correct horse battery",
      }),
      201,
    );
    const external = await json<{ id: string }>(
      await call(d.url, d.token, "POST", users, { display_name: "E", external_user_id: crypto.randomUUID() }),
      201,
    );
    const identities = (u: string) => `${users}/${u}/identities`;
    assert.deepEqual(await json(await call(d.url, d.token, "GET", identities(withPassword.id)), 200), {
      data: [],
    });
    const linked = await json<Record<string, unknown>>(
      await call(d.url, d.token, "POST", identities(withPassword.id), {
        provider_id: provider.id,
        subject: "sub-1",
        email: "Someone@Example.com",
      }),
      201,
    );
    assert.equal(linked.subject, "sub-1");
    assert.equal(linked.email, "someone@example.com");
    assert.equal(linked.provider_display_name, "Fake");
    // The same upstream account on another user, or a second identity at the same provider: 409.
    await expectError(
      await call(d.url, d.token, "POST", identities(external.id), {
        provider_id: provider.id,
        subject: "sub-1",
      }),
      409,
      "identity_already_linked",
    );
    await expectError(
      await call(d.url, d.token, "POST", identities(withPassword.id), {
        provider_id: provider.id,
        subject: "x",
      }),
      409,
      "identity_already_linked",
    );
    await expectError(
      await call(d.url, d.token, "POST", identities(external.id), { provider_id: "nope", subject: "s" }),
      404,
      "identity_provider_not_found",
    );
    await expectError(
      await call(d.url, d.token, "GET", identities("nope")),
      404,
      "user_not_found",
    );
    // The external user (no password) gets one identity: it cannot be unlinked, it is their only way in.
    await json(
      await call(d.url, d.token, "POST", identities(external.id), {
        provider_id: provider.id,
        subject: "sub-2",
      }),
      201,
    );
    await expectError(
      await call(d.url, d.token, "DELETE", `${identities(external.id)}/${provider.id}`),
      409,
      "last_sign_in_method",
    );
    // The user with a password may lose it.
    assert.equal(
      (await call(d.url, d.token, "DELETE", `${identities(withPassword.id)}/${provider.id}`)).status,
      204,
    );
    await expectError(
      await call(d.url, d.token, "DELETE", `${identities(withPassword.id)}/${provider.id}`),
      404,
      "identity_not_found",
    );
    // Least privilege: a caller with users:update links only to users whose permissions it holds.
    const resources = await json<{ data: { code: string; permissions: { id: string; code: string }[] }[] }>(
      await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/resources?page_size=100`),
      200,
    );
    const id = (code: string) =>
      resources.data.flatMap((r) => r.permissions.map((p) => [`${r.code}:${p.code}`, p.id]))
        .find(([c]) => c === code)![1];
    const role = await json<{ id: string }>(
      await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/roles`, {
        name: "Role admin",
        code: `roles-${crypto.randomUUID().slice(0, 6)}`,
        permission_ids: [id("roles:create")],
      }),
      201,
    );
    const powerful = await json<{ id: string }>(
      await call(d.url, d.token, "POST", users, {
        display_name: "Powerful",
        external_user_id: crypto.randomUUID(),
        role_id: role.id,
      }),
      201,
    );
    const limited = await json<{ id: string; client_secret: string }>(
      await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/clients`, {
        name: "user admin",
        permission_ids: [id("users:read"), id("users:update")],
      }),
      201,
    );
    const limitedToken = await tokenAt(d.url, limited.id, limited.client_secret);
    await expectError(
      await call(d.url, limitedToken, "POST", identities(powerful.id), {
        provider_id: provider.id,
        subject: "p",
      }),
      403,
      "insufficient_permission",
    );
    await json(await call(d.url, limitedToken, "GET", identities(powerful.id)), 200);
    await json(
      await call(d.url, limitedToken, "POST", identities(withPassword.id), {
        provider_id: provider.id,
        subject: "w",
      }),
      201,
    );
    // Another project's token.
    const other = await downProject();
    await expectError(
      await call(d.url, other.token, "GET", identities(withPassword.id)),
      403,
      "insufficient_permission",
    );
  } finally {
    await fake.stop();
  }
});

test("the shared service also knows the default resource identity_providers", async () => {
  const p = await newProject();
  const limited = await clientWith(p, ["identity_providers:read"]);
  const res = await http(`/api/v1/projects/${p.project.id}/identity-providers`, {
    headers: { authorization: `Bearer ${limited.token}` },
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.deepEqual((await res.json()).data, []);
});
