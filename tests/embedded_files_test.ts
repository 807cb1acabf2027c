/**
 * The embedded database keeps its files' sizes in the process (db/embedded_files.ts). PostgreSQL scans a
 * relation up to the size it is told, extends it there and truncates it from there: a size that missed a
 * growth or a truncation would lose rows, write over pages or leave holes. So a table is grown, shrunk by
 * VACUUM (which cuts the file's empty tail), emptied by TRUNCATE (a new file) and grown again, and after each
 * step a sequential scan must read exactly as many pages as the file on disk holds, and find every row. And
 * after a churn of every kind of write, each fork of every relation must have, for PostgreSQL, as many pages
 * as its file on disk. The wrapper is PGlite's private file system, so it installs with the one version it was
 * written for and no other.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { pageinspect } from "@electric-sql/pglite/contrib/pageinspect";
import { openDatabase } from "../db/connection.ts";
import {
  keepFileSizes,
  keepsFileSizesWith,
  loadedPgliteVersion,
  PGLITE_WRITTEN_FOR,
} from "../db/embedded_files.ts";
import { test } from "./helpers.ts";

const PAGE = 8192;

test("the embedded database scans, extends and truncates its files at their true sizes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-sizes-" });
  let db = await openDatabase({ dataDir: dir, poolSize: 1 });
  try {
    await db.sql`create table sizes (id int primary key, pad text not null)`;
    /** The pages a sequential scan read (PostgreSQL's idea of the size), the file's pages, and the rows. */
    const look = async () => {
      const [{ path }] = await db.sql<{ path: string }[]>`select pg_relation_filepath('sizes') as path`;
      const onDisk = (await Deno.stat(join(dir, "pgdata", path))).size / PAGE;
      const [explained] = await db.sql.unsafe("explain (analyze, buffers, format json) select * from sizes");
      const p = (explained["QUERY PLAN"] as { Plan: Record<string, number> }[])[0].Plan;
      const scanned = p["Shared Hit Blocks"] + p["Shared Read Blocks"];
      const [{ rows, sum }] = await db.sql<{ rows: number; sum: number }[]>`
        select count(*)::int as rows, coalesce(sum(id), 0)::int as sum from sizes`;
      return { scanned, onDisk, rows, sum };
    };
    const fill = (from: number, to: number) =>
      db.sql`insert into sizes select g, repeat('x', 400) from generate_series(${from}::int, ${to}::int) g`;
    const sumOf = (from: number, to: number) => (from + to) * (to - from + 1) / 2;

    for (let round = 0; round < 2; round++) {
      await fill(1, 12_000);
      let now = await look();
      assert.ok(now.onDisk > 500, `the table grew to ${now.onDisk} pages`);
      assert.deepEqual(now, { scanned: now.onDisk, onDisk: now.onDisk, rows: 12_000, sum: sumOf(1, 12_000) });

      // Only the first pages keep rows: VACUUM cuts the file after them.
      await db.sql`delete from sizes where id > 200`;
      await db.sql.unsafe("vacuum sizes");
      now = await look();
      assert.ok(now.onDisk < 50, `VACUUM cut the file to ${now.onDisk} pages`);
      assert.deepEqual(now, { scanned: now.onDisk, onDisk: now.onDisk, rows: 200, sum: sumOf(1, 200) });

      // Grown again from where it was cut: the new rows land after the kept ones, not past the old end.
      await fill(201, 3_000);
      now = await look();
      assert.deepEqual(now, { scanned: now.onDisk, onDisk: now.onDisk, rows: 3_000, sum: sumOf(1, 3_000) });

      await db.sql.unsafe("truncate sizes");
      now = await look();
      assert.deepEqual(now, { scanned: 0, onDisk: 0, rows: 0, sum: 0 });
    }

    await fill(1, 5_000);
    await db.close();
    db = await openDatabase({ dataDir: dir, poolSize: 1 });
    const now = await look();
    assert.deepEqual(now, { scanned: now.onDisk, onDisk: now.onDisk, rows: 5_000, sum: sumOf(1, 5_000) });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

