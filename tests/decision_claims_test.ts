/**
 * Claims from decisions (issue 48, the AuthZEN IdP scenario): a client's `decision_claims` put what the resource
 * search answers for the user into its access and ID tokens, 100 ids at most with `claims_truncated`, answered
 * again at every refresh; never into a client's own token; checked when written (400 with details), and only a
 * caller holding `access:search` may set them (403); the audit trail's diff shows them.
 */
import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import {
  Api,
  basic,
  clientWith,
  expectError,
  http,
  loginProject,
  postToken,
  test,
  type TestProject,
} from "./helpers.ts";
import { Browser, refreshStatus, signIn } from "./oidc_support.ts";

type Setup = TestProject & {
  email: string;
  password: string;
  userId: string;
  record: Api.Resource;
  reader: Api.Role;
  deleter: Api.Role;
};

/**
 * `record` (read, delete) with objects r-01 … r-05; the user is a `reader` (read project-wide) with a grant of
 * `deleter` (delete) on r-02 only.
 */
async function setup(): Promise<Setup> {
  const p = await loginProject();
  const record = await p.api.resources.createResource(p.project.id, {
    name: "Record",
    code: "record",
    permissions: [{ name: "Read", code: "read" }, { name: "Delete", code: "delete" }],
  });
  const perm = Object.fromEntries(record.permissions.map((x) => [x.code, x.id]));
  const reader = await p.api.roles.createRole(p.project.id, {
    code: "reader",
    name: "Reader",
    permission_ids: [perm.read],
  });
  const deleter = await p.api.roles.createRole(p.project.id, {
    code: "deleter",
    name: "Deleter",
    permission_ids: [perm.read, perm.delete],
  });
  await p.api.objects.createObjects(p.project.id, record.id, {
    objects: ["r-03", "r-01", "r-05", "r-02", "r-04"].map((id) => ({ id })),
  });
  await setRole(p, reader.id);
  await p.api.grants.createGrant(p.project.id, {
    subject: { type: "user", id: p.userId } as Api.GrantSubject,
    role_id: deleter.id,
    object: { type: "record", id: "r-02" },
  });
  return { ...p, record, reader, deleter };
}

async function setRole(p: TestProject & { email: string; userId: string }, roleId: string) {
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    email: p.email,
    is_active: true,
    role_id: roleId,
  });
}

const CLAIMS = [
  { claim: "deletable", resource_type: "record", action: "delete" },
  { claim: "readable", resource_type: "record", action: "read" },
];

/** A public client of the project with these decision claims (created by the project's admin client). */
async function publicClient(p: TestProject, claims: Api.DecisionClaim[]): Promise<Api.ClientWithSecret> {
  return await p.api.clients.createClient(p.project.id, { name: "web app", decision_claims: claims });
}

/** The OpenID sign-in of the setup's user at `clientId`: both tokens' payloads and the refresh token. */
async function signInAt(s: Setup, clientId: string) {
  const tokens = await signIn(new Browser(), { clientId, email: s.email, password: s.password });
  return {
    access: decodeJwt(tokens.access_token),
    id: decodeJwt(tokens.id_token),
    refresh: tokens.refresh_token,
  };
}

