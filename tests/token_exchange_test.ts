/**
 * Token exchange (RFC 8693) with the unmodified oauth4webapi (its generic grant): an agent client with a
 * delegation exchanges a user's token for one naming it as the actor (`act`), holding the intersection of what the
 * user holds, what the delegation allows and what was asked; a chain of agents nests `act`; the token dies with
 * every party (the subject token revoked, the session ended, the user or the agent deactivated, the delegation
 * changed) on the next request; and every bad input answers the RFC's code.
 */
import assert from "node:assert/strict";
import { oauth } from "./deps.ts";
import {
  Api,
  baseUrl,
  basic,
  DATABASE_ENV,
  DATABASE_URL,
  expectOAuthError,
  http,
  loginProject,
  newProject,
  permissionIds,
  postToken,
  startWith,
  test,
  userTokens,
} from "./helpers.ts";
import { Browser, payloadOf, signIn } from "./oidc_support.ts";
import { ApiError, exchangeToken } from "../sdk/src/mod.ts";

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";
const options = { [oauth.allowInsecureRequests]: true };

type Setup = Awaited<ReturnType<typeof setup>>;

/**
 * A project whose user holds users:read, roles:read and an API's read and write; an agent client (confidential)
 * whose delegation is users:read and the API's read.
 */
async function setup() {
  const p = await loginProject();
  const indicator = `https://notes-${crypto.randomUUID().slice(0, 8)}.example/api`;
  const resource = await p.api.resources.createResource(p.project.id, {
    name: "Notes API",
    code: "notes",
    indicator,
    permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
  });
  const ids = await permissionIds(p);
  const role = await p.api.roles.createRole(p.project.id, {
    name: "Member",
    code: "member",
    permission_ids: [ids["users:read"], ids["roles:read"], ids["notes:read"], ids["notes:write"]],
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    role_id: role.id,
  });
  const agent = await p.api.clients.createClient(p.project.id, {
    name: "Agent",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
    delegation: { permission_ids: [ids["users:read"], ids["notes:read"]] },
  });
  assert.deepEqual(agent.delegation?.permission_ids.sort(), [ids["users:read"], ids["notes:read"]].sort());
  const issuer = new URL(await baseUrl());
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options }),
  );
  return { p, ids, indicator, resource, agent, as };
}

/** The agent's exchange through oauth4webapi's generic grant; the parsed answer, or the library's error. */
async function exchange(
  s: Setup,
  subjectToken: string,
  extra: Record<string, string> = {},
  agent: { id: string; client_secret: string } = s.agent,
) {
  const response = await oauth.genericTokenEndpointRequest(
    s.as,
    { client_id: agent.id },
    oauth.ClientSecretBasic(agent.client_secret),
    TOKEN_EXCHANGE,
    { subject_token: subjectToken, subject_token_type: ACCESS_TOKEN, ...extra },
    options,
  );
  return await oauth.processGenericTokenEndpointResponse(s.as, { client_id: agent.id }, response);
}

/** The OAuth error of an exchange oauth4webapi refused. */
async function refusal(call: Promise<unknown>): Promise<{ error: string; status: number }> {
  const err = await call.then(() => assert.fail("accepted"), (e: unknown) => e);
  assert.ok(err instanceof oauth.ResponseBodyError, String(err));
  return { error: err.error, status: err.status };
}

/** A bearer request to the admin API. */
const get = (path: string, token: string) => http(path, { headers: { authorization: `Bearer ${token}` } });

async function introspect(s: Setup, token: string) {
  const res = await http("/api/v1/tokens/introspect", {
    method: "POST",
    headers: {
      authorization: basic(s.p.clientId, s.p.secret),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ token }).toString(),
  });
  assert.equal(res.status, 200);
  return await res.json();
}

