/**
 * Consent for third-party clients: a client marked `third_party` shows its users a consent page before the first
 * code (name, host, permissions), the decision is kept, asking for more asks again, denying answers
 * `access_denied`, `prompt=none` without consent `consent_required`, and a stale or foreign form changes nothing.
 * First-party clients never show the page. Raw HTTP, one cookie jar per browser.
 */
import assert from "node:assert/strict";
import { authorizeOidc, Browser, payloadOf, redeem, submitForm } from "./oidc_support.ts";
import { codeStep, enrolTotp, passwordStep, totp } from "./mfa_support.ts";
import { checkAnswer } from "./schema_check.ts";
import { baseUrl, clientWith, http, loginProject, postToken, REDIRECT_URI, test } from "./helpers.ts";

type Project = Awaited<ReturnType<typeof loginProject>>;

/** A project with a login user and a client that is a third party's. */
async function thirdParty(): Promise<Project & { clientId: string; firstPartyId: string }> {
  const p = await loginProject();
  const client = await p.api.clients.createClient(p.project.id, { name: "Acme Notes", third_party: true });
  assert.equal(client.third_party, true);
  const first = await p.api.clients.createClient(p.project.id, { name: "Our App" });
  assert.equal(first.third_party, false);
  return { ...p, clientId: client.id, firstPartyId: first.id };
}

/** The project's events of a type (`consent.granted` unless told). */
async function granted(
  p: Project,
  type = "consent.granted",
): Promise<{ data: { details: Record<string, unknown> | null }[] }> {
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=${type}`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal(res.status, 200);
  return await res.json();
}

const fieldsOf = (html: string) =>
  Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]),
  );

/** Logs in through the form of a third-party client: the redirect to its consent page, and that page. */
async function loginToConsent(
  browser: Browser,
  p: Project & { clientId: string },
  extra: Record<string, string> = {},
) {
  const { res, verifier, html } = await authorizeOidc(browser, p.clientId, extra);
  assert.equal(res.status, 200, html);
  const to = await submitForm(browser, html, p.email, p.password);
  assert.equal(to.pathname, "/authorize/consent");
  const page = await browser.get(to.pathname + to.search);
  assert.equal(page.status, 200);
  return { verifier, html: await page.text() };
}

/**
 * A "Notes API" of the project (read and write, with descriptions) at a new indicator, and a role holding the
 * `held` ones given to the login user.
 */
async function notesApi(p: Project, held: string[]) {
  const indicator = `https://api-${crypto.randomUUID().slice(0, 8)}.example.com/mcp`;
  const resource = await p.api.resources.createResource(p.project.id, {
    name: "Notes API",
    code: "notes",
    indicator,
    permissions: [
      { name: "Read", code: "read", description: "Read your notes" },
      { name: "Write", code: "write", description: "Change your notes" },
    ],
  });
  const ids = Object.fromEntries(resource.permissions.map((x) => [x.code, x.id]));
  const role = await p.api.roles.createRole(p.project.id, {
    name: "Notes user",
    code: "notes_user",
    permission_ids: held.map((code) => ids[code]),
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    role_id: role.id,
  });
  return { indicator, ids, role };
}

const decide = (browser: Browser, html: string, decision: "allow" | "deny") =>
  browser.post("/authorize/consent", { ...fieldsOf(html), decision });

test("a first-party client gets its code without a consent page", async () => {
  const p = await thirdParty();
  const browser = new Browser();
  const { res, verifier, html } = await authorizeOidc(browser, p.firstPartyId);
  assert.equal(res.status, 200);
  const location = await submitForm(browser, html, p.email, p.password);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  assert.ok(location.searchParams.get("code"));
  await redeem(p.firstPartyId, location, verifier);
});

