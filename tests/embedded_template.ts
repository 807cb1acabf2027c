/**
 * The tests make many embedded databases, and a new one is the cached cluster unpacked plus every migration
 * (db/seed.ts, service.ts). Here the migrated cluster is made once, in a worker (whose PGlite memory goes with
 * it), and every data directory the harness makes after that starts as a copy of it: its start then finds
 * nothing to migrate.
 *
 * Making it costs a test file about three seconds of CPU (PGlite's start and every migration), and a run has
 * about a hundred files, each in a process of its own; so it is cached beside the service's own cluster cache
 * (db/seed.ts: EMBEDDED_CACHE_DIR, `$XDG_CACHE_HOME/access-control` or `~/.cache/access-control`), under
 * `tests/`, named by the PGlite version and a digest of this checkout's migrations and migrator: a cached
 * cluster is only ever read by the same schema, so it is never stale. It is made beside its final name and
 * renamed into place (two processes making it at once: one wins, the other removes its own), and entries of
 * other schemas older than a day are removed. Without a cache directory or a known PGlite version, each
 * process makes its own in the temporary directory and removes it when it ends.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { defaultCacheDir, pgliteVersion, processEnv } from "../db/seed.ts";

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
  const cacheDir = defaultCacheDir(processEnv());
  const version = pgliteVersion();
  if (cacheDir && version) {
    const cached = await cachedTemplate(join(cacheDir, "tests"), version).catch(() => undefined);
    if (cached) return cached;
  }
  const dir = await Deno.makeTempDir({ prefix: "acs-template-" });
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  });
  await migrateInWorker(dir);
  return dir;
}

/** The cached migrated cluster of this schema in `dir`, made first if there is none yet. */
async function cachedTemplate(dir: string, version: string): Promise<string> {
  const final = join(dir, `migrated-${version}-${await schemaDigest()}`);
  if (await isFile(join(final, "pgdata", "PG_VERSION"))) return final;
  await Deno.mkdir(dir, { recursive: true });
  await pruneOthers(dir, final);
  const making = await Deno.makeTempDir({ dir, prefix: ".making-" });
  try {
    await migrateInWorker(making);
    await Deno.rename(making, final);
  } catch (err) {
    await Deno.remove(making, { recursive: true }).catch(() => {});
    // Another process put the same cluster in place first: use it.
    if (!(await isFile(join(final, "pgdata", "PG_VERSION")))) throw err;
  }
  return final;
}

/** A digest of what makes the schema: every migration's name and text, and the migrator. */
async function schemaDigest(): Promise<string> {
  const hash = createHash("sha256");
  const migrations = new URL("../db/migrations/", import.meta.url);
  const names: string[] = [];
  for await (const entry of Deno.readDir(migrations)) if (entry.isFile) names.push(entry.name);
  for (const name of names.sort()) {
    hash.update(`${name}\0${await Deno.readTextFile(new URL(name, migrations))}\0`);
  }
  hash.update(await Deno.readTextFile(new URL("../db/migrate.ts", import.meta.url)));
  return hash.digest("hex").slice(0, 16);
}

/** Removes other schemas' clusters (and abandoned ones being made) not touched for a day. */
async function pruneOthers(dir: string, keep: string): Promise<void> {
  const dayAgo = Date.now() - 86_400_000;
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (path === keep || !/^(migrated-|\.making-)/.test(entry.name)) continue;
    const stat = await Deno.stat(path).catch(() => undefined);
    if (stat?.mtime && stat.mtime.getTime() < dayAgo) {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    }
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}

/** Migrates a new cluster in `dir` in a worker, whose PGlite memory goes with it. */
async function migrateInWorker(dir: string): Promise<void> {
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
