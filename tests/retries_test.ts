/**
 * Transient database failures: a transaction PostgreSQL rolls back as a serialization failure or deadlock runs
 * again whole (bounded, and applied once), and so does a single autocommit write; an idempotent read whose
 * connection drops runs again on a new one; nothing else is retried. Black-box through the API on PostgreSQL, and the two runners on any database.
 */
import assert from "node:assert/strict";
import {
  READ_ATTEMPTS,
  retryConflict,
  retryRead,
  sendWithCommit,
  transaction,
  TRANSACTION_ATTEMPTS,
} from "../db/connection.ts";
import { connectServer } from "../db/connection.ts";
import {
  ADMIN_SECRET,
  basic,
  DATABASE_URL,
  eventually,
  http,
  newProject,
  permissionIds,
  service,
  startTestService,
  test,
} from "./helpers.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const raise = (state: string) =>
  `do $$ begin raise exception 'test failure' using errcode = '${state}'; end $$`;

for (const state of ["40001", "40P01"]) {
  test(`transaction() runs a transaction again after SQLSTATE ${state} and applies it exactly once`, async () => {
    const { db } = await service();
    const key = `test:retry:${crypto.randomUUID()}`;
    let attempts = 0;
    try {
      const result = await transaction(db.sql, async (tx) => {
        attempts++;
        await tx`insert into login_failures (key, failures) values (${key}, ${attempts})`;
        // A savepoint inside is part of the transaction: it is not retried on its own.
        await transaction(tx, async (sp) => {
          if (attempts === 1) await sp.unsafe(raise(state));
        });
        return "done";
      });
      assert.equal(result, "done");
      assert.equal(attempts, 2);
      const rows = await db.sql<
        { failures: number }[]
      >`select failures from login_failures where key = ${key}`;
      assert.deepEqual(rows.map((r) => r.failures), [2], "the first attempt left nothing behind");
    } finally {
      await db.sql`delete from login_failures where key = ${key}`;
    }
  });
}

test("transaction() gives up after a bounded number of runs, and never retries other errors", async () => {
  const { db } = await service();
  let attempts = 0;
  await assert.rejects(
    transaction(db.sql, async (tx) => {
      attempts++;
      await tx.unsafe(raise("40001"));
    }),
    (err: { code?: string }) => err.code === "40001",
  );
  assert.equal(attempts, TRANSACTION_ATTEMPTS);
  for (const state of ["23505", "P0001", "22P02"]) {
    attempts = 0;
    await assert.rejects(
      transaction(db.sql, async (tx) => {
        attempts++;
        await tx.unsafe(raise(state));
      }),
      (err: { code?: string }) => err.code === state,
    );
    assert.equal(attempts, 1, state);
  }
});

test("retryRead() runs a read again when its connection was lost, a bounded number of times, and nothing else", async () => {
  const lost = Object.assign(new Error("write CONNECTION_CLOSED"), { code: "CONNECTION_CLOSED" });
  let attempts = 0;
  assert.equal(
    await retryRead(() => ++attempts < 3 ? Promise.reject(lost) : Promise.resolve("read")),
    "read",
  );
  assert.equal(attempts, 3);
  attempts = 0;
  await assert.rejects(retryRead(() => (attempts++, Promise.reject(lost))), /CONNECTION_CLOSED/);
  assert.equal(attempts, READ_ATTEMPTS);
  for (const code of ["CONNECTION_ENDED", "CONNECT_TIMEOUT", "23505", undefined]) {
    attempts = 0;
    const other = Object.assign(new Error(`error ${code}`), { code });
    await assert.rejects(retryRead(() => (attempts++, Promise.reject(other))));
    assert.equal(attempts, 1, String(code));
  }
});

for (const state of ["40001", "40P01"]) {
  test(`retryConflict() runs a single autocommit write again after SQLSTATE ${state}: applied once`, async () => {
    const { db } = await service();
    const key = `test:retry:${crypto.randomUUID()}`;
    let attempts = 0;
    try {
      // One statement that writes and then fails on its first run: PostgreSQL rolls all of it back.
      const write = (n: number) =>
        db.sql.unsafe(`do $$ begin
          insert into login_failures (key, failures) values ('${key}', ${n});
          if ${n} = 1 then raise exception 'test failure' using errcode = '${state}'; end if;
        end $$`);
      await retryConflict(db.sql, () => write(++attempts));
      assert.equal(attempts, 2);
      const rows = await db.sql<
        { failures: number }[]
      >`select failures from login_failures where key = ${key}`;
      assert.deepEqual(rows.map((r) => r.failures), [2], "the first run left nothing behind");
    } finally {
      await db.sql`delete from login_failures where key = ${key}`;
    }
  });
}

