/**
 * SCIM 2.0 Users (issue 50) driven as Entra ID and Okta drive them, with their documented requests: create,
 * filter by userName, PATCH active (as a boolean, as Entra's "False", as Okta's path-less value) and
 * emails[type eq "work"].value, PUT, DELETE; sessions ending at deactivation; the gate; every bad input.
 */
import assert from "node:assert/strict";
import { Api, http, permissionIds, REDIRECT_URI, test, userTokens } from "./helpers.ts";
import {
  address,
  expectJson,
  expectScimError,
  LIST,
  patch,
  scim,
  type ScimProject,
  scimProject,
  USER,
} from "./scim_support.ts";

/** Entra ID's create request (Microsoft's SCIM tutorial), with a userName that is an address (its UPN). */
function entraUser(userName: string) {
  return {
    schemas: [USER, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
    externalId: crypto.randomUUID(),
    userName,
    active: true,
    emails: [{ primary: true, type: "work", value: userName }],
    meta: { resourceType: "User" },
    name: { formatted: "givenName familyName", familyName: "familyName", givenName: "givenName" },
    roles: [],
  };
}

/** Okta's create request (Okta's SCIM 2.0 reference). */
function oktaUser(userName: string, password = "1mz050nq") {
  return {
    schemas: [USER],
    userName,
    name: { givenName: "Test", familyName: "User" },
    emails: [{ primary: true, value: userName, type: "work" }],
    displayName: "Test User",
    locale: "en-US",
    externalId: `00u${crypto.randomUUID().replaceAll("-", "").slice(0, 17)}`,
    groups: [],
    password,
    active: true,
  };
}

async function created(p: ScimProject, body: unknown): Promise<Record<string, unknown>> {
  const res = await scim(p, "POST", "/Users", body);
  const user = await expectJson(res, 201);
  assert.equal(res.headers.get("location"), (user.meta as { location: string }).location);
  assert.equal(res.headers.get("etag"), (user.meta as { version: string }).version);
  return user;
}

test("SCIM Users: Entra ID's create, filter by userName, PATCH and deactivation, exactly as documented", async () => {
  const p = await scimProject();
  const upn = address("Test_User");
  // Entra first asks whether the user exists.
  const none = await expectJson(
    await scim(p, "GET", `/Users?filter=${encodeURIComponent(`userName eq "${upn}"`)}`),
    200,
  );
  assert.deepEqual(none, { schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });
  const body = entraUser(upn);
  const user = await created(p, body);
  assert.deepEqual(Object.keys(user).sort(), [
    "active",
    "displayName",
    "emails",
    "externalId",
    "id",
    "meta",
    "name",
    "schemas",
    "userName",
  ]);
  assert.equal(user.userName, upn.toLowerCase());
  assert.equal(user.externalId, body.externalId);
  assert.deepEqual(user.name, {
    formatted: "givenName familyName",
    givenName: "givenName",
    familyName: "familyName",
  });
  assert.equal(user.displayName, "givenName familyName", "no displayName sent: the name");
  assert.deepEqual(user.emails, [{ value: upn.toLowerCase(), type: "work", primary: true }]);
  const meta = user.meta as Record<string, string>;
  assert.equal(meta.resourceType, "User");
  assert.match(meta.version, /^W\/"\d+"$/);
  assert.ok(meta.location.endsWith(`/scim/v2/${p.project.id}/Users/${user.id}`));
  assert.equal(meta.created, meta.lastModified);

  // The admin API sees the same user.
  const admin = await p.api.users.getUser(p.project.id, user.id as string, undefined);
  assert.deepEqual(
    [
      admin.email,
      admin.given_name,
      admin.family_name,
      admin.external_user_id,
      admin.is_active,
      admin.email_verified,
    ],
    [upn.toLowerCase(), "givenName", "familyName", body.externalId, true, true],
  );

  // Filter by userName, case-insensitively (userName is caseExact false).
  const found = await expectJson(
    await scim(p, "GET", `/Users?filter=${encodeURIComponent(`userName eq "${upn.toUpperCase()}"`)}`),
    200,
  );
  assert.equal(found.totalResults, 1);
  assert.deepEqual((found.Resources as unknown[])[0], user);

  // Entra's update: the work email and the family name.
  const newMail = address("updatedEmail");
  const updated = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Users/${user.id}`,
      patch(
        { op: "Replace", path: 'emails[type eq "work"].value', value: newMail },
        { op: "Replace", path: "name.familyName", value: "updatedFamilyName" },
      ),
    ),
    200,
  );
  assert.equal(updated.userName, newMail.toLowerCase());
  assert.deepEqual(updated.emails, [{ value: newMail.toLowerCase(), type: "work", primary: true }]);
  assert.deepEqual(updated.name, {
    formatted: "givenName updatedFamilyName",
    givenName: "givenName",
    familyName: "updatedFamilyName",
  });
  assert.notEqual((updated.meta as { version: string }).version, meta.version);

  // Entra's disable, with the string "False" its non-compliant mode sends, then enabled again with "True".
  const off = await expectJson(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "Replace", path: "active", value: "False" })),
    200,
  );
  assert.equal(off.active, false);
  const on = await expectJson(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "Replace", path: "active", value: "True" })),
    200,
  );
  assert.equal(on.active, true);
  // A path-less replace with dotted keys, as Entra sends several attributes at once.
  const renamed = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Users/${user.id}`,
      patch({ op: "Replace", value: { displayName: "Ann Smith", "name.givenName": "Ann" } }),
    ),
    200,
  );
  assert.equal(renamed.displayName, "Ann Smith");
  assert.equal((renamed.name as { givenName: string }).givenName, "Ann");

  const del = await scim(p, "DELETE", `/Users/${user.id}`);
  assert.equal(del.status, 204);
  await expectScimError(await scim(p, "GET", `/Users/${user.id}`), 404);
  await expectScimError(await scim(p, "DELETE", `/Users/${user.id}`), 404);
});