test("an agent exchanges a user's token: act names it, the permissions are the intersection, live at the gate", async () => {
  const s = await setup();
  const user = await userTokens({ clientId: s.p.clientId, email: s.p.email, password: s.p.password });
  const got = await exchange(s, user.access_token);
  assert.equal(got.issued_token_type, ACCESS_TOKEN);
  assert.equal(got.token_type, "bearer");
  assert.equal(got.scope, "notes:read users:read");
  const claims = payloadOf(got.access_token);
  const subject = payloadOf(user.access_token);
  assert.equal(claims.sub, s.p.userId);
  assert.equal(claims.client_id, s.agent.id);
  assert.deepEqual(claims.act, { sub: s.agent.id });
  assert.equal(claims.aud, s.p.project.id);
  assert.equal(claims.sid, subject.sid);
  assert.ok((claims.exp as number) <= (subject.exp as number), "never outlives the subject token");

  // The gate: the user holds users:read and the agent may carry it; roles:read only the user holds.
  const users = await get(`/api/v1/projects/${s.p.project.id}/users`, got.access_token);
  assert.equal(users.status, 200);
  await users.body?.cancel();
  const roles = await get(`/api/v1/projects/${s.p.project.id}/roles`, got.access_token);
  assert.equal(roles.status, 403);
  await roles.body?.cancel();
  // An agent acts with permissions for the user, never on the user's account.
  const own = await get("/api/v1/users/current", got.access_token);
  assert.equal(own.status, 403);
  await own.body?.cancel();

  const seen = await introspect(s, got.access_token);
  assert.equal(seen.active, true);
  assert.deepEqual(seen.act, { sub: s.agent.id });
  assert.deepEqual(seen.permissions, ["notes:read", "users:read"]);

  // Asked for less: only that; asked for more: invalid_scope.
  const narrow = await exchange(s, user.access_token, { scope: "users:read" });
  assert.equal(narrow.scope, "users:read");
  assert.deepEqual((await introspect(s, narrow.access_token)).permissions, ["users:read"]);
  assert.deepEqual(await refusal(exchange(s, user.access_token, { scope: "users:read roles:read" })), {
    error: "invalid_scope",
    status: 400,
  });

  // The SDK's helper: the same exchange, typed, and its refusal an ApiError with the RFC's code.
  const sdkOptions = { issuer: await baseUrl(), clientId: s.agent.id, clientSecret: s.agent.client_secret };
  const viaSdk = await exchangeToken({ ...sdkOptions, subjectToken: user.access_token, scope: "users:read" });
  assert.equal(viaSdk.scope, "users:read");
  assert.equal(viaSdk.issued_token_type, ACCESS_TOKEN);
  const sdkRefusal = await exchangeToken({
    ...sdkOptions,
    subjectToken: user.access_token,
    scope: "roles:read",
  })
    .then(() => assert.fail("accepted"), (e: unknown) => e);
  assert.ok(sdkRefusal instanceof ApiError);
  assert.equal(sdkRefusal.error, "invalid_scope");

  // For the API (RFC 8707 resource, or RFC 8693 audience): aud is its indicator, scope its permission codes.
  const api = await exchange(s, user.access_token, { resource: s.indicator });
  assert.equal(payloadOf(api.access_token).aud, s.indicator);
  assert.equal(api.scope, "read");
  const byAudience = await exchange(s, user.access_token, { audience: s.indicator, scope: "read" });
  assert.equal(byAudience.scope, "read");
  assert.deepEqual(await refusal(exchange(s, user.access_token, { resource: s.indicator, scope: "write" })), {
    error: "invalid_scope",
    status: 400,
  });

  // A second agent acting for the first: act nests, and the permissions narrow to both delegations.
  const second = await s.p.api.clients.createClient(s.p.project.id, {
    name: "Sub-agent",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
    delegation: { permission_ids: [s.ids["users:read"], s.ids["roles:read"]] },
  });
  const chained = await exchange(s, got.access_token, {}, second);
  assert.deepEqual(payloadOf(chained.access_token).act, { sub: second.id, act: { sub: s.agent.id } });
  assert.equal(chained.scope, "users:read");
  const chainSeen = await introspect(s, chained.access_token);
  assert.deepEqual(chainSeen.permissions, ["users:read"]);
  // What an earlier exchange asked for binds the later ones: a narrowed token never widens down the chain.
  const wide = await s.p.api.clients.createClient(s.p.project.id, {
    name: "Wide agent",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
    delegation: { permission_ids: [s.ids["users:read"], s.ids["notes:read"]] },
  });
  const fromNarrow = await exchange(s, narrow.access_token, {}, wide);
  assert.equal(fromNarrow.scope, "users:read");
  assert.deepEqual((await introspect(s, fromNarrow.access_token)).permissions, ["users:read"]);
  // An agent exchanging its own token again (to narrow it) gets a working token.
  const again = await exchange(s, got.access_token, { scope: "users:read" });
  assert.deepEqual(payloadOf(again.access_token).act, { sub: s.agent.id, act: { sub: s.agent.id } });
  const againUsers = await get(`/api/v1/projects/${s.p.project.id}/users`, again.access_token);
  assert.equal(againUsers.status, 200);
  await againUsers.body?.cancel();

  // The event names subject, actor and permissions.
  const events = await get(`/api/v1/projects/${s.p.project.id}/audit-events?type=token.exchanged`, s.p.token);
  const last = (await events.json()).data.find((e: { details: { actor: string } }) =>
    e.details.actor === second.id
  );
  assert.deepEqual(last.details.subject, { type: "user", id: s.p.userId });
  assert.equal(last.details.actor, second.id);
  assert.deepEqual(last.details.actors, [second.id, s.agent.id]);
  assert.deepEqual(last.details.permissions, ["users:read"]);
});

