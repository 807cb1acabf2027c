/**
 * Email through a real SMTP server (tests/smtp_catcher.ts): password reset from the login page (same answer and
 * time for unknown addresses, single use, dies with a password change, ends sessions, continues the login),
 * invitations, verification, the admin API, retries and `mail.failed`, a restart between request and delivery,
 * and the log without SMTP_URL.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../config.ts";
import { dotStuff, mimeOf, parseSmtpUrl } from "../domain/smtp.ts";
import { exchangeCodeAt } from "./mail_flows.ts";
import { ADMIN_SECRET, DATABASE_URL, freePort, isolatedDatabase, REDIRECT_URI, test } from "./helpers.ts";
import { spawn } from "./processes.ts";
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
  userAt,
} from "./mail_support.ts";
import { linkIn, parseMail, SmtpCatcher } from "./smtp_catcher.ts";

let shared: ReturnType<typeof mailService> | undefined;
const service = () => (shared ??= mailService());

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
  const res = await jar.post("/authorize/reset", { ...hiddenFields(html), email });
  return { status: res.status, html: await res.text() };
}

test("SMTP_URL: a malformed value stops the start naming it; the parts are read", () => {
  for (const bad of ["http://mail.example.com", "smtp://", "not a url", "smtp://h:25/path"]) {
    assert.throws(() => loadConfig({ SMTP_URL: bad }), /SMTP_URL/);
  }
  assert.throws(() => loadConfig({ MAIL_FROM: "nobody" }), /MAIL_FROM/);
  const t = parseSmtpUrl("smtps://user%40x:p%3Ass@mail.example.com");
  assert.deepEqual(
    [t.implicitTls, t.host, t.port, t.user, t.password],
    [true, "mail.example.com", 465, "user@x", "p:ss"],
  );
  assert.equal(parseSmtpUrl("smtp://mail.example.com").port, 587);
  assert.equal(t.display.includes("p:ss"), false, "the password is not displayed");
});

test("MIME: multipart/alternative, encoded subject, dot-stuffing", () => {
  const raw = mimeOf({
    from: "Ünïcode <a@example.com>",
    to: "b@example.com",
    subject: "Réinitialiser\r\nBcc: x@evil",
    text: ".hidden line\nsecond",
    html: "<p>hé</p>",
    messageId: "1@example.com",
  });
  assert.doesNotMatch(raw, /\r\nBcc:/, "no header injection");
  const stuffed = dotStuff(raw);
  const mail = parseMail("a@example.com", ["b@example.com"], null, stuffed.replace(/^\.\./gm, "."));
  assert.equal(mail.text, ".hidden line\r\nsecond".replace("\r\n", "\n"));
  assert.equal(mail.html, "<p>hé</p>");
  assert.match(mail.subject, /^Réinitialiser/);
  assert.match(dotStuff("a\r\n.b\r\n"), /\r\n\.\.b/);
});

test("password reset from the login page: mail, single-use link, sessions end, the login goes on", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  const user = await userAt(p, { email, password: PASSWORD });
  assert.equal(user.email_verified, false);
  // A session before the reset.
  assert.equal(await loginStatus(s.url, p.clientId, email, PASSWORD), 303);

  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId);
  const asked = await askReset(jar, login.html, email.toUpperCase());
  assert.equal(asked.status, 200);
  assert.match(asked.html, /Check your mail/);

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
  const strip = (html: string) => html.replace(/value="[^"]*"/g, "").replace(/nonce="[^"]*"/g, "");
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
  assert.ok(a.ms >= 400 && b.ms >= 400, `both take the floor: ${a.ms} ${b.ms}`);
  assert.ok(Math.abs(a.ms - b.ms) < 250, `similar times: ${a.ms} ${b.ms}`);
  await s.catcher.mailTo(known);
  await new Promise((r) => setTimeout(r, 1500));
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
  await new Promise((r) => setTimeout(r, 2000));
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
  await s.catcher.waitFor((m) => m.to.includes(email) && linkIn(m) !== first);
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
  assert.match(await done.text(), /Your password is set/);
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
});

test("verification: on creation when asked, again after an email change; email_verified in the ID token", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  const user = await userAt(p, { email, password: PASSWORD, send_verification: true });
  const link = linkIn(await s.catcher.mailTo(email));
  assert.match(link, /\/authorize\/verify\?token=/);
  const jar = new Jar(s.url);
  const page = await jar.get(link);
  const html = await page.text();
  assert.match(html, /Confirm your email address/);
  // Opening the link (a mail scanner) verifies nothing; the button does.
  let current = await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users/${user.id}`))
    .json();
  assert.equal(current.email_verified, false);
  const done = await jar.post("/authorize/verify", hiddenFields(html));
  assert.equal(done.status, 200);
  assert.match(await done.text(), /Email address confirmed/);
  current = await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users/${user.id}`))
    .json();
  assert.equal(current.email_verified, true);
  // Verified already: nothing to resend.
  const again = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${user.id}/verification`,
  );
  assert.equal(again.status, 400);
  await again.body?.cancel();
  // A verified address stays until the new one is verified: it waits, is mailed a link, the old one a notice.
  const changed = newEmail();
  const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}/users/${user.id}`, {
    display_name: "Mail User",
    is_active: true,
    email: changed,
  });
  const pending = await put.json();
  assert.deepEqual([pending.email, pending.email_verified, pending.pending_email], [email, true, changed]);
  const first = linkIn(await s.catcher.mailTo(changed));
  const notice = await s.catcher.waitFor((m) => m.to.includes(email) && /is changing/.test(m.subject));
  assert.match(notice.text, new RegExp(changed));
  assert.doesNotMatch(notice.text, /token=/, "the notice carries no link");
  assert.equal(await loginStatus(s.url, p.clientId, changed, PASSWORD), 400, "not yet the login");
  // Resent: to the waiting address; the earlier link stops working.
  const resent = await api(
    s.url,
    p.token,
    "POST",
    `/api/v1/projects/${p.projectId}/users/${user.id}/verification`,
  );
  assert.equal(resent.status, 202);
  assert.equal((await resent.json()).email, changed);
  await s.catcher.waitFor((m) => m.to.includes(changed) && linkIn(m) !== first);
  const toChanged = s.catcher.mails.filter((m) => m.to.includes(changed));
  const link2 = linkIn(toChanged[toChanged.length - 1]);
  const stale = await fetch(first);
  assert.equal(stale.status, 400);
  await stale.body?.cancel();
  const jar2 = new Jar(s.url);
  const html2 = await (await jar2.get(link2)).text();
  const done2 = await jar2.post("/authorize/verify", hiddenFields(html2));
  assert.equal(done2.status, 200);
  await done2.body?.cancel();
  const swapped = await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/users/${user.id}`))
    .json();
  assert.deepEqual([swapped.email, swapped.email_verified, swapped.pending_email], [changed, true, null]);
  // The ID token and userinfo say so.
  const login = new Jar(s.url);
  const opened = await openLogin(login, p.clientId);
  const res = await login.post("/authorize", {
    ...hiddenFields(opened.html),
    email: changed,
    password: PASSWORD,
  });
  assert.equal(res.status, 303);
  const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
  const tokens = await exchangeCodeAt(s.url, p.clientId, code, opened.verifier);
  const claims = JSON.parse(atob(tokens.id_token!.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  assert.equal(claims.email, changed);
  assert.equal(claims.email_verified, true);
  const info = await fetch(`${s.url}/userinfo`, {
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  assert.equal((await info.json()).email_verified, true);
  assert.equal((await eventsOf(p, "email.verified")).length, 2);
  assert.equal((await eventsOf(p, "email.verification_sent")).length, 3);
});

test("an unverified address is replaced at once, unverified, and the new one is mailed a link", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  const user = await userAt(p, { email, password: PASSWORD });
  const changed = newEmail();
  const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}/users/${user.id}`, {
    display_name: "Mail User",
    is_active: true,
    email: changed,
  });
  const row = await put.json();
  assert.deepEqual([row.email, row.email_verified, row.pending_email], [changed, false, null]);
  assert.match(linkIn(await s.catcher.mailTo(changed)), /authorize\/verify/);
  const notice = await s.catcher.waitFor((m) => m.to.includes(email));
  assert.match(notice.text, /was changed to/);
  // An admin may say the address is verified.
  const third = newEmail();
  const asserted = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}/users/${user.id}`, {
    display_name: "Mail User",
    is_active: true,
    email: third,
    email_verified: true,
  });
  const after = await asserted.json();
  assert.deepEqual([after.email, after.email_verified, after.pending_email], [third, true, null]);
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

test("an SMTP server that refuses: retried, then mail.failed; the request was answered", async () => {
  const catcher = new SmtpCatcher();
  catcher.refuse = true;
  const s = await mailService({ MAIL_RETRY_BASE_SECONDS: "0.001" }, { catcher });
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    const user = await userAt(p, { email, send_invitation: true });
    const deadline = Date.now() + 40_000;
    let failed: Record<string, unknown>[] = [];
    while (Date.now() < deadline) {
      failed = await eventsOf(p, "mail.failed");
      if (failed.length > 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(failed.length, 1, "mail.failed after the last try");
    const details = failed[0].details as Record<string, unknown>;
    assert.equal(details.attempts, 9);
    assert.equal(details.to, email);
    assert.match(String(details.error), /550/);
    assert.deepEqual(failed[0].target, { type: "user", id: user.id });
    assert.ok(catcher.connections >= 9, `every try reached the server: ${catcher.connections}`);
    assert.equal(catcher.mails.length, 0);
  } finally {
    await s.close();
  }
});

test("a restart between the request and the delivery still delivers (SMTP down, then up)", async () => {
  const port = freePort();
  const down = new SmtpCatcher(port);
  down.close(); // nothing listens on the port
  const first = await mailService({ SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_RETRY_BASE_SECONDS: "0.5" }, {
    catcher: down,
  });
  const p = await projectAt(first.url);
  const email = newEmail();
  await userAt(p, { email, send_invitation: true });
  await new Promise((r) => setTimeout(r, 1500)); // at least one failed try
  await first.stop();
  const up = new SmtpCatcher(port);
  const second = await mailService({ SMTP_URL: `smtp://127.0.0.1:${port}` }, {
    catcher: up,
    database: first.env,
  });
  try {
    const mail = await up.mailTo(email, 30_000);
    assert.match(mail.subject, /You are invited/);
    const jar = new Jar(second.url);
    // The link names the first service's address (its PUBLIC_URL); the same database answers at the second.
    const link = new URL(linkIn(mail));
    const res = await jar.get(`${second.url}${link.pathname}${link.search}`);
    assert.equal(res.status, 200, "the link works after the restart");
    await res.body?.cancel();
  } finally {
    await second.stop();
    up.close();
    await first.drop();
  }
});

test("without SMTP_URL mails are written to the log with a clear line", async () => {
  let log = "";
  const s = await mailService({ SMTP_URL: "", LOG_LEVEL: "warn" }, { write: (lines) => (log += lines) });
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    await userAt(p, { email, send_invitation: true });
    const deadline = Date.now() + 10_000;
    while (!log.includes(email) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const line = log.split("\n").find((l) => l.includes(email))!;
    assert.match(line, /SMTP_URL is not set/);
    assert.match(line, /authorize\/password\?token=/);
  } finally {
    await s.close();
  }
});

globalThis.addEventListener("unload", () => {
  shared?.then((s) => s.close()).catch(() => {});
});

test("require_verified_email: the login is refused with a page that mails the link; verified, it works", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const put = await api(s.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
    name: p.name,
    require_verified_email: true,
  });
  assert.equal(put.status, 200, await put.clone().text());
  assert.equal((await put.json()).require_verified_email, true);
  const email = newEmail();
  await userAt(p, { email, password: PASSWORD });
  // A wrong password still says only "invalid": nothing about the address.
  assert.equal(await loginStatus(s.url, p.clientId, email, "wrong password"), 400);
  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId);
  const refused = await jar.post("/authorize", { ...hiddenFields(login.html), email, password: PASSWORD });
  assert.equal(refused.status, 403);
  const html = await refused.text();
  assert.match(html, /Confirm your email address first/);
  assert.equal((await eventsOf(p, "login.succeeded")).length, 0);
  const failed = await eventsOf(p, "login.failed");
  assert.ok(failed.some((e) => (e.details as { reason: string }).reason === "email_not_verified"));
  // Resend from that page: the form carries the login page's request and CSRF token.
  const forged = await new Jar(s.url).post("/authorize/verify/resend", hiddenFields(html));
  assert.equal(forged.status, 400, "not without the login page's browser");
  await forged.body?.cancel();
  const sent = await jar.post("/authorize/verify/resend", hiddenFields(html));
  assert.equal(sent.status, 200);
  assert.match(await sent.text(), /Check your mail/);
  const link = linkIn(await s.catcher.mailTo(email));
  const confirm = await jar.get(link);
  const done = await jar.post("/authorize/verify", hiddenFields(await confirm.text()));
  assert.equal(done.status, 200);
  await done.body?.cancel();
  assert.equal(await loginStatus(s.url, p.clientId, email, PASSWORD), 303);
});

test("require_verified_email is changed only by a caller covering the whole project", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const resources =
    await (await api(s.url, p.token, "GET", `/api/v1/projects/${p.projectId}/resources?page_size=100`))
      .json();
  const projects = resources.data.find((r: { code: string }) => r.code === "projects");
  const update = projects.permissions.find((x: { code: string }) => x.code === "update").id;
  const res = await api(s.url, p.token, "POST", `/api/v1/projects/${p.projectId}/clients`, {
    name: "renamer",
    permission_ids: [update],
    token_endpoint_auth_method: "client_secret_basic",
  });
  const c = await res.json();
  const t = await fetch(`${s.url}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: `Basic ${btoa(`${c.id}:${c.client_secret}`)}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  const token = (await t.json()).access_token;
  const denied = await api(s.url, token, "PUT", `/api/v1/projects/${p.projectId}`, {
    name: p.name,
    require_verified_email: true,
  });
  assert.equal(denied.status, 403);
  assert.equal((await denied.json()).error, "insufficient_permission");
  const renamed = await api(s.url, token, "PUT", `/api/v1/projects/${p.projectId}`, { name: `${p.name} 2` });
  assert.equal(renamed.status, 200);
  assert.equal((await renamed.json()).require_verified_email, false);
});

/** A self-signed certificate for 127.0.0.1 made by openssl now, or null without openssl. */
async function selfSigned(): Promise<{ cert: string; key: string } | null> {
  const dir = await Deno.makeTempDir({ prefix: "acs-smtp-tls-" });
  try {
    const out = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      stdout: "null",
      stderr: "null",
    }).output();
    if (!out.success) return null;
    return {
      cert: await Deno.readTextFile(`${dir}/cert.pem`),
      key: await Deno.readTextFile(`${dir}/key.pem`),
    };
  } catch {
    return null;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

test("smtps:// checks the server's certificate: a self-signed one is refused, and the mail retried", async () => {
  const tls = await selfSigned();
  if (!tls) return; // no openssl here
  const catcher = new SmtpCatcher(0, tls);
  const s = await mailService({ SMTP_URL: `smtps://mailer:secret@127.0.0.1:${catcher.port}` }, { catcher });
  try {
    const p = await projectAt(s.url);
    const email = newEmail();
    await userAt(p, { email, send_invitation: true });
    const deadline = Date.now() + 15_000;
    let row: { status: string; last_error: string | null; attempts: number } | undefined;
    while (Date.now() < deadline) {
      [row] = await s.svc.db.sql<{ status: string; last_error: string | null; attempts: number }[]>`
        select status, last_error, attempts from mail_outbox where to_address = ${email}`;
      if (row?.last_error) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(row?.status, "pending", "retried later");
    assert.match(row!.last_error!, /certificate|UnknownIssuer/i);
    assert.equal(catcher.mails.length, 0, "nothing was sent over the unchecked connection");
  } finally {
    await s.close();
  }
});

test("under deno serve with only --allow-net --allow-env --allow-read, mail is sent", async () => {
  if (!DATABASE_URL) return; // deno serve needs a PostgreSQL server (no disk for the embedded one)
  const iso = await isolatedDatabase();
  const catcher = new SmtpCatcher();
  const proc = await spawn({ ...iso.env, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET, SMTP_URL: catcher.url }, {
    mode: "serve",
  });
  try {
    const p = await projectAt(proc.url);
    const email = newEmail();
    await userAt(p, { email, send_invitation: true });
    assert.match((await catcher.mailTo(email)).subject, /You are invited/);
  } finally {
    await proc.stop();
    catcher.close();
    await iso.drop();
  }
  assert.doesNotMatch(proc.output(), /NotCapable|PermissionDenied/);
  assert.match(proc.output(), /Mail: sent through smtp:\/\/mailer@127\.0\.0\.1/);
});
