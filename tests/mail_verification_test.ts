/**
 * Email verification through a real SMTP server (tests/smtp_catcher.ts): on creation, on every change (a verified
 * address stays until the new one is verified; the old one gets a notice), `email_verified` in the ID token and
 * userinfo, and a project's `require_verified_email` at login.
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
  newEmail,
  openLogin,
  projectAt,
  sharedMailService,
  userAt,
} from "./mail_support.ts";
import { isNotice, linkIn } from "./smtp_catcher.ts";

/** The file's shared service, stopped and its database dropped when the file ends. */
const service = sharedMailService();

const PASSWORD = "correct horse battery";

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
  await s.catcher.waitFor((m) => m.to.includes(changed) && !isNotice(m) && linkIn(m) !== first);
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

test("a user changing their own verified email: it waits for the new address to be verified", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  await userAt(p, { email, password: PASSWORD, email_verified: true });
  const jar = new Jar(s.url);
  const opened = await openLogin(jar, p.clientId);
  const res = await jar.post("/authorize", { ...hiddenFields(opened.html), email, password: PASSWORD });
  assert.equal(res.status, 303);
  const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
  const tokens = await exchangeCodeAt(s.url, p.clientId, code, opened.verifier);
  const changed = newEmail();
  const put = await api(s.url, tokens.access_token, "PUT", "/api/v1/users/current", {
    display_name: "Mail User",
    email: changed,
    current_password: PASSWORD,
  });
  assert.equal(put.status, 200, await put.clone().text());
  const me = await put.json();
  assert.deepEqual([me.email, me.email_verified, me.pending_email], [email, true, changed]);
  const link = linkIn(await s.catcher.mailTo(changed));
  await s.catcher.waitFor((m) => m.to.includes(email) && /is changing/.test(m.subject));
  // Sending the profile again with the current address keeps the change waiting.
  const again = await api(s.url, tokens.access_token, "PUT", "/api/v1/users/current", {
    display_name: "Mail User",
    email,
  });
  assert.equal((await again.json()).pending_email, changed);
  const page = new Jar(s.url);
  const html = await (await page.get(link)).text();
  const done = await page.post("/authorize/verify", hiddenFields(html));
  assert.equal(done.status, 200);
  await done.body?.cancel();
  const after = await (await api(s.url, tokens.access_token, "GET", "/api/v1/users/current")).json();
  assert.deepEqual([after.email, after.email_verified, after.pending_email], [changed, true, null]);
});