test("SCIM Users: Okta's create with a password, filter with paging, deactivation by a path-less value, PUT", async () => {
  const p = await scimProject();
  const userName = address("test.user");
  const query = `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`;
  assert.equal((await expectJson(await scim(p, "GET", query), 200)).totalResults, 0);
  const body = oktaUser(userName);
  const user = await created(p, body);
  assert.equal(user.displayName, "Test User");
  assert.equal(user.password, undefined, "a password is never returned");
  const admin = await p.api.users.getUser(p.project.id, user.id as string, undefined);
  assert.equal(admin.password_scheme, "argon2id");
  const list = await expectJson(await scim(p, "GET", query), 200);
  assert.deepEqual([list.totalResults, list.startIndex, list.itemsPerPage], [1, 1, 1]);

  // Okta's deactivation: a replace without path.
  const off = await expectJson(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "replace", value: { active: false } })),
    200,
  );
  assert.equal(off.active, false);

  // Okta's PUT: the whole user again, its givenName changed and active again; `id` may be echoed.
  const put = await expectJson(
    await scim(p, "PUT", `/Users/${user.id}`, {
      ...body,
      id: user.id,
      password: undefined,
      name: { givenName: "Another", familyName: "User" },
    }),
    200,
  );
  assert.deepEqual([put.active, (put.name as { givenName: string }).givenName], [true, "Another"]);
  // PUT replaces: externalId omitted is cleared.
  const { externalId: _, ...withoutExternal } = body;
  const cleared = await expectJson(await scim(p, "PUT", `/Users/${user.id}`, withoutExternal), 200);
  assert.equal(cleared.externalId, undefined);
});

test("SCIM active:false ends the user's live session: their token is refused on the next request", async () => {
  const p = await scimProject(undefined, { redirect_uris: [REDIRECT_URI] });
  const email = address("live");
  const password = "correct horse battery";
  const user = await created(p, oktaUser(email, password));
  const tokens = await userTokens({ clientId: p.clientId, email: email.toLowerCase(), password });
  const me = () =>
    http("/api/v1/users/current", { headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal((await me()).status, 200);
  await expectJson(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "Replace", path: "active", value: false })),
    200,
  );
  const refused = await me();
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
});

