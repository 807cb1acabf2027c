/**
 * Runs the web app example end to end against a running service, with a browser made of plain HTTP: setup,
 * login through the service's form, the claims and userinfo on the app's page, a refresh, a silent second
 * login (single sign-on), and logout back to the app. Exits non-zero when a step fails.
 *
 *   SERVICE_URL=http://localhost:8000 BOOTSTRAP_ADMIN_SECRET=… \
 *     deno run --allow-net --allow-env --lock=examples/deno.lock examples/web-app/run.ts
 */
import { Browser, check, freePort, serviceFromEnv } from "../support.ts";
import { createApp } from "./app.ts";
import { setupWebApp } from "./setup.ts";

export async function runWebApp(serviceUrl: string, adminSecret: string): Promise<void> {
  const port = freePort();
  const appUrl = `http://127.0.0.1:${port}`;
  const s = await setupWebApp({ serviceUrl, adminSecret, appUrl });
  const handler = await createApp({ serviceUrl, clientId: s.clientId, appUrl });
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, handler);
  try {
    const browser = new Browser();
    const service = new URL(serviceUrl).origin;

    const start = await browser.visit(`${appUrl}/`);
    check((await start.res.text()).includes(`href="/login"`), "the app offers to sign in");

    // Sign in: the app sends the browser to the service's login page, whose form sends it back.
    const login = await browser.visit(`${appUrl}/login`);
    const form = await login.res.text();
    check(login.res.status === 200 && login.url.origin === service, "the login page is the service's");
    check(login.url.searchParams.get("code_challenge_method") === "S256", "the login uses PKCE (S256)");
    const signedIn = await browser.submit(login.url, form, { email: s.email, password: s.password });
    const home = await signedIn.res.text();
    check(signedIn.hops.some((u) => u.pathname === "/callback"), "the service sent the browser to /callback");
    check(signedIn.url.href === `${appUrl}/` && signedIn.res.status === 200, "the app shows its home page");
    const claims = JSON.parse(unescapeHtml(/<pre id="claims">([^<]*)<\/pre>/.exec(home)![1]));
    const userinfo = JSON.parse(unescapeHtml(/<pre id="userinfo">([^<]*)<\/pre>/.exec(home)![1]));
    check(
      claims.aud === s.clientId && claims.iss === serviceUrl,
      "the ID token is for the app, from the service",
    );
    check(claims.email === s.email && claims.name === "Ada Lovelace", "the ID token names the user");
    check(
      typeof claims.sid === "string" && typeof claims.auth_time === "number",
      "the ID token has sid, auth_time",
    );
    check(userinfo.sub === claims.sub && userinfo.email === s.email, "userinfo answers for the same user");

    // Refresh: new tokens, and a new ID token for the same login.
    const refreshed = await browser.post(`${appUrl}/refresh`, {});
    check(refreshed.status === 303, "the refresh succeeded");
    await refreshed.body?.cancel();
    const after = await (await browser.visit(`${appUrl}/`)).res.text();
    const claims2 = JSON.parse(unescapeHtml(/<pre id="claims">([^<]*)<\/pre>/.exec(after)![1]));
    check(/<span id="refreshes">1<\/span>/.test(after), "the app refreshed once");
    check(
      claims2.sub === claims.sub && claims2.sid === claims.sid,
      "the refreshed ID token is of the same login",
    );

    // Single sign-on: the app forgets its session (as a second app of the project would start without one);
    // the browser is still signed in to the service, so the next login shows no form.
    browser.jar.delete("example_app_session");
    check(browser.jar.has("acs_sso"), "the browser holds the service's single sign-on cookie");
    const silent = await browser.visit(`${appUrl}/login`);
    const silentHome = await silent.res.text();
    check(
      silent.url.href === `${appUrl}/` && silent.res.status === 200,
      "the second login came straight back",
    );
    check(silent.hops.some((u) => u.origin === service && u.pathname === "/authorize"), "through /authorize");
    check(
      silentHome.includes(`<strong id="name">Ada Lovelace</strong>`),
      "signed in again without a password",
    );

    // Logout: the service ends its browser session and sends the browser back to /signed-out.
    const out = await browser.post(`${appUrl}/logout`, {});
    await out.body?.cancel();
    const end = new URL(out.headers.get("location")!);
    check(end.origin === service && end.pathname === "/logout", "the app sends the browser to end_session");
    check(
      end.searchParams.has("id_token_hint") && end.searchParams.has("post_logout_redirect_uri"),
      "with hints",
    );
    const back = await browser.visit(end);
    check(
      back.url.pathname === "/signed-out" && back.res.status === 200,
      "the service sent the browser back",
    );
    check((await back.res.text()).includes("You are signed out"), "the app says so");
    check(!browser.jar.has("acs_sso"), "the service's single sign-on cookie is gone");
    const again = await browser.visit(`${appUrl}/login`);
    check(
      again.url.origin === service && (await again.res.text()).includes('name="password"'),
      "the next login asks for the password again",
    );
  } finally {
    await server.shutdown();
  }
}

function unescapeHtml(v: string): string {
  return v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

if (import.meta.main) {
  const { serviceUrl, adminSecret } = serviceFromEnv();
  console.log("web-app: openid-client, code + PKCE, claims and userinfo, refresh, single sign-on, logout");
  await runWebApp(serviceUrl, adminSecret);
  console.log("web-app: passed");
}
