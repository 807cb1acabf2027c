/**
 * Device cookies: failed guesses from elsewhere throttle an account's shared counter, but a browser that signed
 * in to the account before keeps its own counter, so patient guessing cannot keep the owner out of it.
 */
import assert from "node:assert/strict";
import {
  challengeOf,
  loginProject,
  newVerifier,
  openLoginPage,
  REDIRECT_URI,
  submitLogin,
  test,
} from "./helpers.ts";

async function loginPage(clientId: string) {
  return await openLoginPage({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(newVerifier()),
    code_challenge_method: "S256",
  });
}

/** Opens a page and submits it, with the device cookie when given; returns the status and any device cookie. */
async function signIn(clientId: string, email: string, password: string, device?: string) {
  const page = await loginPage(clientId);
  assert.equal(page.status, 200, page.html);
  const res = await submitLogin(
    { ...page, cookie: device ? `${page.cookie}; acs_device=${device}` : page.cookie },
    email,
    password,
  );
  await res.body?.cancel();
  const set = res.headers.getSetCookie().find((c) => c.startsWith("acs_device="));
  return { status: res.status, device: set?.split(";")[0].slice("acs_device=".length), setCookie: set };
}

/** Wrong passwords from a browser that never signed in, until the account's shared counter answers 429. */
async function throttleAccount(clientId: string, email: string) {
  for (let i = 0; i < 10; i++) {
    if ((await signIn(clientId, email, "wrong password!")).status === 429) return;
  }
  assert.fail("the account was never throttled");
}

test("a browser that signed in before still signs in while guesses from elsewhere throttle the account", async () => {
  const p = await loginProject();
  const first = await signIn(p.clientId, p.email, p.password);
  assert.equal(first.status, 303);
  assert.match(first.device ?? "", /^[A-Za-z0-9_-]{43}$/, "a successful sign-in names the browser");
  assert.match(first.setCookie!, /HttpOnly/i);
  assert.match(first.setCookie!, /SameSite=Lax/i);
  assert.match(first.setCookie!, /Path=\/authorize/i);

  await throttleAccount(p.clientId, p.email);
  // The right password from an unknown browser waits like any other attempt on the account.
  assert.equal((await signIn(p.clientId, p.email, p.password)).status, 429);
  // So does a made-up device cookie.
  assert.equal((await signIn(p.clientId, p.email, p.password, "x".repeat(43))).status, 429);
  // The owner's browser is not kept out, and its cookie is renewed.
  const again = await signIn(p.clientId, p.email, p.password, first.device);
  assert.equal(again.status, 303);
  assert.equal(again.device, first.device);
});

test("a known browser's own failures throttle only that browser, and only for the account it signed in to", async () => {
  const p = await loginProject();
  const owner = await signIn(p.clientId, p.email, p.password);
  assert.equal(owner.status, 303);
  // Its wrong passwords count against its own counter: after the free ones it waits too.
  let throttled = false;
  for (let i = 0; i < 10 && !throttled; i++) {
    throttled = (await signIn(p.clientId, p.email, "wrong password!", owner.device)).status === 429;
  }
  assert.ok(throttled, "a known browser is throttled by its own failures");
  // The account's shared counter was not touched: an unknown browser with the right password gets in.
  assert.equal((await signIn(p.clientId, p.email, p.password)).status, 303);

  // The cookie means nothing for another account.
  const other = await loginProject();
  await throttleAccount(other.clientId, other.email);
  assert.equal((await signIn(other.clientId, other.email, other.password, owner.device)).status, 429);
});

test("a planted device cookie is never trusted: a sign-in from an unknown browser gets a fresh one", async () => {
  const p = await loginProject();
  const planted = "P".repeat(43);
  const signedIn = await signIn(p.clientId, p.email, p.password, planted);
  assert.equal(signedIn.status, 303);
  assert.notEqual(signedIn.device, planted);
  // The planted value means nothing for the account afterwards either.
  await throttleAccount(p.clientId, p.email);
  assert.equal((await signIn(p.clientId, p.email, p.password, planted)).status, 429);
  assert.equal((await signIn(p.clientId, p.email, p.password, signedIn.device)).status, 303);
});
