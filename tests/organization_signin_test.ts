/**
 * Each company's own sign-in (issue 49 items 4b and 5): joining by a verified address of an organization's
 * domain, an organization's `mfa` at sign-in, and an organization's own upstream provider (straight there with
 * `organization`, or found from an address typed first; members just in time; its button only on its own
 * sign-in), on the service of tests/idp_support.ts with a hand-made upstream.
 */
import assert from "node:assert/strict";
import { test } from "./helpers.ts";
import {
  Agent,
  APP_REDIRECT,
  call,
  claimsOf,
  createProvider,
  type DownProject,
  downProject,
  events,
  fakeUpstream,
  json,
  openDownLogin,
  pageOf,
  redeemAt,
} from "./idp_support.ts";

const PASSWORD = "correct horse battery";

/** A project with `doc` (read), an organization role `member` (doc:read), and Acme with a domain of its own. */
async function setup(acme: Record<string, unknown> = {}) {
  const d = await downProject();
  const doc = await json<{ permissions: { id: string }[] }>(
    await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/resources`, {
      name: "Document",
      code: "doc",
      permissions: [{ name: "Read", code: "read" }],
    }),
    201,
  );
  const member = await json<{ id: string }>(
    await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/roles`, {
      code: "member",
      name: "Member",
      scope: "organization",
      permission_ids: [doc.permissions[0].id],
    }),
    201,
  );
  const domain = `acme-${crypto.randomUUID().slice(0, 8)}.example`;
  const org = await json<{ id: string; join_by_domain: boolean; default_role_ids: string[] }>(
    await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/organizations`, {
      name: "Acme",
      domains: [domain],
      default_role_ids: [member.id],
      ...acme,
    }),
    201,
  );
  return { d, org, domain, member: member.id };
}

async function user(d: DownProject, email: string, verified: boolean): Promise<string> {
  const u = await json<{ id: string }>(
    await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/users`, {
      display_name: "Someone",
      email,
      password: PASSWORD,
      email_verified: verified,
    }),
    201,
  );
  return u.id;
}

/** Signs in with a password on a fresh login page; the form's answer. */
async function passwordLogin(d: DownProject, email: string, extra: Record<string, string> = {}) {
  const agent = new Agent();
  const { html, verifier } = await openDownLogin(agent, d, extra);
  const page = pageOf(html);
  const res = await agent.post(`${d.publicUrl}/authorize`, {
    request_id: page.requestId,
    csrf: page.csrf,
    email,
    password: PASSWORD,
  });
  return { res, verifier, agent };
}

async function membersOf(d: DownProject, orgId: string) {
  const res = await call(
    d.url,
    d.token,
    "GET",
    `/api/v1/projects/${d.projectId}/organizations/${orgId}/members`,
  );
  return (await json<{ data: { user_id: string; role_ids: string[] }[] }>(res, 200)).data;
}

test("joining by domain: a verified address of the organization's domain joins at sign-in with its default roles", async () => {
  const { d, org, domain, member } = await setup({ join_by_domain: true });
  assert.equal(org.join_by_domain, true);
  assert.deepEqual(org.default_role_ids, [member]);
  const alice = await user(d, `alice@${domain}`, true);
  const unverified = await user(d, `bob@${domain}`, false);
  const elsewhere = await user(d, `carol@other-${domain}`, true);
  for (const email of [`alice@${domain}`, `bob@${domain}`, `carol@other-${domain}`]) {
    const { res } = await passwordLogin(d, email);
    assert.equal(res.status, 303, email);
    await res.body?.cancel();
  }
  assert.deepEqual((await membersOf(d, org.id)).map((m) => [m.user_id, m.role_ids]), [[alice, [member]]]);
  const added = await events(d, "organization.member_added");
  assert.deepEqual(added.map((e) => e.details), [{
    user_id: alice,
    role_ids: [member],
    how: "domain",
    domain,
  }]);
  assert.ok(![unverified, elsewhere].includes(added[0].details!.user_id as string));
  // A sign-in straight to the organization: joined first, then its token.
  const dana = await user(d, `dana@${domain}`, true);
  const { res, verifier } = await passwordLogin(d, `dana@${domain}`, { organization: org.id });
  assert.equal(res.status, 303);
  const tokens = await redeemAt(d, res.headers.get("location")!, verifier);
  assert.equal(claimsOf(tokens.access_token).org_id, org.id);
  assert.ok((await membersOf(d, org.id)).some((m) => m.user_id === dana));
  // Off: nobody joins by the domain.
  await json(
    await call(d.url, d.token, "PATCH", `/api/v1/projects/${d.projectId}/organizations/${org.id}`, {
      join_by_domain: false,
    }),
    200,
  );
  await user(d, `erin@${domain}`, true);
  await (await passwordLogin(d, `erin@${domain}`)).res.body?.cancel();
  assert.equal((await membersOf(d, org.id)).length, 2);
});