test("every party ends a delegated token on the next request: subject token, session, user, agent, delegation", async () => {
  const s = await setup();
  const usersPath = `/api/v1/projects/${s.p.project.id}/users`;
  const status = async (token: string) => {
    const res = await get(usersPath, token);
    await res.body?.cancel();
    return res.status;
  };
  const fresh = async () => {
    const user = await userTokens({ clientId: s.p.clientId, email: s.p.email, password: s.p.password });
    const got = await exchange(s, user.access_token);
    assert.equal(await status(got.access_token), 200);
    return { user, token: got.access_token };
  };

  // The subject token revoked (RFC 7009, by the client it was issued to).
  const a = await fresh();
  const revoke = await http("/api/v1/tokens/revoke", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: a.user.access_token, client_id: s.p.clientId }).toString(),
  });
  assert.equal(revoke.status, 200);
  await revoke.body?.cancel();
  assert.equal(await status(a.token), 401);

  // The session ended (the user's refresh token revoked ends it).
  const b = await fresh();
  const end = await http("/api/v1/tokens/revoke", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: b.user.refresh_token, client_id: s.p.clientId }).toString(),
  });
  assert.equal(end.status, 200);
  await end.body?.cancel();
  assert.equal(await status(b.token), 401);

  // The delegation changed: users:read taken out of it refuses the permission at once (the token lives on).
  const c = await fresh();
  await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, {
    name: "Agent",
    is_active: true,
    delegation: { permission_ids: [s.ids["notes:read"]] },
  });
  assert.equal(await status(c.token), 403);
  assert.deepEqual((await introspect(s, c.token)).permissions, ["notes:read"]);
  // Delegation off: the token is not live at all.
  await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, {
    name: "Agent",
    is_active: true,
    delegation: null,
  });
  assert.equal(await status(c.token), 401);
  assert.equal((await introspect(s, c.token)).active, false);
  await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, {
    name: "Agent",
    is_active: true,
    delegation: { permission_ids: [s.ids["users:read"], s.ids["notes:read"]] },
  });
  assert.equal(await status(c.token), 401, "turning the delegation on again revives nothing");

  // The agent deactivated.
  const d = await fresh();
  await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, { name: "Agent", is_active: false });
  assert.equal(await status(d.token), 401);
  await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, { name: "Agent", is_active: true });

  // The user deactivated.
  const e = await fresh();
  await s.p.api.users.updateUser(s.p.project.id, s.p.userId, {
    display_name: "Login User",
    is_active: false,
    email: s.p.email,
  });
  assert.equal(await status(e.token), 401);
});

