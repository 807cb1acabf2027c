/**
 * A worker that creates a new embedded database and exits. Creating it grows PGlite's WebAssembly memory by
 * hundreds of MB, and WebAssembly memory never shrinks: done in a worker, that memory goes with the worker, and
 * the service then opens the database it made as on any later start.
 */
import { PGlite } from "@electric-sql/pglite";

/**
 * The seed of a new database: an empty cluster as initdb leaves it (db/embedded, `deno task embedded-seed`).
 * Loading it takes seconds where initdb takes many; without it (a trimmed build), initdb runs.
 */
async function readSeed(): Promise<Blob | undefined> {
  try {
    return new Blob([await Deno.readFile(new URL("./embedded/seed.tar.gz", import.meta.url))]);
  } catch {
    return undefined;
  }
}

self.onmessage = async (e: MessageEvent<{ dir: string }>) => {
  try {
    const seed = await readSeed();
    const db = await PGlite.create(e.data.dir, seed ? { loadDataDir: seed } : {});
    await db.close();
    self.postMessage({ ok: true });
  } catch (err) {
    self.postMessage({ ok: false, error: String(err) });
  }
};