test("a user's access and ID tokens carry the client's decision claims, as the resource search answers them", async () => {
  const s = await setup();
  const client = await publicClient(s, CLAIMS);
  assert.deepEqual(client.decision_claims, CLAIMS);
  const { access, id } = await signInAt(s, client.id);
  for (const payload of [access, id]) {
    assert.deepEqual(payload.deletable, ["r-02"]);
    assert.deepEqual(payload.readable, ["r-01", "r-02", "r-03", "r-04", "r-05"]);
    assert.equal(payload.claims_truncated, undefined);
    assert.equal(payload.sub, s.userId);
  }
  // What the search answers, exactly.
  const searcher = await clientWith(s, ["access:search"]);
  const res = await http("/access/v1/search/resource", {
    method: "POST",
    headers: { authorization: `Bearer ${searcher.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      subject: { type: "user", id: s.userId },
      action: { name: "delete" },
      resource: { type: "record" },
    }),
  });
  assert.equal(res.status, 200);
  assert.deepEqual((await res.json()).results.map((r: { id: string }) => r.id), access.deletable);
});

test("a client without decision claims issues tokens without them; a client's own token never has them", async () => {
  const s = await setup();
  const plain = await publicClient(s, []);
  const { access, id } = await signInAt(s, plain.id);
  assert.equal(access.deletable, undefined);
  assert.equal(id.readable, undefined);
  // Client credentials of a client with claims: its own token names no user, so nothing is searched.
  const withClaims = await publicClient(s, CLAIMS);
  const res = await postToken({ grant_type: "client_credentials" }, {
    authorization: basic(withClaims.id, withClaims.client_secret),
  });
  assert.equal(res.status, 200);
  const own = decodeJwt((await res.json()).access_token);
  assert.equal(own.deletable, undefined);
  assert.equal(own.claims_truncated, undefined);
});

test("more than 100 ids: the first 100 by id and the claim in claims_truncated", async () => {
  const s = await setup();
  const ids = Array.from({ length: 150 }, (_, i) => `x-${String(i).padStart(3, "0")}`);
  await s.api.objects.createObjects(s.project.id, s.record.id, { objects: ids.map((id) => ({ id })) });
  const client = await publicClient(s, CLAIMS);
  const { access, id } = await signInAt(s, client.id);
  const all = [...["r-01", "r-02", "r-03", "r-04", "r-05"], ...ids].sort();
  for (const payload of [access, id]) {
    assert.deepEqual(payload.readable, all.slice(0, 100));
    assert.deepEqual(payload.deletable, ["r-02"]);
    assert.deepEqual(payload.claims_truncated, ["readable"]);
  }
});

test("a refresh answers the claims again: a role change shows in the refreshed tokens", async () => {
  const s = await setup();
  const client = await publicClient(s, CLAIMS);
  const first = await signInAt(s, client.id);
  assert.deepEqual(first.access.deletable, ["r-02"]);
  await setRole(s, s.deleter.id);
  const refreshed = await refreshStatus(client.id, first.refresh);
  assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  for (const token of [refreshed.body.access_token, refreshed.body.id_token]) {
    assert.deepEqual(decodeJwt(token).deletable, ["r-01", "r-02", "r-03", "r-04", "r-05"]);
  }
  // And back: the grant alone again.
  await setRole(s, s.reader.id);
  const again = await refreshStatus(client.id, refreshed.body.refresh_token);
  assert.equal(again.status, 200);
  assert.deepEqual(decodeJwt(again.body.access_token).deletable, ["r-02"]);
});

test("decision_claims are checked when written: 400 invalid_params naming each field", async () => {
  const s = await setup();
  const client = await publicClient(s, []);
  const cases: [unknown, { field: string }[]][] = [
    [[...CLAIMS, { claim: "c", resource_type: "record", action: "read" }, {
      claim: "d",
      resource_type: "record",
      action: "read",
    }], [{ field: "decision_claims" }]],
    [[{ claim: "Bad-Name", resource_type: "record", action: "read" }], [{
      field: "decision_claims.0.claim",
    }]],
    [[{ claim: "9lives", resource_type: "record", action: "read" }], [{ field: "decision_claims.0.claim" }]],
    [[{ claim: "a".repeat(41), resource_type: "record", action: "read" }], [{
      field: "decision_claims.0.claim",
    }]],
    [[{ claim: "email", resource_type: "record", action: "read" }], [{ field: "decision_claims.0.claim" }]],
    [[{ claim: "claims_truncated", resource_type: "record", action: "read" }], [{
      field: "decision_claims.0.claim",
    }]],
    [[CLAIMS[0], { ...CLAIMS[1], claim: "deletable" }], [{ field: "decision_claims.1.claim" }]],
    [[{ claim: "things", resource_type: "nothing", action: "read" }], [{
      field: "decision_claims.0.resource_type",
    }]],
    [[CLAIMS[0], { claim: "things", resource_type: "record", action: "archive" }], [{
      field: "decision_claims.1.action",
    }]],
    [[{ claim: "things", resource_type: "record", action: "read", extra: 1 }], [{
      field: "decision_claims.0.extra",
    }]],
  ];
  for (const [decision_claims, fields] of cases) {
    for (
      const body of [
        { name: "web app", decision_claims },
        { name: "web app", is_active: true, decision_claims },
      ]
    ) {
      const path = "is_active" in body
        ? `/api/v1/projects/${s.project.id}/clients/${client.id}`
        : `/api/v1/projects/${s.project.id}/clients`;
      const res = await http(path, {
        method: "is_active" in body ? "PUT" : "POST",
        headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = await res.json();
      assert.equal(res.status, 400, `${JSON.stringify(decision_claims)}: ${JSON.stringify(answer)}`);
      assert.equal(answer.error, "invalid_params");
      assert.deepEqual(answer.details.map((d: { field: string }) => ({ field: d.field })), fields);
    }
  }
  // Codes match as the project's do (case-insensitively) and are kept as the project spells them.
  const updated = await s.api.clients.updateClient(s.project.id, client.id, {
    name: "web app",
    is_active: true,
    decision_claims: [{ claim: "deletable", resource_type: "RECORD", action: "Delete" }],
  });
  assert.deepEqual(updated.decision_claims, [CLAIMS[0]]);
});

test("setting decision_claims needs access:search outright (403); clearing them does not", async () => {
  const s = await setup();
  const admin = await clientWith(s, ["clients:create", "clients:update", "clients:read"]);
  await expectError(
    admin.api.clients.createClient(s.project.id, { name: "web app", decision_claims: CLAIMS }),
    403,
    "insufficient_permission",
  );
  const client = await publicClient(s, CLAIMS);
  await expectError(
    admin.api.clients.updateClient(s.project.id, client.id, {
      name: "web app",
      is_active: true,
      decision_claims: [CLAIMS[1]],
    }),
    403,
    "insufficient_permission",
  );
  // Unchanged (sent as they are, or left out) and cleared need no search permission.
  for (const decision_claims of [CLAIMS, undefined, []]) {
    await admin.api.clients.updateClient(s.project.id, client.id, {
      name: "web app",
      is_active: true,
      decision_claims,
    });
  }
  const searcher = await clientWith(s, ["clients:create", "clients:update", "access:search"]);
  const made = await searcher.api.clients.createClient(s.project.id, {
    name: "web app",
    decision_claims: CLAIMS,
  });
  assert.deepEqual(made.decision_claims, CLAIMS);
});

test("a change of decision_claims is in the client.updated event's diff", async () => {
  const s = await setup();
  const client = await publicClient(s, []);
  await s.api.clients.updateClient(s.project.id, client.id, {
    name: "web app",
    is_active: true,
    decision_claims: [CLAIMS[0]],
  });
  const res = await http(
    `/api/v1/projects/${s.project.id}/audit-events?${new URLSearchParams({ type: "client.updated" })}`,
    { headers: { authorization: `Bearer ${s.token}` } },
  );
  assert.equal(res.status, 200);
  const [event] = (await res.json()).data;
  assert.deepEqual(event.changes, { decision_claims: { before: [], after: [CLAIMS[0]] } });
});

test("the AuthZEN IdP interop fixture: alice's token carries record [101, 107, 113, 119]", async () => {
  // openid/authzen interop/authzen-idp (README_interop.md, test-harness/src/results.json): records 101 … 120,
  // "a user can delete any record they own", alice owns 101, 107, 113 and 119; the claim is named `record`.
  const p = await loginProject();
  const record = await p.api.resources.createResource(p.project.id, {
    name: "Record",
    code: "record",
    permissions: [{ name: "Delete", code: "delete" }],
  });
  const owner = await p.api.roles.createRole(p.project.id, {
    code: "owner",
    name: "Owner",
    permission_ids: [record.permissions[0].id],
  });
  await p.api.objects.createObjects(p.project.id, record.id, {
    objects: Array.from({ length: 20 }, (_, i) => ({ id: String(101 + i) })),
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Alice",
    email: p.email,
    external_user_id: "alice",
    is_active: true,
  });
  for (const id of ["119", "101", "113", "107"]) {
    await p.api.grants.createGrant(p.project.id, {
      subject: { type: "user", id: "alice" } as Api.GrantSubject,
      role_id: owner.id,
      object: { type: "record", id },
    });
  }
  const client = await publicClient(p, [{ claim: "record", resource_type: "record", action: "delete" }]);
  const tokens = await signIn(new Browser(), { clientId: client.id, email: p.email, password: p.password });
  for (const token of [tokens.access_token, tokens.id_token]) {
    assert.deepEqual(decodeJwt(token).record, ["101", "107", "113", "119"]);
  }
});

test("claims through a condition name the user as its application does (its external id), as decisions do", async () => {
  const s = await setup();
  // The user is known to the application as "ext-ann"; a role holds delete only on what that name owns.
  await s.api.users.updateUser(s.project.id, s.userId, {
    display_name: "Login User",
    email: s.email,
    is_active: true,
    external_user_id: "ext-ann",
  });
  const owner = await s.api.roles.createRole(s.project.id, {
    code: "owner",
    name: "Owner",
    permission_ids: [s.deleter.permission_ids.find((id) => !s.reader.permission_ids.includes(id))!],
  });
  const del = owner.permission_ids[0];
  await s.api.roles.updateRole(s.project.id, owner.id, {
    code: "owner",
    name: "Owner",
    conditions: [{ permission_id: del, expression: "resource.properties.owner == subject.id" }],
  });
  await s.api.users.updateUser(s.project.id, s.userId, {
    display_name: "Login User",
    email: s.email,
    is_active: true,
    external_user_id: "ext-ann",
    role_id: owner.id,
  });
  await s.api.objects.createObjects(s.project.id, s.record.id, {
    objects: [{ id: "r-10", properties: { owner: "ext-ann" } }, { id: "r-11", properties: { owner: "bob" } }],
  });
  const client = await publicClient(s, [{ claim: "deletable", resource_type: "record", action: "delete" }]);
  const { access } = await signInAt(s, client.id);
  // r-02 through the outright grant; r-10 through the condition on the name the application uses.
  assert.deepEqual(access.deletable, ["r-02", "r-10"]);
  const decided = await http("/access/v1/evaluation", {
    method: "POST",
    headers: {
      authorization: `Bearer ${(await clientWith(s, ["access:evaluate"])).token}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({
      subject: { type: "user", id: "ext-ann" },
      action: { name: "delete" },
      resource: { type: "record", id: "r-10" },
    }),
  });
  assert.equal((await decided.json()).decision, true);
});