test("refusals: a bad subject token is invalid_grant, an unsupported type invalid_request, no delegation unauthorized_client", async () => {
  const s = await setup();
  const user = await userTokens({ clientId: s.p.clientId, email: s.p.email, password: s.p.password });
  const raw = (form: Record<string, string>, agent: { id: string; client_secret: string } = s.agent) =>
    postToken({ grant_type: TOKEN_EXCHANGE, ...form }, {
      authorization: basic(agent.id, agent.client_secret),
    });
  const base = { subject_token: user.access_token, subject_token_type: ACCESS_TOKEN };

  await expectOAuthError(
    raw({ ...base, subject_token: "not.a.jwt" }),
    400,
    "invalid_grant",
    "invalid_subject_token",
  );
  const other = await loginProject();
  const foreign = await userTokens({
    clientId: other.clientId,
    email: other.email,
    password: other.password,
  });
  await expectOAuthError(
    raw({ ...base, subject_token: foreign.access_token }),
    400,
    "invalid_grant",
    "invalid_subject_token",
  );
  await expectOAuthError(
    raw({ ...base, subject_token_type: "urn:ietf:params:oauth:token-type:id_token" }),
    400,
    "invalid_request",
    "invalid_params",
  );
  await expectOAuthError(
    raw({ ...base, requested_token_type: "urn:ietf:params:oauth:token-type:refresh_token" }),
    400,
    "invalid_request",
    "invalid_params",
  );
  await expectOAuthError(raw({ subject_token_type: ACCESS_TOKEN }), 400, "invalid_request", "invalid_params");
  // An actor token of another party.
  await expectOAuthError(
    raw({ ...base, actor_token: user.access_token, actor_token_type: ACCESS_TOKEN }),
    400,
    "invalid_request",
    "invalid_params",
  );

  // A client without delegation.
  const plain = await s.p.api.clients.createClient(s.p.project.id, {
    name: "Plain",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });
  assert.equal(plain.delegation, null);
  await expectOAuthError(raw(base, plain), 400, "unauthorized_client", "unauthorized_client");

  // A public client with a delegation proves nothing by its id: the exchange needs its secret (HTTP Basic).
  const publicAgent = await s.p.api.clients.createClient(s.p.project.id, {
    name: "Public agent",
    delegation: { permission_ids: [s.ids["users:read"]] },
  });
  await expectOAuthError(
    postToken({ grant_type: TOKEN_EXCHANGE, client_id: publicAgent.id, ...base }),
    401,
    "invalid_client",
    "invalid_params",
  );
  // Acting on an agent needs covering its delegation too: a caller without users:read cannot take its secret.
  const clientsAdmin = await s.p.api.clients.createClient(s.p.project.id, {
    name: "Clients admin",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
    permission_ids: [s.ids["clients:read"], s.ids["clients:update"]],
  });
  const adminToken = (await (await postToken({ grant_type: "client_credentials" }, {
    authorization: basic(clientsAdmin.id, clientsAdmin.client_secret),
  })).json()).access_token;
  const rotate = await http(`/api/v1/projects/${s.p.project.id}/clients/${s.agent.id}/secret`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminToken}` },
  });
  assert.equal(rotate.status, 403);
  await rotate.body?.cancel();

  // A chain of more than 5 actors.
  let token = user.access_token;
  for (let i = 0; i < 5; i++) {
    const agent = await s.p.api.clients.createClient(s.p.project.id, {
      name: `Agent ${i}`,
      token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
      delegation: { permission_ids: [s.ids["users:read"]] },
    });
    token = (await exchange(s, token, {}, agent)).access_token;
  }
  const sixth = await s.p.api.clients.createClient(s.p.project.id, {
    name: "Agent 6",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
    delegation: { permission_ids: [s.ids["users:read"]] },
  });
  await expectOAuthError(
    raw({ ...base, subject_token: token }, sixth),
    400,
    "invalid_request",
    "invalid_params",
  );

  // Least privilege: a delegation is given only by a caller covering it.
  const p2 = await newProject();
  const ids2 = await permissionIds(p2);
  const limited = await p2.api.clients.createClient(p2.project.id, {
    name: "limited",
    permission_ids: [ids2["clients:create"], ids2["clients:read"]],
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });
  const limitedToken = await (await postToken({ grant_type: "client_credentials" }, {
    authorization: basic(limited.id, limited.client_secret),
  })).json();
  const refused = await http(`/api/v1/projects/${p2.project.id}/clients`, {
    method: "POST",
    headers: { authorization: `Bearer ${limitedToken.access_token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "x", delegation: { permission_ids: [ids2["users:delete"]] } }),
  });
  assert.equal(refused.status, 403);
  await refused.body?.cancel();
});

