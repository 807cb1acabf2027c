/**
 * The account page (`/account`) for the browser's single sign-on session: what it shows, its CSRF token, the
 * authenticator's enrolment with a QR code drawn on the server (read back here) and a code computed from the
 * key shown, recovery codes, sessions, password change, and removal. Raw HTTP.
 */
import assert from "node:assert/strict";
import { Api, baseUrl, loginProject, test } from "./helpers.ts";
import { Browser, redeem, refreshStatus, signIn } from "./oidc_support.ts";
import { codeStep, decodeQrSvg, passwordStep, totp } from "./mfa_support.ts";

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1];
const projectOf = (html: string) => /name="project" value="([^"]+)"/.exec(html)![1];

/** A signed-in browser and its account page. */
async function signedIn() {
  const p = await loginProject();
  const browser = new Browser();
  const tokens = await signIn(browser, p);
  const page = await browser.get("/account");
  assert.equal(page.status, 200);
  const html = await page.text();
  return { p, browser, tokens, html, csrf: csrfOf(html), project: projectOf(html), headers: page.headers };
}

test("the account page shows the signed-in user, under the login page's headers, without script", async () => {
  const { p, html, headers, project } = await signedIn();
  assert.equal(project, p.project.id);
  assert.match(html, /<h1>Your account<\/h1>/);
  assert.ok(html.includes(p.email));
  assert.match(html, /<label for="display_name">Name<\/label>/);
  assert.match(html, /Where you are signed in/);
  // The session's browser in words (Deno's fetch here), the raw header kept as the title.
  assert.match(html, /<strong title="Deno\/[\d.]+">Deno \d+<\/strong>/);
  assert.match(html, /id="totp-status">Not set up/);
  assert.doesNotMatch(html, /<script(?! src="\/passkey\.js" defer><\/script>)/);
  assert.match(headers.get("content-security-policy")!, /default-src 'none'/);
  assert.equal(headers.get("x-frame-options"), "DENY");
  assert.equal(headers.get("cache-control"), "no-store");
  // Another browser is not signed in.
  const stranger = await new Browser().get("/account");
  assert.equal(stranger.status, 200);
  assert.match(await stranger.text(), /You are not signed in here/);
});

test("account forms need the page's CSRF token and this browser's cookie", async () => {
  const { browser, project } = await signedIn();
  const none = await browser.post("/account/profile", { project, display_name: "Mallory" });
  assert.equal(none.status, 403);
  await none.body?.cancel();
  const other = await signedIn();
  const foreign = await browser.post("/account/profile", {
    project,
    csrf: other.csrf,
    display_name: "Mallory",
  });
  assert.equal(foreign.status, 403);
  await foreign.body?.cancel();
  // With its own token the same form works.
  const mine = await browser.get("/account");
  const csrf = csrfOf(await mine.text());
  const ok = await browser.post("/account/profile", { project, csrf, display_name: "Ada Lovelace" });
  assert.equal(ok.status, 303);
  const after = await (await browser.get(ok.headers.get("location")!)).text();
  assert.match(after, /Your name was saved/);
  assert.match(after, /value="Ada Lovelace"/);
  const empty = await browser.post("/account/profile", { project, csrf, display_name: "  " });
  assert.equal(empty.status, 400);
  assert.match(
    await empty.text(),
    /<p class="field-error" id="display_name-error" role="alert">Enter your name/,
  );
});