test("retryConflict() gives up after a bounded number of runs, and never retries a lost connection or inside a transaction", async () => {
  const { db } = await service();
  let attempts = 0;
  await assert.rejects(
    retryConflict(db.sql, () => (attempts++, db.sql.unsafe(raise("40P01")))),
    (err: { code?: string }) => err.code === "40P01",
  );
  assert.equal(attempts, TRANSACTION_ATTEMPTS);
  // A write whose connection dropped may have been applied: never run again.
  const lost = Object.assign(new Error("write CONNECTION_CLOSED"), { code: "CONNECTION_CLOSED" });
  attempts = 0;
  await assert.rejects(retryConflict(db.sql, () => (attempts++, Promise.reject(lost))), /CONNECTION_CLOSED/);
  assert.equal(attempts, 1);
  // Inside a transaction the conflict aborted the transaction: its runner retries it, not the statement.
  attempts = 0;
  await assert.rejects(
    db.sql.begin((tx) => retryConflict(tx, () => (attempts++, tx.unsafe(raise("40001"))))),
    (err: { code?: string }) => err.code === "40001",
  );
  assert.equal(attempts, 1);
});

test(
  "PUT .../roles/{id} caught in a deadlock is run again by the service: it answers 200 and applies once",
  async () => {
    const p = await newProject();
    const ids = await permissionIds(p);
    const role = await p.api.roles.createRole(p.project.id, {
      code: "deadlocked",
      name: "Deadlocked",
      permission_ids: [ids["roles:read"]],
    });
    const wanted = [ids["roles:read"], ids["roles:update"]].sort();
    const { db, applicationName } = await service();
    let update: Promise<Response> | undefined;
    await db.sql.begin(async (tx) => {
      // This transaction holds the role's grants; the service's update locks the role, then waits for them.
      await tx`select 1 from role_permissions where role_id = ${role.id} for update`;
      update = http(`/api/v1/projects/${p.project.id}/roles/${role.id}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
        body: JSON.stringify({ code: "deadlocked", name: "Deadlocked", permission_ids: wanted }),
      });
      await eventually("the service's update to wait for the grants", async () => {
        const rows = await db.sql`
          select pid from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'
            and application_name = ${applicationName!} and query like 'delete from role_permissions%'`;
        return rows.length > 0;
      }, { within: 10_000 });
      // Now ask for the role: a cycle. PostgreSQL ends the transaction that has waited longest, the service's
      // (its deadlock_timeout runs out first), and this one goes on.
      await sleep(300);
      await tx`select 1 from roles where id = ${role.id} for update`;
    });
    const res = await update!;
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.permission_ids, wanted);
    const grants = await db.sql<{ permission_id: string }[]>`
      select permission_id from role_permissions where role_id = ${role.id} order by permission_id`;
    assert.deepEqual(grants.map((g) => g.permission_id), wanted, "applied once, whole");
  },
  { ignore: !DATABASE_URL },
);

test(
  "GET /api/v1/projects/{id} whose database connection is ended mid-query runs the read again and answers 200",
  async () => {
    const p = await newProject();
    const { db, applicationName } = await service();
    let read: Promise<Response> | undefined;
    await db.sql.begin(async (tx) => {
      // Every read of projects waits behind this lock, so the service's query is in flight when its
      // connection is ended.
      await tx`lock table projects in access exclusive mode`;
      read = http(`/api/v1/projects/${p.project.id}`, { headers: { authorization: `Bearer ${p.token}` } });
      const pid = await eventually("the service's read to wait for the lock", async () => {
        const [row] = await db.sql<{ pid: number }[]>`
          select pid from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()
            and application_name = ${applicationName!} and query ilike '%from projects%'`;
        return row?.pid;
      }, { within: 10_000 });
      const [{ ended }] = await db.sql<{ ended: boolean }[]>`select pg_terminate_backend(${pid}) as ended`;
      assert.ok(ended);
    });
    const res = await read!;
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.id, p.project.id);
  },
  { ignore: !DATABASE_URL },
);

test("a statement sent with the COMMIT that fails fails the transaction, and nothing of it is written", async () => {
  const { db } = await service();
  const p = await newProject();
  const code = `sent-${crypto.randomUUID().slice(0, 8)}`;
  const ran = transaction(db.sql, async (tx) => {
    await tx`insert into roles (project_id, id, code, name) values (${p.project.id}, ${code}, ${code}, 'x')`;
    // Sent without waiting, like an audit event; it fails after the callback has returned.
    await sendWithCommit(tx, () => tx`select 1 / (select count(*) - count(*) from roles)`);
    return "committed";
  });
  await assert.rejects(ran, /division by zero/);
  const rows = await db.sql`select 1 from roles where project_id = ${p.project.id} and code = ${code}`;
  assert.equal(rows.length, 0, "the insert before it was rolled back with it");
  // And when it succeeds, it is committed with the rest.
  await transaction(db.sql, async (tx) => {
    await sendWithCommit(
      tx,
      () =>
        tx`insert into roles (project_id, id, code, name) values (${p.project.id}, ${code}, ${code}, 'x')`,
    );
  });
  assert.equal(
    (await db.sql`select 1 from roles where project_id = ${p.project.id} and code = ${code}`).length,
    1,
  );
});

test(
  "a service whose connections are ended again and again under load answers every request (2xx or 503) and lives on",
  async () => {
    // A restart, a failover or pg_terminate_backend ends a backend whatever its connection is doing: reading the
    // array types of a new connection, or with bytes still to send. Each of these once ended the process (an
    // unhandled rejection, a write on a socket already gone: vendor/postgres/README.md, 12). A service of its
    // own, whose connections only this test ends.
    const svc = await startTestService();
    const killer = connectServer(DATABASE_URL!, { max: 1 });
    const auth = basic("system-admin", ADMIN_SECRET);
    const form = { authorization: auth, "content-type": "application/x-www-form-urlencoded" };
    const statuses = new Map<number, number>();
    let answered = 0;
    let stop = false;
    try {
      const token = (await (await fetch(`${svc.url}/api/v1/tokens`, {
        method: "POST",
        headers: form,
        body: "grant_type=client_credentials",
      })).json()).access_token as string;
      const bearer = { authorization: `Bearer ${token}` };
      const requests: (() => Promise<Response>)[] = [
        () =>
          fetch(`${svc.url}/api/v1/tokens`, {
            method: "POST",
            headers: form,
            body: "grant_type=client_credentials",
          }),
        () => fetch(`${svc.url}/api/v1/projects/system`, { headers: bearer }),
        () =>
          fetch(`${svc.url}/api/v1/projects`, {
            method: "POST",
            headers: { ...bearer, "content-type": "application/json" },
            body: JSON.stringify({ name: `Ended ${crypto.randomUUID().slice(0, 8)}` }),
          }),
      ];
      const load = Array.from({ length: 9 }, async (_, i) => {
        while (!stop) {
          const res = await requests[i % requests.length]();
          await res.body?.cancel();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          answered++;
        }
      });
      // Ends every backend of the service's pool after each 15 answers, 12 times.
      let ended = 0;
      for (let round = 0; round < 12; round++) {
        const mark = answered + 15;
        await eventually("15 more answers", () => answered >= mark, { within: 20_000 });
        const rows = await killer<{ pid: number }[]>`
          select pg_terminate_backend(pid) as pid from pg_stat_activity
          where datname = current_database() and application_name = ${svc.applicationName!}`;
        ended += rows.length;
      }
      stop = true;
      await Promise.all(load);
      const seen = Object.fromEntries(statuses);
      assert.ok(ended >= 12, `backends ended: ${ended}`);
      for (const status of statuses.keys()) {
        assert.ok([200, 201, 503].includes(status), `only 2xx and 503: ${JSON.stringify(seen)}`);
      }
      assert.ok((statuses.get(200) ?? 0) > 0 && (statuses.get(201) ?? 0) > 0, JSON.stringify(seen));
      // And the pool is whole again: ready, and a write goes through.
      await eventually("ready again", async () => {
        const res = await fetch(`${svc.url}/readyz`);
        await res.body?.cancel();
        return res.status === 200;
      }, { within: 10_000 });
      const last = await requests[2]();
      assert.equal(last.status, 201, await last.text());
    } finally {
      stop = true;
      await killer.end();
      await svc.close();
    }
  },
  { ignore: !DATABASE_URL },
);
