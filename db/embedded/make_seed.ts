/**
 * `deno task embedded-seed`: writes the embedded database's seed, an empty database cluster as PGlite's initdb
 * leaves it (gzip tarball), so that a first start loads it in seconds instead of running initdb, which takes
 * longer than the rest of the start and grows PGlite's memory by several hundred MB for good. Run it after
 * changing the PGlite version; tests/contract_test.ts checks that the seed names the version in deno.json.
 * It also records the tarball's SHA-256 in seed.sha256 (in `sha256sum` format, so `sha256sum -c seed.sha256`
 * in this folder checks it too), and the contract test checks that the committed tarball matches it: a
 * tarball replaced by accident, or by anything but this script, fails the tests. A seed made again may differ
 * byte for byte from the last one, so commit all three files together.
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
const sha256 = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", dump)))
  .map((b) => b.toString(16).padStart(2, "0")).join("");
await Deno.writeTextFile(new URL("./seed.sha256", import.meta.url), `${sha256}  seed.tar.gz\n`);
console.log(`wrote db/embedded/seed.tar.gz (${dump.length} bytes, sha256 ${sha256}) for PGlite ${version}`);
