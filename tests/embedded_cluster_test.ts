/**
 * A new embedded database is the initialised cluster of its PGlite version, cached outside the repository
 * (db/seed.ts), with the migrations run on top at start. The cache is named by the PGlite version loaded,
 * which must be the one deno.json pins; a cache of another version is never read; a damaged one is made again;
 * a cache directory that cannot be written only leaves the cluster uncached.
 */
import assert from "node:assert/strict";
import { basename, join } from "node:path";
import { openDatabase } from "../db/connection.ts";
import { migrate, readMigrations } from "../db/migrate.ts";
import {
  cacheFile,
  defaultCacheDir,
  makeCluster,
  pgliteVersion,
  processEnv,
  writeAtomically,
} from "../db/seed.ts";
import { test } from "./helpers.ts";

const config = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
const pinned = /^npm:@electric-sql\/pglite@(\d+\.\d+\.\d+)$/.exec(config.imports["@electric-sql/pglite"])
  ?.[1];

async function inTemp(fn: (root: string) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "acs-cluster-" });
  try {
    await fn(root);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

/** A real cached cluster of this PGlite version: the user's cache, made first where it is not there yet. */
async function realCache(root: string): Promise<Uint8Array> {
  const dir = defaultCacheDir(processEnv()) ?? join(root, "own-cache");
  await Deno.mkdir(join(root, "real"));
  await makeCluster(join(root, "real", "pgdata"), dir);
  return await Deno.readFile(cacheFile(dir, pgliteVersion()!));
}

const noInitdb = () => Promise.reject(new Error("initdb ran"));

test("the cluster cache is named by the PGlite version deno.json pins, which is the one loaded", () => {
  assert.ok(pinned, "deno.json pins @electric-sql/pglite to an exact version");
  assert.equal(pgliteVersion(), pinned, "the PGlite loaded is the one deno.json pins (deno install)");
  assert.equal(basename(cacheFile("/cache", pgliteVersion()!)), `pglite-${pinned}.tar`);
  assert.equal(defaultCacheDir({ EMBEDDED_CACHE_DIR: "/x", XDG_CACHE_HOME: "/y", HOME: "/z" }), "/x");
  assert.equal(defaultCacheDir({ XDG_CACHE_HOME: "/y", HOME: "/z" }), "/y/access-control");
  assert.equal(defaultCacheDir({ HOME: "/z" }), "/z/.cache/access-control");
  assert.equal(defaultCacheDir({}), undefined);
});

test("a new embedded database is unpacked from its version's cache and migrated at start; another version's cache is never read", async () => {
  await inTemp(async (root) => {
    const real = await realCache(root);
    const cache = join(root, "cache");
    await Deno.mkdir(cache);
    // Only other versions' clusters (whole and readable): initdb runs, and none of them is touched.
    for (const other of ["0.5.15", "0.6.0", `${pinned}-rc.1`]) {
      await Deno.writeFile(cacheFile(cache, other), real);
    }
    let asked: boolean | undefined;
    const fresh = join(root, "fresh");
    await Deno.mkdir(fresh);
    const made = await makeCluster(join(fresh, "pgdata"), cache, {
      initdb: async (pgdata, dump) => {
        asked = dump;
        await Deno.mkdir(pgdata);
        return real;
      },
    });
    assert.deepEqual(made, { from: "initdb", cached: true, warning: undefined });
    assert.equal(asked, true, "a dump is asked for, to be cached");
    assert.deepEqual(
      await Deno.readFile(cacheFile(cache, pinned!)),
      real,
      "cached under this version's name",
    );
    assert.deepEqual(
      [...Deno.readDirSync(cache)].map((e) => e.name).sort(),
      [
        `pglite-${pinned}-rc.1.tar`,
        "pglite-0.5.15.tar",
        "pglite-0.6.0.tar",
        `pglite-${pinned}.tar`,
      ]
        .sort(),
      "no temporary file is left",
    );

    // With this version's cache, no initdb: unpacked, then the start migrates it.
    const dir = join(root, "db");
    await Deno.mkdir(dir);
    assert.deepEqual(await makeCluster(join(dir, "pgdata"), cache, { initdb: noInitdb }), {
      from: "cache",
      cached: true,
    });
    await assert.rejects(Deno.stat(join(dir, "pgdata.partial")), Deno.errors.NotFound);
    const db = await openDatabase({ dataDir: dir, poolSize: 1, clusterCacheDir: cache });
    try {
      assert.deepEqual(
        await migrate(db.sql),
        (await readMigrations()).map((m) => m.version),
        "the cache holds no migration",
      );
      const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from schema_migrations`;
      assert.equal(n, (await readMigrations()).length);
    } finally {
      await db.close();
    }
  });
});

test("a damaged cache is made again; an unwritable cache directory leaves the database made and uncached", async () => {
  await inTemp(async (root) => {
    const real = await realCache(root);
    const cache = join(root, "cache");
    await Deno.mkdir(cache);
    await Deno.writeFile(cacheFile(cache, pinned!), real.subarray(0, real.length >> 1));
    await Deno.mkdir(join(root, "a"));
    const initdb = async (pgdata: string) => {
      await Deno.mkdir(pgdata);
      await Deno.writeTextFile(join(pgdata, "PG_VERSION"), "17\n");
      return real;
    };
    const damaged = await makeCluster(join(root, "a", "pgdata"), cache, { initdb });
    assert.equal(damaged.from, "initdb");
    assert.equal(damaged.cached, true);
    assert.match(damaged.warning ?? "", /is unusable/);
    assert.deepEqual(await Deno.readFile(cacheFile(cache, pinned!)), real, "made again, whole");
    await assert.rejects(Deno.stat(join(root, "a", "pgdata.partial")), Deno.errors.NotFound);

    // A cache directory below a regular file cannot be made (root may write anywhere else).
    await Deno.writeTextFile(join(root, "file"), "");
    await Deno.mkdir(join(root, "b"));
    const unwritable = await makeCluster(join(root, "b", "pgdata"), join(root, "file", "cache"), { initdb });
    assert.equal(unwritable.from, "initdb");
    assert.equal(unwritable.cached, false);
    assert.match(unwritable.warning ?? "", /could not be cached/);
    assert.equal(await Deno.readTextFile(join(root, "b", "pgdata", "PG_VERSION")), "17\n");
    await assert.rejects(writeAtomically(join(root, "file", "x"), real));
  });
});
