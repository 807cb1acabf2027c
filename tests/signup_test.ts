/**
 * Self-service sign-up (a project's `signup`) through raw HTTP against a service with a real SMTP server: the
 * login page's "Create an account", open and domain-limited sign-up, no enumeration, the honeypot, bad input,
 * the throttle, verification before the first code, and sign-up off.
 */
import assert from "node:assert/strict";
import { test } from "./helpers.ts";
import { exchangeCodeAt } from "./mail_flows.ts";
import {
  api,
  eventsOf,
  hiddenFields,
  Jar,
  loginStatus,
  type MailProject,
  newEmail,
  openLogin,
  projectAt,
  sharedMailService,
  userAt,
} from "./mail_support.ts";
import { linkIn } from "./smtp_catcher.ts";

const service = sharedMailService();
const PASSWORD = "correct horse battery";

/** A project of its own with these settings (`signup`, `require_verified_email`, `mfa`). */
async function projectWith(settings: Record<string, unknown>): Promise<MailProject> {
  const s = await service();
  const p = await projectAt(s.url);
  const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
    name: p.name,
    ...settings,
  });
  assert.equal(put.status, 200, await put.clone().text());
  return p;
}

const unescape = (s: string) => s.replace(/&amp;/g, "&");

/** Opens the login page, follows its "Create an account"; the sign-up page's HTML and the PKCE verifier. */
async function openSignup(p: MailProject, jar: Jar): Promise<{ html: string; verifier: string }> {
  const login = await openLogin(jar, p.clientId);
  const href = /<a id="signup" href="([^"]+)">Create an account<\/a>/.exec(login.html);
  assert.ok(href, "the login page links to the sign-up page");
  const res = await jar.get(unescape(href[1]));
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-security-policy") ?? "", /script-src 'self'; .*style-src 'nonce-/);
  return { html: await res.text(), verifier: login.verifier };
}

/** Posts the sign-up form of `html` with these fields (a name and the password twice by default). */
async function submit(jar: Jar, html: string, fields: Record<string, string>): Promise<Response> {
  return await jar.post("/authorize/signup", {
    ...hiddenFields(html),
    name: "Ann Example",
    password: PASSWORD,
    password_repeat: fields.password ?? PASSWORD,
    website: "",
    ...fields,
  });
}

async function usersWith(
  email: string,
): Promise<{ id: string; role_id: string | null; email_verified: boolean }[]> {
  const s = await service();
  return await s.svc.db.sql<{ id: string; role_id: string | null; email_verified: boolean }[]>`
    select id, role_id, email_verified from users where email = ${email}`;
}

async function mailKinds(email: string): Promise<string[]> {
  const s = await service();
  const rows = await s.svc.db.sql<{ kind: string }[]>`
    select kind from mail_outbox where to_address = ${email} order by created_at`;
  return rows.map((r) => r.kind);
}

test("open sign-up creates a user (no role while the project names none) and continues the login to a code", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open" });
  const got = await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}`);
  assert.equal((await got.json()).signup, "open");
  const jar = new Jar(s.url);
  const { html, verifier } = await openSignup(p, jar);
  assert.match(html, /<h1>Create an account<\/h1>/);
  const email = newEmail();
  const res = await submit(jar, html, { email: email.toUpperCase() });
  assert.equal(res.status, 303, await res.clone().text());
  const location = new URL(res.headers.get("location")!);
  assert.equal(location.searchParams.get("state"), "st-1");
  const tokens = await exchangeCodeAt(s.url, p.clientId, location.searchParams.get("code")!, verifier);
  assert.ok(tokens.access_token);
  const [user, ...more] = await usersWith(email);
  assert.equal(more.length, 0);
  assert.equal(user.role_id, null);
  assert.equal(user.email_verified, false);
  const created = await eventsOf(p, "user.created");
  assert.equal(created.length, 1);
  assert.equal((created[0].details as { how: string }).how, "signup");
  const logins = await eventsOf(p, "login.succeeded");
  assert.equal((logins[0].details as { how: string }).how, "signup");
  // The new password signs in.
  assert.equal(await loginStatus(s.url, p.clientId, email, PASSWORD), 303);
});

test("sign-up gives the project's default role, as it is at that sign-up", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open" });
  const made = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/roles`, {
    code: "member",
    name: "Member",
    permission_ids: [],
  });
  assert.equal(made.status, 201, await made.clone().text());
  const role = await made.json();
  const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
    name: p.name,
    default_role_id: role.id,
  });
  assert.equal(put.status, 200, await put.clone().text());
  const signUp = async () => {
    const jar = new Jar(s.url);
    const { html } = await openSignup(p, jar);
    const email = newEmail();
    const res = await submit(jar, html, { email });
    assert.equal(res.status, 303, await res.clone().text());
    return (await usersWith(email))[0];
  };
  const first = await signUp();
  assert.equal(first.role_id, role.id);
  const created = await eventsOf(p, "user.created");
  assert.equal((created.at(-1)!.details as { role_id: string }).role_id, role.id);
  // Cleared: the next one gets none.
  await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
    name: p.name,
    default_role_id: null,
  });
  assert.equal((await signUp()).role_id, null);
});

