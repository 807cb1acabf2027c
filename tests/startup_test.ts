/**
 * Starting, as `deno task start` and as `deno serve`: a bad configuration stops the start naming the variable;
 * an unreachable database ends the start with a clear message after a bounded wait, never a hang; Deno Deploy
 * without DATABASE_URL refuses to start rather than look for a disk.
 */
import assert from "node:assert/strict";
import { ADMIN_SECRET, test } from "./helpers.ts";
import { exitWithin, launch, spawn } from "./processes.ts";

/** A variable that must not leak from the parent's PostgreSQL run into these starts. */
const NO_DATABASE = { DATABASE_URL: "", DATABASE_DIRECT_URL: "", DATABASE_POOLER: "" };

test("DATABASE_POOLER with an unknown value stops the start, naming the variable (deno run and deno serve)", async () => {
  for (const mode of ["run", "serve"] as const) {
    const proc = launch({ ...NO_DATABASE, DATABASE_POOLER: "statement-ish" }, { mode });
    const status = await exitWithin(proc, 30_000);
    assert.equal(status.code, 1, proc.output());
    assert.match(
      proc.output(),
      /failed to start: invalid configuration:\s+DATABASE_POOLER: must be none, session/,
    );
  }
});

test("a DATABASE_URL that refuses connections ends the start with exit 1 after a bounded retry", async () => {
  const started = performance.now();
  const proc = launch({
    ...NO_DATABASE,
    DATABASE_URL: "postgres://acs:s3cret-password@127.0.0.1:1/acs",
    DATABASE_START_TIMEOUT: "2",
  });
  const status = await exitWithin(proc, 30_000);
  const seconds = (performance.now() - started) / 1000;
  assert.equal(status.code, 1, proc.output());
  assert.match(
    proc.output(),
    /failed to start: cannot reach the database at 127\.0\.0\.1:1\/acs \(DATABASE_URL\) \(tried [2-9] times in [12]\.\d s\)/,
  );
  assert.doesNotMatch(proc.output(), /s3cret-password/, "the password is never printed");
  assert.ok(seconds < 20, `took ${seconds} s`);
});

test("a DATABASE_URL whose server accepts but never answers ends the start too (connect timeout)", async () => {
  // A listener that takes connections and says nothing, like a host behind a black-holing firewall.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })().catch(() => {});
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const proc = launch({
      ...NO_DATABASE,
      DATABASE_URL: `postgres://acs@127.0.0.1:${port}/acs`,
      DATABASE_START_TIMEOUT: "1",
    });
    const status = await exitWithin(proc, 30_000);
    assert.equal(status.code, 1, proc.output());
    assert.match(proc.output(), /failed to start: cannot reach the database at .*CONNECT_TIMEOUT/);
  } finally {
    listener.close();
    for (const c of held) c.close();
    await accepting;
  }
});

test("under deno serve an unreachable database answers 503 system_error, bounded, and the next request retries", async () => {
  const proc = launch(
    {
      ...NO_DATABASE,
      DATABASE_URL: "postgres://acs@127.0.0.1:1/acs",
      DATABASE_START_TIMEOUT: "1",
      BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
    },
    { mode: "serve" },
  );
  try {
    let res: Response | undefined;
    for (let i = 0; i < 100 && !res; i++) {
      res = await fetch(`${proc.url}/readyz`).catch(() => undefined);
      if (!res) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(res, proc.output());
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "1");
    assert.equal((await res.json()).error, "system_error");
    const again = await fetch(`${proc.url}/healthz`);
    assert.equal(again.status, 503, "no half-started service answers");
    await again.body?.cancel();
    assert.match(proc.output(), /failed to start: cannot reach the database at 127\.0\.0\.1:1\/acs/);
  } finally {
    await proc.stop();
  }
});

test("on Deno Deploy (DENO_DEPLOYMENT_ID set) without DATABASE_URL the start stops with a clear message", async () => {
  const proc = launch(
    { ...NO_DATABASE, DENO_DEPLOYMENT_ID: "test", PUBLIC_URL: "https://acs.example.test" },
    {
      mode: "serve",
    },
  );
  const status = await exitWithin(proc, 30_000);
  assert.equal(status.code, 1, proc.output());
  assert.match(proc.output(), /DATABASE_URL: is required on Deno Deploy, which has no local disk/);
});

test("deno run: the service thread answers (also after its trim of freed memory), SIGTERM closes it and the process exits 0; a bad heap size stops the start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-test-" });
  try {
    const proc = await spawn({ ...NO_DATABASE, DATA_DIR: dir, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET });
    // Past the one trim of freed memory, half a second after the start (heap.ts): the service still answers.
    await new Promise((r) => setTimeout(r, 800));
    const res = await fetch(`${proc.url}/api/v1/tokens`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`system-admin:${ADMIN_SECRET}`)}` },
      body: new URLSearchParams({ grant_type: "client_credentials" }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    proc.child.kill("SIGTERM");
    const status = await exitWithin(proc, 30_000);
    assert.equal(status.code, 0, proc.output());
    await assert.rejects(fetch(`${proc.url}/readyz`), "the listener is closed");
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  for (const [name, value] of [["HEAP_LIMIT_MB", "1"], ["HEAP_YOUNG_GENERATION_MB", "lots"]]) {
    const proc = launch({ ...NO_DATABASE, [name]: value });
    const status = await exitWithin(proc, 30_000);
    assert.equal(status.code, 1, proc.output());
    assert.match(proc.output(), new RegExp(`failed to start: invalid configuration:\\s+${name}: `));
  }
});

test("embedded: a data directory whose pgdata holds no database stops the start; a cluster left half made is made again", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-test-" });
  try {
    await Deno.mkdir(`${dir}/pgdata`);
    await Deno.writeTextFile(`${dir}/pgdata/stray`, "not a database");
    const refused = launch({ ...NO_DATABASE, DATA_DIR: dir, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET });
    const status = await exitWithin(refused, 30_000);
    assert.equal(status.code, 1, refused.output());
    assert.match(refused.output(), /pgdata holds no database \(it has no PG_VERSION\)/);
    assert.equal(
      await Deno.readTextFile(`${dir}/pgdata/stray`),
      "not a database",
      "nothing of it is touched",
    );

    // A start cut off while making the cluster leaves only pgdata.partial: the next start begins it again.
    await Deno.remove(`${dir}/pgdata`, { recursive: true });
    await Deno.mkdir(`${dir}/pgdata.partial/base`, { recursive: true });
    await Deno.writeTextFile(`${dir}/pgdata.partial/PG_VERSION`, "15\n");
    const proc = await spawn({ ...NO_DATABASE, DATA_DIR: dir, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET });
    try {
      const res = await fetch(`${proc.url}/api/v1/tokens`, {
        method: "POST",
        headers: { authorization: `Basic ${btoa(`system-admin:${ADMIN_SECRET}`)}` },
        body: new URLSearchParams({ grant_type: "client_credentials" }),
      });
      assert.equal(res.status, 200, proc.output());
      await res.body?.cancel();
    } finally {
      await proc.stop();
    }
    await assert.rejects(Deno.stat(`${dir}/pgdata.partial`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
