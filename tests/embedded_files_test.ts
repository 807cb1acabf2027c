/**
 * The embedded database keeps its files' sizes in the process (db/embedded_files.ts). PostgreSQL scans a
 * relation up to the size it is told, extends it there and truncates it from there: a size that missed a
 * growth or a truncation would lose rows, write over pages or leave holes. So a table is grown, shrunk by
 * VACUUM (which cuts the file's empty tail), emptied by TRUNCATE (a new file) and grown again, and after each
 * step a sequential scan must read exactly as many pages as the file on disk holds, and find every row.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { openDatabase } from "../db/connection.ts";
import { keepFileSizes } from "../db/embedded_files.ts";
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