test("domain-limited sign-up admits only addresses of those domains (exact match, any case)", async () => {
  const s = await service();
  const p = await projectWith({ signup: { domains: ["Example.ORG"] } });
  const got = await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}`);
  assert.deepEqual((await got.json()).signup, { domains: ["example.org"] });
  const jar = new Jar(s.url);
  const { html } = await openSignup(p, jar);
  for (const email of ["ann@sub.example.org", "ann@example.com"]) {
    const refused = await submit(jar, html, { email });
    assert.equal(refused.status, 400);
    const page = await refused.text();
    assert.match(page, /<p class="field-error" id="email-error" role="alert">Accounts cannot be created/);
    assert.equal((await usersWith(email)).length, 0);
  }
  const events = await eventsOf(p, "signup.refused");
  assert.deepEqual(events.map((e) => (e.details as { reason: string }).reason), [
    "domain_not_allowed",
    "domain_not_allowed",
  ]);
  const email = `u-${crypto.randomUUID().slice(0, 8)}@EXAMPLE.org`;
  const ok = await submit(jar, html, { email });
  assert.equal(ok.status, 303);
  assert.equal((await usersWith(email.toLowerCase())).length, 1);
  // Bad values of the field are refused by the API.
  const bad = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
    name: p.name,
    signup: { domains: ["not a domain"] },
  });
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
});

test("an address already registered gets a mail, and the page answers as for a new one", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open", require_verified_email: true });
  const taken = newEmail();
  await userAt(p, { email: taken, password: "the owner's password", email_verified: true });
  const fresh = newEmail();
  const answers: string[] = [];
  for (const email of [taken, fresh]) {
    const jar = new Jar(s.url);
    const { html } = await openSignup(p, jar);
    const res = await submit(jar, html, { email });
    assert.equal(res.status, 200);
    answers.push((await res.text()).replaceAll(email, "ADDRESS").replace(/nonce="[^"]+"/, ""));
  }
  assert.equal(answers[0], answers[1], "the same page for a registered and a new address");
  assert.match(answers[0], /Check your mail/);
  assert.equal((await usersWith(taken)).length, 1, "no second user");
  const note = await s.catcher.mailTo(taken);
  assert.match(note.subject, /Someone tried to create an account/);
  assert.match(note.text, /\/authorize\/reset\?project_id=/);
  assert.deepEqual(await mailKinds(taken), ["signup_existing"]);
  assert.deepEqual(await mailKinds(fresh), ["email_verification"]);
  // The owner's password is unchanged.
  assert.equal(await loginStatus(s.url, p.clientId, taken, "the owner's password"), 303);
});

test("a filled honeypot answers like a success and creates nothing", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open" });
  const jar = new Jar(s.url);
  const { html } = await openSignup(p, jar);
  assert.match(html, /<div class="hp" aria-hidden="true">/);
  const email = newEmail();
  const res = await submit(jar, html, { email, website: "https://spam.example" });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /Check your mail/);
  assert.equal((await usersWith(email)).length, 0);
  assert.deepEqual(await mailKinds(email), []);
  const events = await eventsOf(p, "signup.refused");
  assert.equal(events.length, 1);
  assert.deepEqual(events[0].details, { client_id: p.clientId, reason: "honeypot" });
});

test("bad input shows the form again with the error under its field, and creates nothing", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open" });
  const jar = new Jar(s.url);
  const { html } = await openSignup(p, jar);
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ email: "not-an-address" }, "email", /Enter an email address such as/],
    [{ email: newEmail(), password: "short" }, "password", /Use at least 8 characters/],
    [{ email: newEmail(), password: "x".repeat(1025) }, "password", /Use at most 1024 characters/],
    [{ email: newEmail(), password_repeat: "something else" }, "password_repeat", /The two passwords differ/],
    [{ email: newEmail(), name: "  " }, "name", /Enter your name/],
  ];
  for (const [fields, field, message] of cases) {
    const res = await submit(jar, html, fields);
    assert.equal(res.status, 400, JSON.stringify(fields).slice(0, 80));
    const page = await res.text();
    const under = new RegExp(`<p class="field-error" id="${field}-error" role="alert">([^<]*)</p>`).exec(
      page,
    );
    assert.ok(under, `an error under ${field}`);
    assert.match(under[1], message);
    if (fields.email?.includes("@")) assert.equal((await usersWith(fields.email)).length, 0);
  }
  assert.equal((await eventsOf(p, "user.created")).length, 0);
});

test("sign-ups of one address are throttled: 429 with Retry-After", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open", require_verified_email: true });
  const email = newEmail();
  const jar = new Jar(s.url);
  const { html } = await openSignup(p, jar);
  for (let i = 0; i < 3; i++) {
    const res = await submit(jar, html, { email });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  const refused = await submit(jar, html, { email });
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get("retry-after")) >= 1);
  assert.match(await refused.text(), /Too many attempts/);
  assert.equal((await usersWith(email)).length, 1);
});

test("sign-up off (the default): no link on the login page, and the sign-up page is a 404", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const got = await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}`);
  assert.equal((await got.json()).signup, "off");
  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId);
  assert.doesNotMatch(login.html, /Create an account/);
  const bound = hiddenFields(login.html);
  const page = await jar.get(`/authorize/signup?${new URLSearchParams(bound)}`);
  assert.equal(page.status, 404);
  assert.match(await page.text(), /does not let you create an account/);
  const email = newEmail();
  const post = await jar.post("/authorize/signup", { ...bound, email, name: "A", password: PASSWORD });
  assert.equal(post.status, 404);
  await post.body?.cancel();
  assert.equal((await usersWith(email)).length, 0);
  // Another browser cannot use the login page's binding.
  const stranger = await new Jar(s.url).get(`/authorize/signup?${new URLSearchParams(bound)}`);
  assert.equal(stranger.status, 400);
  await stranger.body?.cancel();
});