test("SCIM changes are audit events whose source names the SCIM client", async () => {
  const p = await scimProject();
  const user = await created(p, oktaUser(address("audited")));
  await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "replace", value: { active: false } }));
  await scim(p, "DELETE", `/Users/${user.id}`);
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=user.*&limit=10`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  const events = ((await res.json()).data as Api.AuditEvent[]).reverse();
  assert.deepEqual(events.map((e) => e.type), ["user.created", "user.deactivated", "user.deleted"]);
  for (const e of events) {
    assert.deepEqual(e.actor, {
      type: "client",
      id: p.scimClientId,
      token_jti: e.actor.token_jti,
    });
    assert.deepEqual(e.target, { type: "user", id: user.id });
  }
});

test("SCIM filters: every operator, grouping, value paths, case rules, paging, sorting and projection", async () => {
  const p = await scimProject();
  const make = async (given: string, family: string, ext: string, active = true) =>
    await created(p, {
      schemas: [USER],
      userName: `${given.toLowerCase()}.${family.toLowerCase()}@${
        family === "Zed" ? "x.org" : "example.com"
      }`,
      name: { givenName: given, familyName: family },
      displayName: `${given} ${family}`,
      externalId: ext,
      active,
    });
  const ann = await make("Ann", "Smith", "E-1");
  const bob = await make("Bob", "Jones", "e-2", false);
  const cyd = await make("Cyd", "Zed", "E-3");
  const ids = async (filter: string, extra = "") => {
    const res = await scim(p, "GET", `/Users?filter=${encodeURIComponent(filter)}${extra}`);
    const body = await expectJson(res, 200);
    return (body.Resources as { id: string }[]).map((r) => r.id);
  };
  const all = [ann.id, bob.id, cyd.id];
  assert.deepEqual(await ids('userName eq "ANN.SMITH@EXAMPLE.COM"'), [ann.id]);
  assert.deepEqual(await ids('userName ne "ann.smith@example.com"'), [bob.id, cyd.id]);
  assert.deepEqual(await ids('userName co "SMITH"'), [ann.id]);
  assert.deepEqual(await ids('userName sw "b"'), [bob.id]);
  assert.deepEqual(await ids('userName ew "x.org"'), [cyd.id]);
  assert.deepEqual(await ids("externalId pr"), all);
  assert.deepEqual(await ids('externalId eq "e-1"'), [], "externalId is caseExact");
  assert.deepEqual(await ids('externalId eq "E-1"'), [ann.id]);
  assert.deepEqual(await ids("active eq false"), [bob.id]);
  assert.deepEqual(await ids('name.familyName gt "Jones"'), [ann.id, cyd.id]);
  assert.deepEqual(await ids('name.familyName ge "Jones"'), all);
  assert.deepEqual(await ids('name.givenName lt "Bob"'), [ann.id]);
  assert.deepEqual(await ids('name.givenName le "Bob"'), [ann.id, bob.id]);
  assert.deepEqual(await ids('displayName eq "Cyd Zed" or name.givenName eq "ann"'), [ann.id, cyd.id]);
  assert.deepEqual(await ids('active eq true and not (userName co "zed")'), [ann.id]);
  assert.deepEqual(await ids('(userName sw "a" or userName sw "b") and active eq true'), [ann.id]);
  assert.deepEqual(await ids('emails[type eq "work" and value co "@x.org"]'), [cyd.id]);
  assert.deepEqual(await ids('emails.value ew "example.com"'), [ann.id, bob.id]);
  assert.deepEqual(await ids(`id eq "${bob.id}"`), [bob.id]);
  assert.deepEqual(
    await ids(`urn:ietf:params:scim:schemas:core:2.0:User:USERNAME eq "bob.jones@example.com"`),
    [
      bob.id,
    ],
  );
  assert.deepEqual(await ids('meta.created gt "2000-01-01T00:00:00Z"'), all);
  assert.deepEqual(await ids('meta.lastModified lt "2000-01-01T00:00:00Z"'), []);
  assert.deepEqual(await ids('userName co "%"'), [], "% is literal");

  // Sorting and paging.
  assert.deepEqual(await ids("userName pr", "&sortBy=name.familyName&sortOrder=descending"), [
    cyd.id,
    ann.id,
    bob.id,
  ]);
  assert.deepEqual(await ids("userName pr", "&sortBy=userName"), all);
  const page = await expectJson(await scim(p, "GET", "/Users?startIndex=2&count=1&sortBy=userName"), 200);
  assert.deepEqual([page.totalResults, page.startIndex, page.itemsPerPage], [3, 2, 1]);
  assert.equal((page.Resources as { id: string }[])[0].id, bob.id);
  const counted = await expectJson(await scim(p, "GET", "/Users?count=0"), 200);
  assert.deepEqual(counted, {
    schemas: [LIST],
    totalResults: 3,
    startIndex: 1,
    itemsPerPage: 0,
    Resources: [],
  });
  const capped = await expectJson(await scim(p, "GET", "/Users?count=100000"), 200);
  assert.equal(capped.itemsPerPage, 3, "count over the maximum is capped, not refused");
  const past = await expectJson(await scim(p, "GET", "/Users?startIndex=10"), 200);
  assert.deepEqual([past.totalResults, past.itemsPerPage], [3, 0]);

  // attributes and excludedAttributes: id and schemas always.
  const only = await expectJson(
    await scim(p, "GET", `/Users/${ann.id}?attributes=userName,name.givenName`),
    200,
  );
  assert.deepEqual(only, {
    schemas: [USER],
    id: ann.id,
    userName: "ann.smith@example.com",
    name: { givenName: "Ann" },
  });
  const without = await expectJson(
    await scim(p, "GET", `/Users/${ann.id}?excludedAttributes=meta,emails,name`),
    200,
  );
  assert.deepEqual(Object.keys(without).sort(), [
    "active",
    "displayName",
    "externalId",
    "id",
    "schemas",
    "userName",
  ]);
});

test("SCIM Users refuse every bad input in RFC 7644's shape", async () => {
  const p = await scimProject();
  const user = await created(p, oktaUser(address("bad")));
  const url = `/Users/${user.id}`;
  const q = (filter: string) => scim(p, "GET", `/Users?filter=${encodeURIComponent(filter)}`);
  for (
    const bad of [
      "userName eq",
      'userName zz "x"',
      '(userName eq "x"',
      'userName eq "x")',
      "userName eq 'x'",
      "and",
      'not userName eq "x"',
      "(".repeat(40) + "userName pr" + ")".repeat(40),
      'userName eq "x" and',
    ]
  ) {
    await expectScimError(await q(bad), 400, "invalidFilter");
  }
  await expectScimError(await q('nickName eq "x"'), 400, "invalidPath");
  await expectScimError(await q("active gt true"), 400, "invalidFilter");
  await expectScimError(await q('meta.created gt "yesterday"'), 400, "invalidFilter");
  await expectScimError(await scim(p, "GET", "/Users?sortBy=nickName"), 400, "invalidPath");
  await expectScimError(await scim(p, "GET", "/Users?count=ten"), 400, "invalidValue");

  // Uniqueness: the same userName, in any case; the same externalId.
  const again = oktaUser((user.userName as string).toUpperCase());
  await expectScimError(await scim(p, "POST", "/Users", again), 409, "uniqueness");
  await expectScimError(
    await scim(p, "POST", "/Users", { ...oktaUser(address("other")), externalId: user.externalId }),
    409,
    "uniqueness",
  );
  // Bodies.
  await expectScimError(
    await scim(p, "POST", "/Users", { ...oktaUser(address("x")), schemas: [] }),
    400,
    "invalidSyntax",
  );
  await expectScimError(
    await scim(p, "POST", "/Users", { schemas: [USER], displayName: "x" }),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "POST", "/Users", { schemas: [USER], userName: "not-an-address" }),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "POST", "/Users", { ...oktaUser(address("x")), active: "maybe" }),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "POST", "/Users", { ...oktaUser(address("x")), password: "short" }),
    400,
    "invalidValue",
  );
  await expectScimError(
    await scim(p, "POST", "/Users", { ...oktaUser(address("x")), displayName: "d".repeat(51) }),
    400,
    "invalidValue",
  );
  await expectScimError(await scim(p, "POST", "/Users", [1]), 400, "invalidSyntax");
  const raw = await scim(p, "POST", "/Users", undefined, { "content-type": "application/scim+json" });
  await expectScimError(raw, 400, "invalidSyntax");
  const form = await scim(p, "POST", "/Users", undefined, { "content-type": "text/plain" });
  await expectScimError(form, 415);
  // application/json is accepted too.
  const json = await scim(p, "POST", "/Users", undefined, { "content-type": "application/json" });
  await expectScimError(json, 400, "invalidSyntax");

  // PATCH.
  const bad = async (body: unknown, status: number, type?: string) =>
    await expectScimError(await scim(p, "PATCH", url, body), status, type);
  await bad({ Operations: [{ op: "replace", path: "active", value: false }] }, 400, "invalidSyntax");
  await bad(patch(), 400, "invalidSyntax");
  await bad(patch({ op: "move", path: "active", value: false }), 400, "invalidSyntax");
  await bad(patch({ op: "replace", path: "nickName", value: "x" }), 400, "invalidPath");
  await bad(patch({ op: "replace", path: 'emails[type eq "work"', value: "x" }), 400, "invalidPath");
  await bad(
    patch({ op: "replace", path: 'emails[type eq "home"].value', value: "a@example.com" }),
    400,
    "noTarget",
  );
  await bad(patch({ op: "remove" }), 400, "noTarget");
  await bad(patch({ op: "replace", path: "id", value: "another" }), 400, "mutability");
  await bad(patch({ op: "replace", path: "meta.created", value: "2020-01-01T00:00:00Z" }), 400, "mutability");
  await bad(patch({ op: "add", path: "groups", value: [{ value: "g" }] }), 400, "mutability");
  await bad(
    patch(...Array.from({ length: 1001 }, () => ({ op: "replace", path: "active", value: true }))),
    400,
    "tooMany",
  );
  await bad(patch({ op: "replace", path: "userName", value: "nope" }), 400, "invalidValue");
  await expectScimError(
    await scim(p, "PUT", url, { ...oktaUser(user.userName as string), id: "another" }),
    400,
    "mutability",
  );
  // The same id echoed changes nothing (Okta sends it).
  await expectJson(
    await scim(p, "PATCH", url, patch({ op: "replace", value: { id: user.id, active: true } })),
    200,
  );

  // If-Match: a stale version is 412; the current one passes; If-None-Match on a read is 304.
  const now = await scim(p, "GET", url);
  const etag = now.headers.get("etag")!;
  await now.body?.cancel();
  await expectScimError(
    await scim(p, "PATCH", url, patch({ op: "replace", path: "displayName", value: "X" }), {
      "if-match": 'W/"1"',
    }),
    412,
  );
  const ok = await scim(p, "PATCH", url, patch({ op: "replace", path: "displayName", value: "X" }), {
    "if-match": etag,
  });
  const newEtag = ok.headers.get("etag")!;
  await expectJson(ok, 200);
  assert.notEqual(newEtag, etag);
  await expectScimError(await scim(p, "DELETE", url, undefined, { "if-match": etag }), 412);
  const cached = await scim(p, "GET", url, undefined, { "if-none-match": newEtag });
  assert.equal(cached.status, 304);
  await cached.body?.cancel();
  await expectScimError(await scim(p, "GET", "/Users/no-such-user"), 404);
  await expectScimError(await scim(p, "GET", "/Nothing"), 404);
});

test("SCIM's gate: no token, a bad token, another project's token, a missing permission, least privilege", async () => {
  const p = await scimProject();
  const none = await scim(p, "GET", "/Users", undefined, {}, null);
  await expectScimError(none, 401);
  assert.equal(none.headers.get("www-authenticate"), 'Bearer realm="access-control"');
  const bad = await scim(p, "GET", "/Users", undefined, {}, "not.a.token");
  await expectScimError(bad, 401);
  assert.match(bad.headers.get("www-authenticate")!, /^Bearer realm="access-control", error="invalid_token"/);
  const other = await scimProject();
  await expectScimError(await scim(p, "GET", "/Users", undefined, {}, other.scimToken), 403);
  await expectScimError(
    await scim({ ...p, project: { ...p.project, id: "no-such-project" } }, "GET", "/Users"),
    404,
  );
  const reader = await scimProject(["scim:read"]);
  await expectJson(await scim(reader, "GET", "/Users"), 200);
  await expectJson(await scim(reader, "GET", "/ServiceProviderConfig"), 200);
  const refused = await scim(reader, "POST", "/Users", oktaUser(address("r")));
  await expectScimError(refused, 403);
  assert.match(refused.headers.get("www-authenticate")!, /insufficient_scope/);
  const usersOnly = await scimProject(["users:read", "users:create"]);
  await expectScimError(await scim(usersOnly, "GET", "/Users"), 403);

  // Least privilege: a SCIM client acts only on users whose permissions it covers.
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "boss",
    name: "Boss",
    permission_ids: [ids["users:delete"]],
  });
  const boss = await p.api.users.createUser(p.project.id, {
    display_name: "Boss",
    email: address("boss"),
    password: "correct horse battery",
    role_id: role.id,
  });
  await expectScimError(
    await scim(p, "PATCH", `/Users/${boss.id}`, patch({ op: "replace", value: { active: false } })),
    403,
  );
  await expectScimError(await scim(p, "DELETE", `/Users/${boss.id}`), 403);
  assert.equal((await p.api.users.getUser(p.project.id, boss.id, undefined)).is_active, true);
});

test("SCIM discovery: ServiceProviderConfig, ResourceTypes and Schemas, each also by id", async () => {
  const p = await scimProject();
  const config = await expectJson(await scim(p, "GET", "/ServiceProviderConfig"), 200);
  assert.deepEqual(config.filter, { supported: true, maxResults: 200 });
  assert.deepEqual([config.patch, config.bulk, config.sort, config.etag], [
    { supported: true },
    { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    { supported: true },
    { supported: true },
  ]);
  const types = await expectJson(await scim(p, "GET", "/ResourceTypes"), 200);
  assert.deepEqual((types.Resources as { id: string }[]).map((t) => t.id), ["User", "Group"]);
  const group = await expectJson(await scim(p, "GET", "/ResourceTypes/Group"), 200);
  assert.equal(group.endpoint, "/Groups");
  const schemas = await expectJson(await scim(p, "GET", "/Schemas"), 200);
  assert.deepEqual((schemas.Resources as { id: string }[]).map((s) => s.id), [
    USER,
    "urn:ietf:params:scim:schemas:core:2.0:Group",
  ]);
  const user = await expectJson(await scim(p, "GET", `/Schemas/${USER}`), 200);
  const userName = (user.attributes as Record<string, unknown>[]).find((a) => a.name === "userName")!;
  assert.deepEqual(
    [
      userName.type,
      userName.mutability,
      userName.returned,
      userName.uniqueness,
      userName.caseExact,
      userName.required,
    ],
    ["string", "readWrite", "default", "server", false, true],
  );
  await expectScimError(await scim(p, "GET", "/Schemas/urn:nothing"), 404);
});

test("SCIM PATCH is sized before any lock: 100,000 emails, 11 emails, 10,001 members answer 400 tooMany", async () => {
  const p = await scimProject();
  const user = await created(p, entraUser(address("many")));
  const emails = Array.from({ length: 100_000 }, () => ({}));
  await expectScimError(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "add", path: "emails", value: emails })),
    400,
    "tooMany",
  );
  await expectScimError(
    await scim(
      p,
      "PATCH",
      `/Users/${user.id}`,
      patch({
        op: "replace",
        value: { emails: Array.from({ length: 11 }, () => ({ value: address("x") })) },
      }),
    ),
    400,
    "tooMany",
  );
  // 1,000 operations each adding 10 emails: 10,000 values, and the list visited once per operation.
  const ops = Array.from({ length: 1000 }, () => ({ op: "add", path: "emails", value: emails.slice(0, 10) }));
  await expectScimError(await scim(p, "PATCH", `/Users/${user.id}`, patch(...ops)), 400, "tooMany");
  // Nothing changed, and the user answers at once.
  const now = await expectJson(await scim(p, "GET", `/Users/${user.id}`), 200);
  assert.deepEqual(now.emails, user.emails);
  assert.equal((now.meta as { version: string }).version, (user.meta as { version: string }).version);
});

test("SCIM active: a PUT without it keeps it, a PATCH removing it or setting null is refused", async () => {
  const p = await scimProject();
  const body = oktaUser(address("act"));
  const { active: _, ...withoutActive } = body;
  const user = await created(p, withoutActive);
  assert.equal(user.active, true, "a new user is active when the body does not say");
  await expectJson(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "replace", path: "active", value: false })),
    200,
  );
  const put = await expectJson(
    await scim(p, "PUT", `/Users/${user.id}`, { ...withoutActive, displayName: "Renamed" }),
    200,
  );
  assert.deepEqual([put.displayName, put.active], ["Renamed", false]);
  const putNull = await expectJson(
    await scim(p, "PUT", `/Users/${user.id}`, { ...withoutActive, active: null }),
    200,
  );
  assert.equal(putNull.active, false);
  for (const op of [{ op: "remove", path: "active" }, { op: "replace", path: "active", value: null }]) {
    await expectScimError(await scim(p, "PATCH", `/Users/${user.id}`, patch(op)), 400, "invalidValue");
  }
  await expectScimError(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "replace", value: { active: null } })),
    400,
    "invalidValue",
  );
  assert.equal((await p.api.users.getUser(p.project.id, user.id as string, undefined)).is_active, false);
});

test("SCIM userName is required: a PUT or PATCH leaving none is refused and the address stays", async () => {
  const p = await scimProject();
  const body = oktaUser(address("name"));
  const user = await created(p, body);
  const { userName: _, ...withoutUserName } = body;
  await expectScimError(await scim(p, "PUT", `/Users/${user.id}`, withoutUserName), 400, "invalidValue");
  for (
    const op of [
      { op: "remove", path: "userName" },
      { op: "replace", path: "userName", value: null },
      { op: "replace", path: "userName", value: "" },
      { op: "replace", value: { userName: "  " } },
    ]
  ) {
    await expectScimError(await scim(p, "PATCH", `/Users/${user.id}`, patch(op)), 400, "invalidValue");
  }
  const now = await p.api.users.getUser(p.project.id, user.id as string, undefined);
  assert.equal(now.email, body.userName);
});

test("SCIM externalId is kept exactly, and a PATCH of displayName alone touches nothing sensitive", async () => {
  const p = await scimProject();
  const spaced = `  ext ${crypto.randomUUID()}  `;
  const user = await created(p, { ...oktaUser(address("ext")), externalId: spaced });
  assert.equal(user.externalId, spaced);
  const found = await expectJson(
    await scim(p, "GET", `/Users?filter=${encodeURIComponent(`externalId eq "${spaced}"`)}`),
    200,
  );
  assert.equal(found.totalResults, 1);
  const renamed = await expectJson(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "replace", path: "displayName", value: "Ann" })),
    200,
  );
  assert.deepEqual([renamed.displayName, renamed.externalId], ["Ann", spaced]);

  // A user the client does not cover: its external id (with spaces) and names as the admin API stored them.
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "boss",
    name: "Boss",
    permission_ids: [ids["users:delete"]],
  });
  const boss = await p.api.users.createUser(p.project.id, {
    display_name: "Boss",
    email: address("boss"),
    external_user_id: " boss-1 ",
    password: "correct horse battery",
    role_id: role.id,
  });
  const patched = await expectJson(
    await scim(
      p,
      "PATCH",
      `/Users/${boss.id}`,
      patch({ op: "replace", path: "displayName", value: "Big Boss" }),
    ),
    200,
  );
  assert.deepEqual([patched.displayName, patched.externalId], ["Big Boss", " boss-1 "]);
  // Changing the external id itself still needs coverage.
  await expectScimError(
    await scim(
      p,
      "PATCH",
      `/Users/${boss.id}`,
      patch({ op: "replace", path: "externalId", value: "boss-1" }),
    ),
    403,
  );
  const trail = await http(
    `/api/v1/projects/${p.project.id}/audit-events?type=user.updated&target_id=${boss.id}&limit=5`,
    { headers: { authorization: `Bearer ${p.token}` } },
  );
  const [event] = (await trail.json()).data as Api.AuditEvent[];
  assert.deepEqual(Object.keys(event.changes ?? {}), ["display_name"]);
});

test("SCIM userName set to the address waiting for verification applies it, verified", async () => {
  const p = await scimProject();
  const user = await created(p, oktaUser(address("old")));
  const next = address("new");
  // An admin asks for a new address: a verified one stays until the new one is verified (pending).
  const asked = await p.api.users.updateUser(p.project.id, user.id as string, {
    display_name: "Test User",
    is_active: true,
    email: next,
  });
  assert.equal(asked.email, user.userName);
  const applied = await expectJson(
    await scim(p, "PATCH", `/Users/${user.id}`, patch({ op: "replace", path: "userName", value: next })),
    200,
  );
  assert.equal(applied.userName, next);
  const now = await p.api.users.getUser(p.project.id, user.id as string, undefined);
  assert.deepEqual([now.email, now.email_verified, now.pending_email ?? null], [next, true, null]);
});

test("SCIM paging and dates: a startIndex past 2^31 is an empty page; impossible dates are invalidFilter", async () => {
  const p = await scimProject();
  await created(p, oktaUser(address("page")));
  for (const startIndex of ["2147483648", "2147483649", "999999999999999"]) {
    const page = await expectJson(await scim(p, "GET", `/Users?startIndex=${startIndex}`), 200);
    assert.deepEqual([page.totalResults, page.itemsPerPage, page.Resources], [1, 0, []]);
  }
  for (
    const date of [
      "0000-01-01T00:00:00Z",
      "2026-02-30T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "10000-01-01T00:00:00Z",
      "0001-01-01T00:00:00+01:00",
    ]
  ) {
    const filter = encodeURIComponent(`meta.created gt "${date}"`);
    await expectScimError(await scim(p, "GET", `/Users?filter=${filter}`), 400, "invalidFilter");
  }
  for (const date of ["0001-01-01T00:00:00Z", "2024-02-29T00:00:00.123456Z", "2026-01-01T00:00:00"]) {
    const filter = encodeURIComponent(`meta.created gt "${date}"`);
    const page = await expectJson(await scim(p, "GET", `/Users?filter=${filter}`), 200);
    assert.equal(page.totalResults, 1, date);
  }
});

test("SCIM /Me and /Bulk answer 501 in RFC 7644's shape", async () => {
  const p = await scimProject();
  await expectScimError(await scim(p, "GET", "/Me"), 501);
  await expectScimError(
    await scim(p, "PATCH", "/Me", patch({ op: "replace", value: { displayName: "x" } })),
    501,
  );
  await expectScimError(await scim(p, "POST", "/Bulk", { schemas: [], Operations: [] }), 501);
  await expectScimError(await scim(p, "GET", "/Me", undefined, {}, null), 401);
});