test("a third-party client shows the consent page; allowing gives the code, and the next login asks nothing", async () => {
  const p = await thirdParty();
  const browser = new Browser();
  const { verifier, html } = await loginToConsent(browser, p);
  assert.match(html, /id="client-name">Acme Notes</);
  assert.match(html, /id="client-host">127\.0\.0\.1:9</);
  assert.match(html, /See your email address/);
  assert.match(html, /See your name and picture/);
  const res = await decide(browser, html, "allow");
  assert.equal(res.status, 303, await res.text());
  const location = new URL(res.headers.get("location")!);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  assert.equal(location.searchParams.get("state"), "st");
  assert.equal(location.searchParams.get("iss"), await baseUrl());
  const tokens = await redeem(p.clientId, location, verifier);
  assert.ok(tokens.refresh_token);
  // The same browser (single sign-on): a code at once.
  const again = await authorizeOidc(browser, p.clientId);
  assert.equal(again.res.status, 302);
  assert.ok(new URL(again.res.headers.get("location")!).searchParams.get("code"));
  // Another browser: the form, then the code, no page.
  const other = new Browser();
  const form = await authorizeOidc(other, p.clientId);
  const location2 = await submitForm(other, form.html, p.email, p.password);
  assert.ok(location2.searchParams.get("code"), location2.href);
  // The decision is the user's and this client's: the page again was not needed, and it was recorded once.
  const events = await granted(p);
  assert.equal(events.data.length, 1);
  assert.equal(events.data[0].details?.client_id, p.clientId);
});

test("asking for a permission not yet granted asks again; prompt=none without consent answers consent_required", async () => {
  const p = await thirdParty();
  const browser = new Browser();
  const first = await loginToConsent(browser, p, { scope: "openid" });
  assert.doesNotMatch(first.html, /See your email address/);
  assert.equal((await decide(browser, first.html, "allow")).status, 303);
  // More (email): the session is there, but the page comes again, naming what is asked.
  const more = await authorizeOidc(browser, p.clientId, { scope: "openid email" });
  assert.equal(more.res.status, 302);
  const to = new URL(more.res.headers.get("location")!);
  assert.equal(to.pathname, "/authorize/consent");
  const none = await authorizeOidc(browser, p.clientId, { scope: "openid email", prompt: "none" });
  assert.equal(none.res.status, 302);
  const refused = new URL(none.res.headers.get("location")!);
  assert.equal(refused.searchParams.get("error"), "consent_required");
  assert.equal(refused.searchParams.get("state"), "st");
  assert.equal(refused.searchParams.get("iss"), await baseUrl());
  // Allowing the page of the single sign-on: back to /authorize, then the code.
  const page = await browser.get(to.pathname + to.search);
  const html = await page.text();
  assert.match(html, /See your email address/);
  const allowed = await decide(browser, html, "allow");
  assert.equal(allowed.status, 303);
  const back = new URL(allowed.headers.get("location")!);
  assert.equal(back.pathname, "/authorize");
  const coded = await browser.get(back.pathname + back.search);
  assert.equal(coded.status, 302);
  assert.ok(new URL(coded.headers.get("location")!).searchParams.get("code"));
  // Now prompt=none is answered with a code.
  const silent = await authorizeOidc(browser, p.clientId, { scope: "openid email", prompt: "none" });
  assert.ok(new URL(silent.res.headers.get("location")!).searchParams.get("code"));
});

test("denying the consent page redirects with access_denied, state and iss, and keeps nothing", async () => {
  const p = await thirdParty();
  const browser = new Browser();
  const { html } = await loginToConsent(browser, p);
  const res = await decide(browser, html, "deny");
  assert.equal(res.status, 303);
  const location = new URL(res.headers.get("location")!);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  assert.equal(location.searchParams.get("error"), "access_denied");
  assert.equal(location.searchParams.get("state"), "st");
  assert.equal(location.searchParams.get("iss"), await baseUrl());
  assert.equal(location.searchParams.get("code"), null);
  // The page cannot be allowed afterwards, nor denied again.
  assert.equal((await decide(browser, html, "allow")).status, 400);
  assert.equal((await decide(browser, html, "deny")).status, 400);
  // The denial is recorded, once; nothing was granted.
  const denied = await granted(p, "consent.denied");
  assert.equal(denied.data.length, 1);
  assert.deepEqual(denied.data[0].details, { client_id: p.clientId, resource: null });
  assert.equal((await granted(p)).data.length, 0);
  // The login waiting on the page opened no session: a silent request gets no code.
  const none = await authorizeOidc(browser, p.clientId, { prompt: "none" });
  assert.equal(new URL(none.res.headers.get("location")!).searchParams.get("code"), null);
});

