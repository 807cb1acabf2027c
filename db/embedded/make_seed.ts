/**
 * `deno task embedded-seed`: writes the embedded database's seed, an empty database cluster as PGlite's initdb
 * leaves it (gzip tarball), so that a first start loads it in seconds instead of running initdb, which takes
 * longer than the rest of the start and grows PGlite's memory by several hundred MB for good. Run it after
 * changing the PGlite version; tests/contract_test.ts checks that the seed names the version in deno.json.
 */
import { PGlite } from "@electric-sql/pglite";

const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
const version = /@([\d.]+)$/.exec(config.imports["@electric-sql/pglite"])![1];
const dir = await Deno.makeTempDir({ prefix: "acs-seed-" });
const db = await PGlite.create(`${dir}/pgdata`);
const dump = new Uint8Array(await (await db.dumpDataDir("gzip")).arrayBuffer());
await db.close();
await Deno.remove(dir, { recursive: true });
await Deno.writeFile(new URL("./seed.tar.gz", import.meta.url), dump);
await Deno.writeTextFile(new URL("./seed.version", import.meta.url), `${version}\n`);
console.log(`wrote db/embedded/seed.tar.gz (${dump.length} bytes) for PGlite ${version}`);