test("/account lists the agents acting for the user, and stopping one refuses its tokens at once", async () => {
  const s = await setup();
  const browser = new Browser();
  const user = await signIn(browser, { clientId: s.p.clientId, email: s.p.email, password: s.p.password });
  const got = await exchange(s, user.access_token);
  const usersPath = `/api/v1/projects/${s.p.project.id}/users`;
  const first = await get(usersPath, got.access_token);
  assert.equal(first.status, 200);
  await first.body?.cancel();

  const page = await (await browser.get("/account")).text();
  assert.match(page, /Agents acting for you/);
  assert.match(page, /<strong>Agent<\/strong>/);
  const form = {
    project: /name="project" value="([^"]+)"/.exec(page)![1],
    csrf: /name="csrf" value="([^"]+)"/.exec(page)![1],
    client_id: s.agent.id,
  };
  const forged = await browser.post("/account/agents/revoke", { ...form, csrf: "x".repeat(43) });
  assert.equal(forged.status, 403);
  await forged.body?.cancel();
  const stopped = await browser.post("/account/agents/revoke", form);
  assert.equal(stopped.status, 303);
  await stopped.body?.cancel();
  const after = await (await browser.get(stopped.headers.get("location")!)).text();
  assert.match(after, /No agent acts for you/);
  const refused = await get(usersPath, got.access_token);
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  // And it cannot exchange the user's token it still holds again.
  assert.deepEqual(await refusal(exchange(s, user.access_token)), {
    error: "unauthorized_client",
    status: 400,
  });
  const events = await get(
    `/api/v1/projects/${s.p.project.id}/audit-events?type=delegation.revoked`,
    s.p.token,
  );
  const [event] = (await events.json()).data;
  assert.equal(event.details.client_id, s.agent.id);
  assert.equal(event.details.tokens, 1);
});