test("a consent form with a stale or foreign CSRF token, or from another browser, changes nothing", async () => {
  const p = await thirdParty();
  const browser = new Browser();
  const { html } = await loginToConsent(browser, p);
  const fields = fieldsOf(html);
  const wrong = await browser.post("/authorize/consent", {
    ...fields,
    csrf: "x".repeat(43),
    decision: "allow",
  });
  assert.equal(wrong.status, 400);
  // Another user's page's token (a foreign one) in this browser.
  const q = await thirdParty();
  const foreign = await loginToConsent(new Browser(), q);
  const mixed = await browser.post("/authorize/consent", {
    ...fields,
    csrf: fieldsOf(foreign.html).csrf,
    decision: "allow",
  });
  assert.equal(mixed.status, 400);
  // The right form from another browser (its cookie differs).
  const elsewhere = await new Browser().post("/authorize/consent", { ...fields, decision: "allow" });
  assert.equal(elsewhere.status, 400);
  // The page is still this browser's to decide; nothing was kept.
  // The login waiting on the page opened no session: a silent request gets no code.
  const none = await authorizeOidc(browser, p.clientId, { prompt: "none" });
  assert.equal(new URL(none.res.headers.get("location")!).searchParams.get("code"), null);
  const events = await granted(p);
  assert.equal(events.data.length, 0);
  // A reload of the page replaces its token: the older one is stale.
  const reloaded = await browser.get(`/authorize/consent?request_id=${fields.request_id}`);
  const fresh = fieldsOf(await reloaded.text());
  assert.notEqual(fresh.csrf, fields.csrf);
  assert.equal((await browser.post("/authorize/consent", { ...fields, decision: "allow" })).status, 400);
  assert.equal((await browser.post("/authorize/consent", { ...fresh, decision: "allow" })).status, 303);
});

/** Allows the client once through the form in this browser; the tokens of the code. */
async function allowOnce(browser: Browser, p: Project & { clientId: string }) {
  const { verifier, html } = await loginToConsent(browser, p);
  const res = await decide(browser, html, "allow");
  assert.equal(res.status, 303);
  return await redeem(p.clientId, new URL(res.headers.get("location")!), verifier);
}

const refresh = (clientId: string, refreshToken: string) =>
  postToken({ grant_type: "refresh_token", client_id: clientId, refresh_token: refreshToken });

test("Connected apps on /account lists a consent and revokes it: the client's refresh token is refused at once", async () => {
  const p = await thirdParty();
  const browser = new Browser();
  const tokens = await allowOnce(browser, p);
  const page = await (await browser.get("/account")).text();
  assert.match(page, /Connected apps/);
  assert.match(page, /<strong>Acme Notes<\/strong>/);
  const consentId = /name="consent_id" value="([^"]+)"/.exec(page)![1];
  const form = {
    project: /name="project" value="([^"]+)"/.exec(page)![1],
    csrf: /name="csrf" value="([^"]+)"/.exec(page)![1],
    consent_id: consentId,
  };
  // A foreign CSRF token changes nothing.
  const forged = await browser.post("/account/consents/revoke", { ...form, csrf: "x".repeat(43) });
  assert.equal(forged.status, 403);
  await forged.body?.cancel();
  const stillGood = await refresh(p.clientId, tokens.refresh_token);
  assert.equal(stillGood.status, 200);
  const next = (await stillGood.json()).refresh_token as string;
  const revoked = await browser.post("/account/consents/revoke", form);
  assert.equal(revoked.status, 303);
  await revoked.body?.cancel();
  const after = await (await browser.get(revoked.headers.get("location")!)).text();
  assert.match(after, /No connected apps/);
  const refused = await refresh(p.clientId, next);
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).error, "invalid_grant");
  // The next login of that client asks again.
  const again = await authorizeOidc(browser, p.clientId);
  assert.equal(new URL(again.res.headers.get("location")!).pathname, "/authorize/consent");
});

