/**
 * The first operator's one-time setup link (BOOTSTRAP_ADMIN_EMAIL without a password): printed once at the
 * start, it sets the password once; it dies when used, and when the operator got a password another way.
 */
import assert from "node:assert/strict";
import { ADMIN_SECRET, basic, eventually, isolatedDatabase, test } from "./helpers.ts";
import { spawn } from "./processes.ts";

const EMAIL = "first.operator@example.com";

async function setupLinkOf(output: () => string): Promise<string> {
  const link = await eventually(
    "the setup link in the output",
    () => /(http:\/\/\S+\/console\/setup\?token=\S+)/.exec(output())?.[1],
    { within: 5_000 },
  ).catch(() => undefined);
  assert.ok(link, output());
  return link;
}

async function choose(url: string, token: string, password: string): Promise<number> {
  const res = await fetch(`${url}/console/setup`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token, password }).toString(),
  });
  await res.body?.cancel();
  return res.status;
}

test("the setup link sets the first operator's password once", async () => {
  const db = await isolatedDatabase();
  const proc = await spawn({
    ...db.env,
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: EMAIL,
    LOG_LEVEL: "info",
  });
  try {
    const link = new URL(await setupLinkOf(proc.output));
    const token = link.searchParams.get("token")!;
    const form = await fetch(`${proc.url}/console/setup?token=${token}`);
    assert.equal(form.status, 200);
    assert.match(await form.text(), /name="password"/);
    assert.equal(await choose(proc.url, token, "short"), 400, "a password under 8 characters is refused");
    const done = await fetch(`${proc.url}/console/setup`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token, password: "a good long password" }).toString(),
    });
    await done.body?.cancel();
    assert.equal(done.status, 303);
    // On to the console's sign-in with the operator's address, which the login page prefills.
    const signin = new URL(done.headers.get("location")!, proc.url);
    assert.equal(signin.searchParams.get("login_hint"), EMAIL);
    const authorize = await fetch(signin, { redirect: "manual" });
    await authorize.body?.cancel();
    const login = new URL(authorize.headers.get("location")!, proc.url);
    assert.equal(login.searchParams.get("login_hint"), EMAIL);
    const page = await (await fetch(login)).text();
    assert.match(
      page,
      new RegExp(
        `name="email"[^>]*value="${EMAIL.replace(".", "\\.")}"|value="${
          EMAIL.replace(".", "\\.")
        }"[^>]*name="email"`,
      ),
    );
    assert.equal(await choose(proc.url, token, "another long password"), 400, "used once");
    const again = await fetch(`${proc.url}/console/setup?token=${token}`);
    assert.equal(again.status, 400);
    await again.body?.cancel();
  } finally {
    await proc.stop();
    await db.drop();
  }
});

test("the setup link dies once the operator has a password set another way", async () => {
  const db = await isolatedDatabase();
  const proc = await spawn({
    ...db.env,
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: EMAIL,
    LOG_LEVEL: "info",
  });
  try {
    const token = new URL(await setupLinkOf(proc.output)).searchParams.get("token")!;
    // The system admin client sets the operator's password through the admin API.
    const bearer = (await (await fetch(`${proc.url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: basic("system-admin", ADMIN_SECRET),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    })).json()).access_token;
    const users =
      await (await fetch(`${proc.url}/api/v1/projects/system/users?search=${encodeURIComponent(EMAIL)}`, {
        headers: { authorization: `Bearer ${bearer}` },
      })).json();
    const operator = users.data[0];
    const set = await fetch(`${proc.url}/api/v1/projects/system/users/${operator.id}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
      body: JSON.stringify({
        display_name: operator.display_name,
        email: EMAIL,
        is_active: true,
        password: "set by the system admin",
      }),
    });
    assert.equal(set.status, 200, await set.text());
    assert.equal(
      await choose(proc.url, token, "a password of my own"),
      400,
      "the link no longer sets a password",
    );
  } finally {
    await proc.stop();
    await db.drop();
  }
});
