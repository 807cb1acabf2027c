/// <reference lib="deno.worker" />
/** Makes the tests' migrated cluster (tests/embedded_template.ts) in its data directory, and exits. */
import { openDatabase } from "../db/connection.ts";
import { migrate } from "../db/migrate.ts";

self.onmessage = async (e: MessageEvent<{ dir: string }>) => {
  try {
    const db = await openDatabase({ dataDir: e.data.dir, poolSize: 1 });
    try {
      await migrate(db.sql);
    } finally {
      await db.close();
    }
    self.postMessage({ ok: true });
  } catch (err) {
    self.postMessage({ ok: false, error: String(err) });
  }
};
