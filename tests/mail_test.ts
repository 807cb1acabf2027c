/**
 * Email through a real SMTP server (tests/smtp_catcher.ts): password reset from the login page (same answer and
 * time for unknown addresses, single use, dies with a password change, ends sessions, continues the login),
 * invitations, and the admin API's mail operations with their least privilege.
 */
import assert from "node:assert/strict";
import { exchangeCodeAt } from "./mail_flows.ts";
import { eventually, REDIRECT_URI, test } from "./helpers.ts";
import {
  api,
  eventsOf,
  hiddenFields,
  Jar,
  loginStatus,
  mailService,
  newEmail,
  openLogin,
  projectAt,
  sharedMailService,
  userAt,
} from "./mail_support.ts";
import { isNotice, linkIn } from "./smtp_catcher.ts";
import { totp } from "./mfa_support.ts";
import { fakeUpstream } from "./idp_support.ts";

/** The file's shared service, stopped and its database dropped when the file ends. */
const service = sharedMailService();

/** The mails of the outbox to an address, whatever their state. */
async function outboxTo(
  s: Awaited<ReturnType<typeof service>>,
  address: string,
): Promise<{ kind: string }[]> {
  return await s.svc.db.sql<{ kind: string }[]>`select kind from mail_outbox where to_address = ${address}`;
}

const PASSWORD = "correct horse battery";

/** Asks for a reset from a login page of `jar`; returns the answer's HTML. */
async function askReset(
  jar: Jar,
  loginHtml: string,
  email: string,
): Promise<{ status: number; html: string }> {
  const resetUrl = /href="([^"]*\/authorize\/reset\?request_id=[^"]+)"/.exec(loginHtml)?.[1];
  assert.ok(resetUrl, "the login page links to the reset page");
  const page = await jar.get(resetUrl.replace(/&amp;/g, "&"));
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /<label for="email">Email<\/label>/);
  assert.match(html, /id="back-to-sign-in">Back to sign-in</, "the reset page leads back to the sign-in");
  const res = await jar.post("/authorize/reset", { ...hiddenFields(html), email });
  return { status: res.status, html: await res.text() };
}

