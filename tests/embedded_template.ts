/**
 * The tests make many embedded databases, and a new one is the cached cluster unpacked plus every migration
 * (db/seed.ts, service.ts). Here each test process migrates one cluster once, in a worker (whose PGlite memory
 * goes with it), and every data directory the harness makes after that starts as a copy of it: its start then
 * finds nothing to migrate. The copy lives in the temporary directory and is removed when the process ends; it
 * is made from this checkout's migrations in this process, so it is never stale.
 */
import { join } from "node:path";

let template: Promise<string> | undefined;

/** A new temporary DATA_DIR whose database is already migrated. */
export async function migratedDataDir(prefix: string): Promise<string> {
  template ??= makeTemplate();
  const pgdata = join(await template, "pgdata");
  const dir = await Deno.makeTempDir({ prefix });
  await copyTree(pgdata, join(dir, "pgdata"));
  return dir;
}

async function makeTemplate(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "acs-template-" });
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  });
  const worker = new Worker(new URL("./embedded_template_worker.ts", import.meta.url), { type: "module" });
  try {
    const result = await new Promise<{ ok: boolean; error?: string }>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => {
        e.preventDefault();
        reject(new Error(`the tests' migrated cluster could not be made: ${e.message}`));
      };
      worker.postMessage({ dir });
    });
    if (!result.ok) throw new Error(`the tests' migrated cluster could not be made: ${result.error}`);
  } finally {
    worker.terminate();
  }
  return dir;
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { mode: 0o700 });
  const copies: Promise<void>[] = [];
  for await (const entry of Deno.readDir(from)) {
    const [src, dest] = [join(from, entry.name), join(to, entry.name)];
    copies.push(entry.isDirectory ? copyTree(src, dest) : Deno.copyFile(src, dest));
  }
  await Promise.all(copies);
}