test("admins list and revoke a user's consents; least privilege: users:read to list, users:update to revoke", async () => {
  const p = await thirdParty();
  const tokens = await allowOnce(new Browser(), p);
  const path = `/api/v1/projects/${p.project.id}/users/${p.userId}/consents`;
  // Each answer checked against the operation's schema in the OpenAPI document.
  const checked = async (method: string, to: string, token: string) =>
    await checkAnswer(
      method,
      `${await baseUrl()}${to}`,
      await http(to, { method, headers: { authorization: `Bearer ${token}` } }),
    );
  const as = (token: string) => checked("GET", path, token);
  const listed = await as(p.token);
  assert.equal(listed.status, 200);
  const { data } = await listed.json();
  assert.equal(data.length, 1);
  assert.equal(data[0].client_id, p.clientId);
  assert.equal(data[0].client_name, "Acme Notes");
  assert.equal(data[0].resource_id, null);
  assert.deepEqual(data[0].permissions, ["email", "openid", "profile"]);
  const id = data[0].id as string;
  // Without users:read, no list; with users:read only, no revocation.
  const nothing = await clientWith(p, ["clients:read"]);
  const noRead = await as(nothing.token);
  assert.equal(noRead.status, 403);
  assert.equal((await noRead.json()).error, "insufficient_permission");
  const reader = await clientWith(p, ["users:read"]);
  assert.equal((await as(reader.token)).status, 200);
  const del = (token: string, consentId: string) => checked("DELETE", `${path}/${consentId}`, token);
  const noUpdate = await del(reader.token, id);
  assert.equal(noUpdate.status, 403);
  assert.equal((await noUpdate.json()).error, "insufficient_permission");
  // Another project's admin sees nothing of this user.
  const other = await loginProject();
  const foreign = await http(`/api/v1/projects/${other.project.id}/users/${p.userId}/consents`, {
    headers: { authorization: `Bearer ${other.token}` },
  });
  assert.equal(foreign.status, 404);
  assert.equal((await foreign.json()).error, "user_not_found");
  const missing = await del(p.token, "no-such-consent");
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error, "consent_not_found");
  assert.equal((await refresh(p.clientId, tokens.refresh_token)).status, 200);
  const gone = await del(p.token, id);
  assert.equal(gone.status, 204);
  assert.equal((await (await as(p.token)).json()).data.length, 0);
  const events = await http(`/api/v1/projects/${p.project.id}/audit-events?type=consent.revoked`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  assert.equal((await events.json()).data.length, 1);
});

test("a consent for an API (resource) names the resource and its permissions; more permissions ask again", async () => {
  const p = await thirdParty();
  const { indicator } = await notesApi(p, ["read", "write"]);
  const browser = new Browser();
  const first = await loginToConsent(browser, p, { resource: indicator, scope: "openid read" });
  assert.match(first.html, /id="api">Notes API</);
  assert.match(first.html, /Read your notes/);
  assert.doesNotMatch(first.html, /Change your notes/);
  assert.equal((await decide(browser, first.html, "allow")).status, 303);
  const same = await authorizeOidc(browser, p.clientId, { resource: indicator, scope: "openid read" });
  assert.ok(new URL(same.res.headers.get("location")!).searchParams.get("code"));
  const more = await authorizeOidc(browser, p.clientId, { resource: indicator, scope: "openid read write" });
  const to = new URL(more.res.headers.get("location")!);
  assert.equal(to.pathname, "/authorize/consent");
  const page = await (await browser.get(to.pathname + to.search)).text();
  assert.match(page, /Change your notes/);
});

test("revoking a user's consent needs covering what the user holds (403 insufficient_permission otherwise)", async () => {
  const p = await thirdParty();
  const resource = await p.api.resources.createResource(p.project.id, {
    name: "Notes API",
    code: "notes",
    permissions: [{ name: "Read", code: "read" }],
  });
  const role = await p.api.roles.createRole(p.project.id, {
    name: "Reader",
    code: "reader",
    permission_ids: resource.permissions.map((x) => x.id),
  });
  await p.api.users.updateUser(p.project.id, p.userId, {
    display_name: "Login User",
    is_active: true,
    email: p.email,
    role_id: role.id,
  });
  await allowOnce(new Browser(), p);
  const path = `/api/v1/projects/${p.project.id}/users/${p.userId}/consents`;
  const { data } = await (await http(path, { headers: { authorization: `Bearer ${p.token}` } })).json();
  const updater = await clientWith(p, ["users:read", "users:update"]);
  const refused = await http(`${path}/${data[0].id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${updater.token}` },
  });
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).error, "insufficient_permission");
  const listed = await (await http(path, { headers: { authorization: `Bearer ${p.token}` } })).json();
  assert.equal(listed.data.length, 1);
});