test("the file sizes are kept with this PGlite: its data directory is NODEFS's, where the wrapper expects it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-sizes-" });
  const db = await PGlite.create(join(dir, "pgdata"));
  try {
    // openDatabase ignores a false (the database then works without the saving): a PGlite upgrade that moves
    // or replaces the file system fails here instead.
    assert.equal(keepFileSizes(db), true);
    assert.equal(keepFileSizes(db), true, "a second call finds it wrapped");
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

test("the file sizes are kept with the PGlite pinned in deno.json and no other version", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  const pinned = /@([\d.]+)$/.exec(config.imports["@electric-sql/pglite"])![1];
  assert.equal(loadedPgliteVersion(), pinned, "the version read from the package loaded");
  assert.equal(
    PGLITE_WRITTEN_FOR,
    pinned,
    "a PGlite upgrade re-reads db/embedded_files.ts and moves its version",
  );
  assert.equal(keepsFileSizesWith(PGLITE_WRITTEN_FOR), true);
  for (const other of ["0.5.15", "0.5.17", "0.6.0", "1.0.0", "0.5.16-next.1", "", null]) {
    assert.equal(keepsFileSizesWith(other), false, `not with ${other}`);
  }

  const dir = await Deno.makeTempDir({ prefix: "acs-sizes-" });
  const db = await PGlite.create(join(dir, "pgdata"));
  try {
    const ops =
      (db.Module as unknown as { NODEFS: { stream_ops: Record<string, unknown> } }).NODEFS.stream_ops;
    const before = { ...ops };
    // Another version: nothing is wrapped, and the database answers as before.
    assert.equal(keepFileSizes(db, "0.5.17"), false);
    assert.equal(keepFileSizes(db, null), false);
    assert.deepEqual({ ...ops }, before);
    await db.exec("create table t (id int); insert into t select generate_series(1, 1000)");
    assert.deepEqual((await db.query("select count(*)::int as n from t")).rows, [{ n: 1000 }]);
    // This one: wrapped.
    assert.equal(keepFileSizes(db), true);
    assert.notEqual(ops.llseek, before.llseek);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * PostgreSQL's own count of a fork's pages, as it asks the file system (the size the wrapper keeps): the first
 * page get_raw_page finds out of range. `pg_relation_size` would not do: it `stat`s the files, which the
 * wrapper does not touch. Null when the fork has no file.
 */
const PAGES_OF = `
  create function probe(rel regclass, fork text, blk bigint) returns int language plpgsql as $$
  begin
    perform get_raw_page(rel::text, fork, blk);
    return 1;
  exception
    when invalid_parameter_value then return 0; -- block number out of range
    when undefined_file then return -1;
  end $$;
  create function pages_of(rel regclass, fork text) returns bigint language plpgsql as $$
  declare lo bigint := 0; hi bigint := 1; mid bigint; p int;
  begin
    p := probe(rel, fork, 0);
    if p < 0 then return null; end if;
    if p = 0 then return 0; end if;
    while probe(rel, fork, hi) = 1 loop lo := hi; hi := hi * 2; end loop;
    -- page lo exists, page hi does not
    while hi - lo > 1 loop
      mid := (lo + hi) / 2;
      if probe(rel, fork, mid) = 1 then lo := mid; else hi := mid; end if;
    end loop;
    return hi;
  end $$;`;

test("after a churn of writes, vacuums, truncations and rewrites, PostgreSQL sees every relation file at its size on disk", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-sizes-" });
  const pgdata = join(dir, "pgdata");
  const open = async () => {
    const db = await PGlite.create(pgdata, { extensions: { pageinspect } });
    assert.equal(keepFileSizes(db), true);
    return db;
  };
  let db = await open();
  /** Every fork of every relation of the database whose size PostgreSQL and the disk disagree on. */
  const mismatches = async () => {
    const rels = (await db.query<{ rel: string; path: string }>(`
      select oid::regclass::text as rel, pg_relation_filepath(oid) as path from pg_class
      where pg_relation_filepath(oid) is not null and relpersistence <> 't' order by oid`)).rows;
    const wrong: string[] = [];
    let files = 0;
    for (const { rel, path } of rels) {
      for (const [fork, suffix] of [["main", ""], ["fsm", "_fsm"], ["vm", "_vm"], ["init", "_init"]]) {
        let onDisk: number | null = null;
        try {
          const size = (await Deno.stat(join(pgdata, path + suffix))).size;
          assert.equal(size % PAGE, 0, `${path}${suffix} holds whole pages`);
          onDisk = size / PAGE;
          files++;
        } catch (err) {
          if (!(err instanceof Deno.errors.NotFound)) throw err;
        }
        const [{ pages }] = (await db.query<{ pages: number | null }>(
          "select pages_of($1::regclass, $2)::int as pages",
          [rel, fork],
        )).rows;
        if (pages !== onDisk) wrong.push(`${rel} ${fork}: PostgreSQL ${pages}, disk ${onDisk}`);
      }
    }
    assert.ok(files > 100, `${files} files compared`);
    return wrong;
  };
  try {
    await db.exec("create extension pageinspect;" + PAGES_OF);
    await db.exec(`
      create table churn (id int primary key, n int not null, pad text not null, big text);
      create index churn__n on churn (n);
      create table other (id int primary key, body text not null)`);
    /** Each statement on its own, as a client sends them (VACUUM runs outside a transaction block). */
    const run = async (statements: string) => {
      for (const statement of statements.split(";").map((x) => x.trim()).filter(Boolean)) {
        await db.exec(statement);
      }
    };
    for (let round = 0; round < 3; round++) {
      await run(`
        delete from other;
        insert into churn select g, g % 97, repeat('x', 300), case when g % 50 = 0 then repeat(md5(g::text), 200) end
          from generate_series(1, 8000) g;
        insert into other select g, repeat('y', 100) from generate_series(1, 3000) g;
        update churn set n = n + 1, pad = repeat('z', 320) where id % 3 = 0;
        update churn set big = repeat(md5(id::text), 150) where id % 7 = 0;
        delete from churn where id > 500;
        delete from other where id % 2 = 0;
        vacuum churn;
        vacuum other;
        insert into churn select g, g, 'again', null from generate_series(501, 2500) g;
        vacuum full other;
        reindex table churn;
        truncate other;
        insert into other select g, 'after' from generate_series(1, 700) g;
        delete from churn;
        vacuum churn;
        analyze`);
      assert.deepEqual(await mismatches(), [], `round ${round}`);
    }
    await run(`
      insert into churn select g, g, repeat('w', 200), null from generate_series(1, 4000) g;
      create table dropped as select * from churn;
      drop table dropped;
      checkpoint`);
    assert.deepEqual(await mismatches(), []);
    await db.close();

    db = await open();
    assert.deepEqual(await mismatches(), [], "reopened");
    await db.exec("insert into churn select g, g, 'reopened', null from generate_series(4001, 6000) g");
    assert.deepEqual(await mismatches(), [], "grown after the reopen");
    assert.deepEqual(
      (await db.query("select count(*)::int as n, sum(id)::bigint::text as s from churn")).rows,
      [{ n: 6000, s: String(6000 * 6001 / 2) }],
    );
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