test("password reset from the login page: mail, single-use link, sessions end, the login goes on", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  const user = await userAt(p, { email, password: PASSWORD });
  assert.equal(user.email_verified, false);
  // A session before the reset, with a single sign-on session in its browser.
  const before = new Jar(s.url);
  const first = await openLogin(before, p.clientId);
  const signedIn = await before.post("/authorize", {
    ...hiddenFields(first.html),
    email,
    password: PASSWORD,
  });
  assert.equal(signedIn.status, 303);
  const old = await exchangeCodeAt(
    s.url,
    p.clientId,
    new URL(signedIn.headers.get("location")!).searchParams.get("code")!,
    first.verifier,
  );
  const current = await api(s.url, old.access_token, "GET", "/api/v1/users/current");
  assert.equal(current.status, 200);
  await current.body?.cancel();

  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId);
  const asked = await askReset(jar, login.html, email.toUpperCase());
  assert.equal(asked.status, 200);
  assert.match(asked.html, /Check your mail/);
  // "Back to sign-in" asks the application's login again, as it asked it (its state and PKCE challenge).
  const back = new URL(/href="([^"]+)" id="back-to-sign-in"/.exec(asked.html)![1].replace(/&amp;/g, "&"));
  assert.equal(back.pathname, "/authorize");
  assert.equal(back.searchParams.get("state"), "st-1");
  assert.equal(back.searchParams.get("client_id"), p.clientId);
  assert.equal(back.searchParams.get("redirect_uri"), REDIRECT_URI);
  assert.equal(back.searchParams.get("scope"), "openid email");
  const backPage = await jar.get(`${back.pathname}${back.search}`);
  assert.equal(backPage.status, 200);
  assert.match(await backPage.text(), /<form method="post"/, "the login form again");

  const mail = await s.catcher.mailTo(email);
  assert.equal(mail.from, "no-reply@example.test");
  assert.equal(mail.auth, "mailer:secret");
  assert.match(mail.subject, new RegExp(`Reset your password for ${p.name}`));
  assert.match(mail.text, new RegExp(p.name));
  assert.match(mail.html, new RegExp(p.name));
  assert.doesNotMatch(mail.html, /<img|<script/i, "no tracking, no script");
  const link = linkIn(mail);
  assert.match(mail.html, new RegExp(link.replace(/[?]/g, "\\?")));

  // The link's page: a form for a new password.
  const form = await jar.get(link);
  assert.equal(form.status, 200);
  const formHtml = await form.text();
  assert.match(form.headers.get("content-security-policy")!, /default-src 'none'/);
  assert.match(formHtml, /<label for="password">New password<\/label>/);
  // A weak password: the form again, the error under the field.
  const weak = await jar.post("/authorize/password", { ...hiddenFields(formHtml), password: "short" });
  assert.equal(weak.status, 400);
  assert.match(await weak.text(), /id="password-error">Use at least 8 characters/);
  // Without the browser's cookie (another site's form): refused.
  const forged = await new Jar(s.url).post("/authorize/password", {
    ...hiddenFields(formHtml),
    password: "x".repeat(12),
  });
  assert.equal(forged.status, 403);
  await forged.body?.cancel();

  const newPassword = "a new password 123";
  const done = await jar.post("/authorize/password", { ...hiddenFields(formHtml), password: newPassword });
  assert.equal(done.status, 303, await done.clone().text());
  const location = new URL(done.headers.get("location")!);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  assert.equal(location.searchParams.get("state"), "st-1");
  const tokens = await exchangeCodeAt(s.url, p.clientId, location.searchParams.get("code")!, login.verifier);
  assert.ok(tokens.access_token);

  // Every earlier session ended: its token is refused, and its browser is not signed in silently any more.
  const ended = await api(s.url, old.access_token, "GET", "/api/v1/users/current");
  assert.equal(ended.status, 401);
  await ended.body?.cancel();
  const silent = await openLogin(before, p.clientId);
  assert.match(silent.html, /<form method="post"/, "the login form again, no silent sign-in");
  // The old password no longer works, the new one does; the address is verified.
  assert.equal(await loginStatus(s.url, p.clientId, email, PASSWORD), 400);
  assert.equal(await loginStatus(s.url, p.clientId, email, newPassword), 303);
  const after = await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users/${user.id}`))
    .json();
  assert.equal(after.email_verified, true);

  // Used once: the same link again is a page that says so and offers a new one.
  const replay = await jar.get(link);
  assert.equal(replay.status, 400);
  const replayHtml = await replay.text();
  assert.match(replayHtml, /This link does not work/);
  assert.match(replayHtml, /authorize\/reset\?project_id=/);
  // A reset page opened without a login request has no sign-in to lead back to.
  const byProject = await jar.get(/href="([^"]*authorize\/reset\?project_id=[^"]+)"/.exec(replayHtml)![1]);
  assert.equal(byProject.status, 200);
  assert.doesNotMatch(await byProject.text(), /back-to-sign-in/);
  const replayPost = await jar.post("/authorize/password", {
    ...hiddenFields(formHtml),
    password: "another one 456",
  });
  assert.equal(replayPost.status, 400);
  await replayPost.body?.cancel();

  const requested = await eventsOf(p, "password_reset.requested");
  const completed = await eventsOf(p, "password_reset.completed");
  assert.equal(requested.length, 1);
  assert.equal(completed.length, 1);
});

test("password reset: an unknown address gets the same page, in the same time, and no mail", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const known = newEmail();
  await userAt(p, { email: known, password: PASSWORD });
  const unknown = newEmail();
  // Each asks from a login of its own, whose PKCE challenge the "Back to sign-in" link carries.
  const strip = (html: string) =>
    html.replace(/value="[^"]*"/g, "").replace(/nonce="[^"]*"/g, "").replace(/code_challenge=[^&"]*/g, "");
  const ask = async (email: string) => {
    const jar = new Jar(s.url);
    const login = await openLogin(jar, p.clientId);
    const started = performance.now();
    const r = await askReset(jar, login.html, email);
    return { ...r, ms: performance.now() - started };
  };
  const a = await ask(known);
  const b = await ask(unknown);
  assert.equal(a.status, b.status);
  assert.equal(strip(a.html), strip(b.html), "the same page");
  // Both answers wait for the same floor, whatever the work behind them (a lower bound, which load cannot
  // break; how close the two times are is the bench's to measure, not a test's to assert on a busy machine).
  assert.ok(a.ms >= 400 && b.ms >= 400, `both take the floor: ${a.ms} ${b.ms}`);
  await s.catcher.mailTo(known);
  // The outbox, written in each request's transaction, is every mail there will be: none to the unknown address.
  assert.equal((await outboxTo(s, unknown)).length, 0);
  assert.equal(s.catcher.mails.some((m) => m.to.includes(unknown)), false);
  // No event names the unknown address.
  const events = await eventsOf(p, "password_reset.requested");
  assert.equal(JSON.stringify(events).includes(unknown), false);
});

test("password reset: throttled per account (silently) and a forged link is a page, not an error", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  await userAt(p, { email, password: PASSWORD });
  for (let i = 0; i < 5; i++) {
    const jar = new Jar(s.url);
    const login = await openLogin(jar, p.clientId);
    const r = await askReset(jar, login.html, email);
    assert.equal(r.status, 200);
  }
  // The outbox, written in each request's transaction, is every mail there will be: three, and all three arrive.
  assert.equal((await outboxTo(s, email)).length, 3, "three per 15 minutes");
  await eventually("three mails", () => s.catcher.mails.filter((m) => m.to.includes(email)).length >= 3);
  assert.equal(s.catcher.mails.filter((m) => m.to.includes(email)).length, 3, "three per 15 minutes");
  for (const token of ["x".repeat(43), "short", ""]) {
    const res = await fetch(`${s.url}/authorize/password?token=${token}`);
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /This link does not work/);
    assert.doesNotMatch(html, /project_id=/, "a forged link names no project");
  }
});

test("a reset link dies when the password changes by another path", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  const user = await userAt(p, { email, password: PASSWORD });
  const sent = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${user.id}/password-reset`,
  );
  assert.equal(sent.status, 202);
  assert.equal((await sent.json()).email, email);
  const link = linkIn(await s.catcher.mailTo(email));
  const ok = await fetch(link);
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}/users/${user.id}`, {
    display_name: "Mail User",
    is_active: true,
    email,
    password: "set by the admin 1",
  });
  assert.equal(put.status, 200);
  await put.body?.cancel();
  const dead = await fetch(link);
  assert.equal(dead.status, 400);
  assert.match(await dead.text(), /This link does not work/);
});

test("invitation: created without a password, the link sets it and verifies the address; resendable", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  const user = await userAt(p, { email, send_invitation: true });
  assert.equal(user.email_verified, false);
  const first = linkIn(await s.catcher.mailTo(email));
  // Resent: the earlier link stops working.
  const again = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${user.id}/invitation`,
  );
  assert.equal(again.status, 202, await again.clone().text());
  await again.body?.cancel();
  await s.catcher.waitFor((m) => m.to.includes(email) && !isNotice(m) && linkIn(m) !== first);
  const mails = s.catcher.mails.filter((m) => m.to.includes(email));
  const second = linkIn(mails[mails.length - 1]);
  assert.match(mails[mails.length - 1].subject, /You are invited to/);
  const stale = await fetch(first);
  assert.equal(stale.status, 400);
  await stale.body?.cancel();

  const jar = new Jar(s.url);
  const form = await jar.get(second);
  const html = await form.text();
  assert.match(html, /Choose your password/);
  const done = await jar.post("/authorize/password", {
    ...hiddenFields(html),
    password: "invited password 1",
  });
  assert.equal(done.status, 200);
  const doneHtml = await done.text();
  assert.match(doneHtml, /Your password is set/);
  // Signed in, with no application known: the way to the account page.
  assert.match(doneHtml, new RegExp(`href="[^"]*/account\\?project=${p.projectId}">Your account<`));
  assert.ok([...jar.jar.keys()].includes("acs_sso"), "signed in: a single sign-on session");
  const after = await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users/${user.id}`))
    .json();
  assert.equal(after.email_verified, true);
  assert.equal(await loginStatus(s.url, p.clientId, email, "invited password 1"), 303);
  assert.equal((await eventsOf(p, "invitation.sent")).length, 2);
  assert.equal((await eventsOf(p, "invitation.accepted")).length, 1);
  // A user with a password is not invited again.
  const refused = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${user.id}/invitation`,
  );
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).error, "invalid_params");
  // An invitation needs an email and no password.
  const bad = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/users`, {
    display_name: "x",
    email: newEmail(),
    password: PASSWORD,
    send_invitation: true,
  });
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
  const inactive = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/users`, {
    display_name: "x",
    email: newEmail(),
    is_active: false,
    send_invitation: true,
  });
  assert.equal(inactive.status, 400);
  assert.equal((await inactive.json()).details[0].field, "send_invitation");
});

