/**
 * A project's `require_verified_email` on every way to an authorization code: the password, a passkey, the reuse
 * of a single sign-on session, and an upstream provider (a linked user, and a user created just in time from an
 * address the provider does not say is verified). Each is stopped with the "confirm your email address first"
 * page, from which the link can be mailed (a real SMTP server, tests/smtp_catcher.ts). The file's service has a
 * database of its own, dropped when the file ends.
 */
import assert from "node:assert/strict";
import { atModuleEnd, challengeOf, mutableLog, newVerifier, REDIRECT_URI, test } from "./helpers.ts";
import {
  api,
  eventsOf,
  hiddenFields,
  Jar,
  type MailService,
  mailService,
  newEmail,
  openLogin,
  projectAt,
  userAt,
} from "./mail_support.ts";
import { type MailProject } from "./mail_support.ts";
import { linkIn } from "./smtp_catcher.ts";
import {
  Agent,
  APP_REDIRECT,
  clickProvider,
  createProvider,
  type DownProject,
  fakeUpstream,
} from "./idp_support.ts";
import { SoftKey } from "./passkey_support.ts";

const PASSWORD = "correct horse battery";

let shared: Promise<MailService> | undefined;
/** The file's service: SMTP to the catcher, loopback providers allowed, a key for their secrets. */
const service = () =>
  shared ??= (async () => {
    const log = mutableLog();
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
      .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const s = await mailService(
      { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", KEY_ENCRYPTION_KEY: key },
      { write: log.write },
    );
    atModuleEnd(() => {
      log.mute();
      void s.stop().catch(() => {});
      s.catcher.close();
      s.dropSync();
    });
    return s;
  })();

async function requireVerified(p: MailProject, on = true): Promise<void> {
  const res = await api(p.url, p.token, "PUT", `/api/v1/projects/${p.projectId}`, {
    name: p.name,
    require_verified_email: on,
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
}

/** The answer is the "confirm your address first" page for `email`, with no code anywhere: its HTML. */
async function stopped(res: Response, email: string): Promise<string> {
  const html = await res.text();
  assert.equal(res.status, 403, html.slice(0, 300));
  assert.equal(res.headers.get("location"), null);
  assert.match(html, /Confirm your email address first/);
  assert.ok(html.includes(email), "the page names the address");
  assert.doesNotMatch(html, /[?&]code=/);
  return html;
}

/** Mails the link from the page's form (in the page's browser) and confirms the address through it. */
async function resendAndConfirm(
  s: MailService,
  post: (path: string, form: Record<string, string>) => Promise<Response>,
  html: string,
  email: string,
): Promise<void> {
  const sent = await post(`${s.url}/authorize/verify/resend`, hiddenFields(html));
  assert.equal(sent.status, 200);
  assert.match(await sent.text(), /Check your mail/);
  const link = linkIn(await s.catcher.mailTo(email));
  const confirm = new Jar(s.url);
  const done = await confirm.post("/authorize/verify", hiddenFields(await (await confirm.get(link)).text()));
  assert.equal(done.status, 200);
  await done.body?.cancel();
}

/** GET /authorize of an OpenID request, the way a browser with a session sends it again. */
async function authorizeUrl(clientId: string, extra: Record<string, string> = {}) {
  return `/authorize?${new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(newVerifier()),
    code_challenge_method: "S256",
    scope: "openid email",
    state: "st-1",
    ...extra,
  })}`;
}

const reasons = async (p: MailProject) =>
  (await eventsOf(p, "login.failed")).map((e) => e.details as Record<string, unknown>)
    .filter((d) => d.reason === "email_not_verified");

test("require_verified_email stops the reuse of a single sign-on session opened before it applied", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const email = newEmail();
  await userAt(p, { email, password: PASSWORD });
  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId);
  const first = await jar.post("/authorize", { ...hiddenFields(login.html), email, password: PASSWORD });
  assert.equal(first.status, 303, "no rule yet: signed in, with a browser session");
  await first.body?.cancel();
  await requireVerified(p);
  const html = await stopped(await jar.get(await authorizeUrl(p.clientId)), email);
  // prompt=none cannot show the page: the application hears login_required, and gets no code.
  const none = await jar.get(await authorizeUrl(p.clientId, { prompt: "none" }));
  assert.equal(none.status, 302);
  const back = new URL(none.headers.get("location")!);
  assert.equal(back.searchParams.get("error"), "login_required");
  assert.equal(back.searchParams.get("code"), null);
  const stops = await reasons(p);
  assert.equal(stops.length, 2);
  assert.ok(stops.every((d) => typeof d.sso_session_id === "string"));
  // The page mails the link; once the address is confirmed, the session signs the user in again.
  await resendAndConfirm(s, (url, form) => jar.post(url, form), html, email);
  const resumed = await jar.get(await authorizeUrl(p.clientId));
  assert.equal(resumed.status, 302);
  assert.ok(new URL(resumed.headers.get("location")!).searchParams.get("code"));
});

/** JSON to the service in a jar's browser (cookies sent and kept). */
async function postJson(jar: Jar, path: string, body: unknown) {
  const res = await fetch(`${jar.base}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      cookie: [...jar.jar].map(([k, v]) => `${k}=${v}`).join("; "),
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  });
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(";");
    jar.jar.set(pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1));
  }
  return { status: res.status, body: await res.json() };
}

test("require_verified_email stops a passkey sign-in; its page mails the link", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const { origin, hostname: rpId } = new URL(s.url);
  const email = newEmail();
  await userAt(p, { email, password: PASSWORD });
  // Signed in before the rule, the user adds a passkey on the account page.
  const jar = new Jar(s.url);
  const login = await openLogin(jar, p.clientId);
  const signedIn = await jar.post("/authorize", { ...hiddenFields(login.html), email, password: PASSWORD });
  assert.equal(signedIn.status, 303);
  await signedIn.body?.cancel();
  const account = await (await jar.get("/account")).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(account)![1];
  const project = p.projectId;
  const options = await postJson(jar, "/account/passkeys/options", {
    csrf,
    project,
    current_password: PASSWORD,
  });
  assert.equal(options.status, 200, JSON.stringify(options.body));
  const key = new SoftKey();
  const made = key.create({ challenge: options.body.challenge, rpId, origin });
  const added = await postJson(jar, "/account/passkeys", { csrf, project, name: "Soft key", ...made });
  assert.equal(added.status, 200, JSON.stringify(added.body));
  await requireVerified(p);
  // A new browser signs in with the passkey alone: stopped, and sent to the page that offers the link.
  const other = new Jar(s.url);
  const page = hiddenFields((await openLogin(other, p.clientId)).html);
  const form = { request_id: page.request_id, csrf: page.csrf };
  const challenge = (await postJson(other, "/authorize/passkey/options", form)).body.challenge;
  const answer = await postJson(other, "/authorize/passkey", {
    ...form,
    ...key.get({ challenge, rpId, origin }),
  });
  assert.equal(answer.status, 403, JSON.stringify(answer.body));
  assert.equal(answer.body.error, "email_not_verified");
  assert.doesNotMatch(answer.body.location, /[?&]code=/);
  const html = await stopped(await other.get(answer.body.location), email);
  const stops = await reasons(p);
  assert.deepEqual(stops.map((d) => d.method), ["passkey"]);
  assert.equal(
    (await eventsOf(p, "login.succeeded")).filter((e) =>
      (e.details as { method?: string }).method === "passkey"
    )
      .length,
    0,
  );
  // Another browser cannot open that page.
  const foreign = await new Jar(s.url).get(answer.body.location);
  assert.equal(foreign.status, 400);
  await foreign.body?.cancel();
  await resendAndConfirm(s, (url, f) => other.post(url, f), html, email);
  // Confirmed: the passkey signs in.
  const again = new Jar(s.url);
  const fields = hiddenFields((await openLogin(again, p.clientId)).html);
  const form2 = { request_id: fields.request_id, csrf: fields.csrf };
  const challenge2 = (await postJson(again, "/authorize/passkey/options", form2)).body.challenge;
  const ok = await postJson(again, "/authorize/passkey", {
    ...form2,
    ...key.get({ challenge: challenge2, rpId, origin }),
  });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.ok(new URL(ok.body.location).searchParams.get("code"));
});

/** Signs in through the provider's button in a new browser: the last answer and where it ended. */
async function throughProvider(d: DownProject) {
  const agent = new Agent();
  const { location } = await clickProvider(agent, d, "Fake");
  const done = await agent.follow(location);
  return { agent, ...done };
}

test("require_verified_email stops an upstream sign-in: a user made just in time, and a linked user", async () => {
  const s = await service();
  const p = await projectAt(s.url);
  const d: DownProject = {
    url: s.url,
    publicUrl: s.url,
    projectId: p.projectId,
    token: p.token,
    clientId: p.clientId,
    svc: s.svc,
  };
  const fake = await fakeUpstream();
  try {
    await createProvider(d, {
      display_name: "Fake",
      issuer: fake.base,
      client_id: "rp",
      jit_provisioning: true,
    });
    await requireVerified(p);
    // Just in time, the provider not saying `email_verified: true`: created with an unverified address, stopped.
    for (const [sub, verified] of [["jit-silent", undefined], ["jit-false", false]] as const) {
      const email = newEmail();
      fake.state.claims = () => ({
        sub,
        email,
        ...(verified === undefined ? {} : { email_verified: verified }),
      });
      const jit = await throughProvider(d);
      assert.ok(!jit.url.startsWith(APP_REDIRECT), "no code for the application");
      const html = await stopped(jit.res, email);
      const users = await (await api(
        s.url,
        p.token,
        "GET",
        `/api/v1/projects/${p.projectId}/users?search=${encodeURIComponent(email)}`,
      ))
        .json();
      assert.deepEqual(users.data.map((u: { email_verified: boolean }) => u.email_verified), [false]);
      if (sub === "jit-silent") await resendAndConfirm(s, (url, f) => jit.agent.post(url, f), html, email);
    }
    // Confirmed through the mailed link, that user signs in.
    fake.state.claims = () => ({ sub: "jit-silent" });
    assert.ok((await throughProvider(d)).url.startsWith(APP_REDIRECT));
    // The provider vouching for the address: the user is created verified and signs in.
    fake.state.claims = () => ({ sub: "jit-verified", email: newEmail(), email_verified: true });
    assert.ok((await throughProvider(d)).url.startsWith(APP_REDIRECT));
    // A linked user whose address is not verified: signed in before the rule, stopped once it applies.
    await requireVerified(p, false);
    const linked = newEmail();
    fake.state.claims = () => ({ sub: "linked", email: linked });
    assert.ok((await throughProvider(d)).url.startsWith(APP_REDIRECT));
    await requireVerified(p);
    await stopped((await throughProvider(d)).res, linked);
    const stops = await reasons(p);
    assert.equal(stops.length, 3);
    assert.ok(stops.every((x) => x.method === "oidc" && typeof x.provider_id === "string"));
  } finally {
    await fake.stop();
  }
});

test("the sign-in policy is the only writer of authorization codes: no path can skip it", () => {
  const root = new URL("../", import.meta.url);
  const writers: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(new URL(dir, root))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) walk(path);
      else if (
        /\.tsx?$/.test(entry.name) &&
        Deno.readTextFileSync(new URL(path, root)).includes("insertAuthorizationCode(")
      ) {
        writers.push(path);
      }
    }
  };
  for (const dir of ["routes", "domain", "jobs.ts", "service.ts", "main.ts"]) {
    if (dir.endsWith(".ts")) {
      if (Deno.readTextFileSync(new URL(dir, root)).includes("insertAuthorizationCode(")) writers.push(dir);
    } else walk(dir);
  }
  assert.deepEqual(writers, ["domain/signin/codes.ts"]);
});
