/**
 * What a new embedded database costs (db/seed.ts): initdb in its worker with the dump that is cached, the
 * unpacking of that cache into a new data directory, PGlite's start on it, and the migrations on top, each
 * timed apart; a temporary cache directory, so the user's own cache is neither read nor written.
 *
 *   deno run --allow-read --allow-write --allow-env --allow-sys bench/embedded_start.ts
 */
import { openDatabase } from "../db/connection.ts";
import { migrate } from "../db/migrate.ts";
import { makeCluster, pgliteVersion } from "../db/seed.ts";

const rounds = Number(Deno.env.get("BENCH_ROUNDS") ?? 3);
const root = await Deno.makeTempDir({ prefix: "acs-bench-start-" });
const cache = `${root}/cache`;
const ms = (since: number) => `${(performance.now() - since).toFixed(0)} ms`;
try {
  console.log(`PGlite ${pgliteVersion()}`);
  await Deno.mkdir(`${root}/first`);
  let t = performance.now();
  const first = await makeCluster(`${root}/first/pgdata`, cache);
  console.log(`initdb in a worker, dumped and cached (${first.from}, cached ${first.cached}): ${ms(t)}`);
  for (let i = 1; i <= rounds; i++) {
    const dir = `${root}/db${i}`;
    await Deno.mkdir(dir);
    t = performance.now();
    const made = await makeCluster(`${dir}/pgdata`, cache);
    const unpacked = ms(t);
    t = performance.now();
    const db = await openDatabase({ dataDir: dir, poolSize: 1, clusterCacheDir: cache });
    const opened = ms(t);
    t = performance.now();
    const applied = await migrate(db.sql);
    console.log(
      `round ${i}: unpacked from the ${made.from} ${unpacked}, PGlite started ${opened}, ` +
        `${applied.length} migrations ${ms(t)}`,
    );
    await db.close();
  }
} finally {
  await Deno.remove(root, { recursive: true });
}
