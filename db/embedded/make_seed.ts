/**
 * `deno task embedded-seed`: writes the embedded database's seed, an empty database cluster as PGlite's initdb
 * leaves it with every migration in db/migrations/ applied (gzip tarball), so that a first start unpacks it
 * (db/seed.ts) instead of running initdb, which takes longer than the rest of the start and grows PGlite's
 * memory by several hundred MB for good, and then the migrations, which grow it by tens of MB more. The seed
 * holds no data but the schema: this script refuses to write one with a row in any other table. Run it after
 * changing the PGlite version or adding a migration; tests/contract_test.ts checks that the seed names the
 * version in deno.json and holds exactly the migrations in db/migrations/ (seed.migrations: each one's name
 * and SHA-256). A database made from an older seed is still complete: the start applies what the seed lacks.
 * It also records the tarball's SHA-256 in seed.sha256 (in `sha256sum` format, so `sha256sum -c seed.sha256`
 * in this folder checks it too), and the contract test checks that the committed tarball matches it: a
 * tarball replaced by accident, or by anything but this script, fails the tests. A seed made again may differ
 * byte for byte from the last one, so commit all four files together.
 */
import { PGlite } from "@electric-sql/pglite";
import { openDatabase } from "../connection.ts";
import { migrate, readMigrations } from "../migrate.ts";

const here = (name: string) => new URL(`./${name}`, import.meta.url);
const sha256 = async (bytes: Uint8Array<ArrayBuffer>) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");

const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
const version = /@([\d.]+)$/.exec(config.imports["@electric-sql/pglite"])![1];
const dir = await Deno.makeTempDir({ prefix: "acs-seed-" });
try {
  // initdb, then the migrations through the service's own connection and migrator.
  await (await PGlite.create(`${dir}/pgdata`)).close();
  const db = await openDatabase({ dataDir: dir, poolSize: 1 });
  try {
    await migrate(db.sql);
    const tables = await db.sql<{ name: string }[]>`
      select format('%I.%I', schemaname, relname) as name from pg_stat_user_tables where relname <> 'schema_migrations'`;
    for (const { name } of tables) {
      const [{ rows }] = await db.sql<{ rows: number }[]>`select count(*)::int as rows from ${
        db.sql.unsafe(name)
      }`;
      if (rows !== 0) {
        throw new Error(`the migrations left ${rows} rows in ${name}: a seed holds the schema only`);
      }
    }
  } finally {
    await db.close();
  }
  const cluster = await PGlite.create(`${dir}/pgdata`);
  const dump = new Uint8Array(await (await cluster.dumpDataDir("gzip")).arrayBuffer());
  await cluster.close();
  await Deno.writeFile(here("seed.tar.gz"), dump);
  await Deno.writeTextFile(here("seed.version"), `${version}\n`);
  await Deno.writeTextFile(here("seed.migrations"), await migrationsList());
  const digest = await sha256(dump);
  await Deno.writeTextFile(here("seed.sha256"), `${digest}  seed.tar.gz\n`);
  console.log(`wrote db/embedded/seed.tar.gz (${dump.length} bytes, sha256 ${digest}) for PGlite ${version}`);
} finally {
  await Deno.remove(dir, { recursive: true });
}

/** `NNNN_name sha256` for each migration, in order: what seed.migrations records. */
async function migrationsList(): Promise<string> {
  const lines = [];
  for (const m of await readMigrations()) {
    lines.push(
      `${String(m.version).padStart(4, "0")}_${m.name} ${await sha256(new TextEncoder().encode(m.sql))}\n`,
    );
  }
  return lines.join("");
}
