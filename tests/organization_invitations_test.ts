/**
 * Invitations to an organization (issue 49 item 4), through a real SMTP server (tests/smtp_catcher.ts): the mail's
 * link creates the user or joins an existing one, once; resend and revoke kill the old link; an address already a
 * member, an unverified account, every bad input and the least-privilege refusals.
 */
import assert from "node:assert/strict";
import { test } from "./helpers.ts";
import {
  api,
  eventsOf,
  hiddenFields,
  Jar,
  type MailProject,
  newEmail,
  openLogin,
  projectAt,
  sharedMailService,
  userAt,
} from "./mail_support.ts";
import { linkIn } from "./smtp_catcher.ts";
import { exchangeCodeAt } from "./mail_flows.ts";
import { claimsOf } from "./idp_support.ts";

const service = sharedMailService();
const PASSWORD = "correct horse battery";

type Setup = MailProject & {
  org: { id: string; name: string };
  admin: string;
  viewer: string;
  project: string;
};

/** A project with Acme, organization roles `admin` (doc:read, doc:write) and `viewer` (doc:read), a project role. */
async function setup(): Promise<Setup> {
  const s = await service();
  const p = await projectAt(s.url);
  const call = async (method: string, path: string, body?: unknown, status = 201) => {
    const res = await api(p.url, p.token, method, `/api/v1/projects/${p.projectId}${path}`, body);
    assert.equal(res.status, status, await res.clone().text());
    return await res.json();
  };
  const doc = await call("POST", "/resources", {
    name: "Document",
    code: "doc",
    permissions: [{ name: "Read", code: "read" }, { name: "Write", code: "write" }],
  });
  const [read, write] = doc.permissions.map((x: { id: string }) => x.id);
  const admin = (await call("POST", "/roles", {
    code: "admin",
    name: "Admin",
    scope: "organization",
    permission_ids: [read, write],
  })).id;
  const viewer = (await call("POST", "/roles", {
    code: "viewer",
    name: "Viewer",
    scope: "organization",
    permission_ids: [read],
  })).id;
  const project = (await call("POST", "/roles", { code: "staff", name: "Staff", permission_ids: [read] })).id;
  const org = await call("POST", "/organizations", { name: `Acme ${crypto.randomUUID().slice(0, 6)}` });
  return { ...p, org, admin, viewer, project };
}

const invitations = (p: Setup) => `/api/v1/projects/${p.projectId}/organizations/${p.org.id}/invitations`;

async function invite(p: Setup, body: Record<string, unknown>, token = p.token) {
  return await api(p.url, token, "POST", invitations(p), body);
}

async function invited(p: Setup, email: string, roleIds: string[]) {
  const res = await invite(p, { email, role_ids: roleIds });
  assert.equal(res.status, 201, await res.clone().text());
  return await res.json();
}

/** The invitation link of the latest mail to `email` (its subject names the organization). */
async function linkTo(email: string, organization: string, after = 0): Promise<string> {
  const s = await service();
  const mail = await s.catcher.waitFor((m) =>
    m.to.includes(email) && m.subject.includes(organization) &&
    s.catcher.mails.indexOf(m) >= after
  );
  const link = linkIn(mail);
  assert.ok(link.includes("/authorize/invitation?token="), mail.text);
  return link;
}

const mailsSoFar = async () => (await service()).catcher.mails.length;

async function members(p: Setup) {
  const res = await api(
    p.url,
    p.token,
    "GET",
    `/api/v1/projects/${p.projectId}/organizations/${p.org.id}/members`,
  );
  assert.equal(res.status, 200);
  return (await res.json()).data as { user_id: string; role_ids: string[] }[];
}