test("enrolment on the account page: a QR code of the key shown, a right code, ten recovery codes once", async () => {
  const { p, browser, csrf, project } = await signedIn();
  const wrongPassword = await browser.post("/account/totp/start", {
    project,
    csrf,
    current_password: "nope nope",
  });
  assert.equal(wrongPassword.status, 400);
  assert.match(
    await wrongPassword.text(),
    /id="enrol-current-error" role="alert">The current password is wrong/,
  );

  const started = await browser.post("/account/totp/start", { project, csrf, current_password: p.password });
  assert.equal(started.status, 200);
  const page = await started.text();
  assert.doesNotMatch(page, /<script(?! src="\/passkey\.js" defer><\/script>)/);
  const key = /<code class="key" id="secret"[^>]*>([A-Z2-7 ]+)<\/code>/.exec(page)![1].replace(/ /g, "");
  const svg = /<svg[\s\S]*?<\/svg>/.exec(page)![0];
  const uri = new URL(decodeQrSvg(svg));
  assert.equal(uri.protocol, "otpauth:");
  assert.equal(uri.searchParams.get("secret"), key);
  assert.equal(uri.searchParams.get("issuer"), new URL(await baseUrl()).host);
  assert.ok(decodeURIComponent(uri.pathname).includes(p.email));

  const good = await totp(key);
  const wrong = await browser.post("/account/totp/confirm", {
    project,
    csrf,
    code: good === "000000" ? "111111" : "000000",
  });
  assert.equal(wrong.status, 400);
  const again = await wrong.text();
  assert.match(again, /id="code-error" role="alert">That is not the app&#39;s current code/);
  assert.ok(again.includes(key.match(/.{1,4}/g)!.join(" ")), "the same key again");
  const confirmed = await browser.post("/account/totp/confirm", { project, csrf, code: good });
  assert.equal(confirmed.status, 200);
  const codes = [...(await confirmed.text()).matchAll(/<li><code>([A-Z2-7-]+)<\/code><\/li>/g)].map((m) =>
    m[1]
  );
  assert.equal(codes.length, 10);
  const account = await (await browser.get("/account")).text();
  assert.match(account, /An authenticator app is set up/);
  assert.match(account, /<strong id="recovery-left">10<\/strong>/);

  // From now on a sign-in asks for the code.
  const next = new Browser();
  const step = await passwordStep(next, p);
  assert.equal(step.res.status, 200);
  assert.equal((await codeStep(next, step, await totp(key, Date.now() + 30_000))).res.status, 303);

  // New recovery codes (with the password) replace the old ones.
  const fresh = await browser.post("/account/recovery-codes", {
    project,
    csrf,
    current_password: p.password,
  });
  assert.equal(fresh.status, 200);
  const newCodes = [...(await fresh.text()).matchAll(/<li><code>([A-Z2-7-]+)<\/code><\/li>/g)].map((m) =>
    m[1]
  );
  assert.equal(newCodes.length, 10);
  const b3 = new Browser();
  const s3 = await passwordStep(b3, p);
  assert.equal((await codeStep(b3, s3, codes[0])).res.status, 400);
  assert.equal((await codeStep(b3, s3, newCodes[0])).res.status, 303);

  // While the project requires a factor, the last one stays.
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Required,
  });
  const kept = await browser.post("/account/totp/remove", { project, csrf, current_password: p.password });
  assert.equal(kept.status, 409);
  assert.match(
    await kept.text(),
    /id="remove-current-error" role="alert">This project requires two-step verification/,
  );
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    mfa: Api.UpdateProjectRequest.MfaEnum.Optional,
  });

  // Removing it needs the password too; then the password alone signs in.
  const refused = await browser.post("/account/totp/remove", {
    project,
    csrf,
    current_password: "wrong wrong",
  });
  assert.equal(refused.status, 400);
  await refused.body?.cancel();
  const removed = await browser.post("/account/totp/remove", { project, csrf, current_password: p.password });
  assert.equal(removed.status, 303);
  assert.match(
    await (await browser.get(removed.headers.get("location")!)).text(),
    /The authenticator was removed/,
  );
  assert.equal((await passwordStep(new Browser(), p)).res.status, 303);
});

test("sessions on the account page: sign out one, or everywhere", async () => {
  const { p, browser, tokens } = await signedIn();
  // A second login elsewhere.
  const laptop = new Browser();
  const other = await signIn(laptop, p);
  const page = await (await browser.get("/account")).text();
  const ids = [...page.matchAll(/name="session_id" value="([^"]+)"/g)].map((m) => m[1]);
  assert.equal(ids.length, 2);
  const otherSid =
    (JSON.parse(atob(other.access_token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))) as {
      sid: string;
    }).sid;
  assert.ok(ids.includes(otherSid));
  const ended = await browser.post("/account/sessions/end", {
    project: projectOf(page),
    csrf: csrfOf(page),
    session_id: otherSid,
  });
  assert.equal(ended.status, 303);
  assert.equal((await refreshStatus(p.clientId, other.refresh_token)).error_code, "invalid_refresh_token");
  assert.notEqual((await refreshStatus(p.clientId, tokens.refresh_token)).status, 400);

  const page2 = await (await browser.get("/account")).text();
  const all = await browser.post("/account/sessions/end-all", {
    project: projectOf(page2),
    csrf: csrfOf(page2),
  });
  assert.equal(all.status, 200);
  assert.match(await all.text(), /signed out everywhere/);
  assert.match(await (await browser.get("/account")).text(), /You are not signed in here/);
});

test("a password change on the account page needs the current one and signs out everywhere", async () => {
  const { p, browser, csrf, project } = await signedIn();
  const mismatch = await browser.post("/account/password", {
    project,
    csrf,
    current_password: p.password,
    password: "a new password 1",
    password_repeat: "a new password 2",
  });
  assert.equal(mismatch.status, 400);
  assert.match(await mismatch.text(), /id="repeat_password-error" role="alert">The two new passwords differ/);
  const wrong = await browser.post("/account/password", {
    project,
    csrf,
    current_password: "not the password",
    password: "a new password 1",
    password_repeat: "a new password 1",
  });
  assert.equal(wrong.status, 400);
  assert.match(await wrong.text(), /id="password-current-error" role="alert">The current password is wrong/);
  const changed = await browser.post("/account/password", {
    project,
    csrf,
    current_password: p.password,
    password: "a new password 1",
    password_repeat: "a new password 1",
  });
  assert.equal(changed.status, 200);
  assert.match(await changed.text(), /Your password was changed/);
  const login = await passwordStep(new Browser(), { ...p, password: "a new password 1" });
  assert.equal(login.res.status, 303);
  await redeem(p.clientId, new URL(login.res.headers.get("location")!), login.verifier);
});