test("default roles: organization roles only, the caller covering them; join_by_domain and the roles in the trail", async () => {
  const { d, org } = await setup();
  const bad = await call(d.url, d.token, "PATCH", `/api/v1/projects/${d.projectId}/organizations/${org.id}`, {
    default_role_ids: ["no-such-role"],
  });
  assert.equal(bad.status, 400);
  const body = await bad.json();
  assert.equal(body.details[0].field, "default_role_ids.0");
  const updated = await json<{ default_role_ids: string[] }>(
    await call(d.url, d.token, "PATCH", `/api/v1/projects/${d.projectId}/organizations/${org.id}`, {
      default_role_ids: [],
      join_by_domain: true,
    }),
    200,
  );
  assert.deepEqual(updated.default_role_ids, []);
  const trail = await events(d, "organization.updated");
  assert.ok(trail.length >= 1);
});

test("an organization's mfa: required asks its members for a second factor at its sign-in, not at the project's", async () => {
  const { d, org, domain } = await setup({ mfa: "required" });
  const id = await user(d, `frank@${domain}`, true);
  await json(
    await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/organizations/${org.id}/members`, {
      user_id: id,
    }),
    201,
  );
  // The project's own sign-in (its policy is optional, the user has no factor): a code at once.
  const plain = await passwordLogin(d, `frank@${domain}`);
  assert.equal(plain.res.status, 303);
  await plain.res.body?.cancel();
  // Acme's: the enrolment of a second factor first.
  const inAcme = await passwordLogin(d, `frank@${domain}`, { organization: org.id });
  const html = await inAcme.res.text();
  assert.equal(inAcme.res.status, 200);
  assert.match(html, /<h1>Set up two-step verification<\/h1>/);
  // The same browser, signed in to the project by its single sign-on session: Acme's sign-in still asks.
  const again = await openDownLogin(plain.agent, d, { organization: org.id });
  assert.equal(again.res.status, 200);
  assert.match(again.html, /Sign in|two-step/);
});

test("an organization's own provider: straight there, found by the address, members just in time, its button only on its sign-in", async () => {
  const up = await fakeUpstream();
  try {
    const { d, org, domain, member } = await setup();
    const other = await json<{ id: string }>(
      await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/organizations`, { name: "Globex" }),
      201,
    );
    up.state.claims = () => ({ email: `grace@${domain}`, email_verified: true, name: "Grace" });
    const provider = await createProvider(d, {
      display_name: "Acme SSO",
      issuer: up.base,
      client_id: "acme-client",
      client_secret: "acme-secret",
      jit_provisioning: true,
      organization_id: org.id,
    });
    const shown = await json<{ organization_id: string }>(
      await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/identity-providers/${provider.id}`),
      200,
    );
    assert.equal(shown.organization_id, org.id);
    // The project's login page: no button of Acme's provider, and the company sign-in.
    const agent = new Agent();
    const page = await openDownLogin(agent, d);
    assert.deepEqual(pageOf(page.html).links, []);
    assert.match(page.html, /id="company-sign-in"/);
    // With organization: straight to Acme's provider (a browser's first visit: no cookie yet); the user is
    // created, joins, and signs in to Acme.
    const first = new Agent();
    const straight = await openDownLogin(first, d, { organization: org.id });
    assert.equal(straight.res.status, 303);
    const to = straight.res.headers.get("location")!;
    assert.ok(to.startsWith(`${up.base}/authorize`), to);
    const back = await first.follow(to);
    assert.ok(back.url.startsWith(APP_REDIRECT), back.url);
    const tokens = await redeemAt(d, back.url, straight.verifier);
    assert.equal(claimsOf(tokens.access_token).org_id, org.id);
    const grace = claimsOf(tokens.access_token).sub as string;
    assert.deepEqual((await membersOf(d, org.id)).map((m) => [m.user_id, m.role_ids]), [[grace, [member]]]);
    const jit = (await events(d, "organization.member_added")).find((e) => e.details?.how === "jit");
    assert.deepEqual(jit?.details, {
      user_id: grace,
      role_ids: [member],
      how: "jit",
      provider_id: provider.id,
    });
    // An address typed first: "Use my company's sign-in" goes to Acme's provider with login_hint, and the sign-in
    // is Acme's.
    const fresh = new Agent();
    const login = await openDownLogin(fresh, d);
    const form = pageOf(login.html);
    const hrd = await fresh.post(`${d.publicUrl}/authorize`, {
      request_id: form.requestId,
      csrf: form.csrf,
      email: `grace@${domain}`,
      company: "1",
    });
    assert.equal(hrd.status, 303);
    const upstream = hrd.headers.get("location")!;
    assert.equal(new URL(upstream).searchParams.get("login_hint"), `grace@${domain}`);
    const returned = await fresh.follow(upstream);
    const second = await redeemAt(d, returned.url, login.verifier);
    assert.equal(claimsOf(second.access_token).org_id, org.id);
    // An address of no organization's domain: the page again, asking for the password.
    const nobody = new Agent();
    const plain = pageOf((await openDownLogin(nobody, d)).html);
    const refused = await nobody.post(`${d.publicUrl}/authorize`, {
      request_id: plain.requestId,
      csrf: plain.csrf,
      email: "someone@example.com",
      company: "1",
    });
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /No company sign-in is set up for this address/);
    // A sign-in to Globex never shows or takes Acme's provider.
    const globexAgent = new Agent();
    const globex = await openDownLogin(globexAgent, d, { organization: other.id });
    assert.equal(globex.res.status, 200);
    assert.deepEqual(pageOf(globex.html).links, []);
    const clicked = await globexAgent.get(
      `${d.publicUrl}/authorize/idp/${provider.id}?${new URLSearchParams({
        request_id: pageOf(globex.html).requestId,
        csrf: pageOf(globex.html).csrf,
      })}`,
    );
    assert.equal(clicked.status, 400);
    assert.match(await clicked.text(), /This sign-in option is not available/);
    // An address outside Acme's domains: the provider's word that it is verified does not count.
    up.state.claims = () => ({
      sub: "upstream-mallory",
      email: `mallory@elsewhere-${domain}`,
      email_verified: true,
      name: "Mallory",
    });
    const outsider = new Agent();
    const out = await openDownLogin(outsider, d, { organization: org.id });
    const outBack = await outsider.follow(out.res.headers.get("location")!);
    const outTokens = await redeemAt(d, outBack.url, out.verifier);
    const mallory = claimsOf(outTokens.access_token).sub as string;
    const malloryUser = await json<{ email_verified: boolean }>(
      await call(d.url, d.token, "GET", `/api/v1/projects/${d.projectId}/users/${mallory}`),
      200,
    );
    assert.equal(malloryUser.email_verified, false);
    // Bad input: an organization that is not the project's.
    const wrong = await call(d.url, d.token, "POST", `/api/v1/projects/${d.projectId}/identity-providers`, {
      kind: "oidc",
      display_name: "Wrong",
      issuer: up.base,
      client_id: "x",
      organization_id: "no-such-organization",
    });
    assert.equal(wrong.status, 400);
    assert.equal((await wrong.json()).details[0].field, "organization_id");
  } finally {
    await up.stop();
  }
});