test("an invitation to a new address: the mailed link creates the user, who joins with its roles, once", async () => {
  const p = await setup();
  const email = newEmail();
  const inv = await invited(p, email, [p.admin]);
  assert.equal(inv.status, "pending");
  assert.equal(inv.email, email);
  assert.deepEqual(inv.role_ids, [p.admin]);
  const link = await linkTo(email, p.org.name);
  const jar = new Jar(p.url);
  const page = await jar.get(link);
  const html = await page.text();
  assert.equal(page.status, 200, html);
  assert.match(html, new RegExp(`Join ${p.org.name}`));
  assert.match(html, /name="password"/);
  // A weak password: the form again, nothing created.
  const weak = await jar.post("/authorize/invitation", {
    ...hiddenFields(html),
    name: "Bob",
    password: "short",
    password_repeat: "short",
  });
  assert.equal(weak.status, 400);
  assert.match(await weak.text(), /at least 8 characters/i);
  const done = await jar.post("/authorize/invitation", {
    ...hiddenFields(html),
    name: "Bob",
    password: PASSWORD,
    password_repeat: PASSWORD,
  });
  assert.equal(done.status, 200);
  assert.match(await done.text(), /You joined/);
  const users =
    await (await api(p.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users?search=${email}`))
      .json();
  const user = users.data[0];
  assert.equal(user.email_verified, true);
  assert.equal(user.role_id, null);
  assert.deepEqual((await members(p)).map((m) => [m.user_id, m.role_ids]), [[user.id, [p.admin]]]);
  const after = await (await api(p.url, p.token, "GET", `${invitations(p)}/${inv.id}`)).json();
  assert.equal(after.status, "accepted");
  assert.equal(after.accepted_user_id, user.id);
  // The link works once.
  const again = await new Jar(p.url).get(link);
  assert.equal(again.status, 400);
  assert.match(await again.text(), /accepted, revoked or has expired/);
  // The new member signs in to the organization.
  const login = new Jar(p.url);
  const { html: loginHtml, verifier } = await openLogin(login, p.clientId, { organization: p.org.id });
  const signed = await login.post("/authorize", { ...hiddenFields(loginHtml), email, password: PASSWORD });
  assert.equal(signed.status, 303);
  const code = new URL(signed.headers.get("location")!).searchParams.get("code")!;
  const tokens = await exchangeCodeAt(p.url, p.clientId, code, verifier);
  assert.equal(claimsOf(tokens.access_token).org_id, p.org.id);
  // Its trail: sent, created, added, accepted.
  const sent = (await eventsOf(p, "organization.invitation_sent"))[0];
  assert.deepEqual(sent.target, { type: "organization", id: p.org.id });
  assert.deepEqual(sent.details, { invitation_id: inv.id, email, role_ids: [p.admin] });
  const created = await eventsOf(p, "user.created");
  assert.equal((created[0].details as Record<string, unknown>).how, "invitation");
  const added = await eventsOf(p, "organization.member_added");
  assert.deepEqual(added[0].details, {
    user_id: user.id,
    role_ids: [p.admin],
    how: "invitation",
    invitation_id: inv.id,
  });
  assert.equal((await eventsOf(p, "organization.invitation_accepted")).length, 1);
});

test("an existing verified user joins with one button; a member gains the roles; an unverified one must confirm first", async () => {
  const p = await setup();
  const email = newEmail();
  const user = await userAt(p, { email, password: PASSWORD, email_verified: true });
  await invited(p, email, [p.viewer]);
  const jar = new Jar(p.url);
  const page = await jar.get(await linkTo(email, p.org.name));
  const html = await page.text();
  assert.equal(page.status, 200);
  assert.doesNotMatch(html, /name="password"/);
  const done = await jar.post("/authorize/invitation", hiddenFields(html));
  assert.equal(done.status, 200);
  assert.deepEqual((await members(p)).map((m) => [m.user_id, m.role_ids]), [[user.id, [p.viewer]]]);
  // A member already: the address is refused with 409.
  const dup = await invite(p, { email, role_ids: [p.admin] });
  assert.equal(dup.status, 409);
  assert.equal((await dup.json()).error, "member_already_exists");
  // An account whose address is unverified (anyone may have typed it) is never joined by the link.
  const squatted = newEmail();
  await userAt(p, { email: squatted, password: PASSWORD });
  await invited(p, squatted, [p.viewer]);
  const refused = await new Jar(p.url).get(await linkTo(squatted, p.org.name));
  assert.equal(refused.status, 403);
  assert.match(await refused.text(), /not confirmed/);
  assert.equal((await members(p)).length, 1);
  // A form from another browser (no cookie of this page) is refused.
  const stranger = await new Jar(p.url).post("/authorize/invitation", hiddenFields(html));
  assert.equal(stranger.status, 403);
});

test("resend gives a new link and kills the old one; revoke kills it; a new invitation replaces an open one", async () => {
  const p = await setup();
  const email = newEmail();
  const inv = await invited(p, email, [p.viewer]);
  const first = await linkTo(email, p.org.name);
  const count = await mailsSoFar();
  const resent = await api(p.url, p.token, "POST", `${invitations(p)}/${inv.id}/resend`);
  assert.equal(resent.status, 200);
  assert.equal((await resent.json()).sent_count, 2);
  const second = await linkTo(email, p.org.name, count);
  assert.notEqual(first, second);
  assert.equal((await new Jar(p.url).get(first)).status, 400);
  assert.equal((await new Jar(p.url).get(second)).status, 200);
  // A new invitation to the same address replaces it.
  const count2 = await mailsSoFar();
  const replacement = await invited(p, email, [p.admin]);
  const third = await linkTo(email, p.org.name, count2);
  assert.equal((await new Jar(p.url).get(second)).status, 400);
  const old = await (await api(p.url, p.token, "GET", `${invitations(p)}/${inv.id}`)).json();
  assert.equal(old.status, "revoked");
  const revoked = await api(p.url, p.token, "DELETE", `${invitations(p)}/${replacement.id}`);
  assert.equal(revoked.status, 200);
  assert.equal((await revoked.json()).status, "revoked");
  assert.equal((await new Jar(p.url).get(third)).status, 400);
  for (const [method, path] of [["DELETE", ""], ["POST", "/resend"]]) {
    const res = await api(p.url, p.token, method, `${invitations(p)}/${replacement.id}${path}`);
    assert.equal(res.status, 409);
    assert.equal((await res.json()).error, "invitation_not_pending");
  }
  const listed = await (await api(p.url, p.token, "GET", `${invitations(p)}?status=revoked`)).json();
  assert.equal(listed.pagination.total, 2);
  // An expired invitation's link is stale; a resend makes it pending again.
  const late = newEmail();
  const lateInv = await invited(p, late, []);
  const lateLink = await linkTo(late, p.org.name);
  const s = await service();
  await s.svc.db.sql`update organization_invitations set expires_at = now() - interval '1 second'
    where id = ${lateInv.id}`;
  assert.equal((await new Jar(p.url).get(lateLink)).status, 400);
  assert.equal(
    (await (await api(p.url, p.token, "GET", `${invitations(p)}/${lateInv.id}`)).json()).status,
    "expired",
  );
  const revived = await api(p.url, p.token, "POST", `${invitations(p)}/${lateInv.id}/resend`);
  assert.equal((await revived.json()).status, "pending");
});

test("invitations: bad input, unknown ids and least privilege", async () => {
  const p = await setup();
  const bad = async (body: Record<string, unknown>, field: string) => {
    const res = await invite(p, body);
    const json = await res.json();
    assert.equal(res.status, 400, JSON.stringify(json));
    assert.equal(json.error, "invalid_params");
    assert.ok(json.details.some((d: { field: string }) => d.field === field), JSON.stringify(json));
  };
  await bad({ email: "not an address" }, "email");
  await bad({ email: newEmail(), role_ids: [p.project] }, "role_ids.0");
  await bad({ email: newEmail(), role_ids: ["no-such-role"] }, "role_ids.0");
  await bad({ email: newEmail(), expires_in: 10 }, "expires_in");
  await bad({ email: newEmail(), surprise: true }, "surprise");
  const missing = await api(p.url, p.token, "GET", `${invitations(p)}/no-such-invitation`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error, "invitation_not_found");
  const noOrg = await api(
    p.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/organizations/no-such-org/invitations`,
    { email: newEmail() },
  );
  assert.equal(noOrg.status, 404);
  assert.equal((await noOrg.json()).error, "organization_not_found");
  // Another project's token never reaches this organization.
  const other = await projectAt(p.url);
  const foreign = await invite(p, { email: newEmail() }, other.token);
  assert.equal(foreign.status, 403);
  // A client without organizations:update, and one that lacks the role's permissions.
  const clientWith = async (codes: string[]) => {
    const perms =
      await (await api(p.url, p.token, "GET", `/api/v1/projects/${p.projectId}/resources?page_size=100`))
        .json();
    const ids: Record<string, string> = {};
    for (const r of perms.data) for (const x of r.permissions) ids[`${r.code}:${x.code}`] = x.id;
    const res = await api(p.url, p.token, "POST", `/api/v1/projects/${p.projectId}/clients`, {
      name: "limited",
      permission_ids: codes.map((c) => ids[c]),
    });
    const c = await res.json();
    const t = await fetch(`${p.url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa(`${c.id}:${c.client_secret}`)}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    return (await t.json()).access_token as string;
  };
  const reader = await clientWith(["organizations:read"]);
  assert.equal((await invite(p, { email: newEmail() }, reader)).status, 403);
  assert.equal((await api(p.url, reader, "GET", invitations(p))).status, 200);
  const updater = await clientWith(["organizations:read", "organizations:update", "doc:read"]);
  const lacking = await invite(p, { email: newEmail(), role_ids: [p.admin] }, updater);
  assert.equal(lacking.status, 403);
  assert.match((await lacking.json()).error_description, /doc:write/);
  assert.equal((await invite(p, { email: newEmail(), role_ids: [p.viewer] }, updater)).status, 201);
});
