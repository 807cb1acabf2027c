/** Whole processes: data survives a restart; instances share a PostgreSQL database; one per embedded DATA_DIR. */
import assert from "node:assert/strict";
import postgres from "postgres";
import { ADMIN_SECRET, basic, DATABASE_URL, freePort, service, test } from "./helpers.ts";

const ROOT = new URL("../", import.meta.url);

type Proc = { url: string; child: Deno.ChildProcess; output: () => string; stop: () => Promise<void> };

/** Starts `main.ts` as its own process and waits until /readyz answers. */
async function spawn(env: Record<string, string>, port = freePort()): Promise<Proc> {
  const url = `http://127.0.0.1:${port}`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-sys",
      "--allow-ffi",
      "main.ts",
    ],
    cwd: ROOT,
    env: { PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: url, LOG_LEVEL: "error", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const decoder = new TextDecoder();
  const drain = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) text += decoder.decode(chunk);
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const proc: Proc = {
    url,
    child,
    output: () => text,
    stop: async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await drained;
    },
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const exited = await Promise.race([
      child.status.then(() => true),
      new Promise((r) => setTimeout(r, 200, false)),
    ]);
    if (exited) {
      await drained;
      return proc;
    }
    try {
      const res = await fetch(`${url}/readyz`);
      await res.body?.cancel();
      if (res.ok) return proc;
    } catch { /* not listening yet */ }
  }
  await proc.stop();
  throw new Error(`service did not become ready:\n${text}`);
}

async function token(url: string, clientId: string, secret: string): Promise<Response> {
  return await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: { authorization: basic(clientId, secret), "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
}

async function bearer(url: string, clientId: string, secret: string): Promise<string> {
  const res = await token(url, clientId, secret);
  assert.equal(res.status, 200);
  return (await res.json()).access_token;
}

test("data survives a restart: projects, clients and signing keys", async () => {
  const env: Record<string, string> = DATABASE_URL
    ? { DATABASE_URL, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET }
    : { DATA_DIR: await Deno.makeTempDir({ prefix: "acs-restart-" }) };
  // The same address both times: the issuer (PUBLIC_URL) is part of what a token is checked against.
  const port = freePort();
  const first = await spawn(env, port);
  let secret = ADMIN_SECRET;
  if (!DATABASE_URL) {
    // Without BOOTSTRAP_ADMIN_SECRET the first start prints a generated secret once.
    const m = /client_secret: (\S+)/.exec(first.output());
    assert.ok(m, first.output());
    secret = m[1];
  }
  const admin = await bearer(first.url, "system-admin", secret);
  const created = await (await fetch(`${first.url}/api/v1/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "persisted", redirect_uris: ["https://p.example/cb"] }),
  })).json();
  const projectToken = await bearer(
    first.url,
    created.admin_client.client_id,
    created.admin_client.client_secret,
  );
  await first.stop();

  const second = await spawn(env, port);
  try {
    assert.doesNotMatch(second.output(), /client_secret:/, "the secret is printed on the first start only");
    // A token issued before the restart still verifies: the key lives in the database.
    const res = await fetch(`${second.url}/api/v1/projects/${created.id}`, {
      headers: { authorization: `Bearer ${projectToken}` },
    });
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).redirect_uris, ["https://p.example/cb"]);
    assert.ok(await bearer(second.url, created.admin_client.client_id, created.admin_client.client_secret));
  } finally {
    await second.stop();
  }
});

test("a second process refuses to open an embedded DATA_DIR that is in use", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-lock-" });
  // An empty DATABASE_URL counts as unset, so this runs on the embedded database in either test mode.
  const env = { DATA_DIR: dir, DATABASE_URL: "", BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET };
  const first = await spawn(env);
  try {
    const second = await spawn(env);
    const status = await Promise.race([
      second.child.status,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("the second instance did not exit")), 30_000)
      ),
    ]).finally(() => second.stop());
    assert.equal(status.code, 1);
    assert.match(second.output(), /in use by another process/);
    assert.equal((await token(first.url, "system-admin", ADMIN_SECRET)).status, 200);
  } finally {
    await first.stop();
  }
});

test(
  "two instances starting at once on an empty PostgreSQL database both come up and share keys and state",
  async () => {
    // A database of its own, so that both instances race to migrate and bootstrap it.
    const fresh = `acs_race_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    const url = new URL(DATABASE_URL!);
    const { db } = await service();
    await db.sql.unsafe(`create database ${fresh}`);
    url.pathname = `/${fresh}`;
    // Instances behind one load balancer share one public URL, which is the tokens' issuer.
    const env = {
      DATABASE_URL: url.href,
      BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
      PUBLIC_URL: "https://auth.example.test",
    };
    const [a, b] = await Promise.all([spawn(env), spawn(env)]);
    try {
      assert.doesNotMatch(a.output() + b.output(), /failed to start/);
      const check = postgres(url.href, { max: 1, onnotice: () => {} });
      const [counts] = await check<{ projects: number; keys: number; migrations: number }[]>`
        select (select count(*)::int from projects) as projects, (select count(*)::int from signing_keys) as keys,
               (select count(*)::int from schema_migrations) as migrations`;
      await check.end();
      assert.equal(counts.projects, 1, "bootstrapped once");
      assert.equal(counts.keys, 1, "one signing key");
      assert.ok(counts.migrations >= 1);
      const fromA = await bearer(a.url, "system-admin", ADMIN_SECRET);
      // A token issued by one instance is accepted by the other.
      const res = await fetch(`${b.url}/api/v1/projects/system`, {
        headers: { authorization: `Bearer ${fromA}` },
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const jwksA = await (await fetch(`${a.url}/.well-known/jwks.json`)).json();
      const jwksB = await (await fetch(`${b.url}/.well-known/jwks.json`)).json();
      assert.deepEqual(jwksA, jwksB);
      // A project deactivated through one instance refuses its tokens on the other at once.
      const created = await (await fetch(`${a.url}/api/v1/projects`, {
        method: "POST",
        headers: { authorization: `Bearer ${fromA}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "shared" }),
      })).json();
      const projectToken = await bearer(
        b.url,
        created.admin_client.client_id,
        created.admin_client.client_secret,
      );
      const off = await fetch(`${a.url}/api/v1/projects/${created.id}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${fromA}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "shared", is_active: false }),
      });
      assert.equal(off.status, 200);
      await off.body?.cancel();
      const refused = await fetch(`${b.url}/api/v1/projects/${created.id}`, {
        headers: { authorization: `Bearer ${projectToken}` },
      });
      assert.equal(refused.status, 401);
      await refused.body?.cancel();
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await db.sql.unsafe(`drop database if exists ${fresh} with (force)`);
    }
  },
  { ignore: !DATABASE_URL },
);
