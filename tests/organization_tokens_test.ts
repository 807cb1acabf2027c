/**
 * Organizations' tokens and decisions (issue 49 item 3): `/authorize?organization=` gives a member tokens with
 * `org_id` and their organization roles; a non-member gets a page, never a code; refresh switches between the
 * organizations the user belongs to; decisions in an organization (from `context.organization_id` or the
 * token) count its roles on its objects, with reasons naming them; introspection and userinfo show the
 * organization; removal refuses the organization's tokens on the next request, on every instance.
 */
import assert from "node:assert/strict";
import { EVALUATION, EVALUATIONS, ok, post } from "./authzen_support.ts";
import { claimsOf } from "./idp_support.ts";
import {
  Api,
  basic,
  challengeOf,
  clientWith,
  DATABASE_ENV,
  DATABASE_URL,
  http,
  loginProject,
  newVerifier,
  openLoginPage,
  permissionIds,
  postToken,
  REDIRECT_URI,
  service,
  startWith,
  submitLogin,
  test,
  type TestProject,
} from "./helpers.ts";

type Org = { id: string; name: string };

/** An admin API call as JSON, answered 2xx (its body, or null for 204). */
async function call(p: TestProject, method: string, path: string, body?: unknown) {
  const res = await http(`/api/v1/projects/${p.project.id}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${p.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

type Setup = Awaited<ReturnType<typeof loginProject>> & {
  acme: Org;
  globex: Org;
  admin: string;
  viewer: string;
  writer: string;
  perm: Record<string, string>;
  /** The `doc` resource's id. */
  doc: string;
  /** A client holding access:evaluate. */
  pep: string;
};

/**
 * `doc` (read, write); organization roles `admin` (read, write) and `viewer` (read); Acme and Globex; the
 * login user is Acme's admin and Globex's viewer; `doc-acme` is Acme's, `doc-globex` Globex's, `doc-project`
 * the project's.
 */
async function setup(): Promise<Setup> {
  const p = await loginProject();
  const doc = await p.api.resources.createResource(p.project.id, {
    name: "Document",
    code: "doc",
    permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
  });
  const perm = Object.fromEntries(doc.permissions.map((x) => [x.code, x.id]));
  const role = async (code: string, ids: string[], conditions: unknown[] = []) =>
    (await call(p, "POST", "/roles", {
      code,
      name: code,
      scope: "organization",
      permission_ids: ids,
      ...(conditions.length ? { conditions } : {}),
    })).id as string;
  const admin = await role("admin", [perm.read, perm.write]);
  const viewer = await role("viewer", [perm.read]);
  const writer = await role("writer", [perm.write], [{
    permission_id: perm.write,
    expression: '!has(resource.properties.status) || resource.properties.status != "locked"',
  }]);
  const acme = await call(p, "POST", "/organizations", { name: "Acme" });
  const globex = await call(p, "POST", "/organizations", { name: "Globex" });
  await call(p, "POST", `/organizations/${acme.id}/members`, { user_id: p.userId, role_ids: [admin] });
  await call(p, "POST", `/organizations/${globex.id}/members`, { user_id: p.userId, role_ids: [viewer] });
  await call(p, "POST", `/resources/${doc.id}/objects/batch`, {
    objects: [
      { id: "doc-acme", organization_id: acme.id },
      { id: "doc-globex", organization_id: globex.id, properties: { status: "locked" } },
      { id: "doc-project" },
    ],
  });
  const pep = (await clientWith(p, ["access:evaluate"])).token;
  return { ...p, acme, globex, admin, viewer, writer, perm, doc: doc.id, pep };
}

/** Signs the login user in through /authorize with these extra parameters; the redirect's URL. */
async function signIn(
  s: { clientId: string; email: string; password: string },
  extra: Record<string, string>,
): Promise<{ res: Response; verifier: string }> {
  const verifier = newVerifier();
  const page = await openLoginPage({
    client_id: s.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    ...extra,
  });
  assert.equal(page.status, 200, page.html);
  return { res: await submitLogin(page, s.email, s.password), verifier };
}

type Tokens = { access_token: string; refresh_token: string; id_token?: string };

/** Tokens of the login user signed in to `organization` (with openid, so an ID token and userinfo). */
async function tokensIn(s: Setup, organization: string): Promise<Tokens> {
  const { res, verifier } = await signIn(s, { organization, scope: "openid profile" });
  assert.equal(res.status, 303, await res.text());
  const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
  const token = await postToken({
    grant_type: "authorization_code",
    client_id: s.clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  assert.equal(token.status, 200);
  return await token.json();
}

const refresh = (s: Setup, refreshToken: string, organization?: string) =>
  postToken({
    grant_type: "refresh_token",
    client_id: s.clientId,
    refresh_token: refreshToken,
    ...(organization ? { organization } : {}),
  });

async function introspect(s: Setup, token: string) {
  const res = await http("/api/v1/tokens/introspect", {
    method: "POST",
    headers: {
      authorization: basic(s.clientId, s.secret),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ token }).toString(),
  });
  assert.equal(res.status, 200);
  return await res.json();
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

// deno-lint-ignore no-explicit-any
const reason = (d: any) => d.context?.reason_admin;

async function decide(
  s: Setup,
  action: string,
  id: string,
  context?: Record<string, unknown>,
  token = s.pep,
) {
  return await ok(
    await post(EVALUATION, {
      subject: { type: "user", id: s.userId },
      action: { name: action },
      resource: { type: "doc", id },
      ...(context ? { context } : {}),
    }, token),
  );
}

test("a member's tokens of an organization: org_id in both tokens, its roles' permissions, its name shown", async () => {
  const s = await setup();
  const t = await tokensIn(s, s.acme.id);
  assert.equal(claimsOf(t.access_token).org_id, s.acme.id);
  assert.equal(claimsOf(t.id_token!).org_id, s.acme.id);
  const seen = await introspect(s, t.access_token);
  assert.equal(seen.active, true);
  assert.equal(seen.org_id, s.acme.id);
  assert.equal(seen.org_name, "Acme");
  // Project-wide: nothing; in Acme (on its objects only): its admin role's.
  assert.deepEqual(seen.permissions, []);
  assert.deepEqual(seen.organization_permissions, ["doc:read", "doc:write"]);
  const info = await (await http("/userinfo", { headers: bearer(t.access_token) })).json();
  assert.equal(info.org_id, s.acme.id);
  assert.equal(info.org_name, "Acme");
  const r = await introspect(s, t.refresh_token);
  assert.equal(r.org_id, s.acme.id);
  assert.deepEqual(r.organization_permissions, ["doc:read", "doc:write"]);
  // The same user in Globex: its viewer role only.
  const g = await tokensIn(s, s.globex.id);
  const inGlobex = await introspect(s, g.access_token);
  assert.equal(inGlobex.org_name, "Globex");
  assert.deepEqual(inGlobex.organization_permissions, ["doc:read"]);
  // Without an organization: the project's tokens, as before.
  const { res, verifier } = await signIn(s, {});
  const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
  const plain = await (await postToken({
    grant_type: "authorization_code",
    client_id: s.clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  })).json();
  assert.equal(claimsOf(plain.access_token).org_id, undefined);
  const project = await introspect(s, plain.access_token);
  assert.equal(project.org_id, undefined);
  assert.equal(project.organization_permissions, undefined);
  assert.deepEqual(project.permissions, []);
});

test("organization at /authorize: a non-member sees a page and gets no code; an unknown one is invalid_request", async () => {
  const s = await setup();
  const other = await call(s, "POST", "/organizations", { name: "Initech" });
  const { res } = await signIn(s, { organization: other.id });
  const html = await res.text();
  assert.equal(res.status, 400, html);
  assert.equal(res.headers.get("location"), null);
  assert.match(html, /not a member of Initech/);
  // Signed in (single sign-on): again a page; with prompt=none, access_denied at the redirect URI, never a code.
  const signed = (await signIn(s, { scope: "openid" })).res;
  assert.equal(signed.status, 303);
  const cookie = signed.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const silently = async (prompt: Record<string, string>) =>
    await http(
      `/authorize?${new URLSearchParams({
        client_id: s.clientId,
        redirect_uri: REDIRECT_URI,
        response_type: "code",
        code_challenge: await challengeOf(newVerifier()),
        code_challenge_method: "S256",
        scope: "openid",
        organization: other.id,
        ...prompt,
      })}`,
      { redirect: "manual", headers: { cookie } },
    );
  const shown = await silently({});
  const text = await shown.text();
  assert.equal(shown.status, 400, text);
  assert.match(text, /not a member of Initech/);
  const none = await silently({ prompt: "none" });
  assert.equal(none.status, 302);
  const back = new URL(none.headers.get("location")!);
  assert.equal(back.searchParams.get("error"), "access_denied");
  assert.equal(back.searchParams.get("code"), null);
  await none.body?.cancel();
  // A member of Acme is let through by the same browser session at once.
  const member = await silently({ organization: s.acme.id });
  assert.equal(member.status, 302);
  assert.ok(new URL(member.headers.get("location")!).searchParams.get("code"));
  await member.body?.cancel();
  // Unknown, or another project's: the client hears of it before anyone signs in.
  const elsewhere = await setup();
  for (const organization of ["no-such-organization", elsewhere.acme.id]) {
    const r = await http(
      `/authorize?${new URLSearchParams({
        client_id: s.clientId,
        redirect_uri: REDIRECT_URI,
        response_type: "code",
        code_challenge: await challengeOf(newVerifier()),
        code_challenge_method: "S256",
        organization,
      })}`,
      { redirect: "manual" },
    );
    assert.equal(r.status, 302);
    const to = new URL(r.headers.get("location")!);
    assert.equal(to.searchParams.get("error"), "invalid_request");
    assert.equal(to.searchParams.get("code"), null);
    await r.body?.cancel();
  }
});

test("refresh switches to another organization of the user's, keeps it, and refuses one the user is not in", async () => {
  const s = await setup();
  const t = await tokensIn(s, s.acme.id);
  const switched = await refresh(s, t.refresh_token, s.globex.id);
  assert.equal(switched.status, 200);
  const g = await switched.json();
  assert.equal(claimsOf(g.access_token).org_id, s.globex.id);
  assert.equal(claimsOf(g.id_token).org_id, s.globex.id);
  // The next refresh keeps Globex.
  const kept = await (await refresh(s, g.refresh_token)).json();
  assert.equal(claimsOf(kept.access_token).org_id, s.globex.id);
  // Not a member of Initech: access_denied, and the refresh token is not spent.
  const initech = await call(s, "POST", "/organizations", { name: "Initech" });
  const refused = await refresh(s, kept.refresh_token, initech.id);
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).error, "access_denied");
  const unknown = await refresh(s, kept.refresh_token, "no-such-organization");
  assert.equal((await unknown.json()).error, "access_denied");
  // An organization that requires a second factor: a login without one cannot switch into it.
  await call(s, "PATCH", `/organizations/${s.acme.id}`, { mfa: "required" });
  const weak = await refresh(s, kept.refresh_token, s.acme.id);
  assert.equal(weak.status, 400);
  assert.match((await weak.json()).error_description, /second factor/);
  await call(s, "PATCH", `/organizations/${s.acme.id}`, { mfa: "inherit" });
  assert.equal((await refresh(s, kept.refresh_token, s.acme.id)).status, 200);
});

test("decisions in an organization: its roles on its objects (and their descendants) only, with reasons", async () => {
  const s = await setup();
  const inAcme = { organization_id: s.acme.id };
  const mine = await decide(s, "write", "doc-acme", inAcme);
  assert.equal(mine.decision, true);
  assert.deepEqual(reason(mine), { code: "organization_role", role_id: s.admin, organization_id: s.acme.id });
  // Not registered: no organization's roles reach it (a request never places an object in one).
  const unregistered = await decide(s, "write", "new-doc", inAcme);
  assert.equal(unregistered.decision, false);
  assert.equal(reason(unregistered).code, "no_permission");
  // A child without an organization of its own belongs to its nearest ancestor's.
  await call(s, "POST", `/resources/${s.doc}/objects`, { id: "acme-child", parent_id: "doc-acme" });
  assert.equal((await decide(s, "write", "acme-child", inAcme)).decision, true);
  assert.equal((await decide(s, "read", "acme-child", { organization_id: s.globex.id })).decision, false);
  // A NUL in the id names no object: no organization's roles.
  assert.equal((await decide(s, "read", "doc-acme\u0000", inAcme)).decision, false);
  // Registered in another organization, or in none: Acme's roles do not reach it.
  for (const id of ["doc-globex", "doc-project"]) {
    const d = await decide(s, "read", id, inAcme);
    assert.equal(d.decision, false, id);
    assert.equal(reason(d).code, "no_permission");
  }
  // In Globex: its viewer role reads Globex's document, writes nothing.
  const inGlobex = { organization_id: s.globex.id };
  assert.equal((await decide(s, "read", "doc-globex", inGlobex)).decision, true);
  assert.equal((await decide(s, "write", "doc-globex", inGlobex)).decision, false);
  assert.equal((await decide(s, "read", "doc-acme", inGlobex)).decision, false);
  // No organization, or one that is not a string: only what the user holds project-wide (nothing).
  assert.equal((await decide(s, "read", "doc-acme")).decision, false);
  assert.equal((await decide(s, "read", "doc-acme", { organization_id: 7 })).decision, false);
  // A batch: each item in its own context's organization, in one snapshot.
  const batch = await ok(
    await post(EVALUATIONS, {
      subject: { type: "user", id: s.userId },
      action: { name: "read" },
      context: inAcme,
      evaluations: [
        { resource: { type: "doc", id: "doc-acme" } },
        { resource: { type: "doc", id: "doc-globex" } },
        { resource: { type: "doc", id: "doc-globex" }, context: inGlobex },
        { resource: { type: "doc", id: "doc-acme" }, context: {} },
        { resource: { type: "doc", id: "doc-acme" } },
      ],
    }, s.pep),
  );
  assert.deepEqual(batch.evaluations.map((d: { decision: boolean }) => d.decision), [
    true,
    false,
    true,
    false,
    true,
  ]);
  assert.deepEqual(reason(batch.evaluations[2]), {
    code: "organization_role",
    role_id: s.viewer,
    organization_id: s.globex.id,
  });
});

test("placing an object in an organization needs the organization roles' permissions of its resource", async () => {
  const s = await setup();
  const limited = await clientWith(s, ["objects:create", "objects:update", "objects:read", "doc:read"]);
  const placed = await http(`/api/v1/projects/${s.project.id}/resources/${s.doc}/objects`, {
    method: "POST",
    headers: { authorization: `Bearer ${limited.token}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "sneaky", organization_id: s.acme.id }),
  });
  assert.equal(placed.status, 403);
  assert.match((await placed.json()).error_description, /doc:write/);
  const moved = await http(`/api/v1/projects/${s.project.id}/resources/${s.doc}/objects/doc-project`, {
    method: "PUT",
    headers: { authorization: `Bearer ${limited.token}`, "content-type": "application/json" },
    body: JSON.stringify({ organization_id: s.acme.id }),
  });
  assert.equal(moved.status, 403);
  await moved.body?.cancel();
  // Without an organization: as before.
  const plain = await http(`/api/v1/projects/${s.project.id}/resources/${s.doc}/objects`, {
    method: "POST",
    headers: { authorization: `Bearer ${limited.token}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "plain" }),
  });
  assert.equal(plain.status, 201);
  await plain.body?.cancel();
});

test("an organization role's condition decides with its reason; a user token's organization is the question's", async () => {
  const s = await setup();
  const { writer } = s;
  await call(s, "PUT", `/organizations/${s.globex.id}/members/${s.userId}`, { role_ids: [s.viewer, writer] });
  const inGlobex = { organization_id: s.globex.id };
  const locked = await decide(s, "write", "doc-globex", inGlobex);
  assert.equal(locked.decision, false);
  assert.deepEqual(reason(locked), {
    code: "condition_false",
    role_id: writer,
    organization_id: s.globex.id,
    permission_id: s.perm.write,
  });
  await call(s, "POST", `/resources/${s.doc}/objects`, {
    id: "globex-draft",
    organization_id: s.globex.id,
  });
  const open = await decide(s, "write", "globex-draft", inGlobex);
  assert.deepEqual(reason(open), {
    code: "organization_role",
    role_id: writer,
    organization_id: s.globex.id,
    permission_id: s.perm.write,
    conditional: true,
  });
  // In a batch too, the stored object decides (its properties, not the request's).
  const batch = await ok(
    await post(EVALUATIONS, {
      subject: { type: "user", id: s.userId },
      action: { name: "write" },
      context: inGlobex,
      evaluations: [{ resource: { type: "doc", id: "doc-globex" } }, {
        resource: { type: "doc", id: "globex-draft" },
      }],
    }, s.pep),
  );
  assert.deepEqual(batch.evaluations.map((d: { decision: boolean }) => d.decision), [false, true]);
  assert.equal(reason(batch.evaluations[0]).code, "condition_false");
  // The user's own token of Globex asks about itself: its organization is the question's without context.
  const evaluator = await call(s, "POST", "/roles", {
    code: "evaluator",
    name: "Evaluator",
    permission_ids: [await permissionId(s, "access:evaluate")],
  });
  await s.api.users.updateUser(s.project.id, s.userId, {
    display_name: "Login User",
    email: s.email,
    role_id: evaluator.id,
    is_active: true,
  });
  const t = await tokensIn(s, s.globex.id);
  assert.equal((await decide(s, "read", "doc-globex", undefined, t.access_token)).decision, true);
  assert.equal((await decide(s, "read", "doc-acme", undefined, t.access_token)).decision, false);
  // The context names another organization: that one is asked.
  assert.equal(
    (await decide(s, "write", "doc-acme", { organization_id: s.acme.id }, t.access_token)).decision,
    true,
  );
});

async function permissionId(s: Setup, code: string): Promise<string> {
  return (await permissionIds(s))[code];
}

test("a member removed: the organization's tokens are refused on the next request, on every instance", async () => {
  const shared = await service();
  // A second instance on the same PostgreSQL database, with the same issuer; the embedded database has one.
  const second = DATABASE_URL ? await startWith({ ...DATABASE_ENV, PUBLIC_URL: shared.url }) : null;
  try {
    const s = await setup();
    const t = await tokensIn(s, s.acme.id);
    const other = await tokensIn(s, s.globex.id);
    const urls = [shared.url, second?.url ?? shared.url];
    for (const url of urls) {
      const res = await fetch(`${url}/userinfo`, { headers: bearer(t.access_token) });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    await call(s, "DELETE", `/organizations/${s.acme.id}/members/${s.userId}`);
    for (const url of urls) {
      for (const path of ["/userinfo", "/api/v1/users/current"]) {
        const res = await fetch(`${url}${path}`, { headers: bearer(t.access_token) });
        assert.equal(res.status, 401, `${url}${path}`);
        await res.body?.cancel();
      }
      // Globex's tokens of the same session kind still work.
      const res = await fetch(`${url}/userinfo`, { headers: bearer(other.access_token) });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    assert.deepEqual(await introspect(s, t.access_token), { active: false });
    assert.deepEqual(await introspect(s, t.refresh_token), { active: false });
    const refused = await refresh(s, t.refresh_token);
    assert.equal((await refused.json()).error, "access_denied");
    // Acme's roles no longer count in decisions either.
    assert.equal((await decide(s, "write", "doc-acme", { organization_id: s.acme.id })).decision, false);
    // Added back: the tokens of the membership that ended stay refused.
    await call(s, "POST", `/organizations/${s.acme.id}/members`, { user_id: s.userId, role_ids: [s.admin] });
    for (const url of urls) {
      const res = await fetch(`${url}/userinfo`, { headers: bearer(t.access_token) });
      assert.equal(res.status, 401);
      await res.body?.cancel();
    }
    assert.deepEqual(await introspect(s, t.refresh_token), { active: false });
    assert.equal((await (await refresh(s, t.refresh_token)).json()).error, "access_denied");
    assert.equal((await (await refresh(s, t.refresh_token, s.acme.id)).json()).error, "access_denied");
    // The same refresh token may still switch to another organization the user belongs to.
    const moved = await refresh(s, t.refresh_token, s.globex.id);
    assert.equal(moved.status, 200);
    assert.equal(claimsOf((await moved.json()).access_token).org_id, s.globex.id);
  } finally {
    await second?.close();
  }
});

test("token exchange: an agent acts for a member in the subject token's organization, or one it switches to", async () => {
  const s = await setup();
  const agent = await s.api.clients.createClient(s.project.id, {
    name: "Agent",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
    delegation: { permission_ids: [s.perm.read, s.perm.write] },
  });
  const exchange = (subject: string, extra: Record<string, string> = {}) =>
    postToken({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      subject_token: subject,
      subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
      ...extra,
    }, { authorization: basic(agent.id, agent.client_secret) });
  const t = await tokensIn(s, s.acme.id);
  const inAcme = await exchange(t.access_token);
  const acmeBody = await inAcme.json();
  assert.equal(inAcme.status, 200, JSON.stringify(acmeBody));
  assert.equal(claimsOf(acmeBody.access_token).org_id, s.acme.id);
  assert.equal(acmeBody.scope, "doc:read doc:write");
  const switched = await (await exchange(t.access_token, { organization: s.globex.id })).json();
  assert.equal(claimsOf(switched.access_token).org_id, s.globex.id);
  assert.equal(switched.scope, "doc:read");
  const initech = await call(s, "POST", "/organizations", { name: "Initech" });
  const refused = await exchange(t.access_token, { organization: initech.id });
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).error, "access_denied");
  // The agent's token of Acme dies with the membership.
  assert.equal((await introspect(s, acmeBody.access_token)).active, true);
  await call(s, "DELETE", `/organizations/${s.acme.id}/members/${s.userId}`);
  assert.deepEqual(await introspect(s, acmeBody.access_token), { active: false });
  assert.equal((await introspect(s, switched.access_token)).active, true);
});