test("require_verified_email: the address is mailed a link, no code before it is confirmed, then sign-in works", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open", require_verified_email: true });
  const jar = new Jar(s.url);
  const { html } = await openSignup(p, jar);
  const email = newEmail();
  const res = await submit(jar, html, { email });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /Check your mail/);
  const [user] = await usersWith(email);
  assert.equal(user.email_verified, false);
  const codes = await s.svc.db.sql`select 1 from authorization_codes where user_id = ${user.id}`;
  assert.equal(codes.length, 0, "no code before the address is confirmed");
  assert.equal(await loginStatus(s.url, p.clientId, email, PASSWORD), 403);
  const link = linkIn(await s.catcher.mailTo(email));
  assert.match(link, /\/authorize\/verify\?token=/);
  const confirm = await jar.get(link);
  const done = await jar.post("/authorize/verify", hiddenFields(await confirm.text()));
  assert.equal(done.status, 200);
  await done.body?.cancel();
  assert.equal(await loginStatus(s.url, p.clientId, email, PASSWORD), 303);
});

test("a project requiring a second factor: the new user enrols one before the code", async () => {
  const s = await service();
  const p = await projectWith({ signup: "open", mfa: "required" });
  const jar = new Jar(s.url);
  const { html } = await openSignup(p, jar);
  const res = await submit(jar, html, { email: newEmail() });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /Set up two-step verification/);
});
