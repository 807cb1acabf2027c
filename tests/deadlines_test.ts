/**
 * Nothing waits for ever: a statement blocked by a lock, a request waiting for a busy connection, and a
 * database that stops answering altogether each answer 503 `system_error` with `Retry-After` within the
 * deadlines (DATABASE_STATEMENT_TIMEOUT, DATABASE_QUEUE_TIMEOUT), and the next requests are answered as usual
 * once the database is free again.
 */
import assert from "node:assert/strict";
import {
  connectTestDatabase,
  DATABASE_URL,
  eventually,
  freePort,
  isolatedDatabase,
  startWith,
  systemTokenAt,
  test,
} from "./helpers.ts";

// The queue deadline is the shorter, so that a request waiting behind a blocked write times out first.
const SECONDS = { DATABASE_STATEMENT_TIMEOUT: "1", DATABASE_QUEUE_TIMEOUT: "0.5" };

/** Sends a request and returns its status, body and how long the answer took. */
async function timed(url: string, init: RequestInit) {
  const started = performance.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const body = await res.json();
  return { res, body, ms: performance.now() - started };
}

function assertUnavailable(r: Awaited<ReturnType<typeof timed>>, withinMs: number, what: string) {
  assert.equal(r.res.status, 503, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error, "system_error");
  assert.ok(Number(r.res.headers.get("retry-after")) >= 1, `${what}: Retry-After`);
  assert.ok(r.res.headers.get("x-request-id"), `${what}: X-Request-Id`);
  assert.ok(r.ms < withinMs, `${what}: answered after ${Math.round(r.ms)} ms, not within ${withinMs}`);
}

test("a write blocked by a lock answers 503 within the statement deadline, and succeeds once it is released", async () => {
  const iso = await isolatedDatabase();
  const svc = await startWith({ ...iso.env, ...SECONDS, DATABASE_POOL_SIZE: "1" });
  let release = () => {};
  let held: Promise<unknown> = Promise.resolve();
  // Two connections: one holds the row's lock in its transaction, the other watches the server.
  const other = DATABASE_URL ? connectTestDatabase(iso.env.DATABASE_URL, 2) : undefined;
  try {
    const auth = {
      authorization: `Bearer ${await systemTokenAt(svc.url)}`,
      "content-type": "application/json",
    };
    const created = await timed(`${svc.url}/api/v1/projects`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ name: "Locked" }),
    });
    assert.equal(created.res.status, 201);
    const project = `${svc.url}/api/v1/projects/${created.body.id}`;
    const rename = (name: string) =>
      timed(project, { method: "PUT", headers: auth, body: JSON.stringify({ name }) });

    // Another session holds the project's row (PostgreSQL), or a transaction holds the embedded database's one
    // connection, for longer than any deadline.
    const gate = new Promise<void>((r) => release = r);
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => locked = r);
    held = other
      ? other.begin(async (tx) => {
        await tx`select 1 from projects where id = ${created.body.id} for update`;
        locked();
        await gate;
      })
      : svc.db.sql.begin(async (tx) => {
        await tx`select 1`;
        locked();
        await gate;
      });
    await isLocked;

    // The write waits for the row (PostgreSQL: statement_timeout, or the answer deadline's cancel behind a
    // pooler) or for the connection (embedded: the queue deadline); a read sent once the write is blocked waits
    // for the pool's one connection, which the write's transaction holds. On PostgreSQL the read leaves only
    // when the server shows the write waiting for the lock (however slow the machine); on the embedded
    // database both wait for its one connection, in any order.
    const writing = rename("Renamed");
    if (other) {
      await eventually("the write waiting for the row's lock", async () => {
        const [{ waiting }] = await other`
          select count(*)::int as waiting from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`;
        return waiting > 0;
      }, { within: 3_000, every: 20 });
    }
    const [write, read] = await Promise.all([writing, timed(project, { headers: auth })]);
    assertUnavailable(write, 3_500, "the blocked write");
    assertUnavailable(read, 3_500, "the read waiting for a connection");

    release();
    await held;
    const after = await rename("Renamed");
    assert.equal(after.res.status, 200, JSON.stringify(after.body));
    assert.equal(after.body.name, "Renamed");
    const read2 = await timed(project, { headers: auth });
    assert.equal(read2.res.status, 200);
  } finally {
    release();
    await held.catch(() => {});
    await other?.end({ timeout: 1 });
    await svc.close();
    await iso.drop();
  }
});

/**
 * A TCP relay between the service and PostgreSQL that can stop passing bytes, in both directions and on new
 * connections too: a database (or a network) that accepts and never answers.
 */
function stallableRelay(target: URL) {
  const port = freePort();
  const listener = Deno.listen({ hostname: "127.0.0.1", port });
  let stalled = false;
  let resume: () => void = () => {};
  let resumed = Promise.resolve();
  const conns = new Set<Deno.Conn>();
  const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
    try {
      for await (const chunk of from.readable) {
        while (stalled) await resumed;
        const w = to.writable.getWriter();
        await w.write(chunk);
        w.releaseLock();
      }
    } catch { /* either side closed */ }
    for (const c of [from, to]) {
      try {
        c.close();
      } catch { /* closed */ }
      conns.delete(c);
    }
  };
  (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({ hostname: target.hostname, port: Number(target.port || 5432) });
      conns.add(client).add(server);
      pipe(client, server);
      pipe(server, client);
    }
  })().catch(() => {});
  return {
    url: (() => {
      const u = new URL(target.href);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.href;
    })(),
    stall() {
      stalled = true;
      resumed = new Promise((r) => resume = r);
    },
    resume() {
      stalled = false;
      resume();
    },
    close() {
      this.resume();
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}

test(
  "a database that stops answering mid-request answers 503 within twice the deadline, then normal answers",
  async () => {
    const iso = await isolatedDatabase();
    const relay = stallableRelay(new URL(iso.env.DATABASE_URL));
    // The relay in front of the run's address for the database (its pooler, if any); migrations go around it.
    const svc = await startWith({
      ...iso.env,
      DATABASE_URL: relay.url,
      DATABASE_DIRECT_URL: iso.env.DATABASE_DIRECT_URL ?? iso.env.DATABASE_URL,
      ...SECONDS,
      DATABASE_POOL_SIZE: "2",
    });
    try {
      const auth = { authorization: `Bearer ${await systemTokenAt(svc.url)}` };
      const system = `${svc.url}/api/v1/projects/system`;
      assert.equal((await timed(system, { headers: auth })).res.status, 200);
      relay.stall();
      // 1 s of statement_timeout that the server never gets to send, a cancel the relay swallows at 2 s, the
      // connection given up at 4 s.
      const answers = await Promise.all([
        timed(system, { headers: auth }),
        timed(`${svc.url}/api/v1/projects`, { headers: auth }),
      ]);
      for (const r of answers) assertUnavailable(r, 6_000, "a read on a stalled database");
      relay.resume();
      for (let i = 0; i < 3; i++) {
        const r = await timed(system, { headers: auth });
        assert.equal(r.res.status, 200, JSON.stringify(r.body));
      }
    } finally {
      relay.close();
      await svc.close();
      await iso.drop();
    }
  },
  { ignore: !DATABASE_URL },
);
