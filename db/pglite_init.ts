/// <reference lib="deno.worker" />
/**
 * A worker that creates a new embedded database with PGlite's initdb, dumps it when asked (the cluster that
 * db/seed.ts caches for later new databases) and exits. initdb grows PGlite's WebAssembly memory by hundreds
 * of MB, and WebAssembly memory never shrinks: done in a worker, that memory goes with the worker, and the
 * service then opens the database it made as on any later start.
 */
import { PGlite } from "@electric-sql/pglite";

self.onmessage = async (e: MessageEvent<{ dir: string; dump: boolean }>) => {
  try {
    const db = await PGlite.create(e.data.dir);
    let dump: ArrayBuffer | undefined;
    try {
      if (e.data.dump) dump = await (await db.dumpDataDir("none")).arrayBuffer();
    } catch {
      // A failed dump only leaves the cluster uncached.
    } finally {
      await db.close();
    }
    self.postMessage({ ok: true, dump }, dump ? [dump] : []);
  } catch (err) {
    self.postMessage({ ok: false, error: String(err) });
  }
};