test("admin mail operations: users:update, and covering the user (403 otherwise)", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const admin = await userAt(p, { email: newEmail(), password: PASSWORD });
  // A client with users:update only.
  const perms =
    await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/resources?page_size=100`))
      .json();
  const permId = (code: string) => {
    const [r, a] = code.split(":");
    return perms.data.find((x: { code: string }) => x.code === r).permissions.find((x: { code: string }) =>
      x.code === a
    ).id;
  };
  const makeClient = async (codes: string[]) => {
    const res = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/clients`, {
      name: `c ${codes.join(" ")}`,
      permission_ids: codes.map(permId),
      token_endpoint_auth_method: "client_secret_basic",
    });
    assert.equal(res.status, 201, await res.clone().text());
    const c = await res.json();
    const t = await fetch(`${s.url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa(`${c.id}:${c.client_secret}`)}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    return (await t.json()).access_token as string;
  };
  const readOnly = await makeClient(["users:read"]);
  const updater = await makeClient(["users:update"]);
  // A user holding more than the updater: a role with clients:create.
  const role = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/roles`, {
    code: "big",
    name: "Big",
    permission_ids: [permId("clients:create")],
  });
  const roleId = (await role.json()).id;
  const big = await userAt(p, { email: newEmail(), password: PASSWORD, role_id: roleId });
  for (const op of ["password-reset", "verification", "invitation"]) {
    const denied = await api(
      s.url,
      readOnly,
      "POST",
      `/api/v1/projects/${p.projectId}/users/${admin.id}/${op}`,
    );
    assert.equal(denied.status, 403);
    assert.equal((await denied.json()).error, "insufficient_permission");
    const above = await api(s.url, updater, "POST", `/api/v1/projects/${p.projectId}/users/${big.id}/${op}`);
    assert.equal(above.status, 403, op);
    assert.equal((await above.json()).error, "insufficient_permission");
  }
  const ok = await api(
    s.url,
    updater,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${admin.id}/password-reset`,
  );
  assert.equal(ok.status, 202);
  await ok.body?.cancel();
  const missing = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/nope/password-reset`,
  );
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error, "user_not_found");
  const external = await userAt(p, { external_user_id: `ext-${crypto.randomUUID()}` });
  const noEmail = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${external.id}/password-reset`,
  );
  assert.equal(noEmail.status, 400);
  assert.equal((await noEmail.json()).details[0].field, "user_id");
});

/** Signs the user in (password) and enrols an authenticator app; its secret. */
async function enrolTotpAt(url: string, clientId: string, email: string): Promise<string> {
  const jar = new Jar(url);
  const first = await openLogin(jar, clientId);
  const signedIn = await jar.post("/authorize", { ...hiddenFields(first.html), email, password: PASSWORD });
  assert.equal(signedIn.status, 303);
  const { access_token } = await exchangeCodeAt(
    url,
    clientId,
    new URL(signedIn.headers.get("location")!).searchParams.get("code")!,
    first.verifier,
  );
  const started = await api(url, access_token, "POST", "/api/v1/users/current/totp", {
    current_password: PASSWORD,
  });
  assert.equal(started.status, 200);
  const { secret } = await started.json();
  const confirmed = await api(url, access_token, "POST", "/api/v1/users/current/totp/confirm", {
    code: await totp(secret),
  });
  assert.equal(confirmed.status, 200);
  await confirmed.body?.cancel();
  return secret;
}

test("a reset link proves the mailbox, not a second factor: a user with one is not signed in by it", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  await userAt(p, { email, password: PASSWORD });
  // Sign in, then enrol an authenticator.
  await enrolTotpAt(s.url, p.clientId, email);

  // The reset, from a login page: the password is set, but neither a code nor a session comes of it.
  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId);
  assert.equal((await askReset(jar, login.html, email)).status, 200);
  const form = await jar.get(linkIn(await s.catcher.mailTo(email)));
  const formHtml = await form.text();
  const done = await jar.post("/authorize/password", {
    ...hiddenFields(formHtml),
    password: "a new password 456",
  });
  assert.equal(done.status, 200);
  assert.equal(done.headers.get("location"), null);
  assert.doesNotMatch(done.headers.get("set-cookie") ?? "", /sso/i, "no single sign-on session");
  const doneHtml = await done.text();
  assert.match(doneHtml, /sign in with your new password and your second factor/);
  assert.match(
    doneHtml,
    /id="back-to-sign-in">Back to sign-in</,
    "the password-set page leads to the sign-in",
  );
  // The new password still asks for the code.
  const again = await openLogin(jar, p.clientId);
  assert.match(again.html, /<form method="post"/, "the login form, no silent sign-in");
  const step = await jar.post("/authorize", {
    ...hiddenFields(again.html),
    email,
    password: "a new password 456",
  });
  assert.equal(step.status, 200);
  assert.match(await step.text(), /name="code"/);
});

test("a reset link's way back to sign-in keeps the login's API (RFC 8707 resource): its token is for the API", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const indicator = `https://api-${crypto.randomUUID().slice(0, 8)}.example.com/mcp`;
  const made = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/resources`, {
    name: "Notes API",
    code: "notes",
    indicator,
    permissions: [{ name: "Read", code: "read" }],
  });
  assert.equal(made.status, 201, await made.clone().text());
  const resource = await made.json();
  const roleRes = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/roles`, {
    code: "reader",
    name: "Reader",
    permission_ids: [resource.permissions[0].id],
  });
  assert.equal(roleRes.status, 201, await roleRes.clone().text());
  const email = newEmail();
  await userAt(p, { email, password: PASSWORD, role_id: (await roleRes.json()).id });
  // A second factor, so that the link sets the password without signing in: the way on is "Back to sign-in".
  const secret = await enrolTotpAt(s.url, p.clientId, email);

  // A login begun for the API, then "Forgot your password?" and the mailed link.
  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId, { resource: indicator, scope: "openid email read" });
  const asked = await askReset(jar, login.html, email);
  assert.equal(asked.status, 200);
  const sentBack = new URL(/href="([^"]+)" id="back-to-sign-in"/.exec(asked.html)![1].replace(/&amp;/g, "&"));
  assert.equal(sentBack.searchParams.get("resource"), indicator, "the reset-sent page's way back");
  const form = await jar.get(linkIn(await s.catcher.mailTo(email)));
  const newPassword = "a new password 789";
  const done = await jar.post("/authorize/password", {
    ...hiddenFields(await form.text()),
    password: newPassword,
  });
  assert.equal(done.status, 200);
  const back = new URL(
    /href="([^"]+)" id="back-to-sign-in"/.exec(await done.text())![1].replace(/&amp;/g, "&"),
  );
  assert.equal(back.pathname, "/authorize");
  assert.equal(back.searchParams.get("resource"), indicator);
  assert.equal(back.searchParams.get("scope"), "openid email read");
  assert.equal(back.searchParams.get("state"), "st-1");

  // The login asked again: password, code, and the token is for the API, with its permission.
  const again = await jar.get(`${back.pathname}${back.search}`);
  assert.equal(again.status, 200);
  const step = await jar.post("/authorize", {
    ...hiddenFields(await again.text()),
    email,
    password: newPassword,
  });
  assert.equal(step.status, 200);
  const stepHtml = await step.text();
  assert.match(stepHtml, /name="code"/);
  const coded = await jar.post("/authorize/mfa", {
    ...hiddenFields(stepHtml),
    code: await totp(secret, Date.now() + 30_000),
  });
  assert.equal(coded.status, 303, await coded.clone().text());
  const location = new URL(coded.headers.get("location")!);
  assert.equal(location.searchParams.get("state"), "st-1");
  const tokens = await exchangeCodeAt(s.url, p.clientId, location.searchParams.get("code")!, login.verifier);
  const claims = JSON.parse(
    atob(tokens.access_token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
  );
  assert.equal(claims.aud, indicator);
  assert.equal(claims.scope, "read");
});