test("AuthZEN: context.act names the actors; allowed only when the subject holds it and every actor's delegation has it", async () => {
  const s = await setup();
  const ask = async (path: string, body: unknown) => {
    const res = await http(path, {
      method: "POST",
      headers: { authorization: `Bearer ${s.p.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    return await res.json();
  };
  const question = (action: string, act?: unknown) => ({
    subject: { type: "user", id: s.p.userId },
    action: { name: action },
    resource: { type: "notes", id: "n1" },
    ...(act === undefined ? {} : { context: { act } }),
  });
  const reason = (d: { context?: { reason_admin?: unknown } }) => d.context?.reason_admin;

  // Without act: the user's own decision.
  assert.equal((await ask("/access/v1/evaluation", question("write"))).decision, true);
  // The agent may carry read, not write: read allowed, write denied naming the agent.
  const read = await ask("/access/v1/evaluation", question("read", { sub: s.agent.id }));
  assert.equal(read.decision, true);
  assert.equal((reason(read) as { code: string }).code, "role_permission");
  const write = await ask("/access/v1/evaluation", question("write", { sub: s.agent.id }));
  assert.equal(write.decision, false);
  assert.deepEqual(reason(write), { code: "actor_not_delegated", client_id: s.agent.id });
  // A chain: an actor further in that lacks it is named.
  const plain = await s.p.api.clients.createClient(s.p.project.id, { name: "No delegation" });
  const chain = await ask(
    "/access/v1/evaluation",
    question("read", { sub: s.agent.id, act: { sub: plain.id } }),
  );
  assert.deepEqual(reason(chain), { code: "actor_not_delegated", client_id: plain.id });
  // The subject's own refusal wins: the user lacks admin of notes (no such permission: unknown_action).
  const subjectFails = await ask("/access/v1/evaluation", question("admin", { sub: s.agent.id }));
  assert.equal(subjectFails.decision, false);
  assert.equal((reason(subjectFails) as { code: string }).code, "unknown_action");
  // A malformed act.
  const malformed = await ask("/access/v1/evaluation", question("read", { id: s.agent.id }));
  assert.deepEqual(reason(malformed), { code: "invalid_request", missing: ["/context/act"] });
  // Live: the delegation changed, the next decision follows.
  await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, {
    name: "Agent",
    is_active: true,
    delegation: { permission_ids: [s.ids["notes:read"], s.ids["notes:write"]] },
  });
  assert.equal((await ask("/access/v1/evaluation", question("write", { sub: s.agent.id }))).decision, true);

  // A batch: the request's context.act applies to every item, an item's own context to itself.
  const batch = await ask("/access/v1/evaluations", {
    subject: { type: "user", id: s.p.userId },
    resource: { type: "notes", id: "n1" },
    context: { act: { sub: plain.id } },
    evaluations: [{ action: { name: "read" } }, {
      action: { name: "read" },
      context: { act: { sub: s.agent.id } },
    }],
  });
  assert.deepEqual(batch.evaluations.map((d: { decision: boolean }) => d.decision), [false, true]);
  assert.deepEqual(reason(batch.evaluations[0]), { code: "actor_not_delegated", client_id: plain.id });
});

test(
  "live across instances: a delegation changed and an agent deactivated through one refuse its token on another",
  async () => {
    const s = await setup();
    const other = await startWith(DATABASE_ENV);
    try {
      // The subject: a client of the project holding users:read; its token and the exchange are the other's.
      const subject = await s.p.api.clients.createClient(s.p.project.id, {
        name: "Service",
        token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
        permission_ids: [s.ids["users:read"]],
      });
      const form = (body: Record<string, string>, id: string, secret: string) =>
        fetch(`${other.url}/api/v1/tokens`, {
          method: "POST",
          headers: { authorization: basic(id, secret), "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(body).toString(),
        }).then((r) => r.json());
      const subjectToken =
        (await form({ grant_type: "client_credentials" }, subject.id, subject.client_secret))
          .access_token;
      const acting = await form(
        {
          grant_type: TOKEN_EXCHANGE,
          subject_token: subjectToken,
          subject_token_type: ACCESS_TOKEN,
        },
        s.agent.id,
        s.agent.client_secret,
      );
      assert.deepEqual(payloadOf(acting.access_token).act, { sub: s.agent.id });
      const status = async () => {
        const res = await fetch(`${other.url}/api/v1/projects/${s.p.project.id}/users`, {
          headers: { authorization: `Bearer ${acting.access_token}` },
        });
        await res.body?.cancel();
        return res.status;
      };
      assert.equal(await status(), 200);
      // Through this instance: the delegation loses users:read, then the agent is deactivated.
      await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, {
        name: "Agent",
        is_active: true,
        delegation: { permission_ids: [s.ids["notes:read"]] },
      });
      assert.equal(await status(), 403);
      await s.p.api.clients.updateClient(s.p.project.id, s.agent.id, { name: "Agent", is_active: false });
      assert.equal(await status(), 401);
    } finally {
      await other.close();
    }
  },
  { ignore: !DATABASE_URL },
);

test("may_act (RFC 8693 §4.4): a client's tokens name the one agent that may exchange them; another is unauthorized_client", async () => {
  const s = await setup();
  const chosen = await s.p.api.clients.createClient(s.p.project.id, {
    name: "Chosen agent",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
    delegation: { permission_ids: [s.ids["users:read"]] },
  });
  const app = await s.p.api.clients.getClient(s.p.project.id, s.p.clientId);
  const unknown = await http(`/api/v1/projects/${s.p.project.id}/clients/${s.p.clientId}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${s.p.token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: app.name, is_active: true, may_act: "no-such-client" }),
  });
  assert.equal(unknown.status, 400);
  assert.equal((await unknown.json()).details[0].field, "may_act");
  const updated = await s.p.api.clients.updateClient(s.p.project.id, s.p.clientId, {
    name: app.name,
    is_active: true,
    may_act: chosen.id,
  });
  assert.equal(updated.may_act, chosen.id);
  const user = await userTokens({ clientId: s.p.clientId, email: s.p.email, password: s.p.password });
  assert.deepEqual(payloadOf(user.access_token).may_act, { sub: chosen.id });
  assert.deepEqual(await refusal(exchange(s, user.access_token)), {
    error: "unauthorized_client",
    status: 400,
  });
  const got = await exchange(s, user.access_token, {}, chosen);
  assert.deepEqual(payloadOf(got.access_token).act, { sub: chosen.id });
  // The exchanged token carries it on: another agent cannot take it further.
  assert.deepEqual(payloadOf(got.access_token).may_act, { sub: chosen.id });
  assert.deepEqual(await refusal(exchange(s, got.access_token)), {
    error: "unauthorized_client",
    status: 400,
  });
  // Live: a token issued before may_act was set is held to it too.
  await s.p.api.clients.updateClient(s.p.project.id, s.p.clientId, {
    name: app.name,
    is_active: true,
    may_act: null,
  });
  const before = await userTokens({ clientId: s.p.clientId, email: s.p.email, password: s.p.password });
  assert.equal(payloadOf(before.access_token).may_act, undefined);
  await s.p.api.clients.updateClient(s.p.project.id, s.p.clientId, {
    name: app.name,
    is_active: true,
    may_act: chosen.id,
  });
  assert.deepEqual(await refusal(exchange(s, before.access_token)), {
    error: "unauthorized_client",
    status: 400,
  });
});

test("a permission the subject holds only under a condition is never carried by an exchange (its scope)", async () => {
  const s = await setup();
  const role = (await s.p.api.users.getUser(s.p.project.id, s.p.userId, undefined)).role_id!;
  const member = await s.p.api.roles.getRole(s.p.project.id, role);
  const user = await userTokens({ clientId: s.p.clientId, email: s.p.email, password: s.p.password });
  assert.equal((await exchange(s, user.access_token, { resource: s.indicator })).scope, "read");
  await s.p.api.roles.updateRole(s.p.project.id, role, {
    code: member.code,
    name: member.name,
    conditions: [{
      permission_id: s.ids["notes:read"],
      expression: "resource.properties.owner == subject.id",
    }],
  });
  const after = await exchange(s, user.access_token, { resource: s.indicator }).then(
    (t) => ({ scope: t.scope }),
    (e: unknown) => ({ error: e instanceof oauth.ResponseBodyError ? e.error : String(e) }),
  );
  // Nothing of the API is held outright any more: refused, where before the fix the token said "read".
  assert.deepEqual(after, { error: "invalid_scope" });
});