test("the one writer of codes checks consent before it writes (every sign-in path passes there)", () => {
  const source = Deno.readTextFileSync(new URL("../domain/signin/codes.ts", import.meta.url));
  const check = source.indexOf("await requireConsent(tx, c);");
  const write = source.indexOf("await insertAuthorizationCode(tx, c);");
  assert.ok(check > 0 && write > check, "requireConsent comes before insertAuthorizationCode");
});

test("allowing grants only the permissions the page showed: a form without them leads to the page again", async () => {
  const p = await thirdParty();
  const browser = new Browser();
  const { html } = await loginToConsent(browser, p);
  const res = await browser.post("/authorize/consent", {
    ...fieldsOf(html),
    permissions: "",
    decision: "allow",
  });
  assert.equal(res.status, 303);
  const to = new URL(res.headers.get("location")!);
  assert.equal(to.pathname, "/authorize/consent");
  const again = await (await browser.get(to.pathname + to.search)).text();
  assert.match(again, /See your email address/);
  const done = await decide(browser, again, "allow");
  assert.ok(new URL(done.headers.get("location")!).searchParams.get("code"));
});

test("after a second factor, the consent page comes before the code, and the code keeps the factor's amr", async () => {
  const p = await thirdParty();
  const { secret } = await enrolTotp({ clientId: p.firstPartyId, email: p.email, password: p.password });
  const browser = new Browser();
  const step = await passwordStep(browser, p);
  assert.equal(step.res.status, 200, step.html);
  const coded = await codeStep(browser, step, await totp(secret, Date.now() + 30_000));
  assert.equal(coded.res.status, 303, coded.html);
  const to = new URL(coded.res.headers.get("location")!);
  assert.equal(to.pathname, "/authorize/consent");
  const html = await (await browser.get(to.pathname + to.search)).text();
  const allowed = await decide(browser, html, "allow");
  assert.equal(allowed.status, 303);
  const tokens = await redeem(p.clientId, new URL(allowed.headers.get("location")!), step.verifier);
  const claims = JSON.parse(atob(tokens.id_token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  assert.deepEqual(claims.amr, ["pwd", "otp", "mfa"]);
});

test("a refresh after the user's role gained a permission carries only what was consented; a new login asks again", async () => {
  const p = await thirdParty();
  const { indicator, ids, role } = await notesApi(p, ["read"]);
  // No permission named: the page asks for all the user holds (read), and the token carries it.
  const browser = new Browser();
  const page = await loginToConsent(browser, p, { resource: indicator, scope: "openid" });
  assert.match(page.html, /Read your notes/);
  const allowed = await decide(browser, page.html, "allow");
  assert.equal(allowed.status, 303);
  const tokens = await redeem(p.clientId, new URL(allowed.headers.get("location")!), page.verifier);
  assert.equal(payloadOf(tokens.access_token).aud, indicator);
  assert.equal(payloadOf(tokens.access_token).scope, "read");

  // The role gains write: the client's refreshed token still carries read alone (the user never allowed write)...
  await p.api.roles.updateRole(p.project.id, role.id, {
    code: "notes_user",
    name: "Notes user",
    permission_ids: [ids.read, ids.write],
  });
  const refreshed = await refresh(p.clientId, tokens.refresh_token!);
  assert.equal(refreshed.status, 200);
  const again = await refreshed.json();
  assert.equal(payloadOf(again.access_token).scope, "read");
  // ...and a new login of the third party asks the user for write.
  const more = await authorizeOidc(browser, p.clientId, { resource: indicator, scope: "openid" });
  const to = new URL(more.res.headers.get("location")!);
  assert.equal(to.pathname, "/authorize/consent");
  assert.match(await (await browser.get(to.pathname + to.search)).text(), /Change your notes/);
});