test("an accepted invitation (an unproven address) unlinks the identities linked meanwhile, and its event says which", async () => {
  const s = await mailService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  const up = await fakeUpstream();
  try {
    const p = await projectAt(s.url);
    const base = `/api/v1/projects/${p.projectId}`;
    const email = newEmail();
    const user = await userAt(p, { email, send_invitation: true });
    assert.equal(user.email_verified, false);
    const created = await api(s.url, p.token, "POST", `${base}/identity-providers`, {
      kind: "oidc",
      display_name: "Up",
      issuer: up.base,
      client_id: "rp",
    });
    assert.equal(created.status, 201, await created.clone().text());
    const provider = await created.json();
    // Someone's upstream identity, linked while the address is unproven.
    const linked = await api(s.url, p.token, "POST", `${base}/users/${user.id}/identities`, {
      provider_id: provider.id,
      subject: "someone-else",
    });
    assert.equal(linked.status, 201, await linked.clone().text());
    await linked.body?.cancel();

    const jar = new Jar(s.url);
    const form = await jar.get(linkIn(await s.catcher.mailTo(email)));
    const done = await jar.post("/authorize/password", {
      ...hiddenFields(await form.text()),
      password: "a new password 789",
    });
    assert.equal(done.status, 200);
    await done.body?.cancel();

    const identities = await api(s.url, p.token, "GET", `${base}/users/${user.id}/identities`);
    assert.deepEqual(await identities.json(), { data: [] }, "the mailbox's owner does not share the account");
    const [event] = await eventsOf(p, "invitation.accepted");
    assert.deepEqual((event.details as Record<string, unknown>).unlinked_providers, [provider.id]);
  } finally {
    await up.stop();
    await s.close();
  }
});
