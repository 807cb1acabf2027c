/**
 * Whole processes: data survives a restart; instances cold-starting at once on one PostgreSQL database (started
 * by `deno run` and by a restricted `deno serve`) all come up and share state; one process per embedded DATA_DIR.
 */
import assert from "node:assert/strict";
import {
  ADMIN_SECRET,
  basic,
  connectTestDatabase,
  DATABASE_URL,
  freePort,
  service,
  test,
} from "./helpers.ts";
import { exitWithin, spawn } from "./processes.ts";

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
  const dir = DATABASE_URL ? undefined : await Deno.makeTempDir({ prefix: "acs-restart-" });
  try {
    await survivesRestart(
      dir ? { DATA_DIR: dir } : { DATABASE_URL: DATABASE_URL!, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET },
    );
  } finally {
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

async function survivesRestart(env: Record<string, string>) {
  // The same address both times: the issuer (PUBLIC_URL) is part of what a token is checked against.
  const port = freePort();
  const first = await spawn(env, { port });
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

  const second = await spawn(env, { port });
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
}

/**
 * A process's environment for the embedded database in `dir`: an empty DATABASE_URL counts as unset, so this
 * runs on the embedded database in either test mode.
 */
function embeddedIn(dir: string): Record<string, string> {
  return {
    DATA_DIR: dir,
    DATABASE_URL: "",
    DATABASE_DIRECT_URL: "",
    DATABASE_POOLER: "",
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
  };
}

test("a second process refuses to open an embedded DATA_DIR that is in use", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-lock-" });
  const env = embeddedIn(dir);
  const first = await spawn(env);
  try {
    const second = await spawn(env);
    const status = await exitWithin(second, 30_000).finally(() => second.stop());
    assert.equal(status.code, 1);
    assert.match(second.output(), /in use by another process/);
    assert.equal((await token(first.url, "system-admin", ADMIN_SECRET)).status, 200);
  } finally {
    await first.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

/** Every Unix socket file under `dir`. */
async function socketsUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    const info = await Deno.lstat(path);
    if (info.isSocket) found.push(path);
    else if (info.isDirectory) found.push(...await socketsUnder(path));
  }
  return found;
}

test("an embedded database is reached only inside its process: its DATA_DIR holds no socket while it serves", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-link-" });
  const proc = await spawn(embeddedIn(dir));
  try {
    // A write and reads through the one connection, then a look at the directory while it is open.
    const system = await bearer(proc.url, "system-admin", ADMIN_SECRET);
    const res = await fetch(`${proc.url}/api/v1/projects`, {
      method: "POST",
      headers: { authorization: `Bearer ${system}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Linked" }),
    });
    assert.equal(res.status, 201, proc.output());
    const created = await res.json();
    assert.ok(await bearer(proc.url, created.admin_client.client_id, created.admin_client.client_secret));
    assert.deepEqual(await socketsUnder(dir), [], "no socket another process could connect to");
  } finally {
    await proc.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

test(
  "four instances cold-starting at once on an empty PostgreSQL database (two deno run, two restricted deno " +
    "serve) all come up, migrate and bootstrap once, and share keys and state",
  async () => {
    // A database of its own, so that every instance races to migrate and bootstrap it.
    const fresh = `acs_race_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    const { db } = await service();
    await db.sql.unsafe(`create database ${fresh}`);
    const onFresh = (href: string) => Object.assign(new URL(href), { pathname: `/${fresh}` }).href;
    // Instances behind one load balancer share one public URL, which is the tokens' issuer.
    const env: Record<string, string> = {
      DATABASE_URL: onFresh(DATABASE_URL!),
      BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
      PUBLIC_URL: "https://auth.example.test",
    };
    const direct = Deno.env.get("DATABASE_DIRECT_URL");
    if (direct) env.DATABASE_DIRECT_URL = onFresh(direct);
    // A `deno serve` instance starts on its first request: spawn() sends it as soon as the port listens.
    const all = await Promise.all(
      (["run", "serve", "run", "serve"] as const).map((mode) => spawn(env, { mode })),
    );
    const [a, b] = all;
    try {
      for (const p of all) {
        const ready = await fetch(`${p.url}/readyz`);
        await ready.body?.cancel();
        assert.equal(ready.status, 200, p.output());
      }
      assert.doesNotMatch(all.map((p) => p.output()).join(""), /failed to start/);
      const check = connectTestDatabase(env.DATABASE_URL);
      const [counts] = await check<{ projects: number; keys: string; migrations: number }[]>`
        select (select count(*)::int from projects) as projects,
               (select string_agg(state, ',' order by state) from signing_keys) as keys,
               (select count(*)::int from schema_migrations) as migrations`;
      await check.end();
      assert.equal(counts.projects, 1, "bootstrapped once");
      assert.equal(counts.keys, "current,next", "one current signing key, and the next one published");
      assert.equal(
        counts.migrations,
        [...Deno.readDirSync(new URL("../db/migrations/", import.meta.url))].filter((e) =>
          e.name.endsWith(".sql")
        )
          .length,
      );
      const fromA = await bearer(a.url, "system-admin", ADMIN_SECRET);
      // A token issued by one instance is accepted by every other.
      for (const p of all) {
        const res = await fetch(`${p.url}/api/v1/projects/system`, {
          headers: { authorization: `Bearer ${fromA}` },
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
      }
      const jwks = await Promise.all(
        all.map(async (p) => await (await fetch(`${p.url}/.well-known/jwks.json`)).json()),
      );
      for (const j of jwks) assert.deepEqual(j, jwks[0]);
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
      await Promise.all(all.map((p) => p.stop()));
      await db.sql.unsafe(`drop database if exists ${fresh} with (force)`);
    }
  },
  { ignore: !DATABASE_URL },
);
