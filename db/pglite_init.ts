/// <reference lib="deno.worker" />
/**
 * A worker that creates a new embedded database with PGlite's initdb and exits: only in a build without the seed
 * (db/seed.ts unpacks it where it exists). initdb grows PGlite's WebAssembly memory by hundreds of MB, and
 * WebAssembly memory never shrinks: done in a worker, that memory goes with the worker, and the service then
 * opens the database it made as on any later start.
 */
import { PGlite } from "@electric-sql/pglite";

self.onmessage = async (e: MessageEvent<{ dir: string }>) => {
  try {
    const db = await PGlite.create(e.data.dir);
    await db.close();
    self.postMessage({ ok: true });
  } catch (err) {
    self.postMessage({ ok: false, error: String(err) });
  }
};
