/**
 * The embedded database has no autovacuum (PGlite is PostgreSQL in single-user mode), so its process runs
 * `vacuumDue` (db/vacuum.ts) as a background job: dead rows go, tables get analyzed, and old rows get frozen
 * before transaction ids could wrap around.
 */
import assert from "node:assert/strict";
import { type Database, openDatabase } from "../db/connection.ts";
import { vacuumDue } from "../db/vacuum.ts";
import { loadConfig } from "../config.ts";
import { jobsOf } from "../jobs.ts";
import { keySettings } from "../service.ts";
import { TokenService } from "../domain/keys/tokens.ts";
import { test } from "./helpers.ts";

async function withEmbedded(fn: (sql: Database["sql"]) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "acs-vacuum-" });
  const db = await openDatabase({ dataDir: dir, poolSize: 1 });
  try {
    await fn(db.sql);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The session's statistics reach the views at most once a second unless a flush is asked for. */
async function flushStats(sql: Database["sql"]) {
  await sql`select pg_stat_force_next_flush()`;
  await sql`select 1`;
}

test("the embedded database vacuums and analyzes a table once its dead rows pass autovacuum's threshold", async () => {
  await withEmbedded(async (sql) => {
    await sql`create table churn (id int primary key, pad text not null)`;
    await sql`insert into churn select g, repeat('x', 200) from generate_series(1, 2000) g`;
    await flushStats(sql);
    // Inserted rows alone pass the insert threshold (1,000 + 20 %) and the analyze one.
    let done = await vacuumDue(sql);
    assert.deepEqual(done.find((t) => t.table === "churn"), {
      table: "churn",
      vacuum: true,
      freeze: false,
      analyze: true,
    });

    await flushStats(sql);
    assert.equal(
      (await vacuumDue(sql)).find((t) => t.table === "churn"),
      undefined,
      "nothing due right after",
    );

    // 300 of 2,000 rows changed: past analyze's threshold (50 + 10 %), short of vacuum's (50 + 20 %).
    await sql`update churn set pad = repeat('y', 200) where id <= 300`;
    await flushStats(sql);
    done = await vacuumDue(sql);
    assert.deepEqual(done.find((t) => t.table === "churn"), {
      table: "churn",
      vacuum: false,
      freeze: false,
      analyze: true,
    });

    await sql`delete from churn where id > 500`;
    await flushStats(sql);
    const [before] = await sql<{ dead: number }[]>`
      select n_dead_tup::int as dead from pg_stat_user_tables where relname = 'churn'`;
    assert.ok(before.dead >= 1500, `${before.dead} dead rows`);
    done = await vacuumDue(sql);
    assert.ok(done.some((t) => t.table === "churn" && t.vacuum), JSON.stringify(done));
    await flushStats(sql);
    const [after] = await sql<{ dead: number; vacuumed: boolean }[]>`
      select n_dead_tup::int as dead, last_vacuum is not null as vacuumed
      from pg_stat_user_tables where relname = 'churn'`;
    assert.equal(after.dead, 0);
    assert.ok(after.vacuumed);
    const [{ rows }] = await sql<{ rows: number }[]>`select count(*)::int as rows from churn`;
    assert.equal(rows, 500);
  });
});

test("the embedded database freezes every table, catalogs included, once its transaction ids age", async () => {
  await withEmbedded(async (sql) => {
    await sql`create table ages (id int)`;
    for (let i = 0; i < 30; i++) await sql`insert into ages values (${i})`;
    const age = async () =>
      (await sql<{ age: number }[]>`
        select age(datfrozenxid)::int as age from pg_database where datname = current_database()`)[0].age;
    const before = await age();
    assert.ok(before >= 30, `30 writes aged the database (${before})`);
    // With a threshold of 10 transactions instead of 150 million, every table is due to be frozen.
    const done = await vacuumDue(sql, { freezeAge: 10 });
    assert.ok(done.some((t) => t.table === "ages" && t.freeze), JSON.stringify(done));
    assert.ok(done.some((t) => t.table === "pg_class" && t.freeze), "the catalogs are frozen too");
    const after = await age();
    assert.ok(after < 15, `the database's oldest unfrozen id is recent again (${before} → ${after})`);
    await sql`insert into ages values (100)`;
    const [{ rows }] = await sql<{ rows: number }[]>`select count(*)::int as rows from ages`;
    assert.equal(rows, 31);
  });
});

test("the vacuum job runs on the embedded database only, first a minute after the start", async () => {
  await withEmbedded(async (sql) => {
    const config = loadConfig({ DATA_DIR: "unused" });
    const tokens = new TokenService(sql, config.publicUrl, config.accessTokenTtl, null);
    const jobs = (kind: "postgres" | "embedded") => jobsOf(sql, keySettings(config), config, tokens, kind);
    assert.equal(jobs("postgres").find((j) => j.name === "embedded-vacuum"), undefined);
    const job = jobs("embedded").find((j) => j.name === "embedded-vacuum")!;
    assert.deepEqual([job.everyMs, job.firstAfterMs, job.leased, job.alone], [600_000, 60_000, false, true]);

    await sql`create table jobbed (id int)`;
    await sql`insert into jobbed select generate_series(1, 1500)`;
    await flushStats(sql);
    const stopped = new AbortController();
    stopped.abort();
    assert.deepEqual(await job.run(stopped.signal), [], "a stopping service vacuums nothing");
    const done = await job.run(new AbortController().signal) as { table: string }[];
    assert.ok(done.some((t) => t.table === "jobbed"), JSON.stringify(done));
  });
});
