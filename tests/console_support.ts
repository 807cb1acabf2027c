/**
 * What the console tests share: Debian's Chromium (via playwright-core), where screenshots go (a temporary
 * directory removed at the end, or with UPDATE_SCREENSHOTS=1 docs/console/, docs/console.md's), the sign-in (in the browser and over
 * raw HTTP), and an operator of the shared test service.
 */
import assert from "node:assert/strict";
import { SYSTEM_PROJECT_ID } from "../openapi/projects.ts";
import { type Browser, type Page } from "./browser_deps.ts";
import { launchChromium } from "./chromium.ts";
export { CHROMIUM, hasChromium } from "./chromium.ts";
import { atModuleEnd, postToken, projectPermissions, removeDirSync, sdk, systemToken } from "./helpers.ts";

/** Where screenshots go: docs/console/ with UPDATE_SCREENSHOTS=1, else a temp directory removed as the file ends. */
export const SHOTS = Deno.env.get("UPDATE_SCREENSHOTS") === "1"
  ? new URL("../docs/console/", import.meta.url)
  : (() => {
    const dir = Deno.makeTempDirSync({ prefix: "console-screenshots-" });
    atModuleEnd(() => removeDirSync(dir));
    return new URL(`file://${dir}/`);
  })();

export const launch = (): Promise<Browser> => launchChromium();

export async function signIn(page: Page, email: string, password: string) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/** A tab of the project's navigation. */
export const tab = (page: Page, name: string) =>
  page.getByRole("navigation", { name: /^Project / }).getByRole("link", { name }).click();

/** A system-project user whose role holds every system permission: an operator of the shared service. */
export async function sharedOperator(): Promise<{ email: string; password: string }> {
  const admin = await sdk(await systemToken());
  const { ids } = await projectPermissions(admin, SYSTEM_PROJECT_ID);
  const tag = crypto.randomUUID().slice(0, 8);
  const role = await admin.roles.createRole(SYSTEM_PROJECT_ID, {
    code: `operator_${tag}`,
    name: `Operator ${tag}`,
    permission_ids: Object.values(ids),
  });
  const email = `operator-${tag}@example.com`;
  const password = "operator password 2";
  await admin.users.createUser(SYSTEM_PROJECT_ID, {
    display_name: "Operator",
    email,
    password,
    role_id: role.id,
  });
  return { email, password };
}

/** The `sid` claim of an access token: its login session. */
export const sidOf = (token: string): string =>
  JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sid;

/** A refresh at the token endpoint as the public client: the status, the error and its code, the new refresh token. */
export async function refreshWith(clientId: string, refreshToken: string) {
  const res = await postToken({
    grant_type: "refresh_token",
    client_id: clientId,
    refresh_token: refreshToken,
  });
  const body = await res.json();
  return {
    status: res.status,
    error: body.error as string | undefined,
    error_code: body.error_code as string | undefined,
    refresh: body.refresh_token as string,
  };
}

/** Signs in to the console over raw HTTP; returns the console session's cookie. */
export async function consoleSignIn(url: string, email: string, password: string): Promise<string> {
  const start = await fetch(`${url}/console/signin?project=system&next=%2Fconsole%2Fprojects`, {
    redirect: "manual",
  });
  const pending = start.headers.getSetCookie().map((c) => c.split(";")[0]).filter((c) =>
    c.startsWith("acs_console_login")
  );
  await start.body?.cancel();
  const page = await fetch(new URL(start.headers.get("location")!, url), { redirect: "manual" });
  const html = await page.text();
  const field = (n: string) => new RegExp(`name="${n}" value="([^"]*)"`).exec(html)![1];
  const login = await fetch(`${url}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: page.headers.getSetCookie()[0].split(";")[0],
    },
    body: new URLSearchParams({ request_id: field("request_id"), csrf: field("csrf"), email, password })
      .toString(),
  });
  await login.body?.cancel();
  const callback = await fetch(login.headers.get("location")!, {
    redirect: "manual",
    headers: { cookie: pending.join("; ") },
  });
  await callback.body?.cancel();
  assert.equal(callback.status, 303);
  assert.equal(callback.headers.get("location"), "/console/projects");
  return callback.headers.getSetCookie().map((c) => c.split(";")[0]).find((c) =>
    c.startsWith("acs_console=")
  )!;
}
