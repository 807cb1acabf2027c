/**
 * The embedded database's initialised cluster (what PGlite's initdb leaves: no migration, no data), cached per
 * PGlite version outside the repository, so that a new embedded database is unpacked from it instead of running
 * initdb, which takes 8-14 s here and grows PGlite's WebAssembly memory by hundreds of MB for good. The first
 * new database of a PGlite version runs initdb in a worker (db/pglite_init.ts, whose memory goes with it),
 * which also dumps the cluster (PGlite's `dumpDataDir`, an uncompressed tarball: unpacking it costs no
 * decompression, half the time of a gzip one); the cache file is named by the PGlite version loaded
 * (`pglite-<version>.tar`), so a cluster of another version is never read. It is
 * written beside its final name and renamed into place; where the cache directory cannot be written the
 * database is made all the same, only without the cache. The migrations run on top at every start
 * (db/migrate.ts), as on a PostgreSQL server.
 *
 * The cache is unpacked here, onto disk, without starting PGlite: PGlite's own `loadDataDir` unpacks the same
 * tarball, but only from inside a running instance, one more PostgreSQL start (about a second) whose
 * WebAssembly memory stays with the process.
 */
import { dirname, join } from "node:path";
const BLOCK = 512;
/** PostgreSQL's page: a file's run of zero pages at its end is left as a hole (its size set, nothing written). */
const PAGE = 8192;

const decoder = new TextDecoder();
const text = (b: Uint8Array, at: number, len: number) => {
  const field = b.subarray(at, at + len);
  const end = field.indexOf(0);
  return decoder.decode(end < 0 ? field : field.subarray(0, end));
};
const octal = (b: Uint8Array, at: number, len: number) => {
  const s = text(b, at, len).trim();
  if (!/^[0-7]+$/.test(s)) {
    throw new Error(`the cached cluster's archive has a bad number field: ${JSON.stringify(s)}`);
  }
  return parseInt(s, 8);
};

/** The entry's path below the data directory; anything that could leave it is refused. */
function entryPath(header: Uint8Array): string {
  const name = text(header, 0, 100);
  const prefix = text(header, 257, 6) === "ustar" ? text(header, 345, 155) : "";
  const parts = (prefix ? `${prefix}/${name}` : name).split("/").filter((p) => p !== "" && p !== ".");
  if (parts.length === 0 || parts.includes("..")) {
    throw new Error(
      `the cached cluster's archive has an entry outside the data directory: ${JSON.stringify(name)}`,
    );
  }
  return parts.join("/");
}

/** The header's checksum: the sum of its bytes, with the checksum field itself read as spaces. */
function checksumHolds(header: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i];
  return sum === octal(header, 148, 8);
}

/** Writes a file's bytes, its trailing zero pages as a hole (most of a fresh WAL segment is zeros). */
function writeFile(path: string, body: Uint8Array): void {
  let end = body.length;
  while (end > 0 && body[end - 1] === 0) end--;
  const written = Math.min(body.length, Math.ceil(end / PAGE) * PAGE);
  const file = Deno.openSync(path, { write: true, createNew: true, mode: 0o600 });
  try {
    for (let at = 0; at < written;) at += file.writeSync(body.subarray(at, written));
    if (written < body.length) file.truncateSync(body.length);
  } finally {
    file.close();
  }
}

/**
 * Writes the archive's directories and regular files below `dest`; any other kind of entry is refused. The
 * archive (about 40 MB) is read whole and written file by file without waiting on each: a start does nothing
 * else meanwhile, and this is twice as fast as a stream.
 */
function untar(archive: Uint8Array, dest: string): void {
  const made = new Set<string>();
  for (let at = 0;;) {
    const header = archive.subarray(at, at + BLOCK);
    if (header.length < BLOCK) throw new Error("the cached cluster's archive ends in the middle of an entry");
    if (header.every((b) => b === 0)) return; // the end-of-archive block
    if (!checksumHolds(header)) throw new Error("the cached cluster's archive has a damaged header");
    const path = join(dest, entryPath(header));
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156]);
    at += BLOCK;
    if (type === "5") {
      Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
      made.add(path);
      continue;
    }
    if (type !== "0" && type !== "\0") {
      throw new Error(`the cached cluster's archive has an entry of type ${type}`);
    }
    if (at + size > archive.length) {
      throw new Error("the cached cluster's archive ends in the middle of a file");
    }
    if (!made.has(dirname(path))) {
      Deno.mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      made.add(dirname(path));
    }
    writeFile(path, archive.subarray(at, at + size));
    at += Math.ceil(size / BLOCK) * BLOCK; // the file and its padding to the next block
  }
}

/** The version of the PGlite package this process loads, which names its cache file; null when unknown. */
export function pgliteVersion(): string | null {
  try {
    const entry = import.meta.resolve("@electric-sql/pglite");
    const pinned = /^npm:\/?@electric-sql\/pglite@(\d+\.\d+\.\d+[^/]*)/.exec(entry);
    if (pinned) return pinned[1];
    if (!entry.startsWith("file:")) return null;
    // The entry point is dist/index.js: the package's own package.json is one directory up.
    const pkg = JSON.parse(Deno.readTextFileSync(new URL("../package.json", entry)));
    return pkg?.name === "@electric-sql/pglite" && typeof pkg.version === "string" ? pkg.version : null;
  } catch {
    return null;
  }
}

/**
 * Where the clusters are cached: EMBEDDED_CACHE_DIR, else `$XDG_CACHE_HOME/access-control`, else
 * `~/.cache/access-control`; undefined when none is set (then every new database runs initdb).
 */
export function defaultCacheDir(env: Record<string, string | undefined>): string | undefined {
  if (env.EMBEDDED_CACHE_DIR) return env.EMBEDDED_CACHE_DIR;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "access-control");
  if (env.HOME) return join(env.HOME, ".cache", "access-control");
  return undefined;
}

/** The process's environment as far as it may be read (no permission: none of it). */
export function processEnv(): Record<string, string | undefined> {
  const read = (name: string) => {
    try {
      return Deno.env.get(name);
    } catch {
      return undefined;
    }
  };
  return {
    EMBEDDED_CACHE_DIR: read("EMBEDDED_CACHE_DIR"),
    XDG_CACHE_HOME: read("XDG_CACHE_HOME"),
    HOME: read("HOME"),
  };
}

/** The cache file of PGlite `version` in `dir`: the only one this version ever reads. */
export function cacheFile(dir: string, version: string): string {
  return join(dir, `pglite-${version}.tar`);
}

/**
 * How `makeCluster` made the cluster: unpacked from the cache, or by initdb (and then cached, or not when the
 * cache could not be written or there is none).
 */
export type Made = { from: "cache" | "initdb"; cached: boolean; warning?: string };

/**
 * Makes a new cluster as `pgdata`, which must not exist: unpacked from the cache of this PGlite version where
 * there is one, else by initdb in a worker, whose dump is then cached. Made beside it (`pgdata.partial`) and
 * renamed into place when complete, so that a start cut off halfway leaves no data directory that looks made.
 * A cache file that cannot be unpacked (damaged) is made again.
 */
export async function makeCluster(
  pgdata: string,
  cacheDir: string | undefined,
  opts: {
    /** The PGlite version whose cache is read and written: the one loaded unless given (tests). */
    version?: string | null;
    /** Runs initdb into its first argument and returns the cluster's dump when its second is true (tests). */
    initdb?: (pgdata: string, dump: boolean) => Promise<Uint8Array | undefined>;
  } = {},
): Promise<Made> {
  const version = opts.version === undefined ? pgliteVersion() : opts.version;
  const cache = cacheDir && version ? cacheFile(cacheDir, version) : undefined;
  const partial = `${pgdata}.partial`;
  // A partial unpack left by a start that stopped, usually none: mkdir below fails if one is still there.
  await Deno.remove(partial, { recursive: true }).catch(() => {});
  let warning: string | undefined;
  if (cache) {
    try {
      await unpackArchive(cache, partial);
      await Deno.rename(partial, pgdata);
      return { from: "cache", cached: true };
    } catch (err) {
      await Deno.remove(partial, { recursive: true }).catch(() => {});
      if (!(err instanceof Deno.errors.NotFound)) warning = `the cached cluster ${cache} is unusable: ${err}`;
    }
  }
  const dump = await (opts.initdb ?? initdbInWorker)(partial, cache !== undefined);
  await Deno.rename(partial, pgdata);
  if (!cache || !dump) return { from: "initdb", cached: false, warning };
  try {
    await writeAtomically(cache, dump);
    return { from: "initdb", cached: true, warning };
  } catch (err) {
    const why = `the cluster could not be cached in ${cache}: ${err}`;
    return { from: "initdb", cached: false, warning: warning ? `${warning}; ${why}` : why };
  }
}

/** Unpacks the tarball `file` as `dest`, which must not exist. */
export async function unpackArchive(file: string, dest: string): Promise<void> {
  const archive = await Deno.readFile(file);
  await Deno.mkdir(dest, { mode: 0o700 });
  untar(archive, dest);
}

/** Written beside its final name (a name of its own per process) and renamed: readers see all of it or none. */
export async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${Deno.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  try {
    await Deno.writeFile(temp, bytes, { mode: 0o600 });
    await Deno.rename(temp, path);
  } catch (err) {
    await Deno.remove(temp).catch(() => {});
    throw err;
  }
}

/**
 * Runs PGlite's initdb into `pgdata` in a worker (db/pglite_init.ts), so that its memory is given back after,
 * and returns the cluster's dump when asked for one.
 */
async function initdbInWorker(pgdata: string, dump: boolean): Promise<Uint8Array | undefined> {
  const worker = new Worker(new URL("./pglite_init.ts", import.meta.url), { type: "module" });
  try {
    const result = await new Promise<{ ok: boolean; error?: string; dump?: ArrayBuffer }>(
      (resolve, reject) => {
        worker.onmessage = (e) => resolve(e.data);
        worker.onerror = (e) => {
          e.preventDefault();
          reject(new Error(`creating the embedded database failed: ${e.message}`));
        };
        worker.postMessage({ dir: pgdata, dump });
      },
    );
    if (!result.ok) throw new Error(`creating the embedded database failed: ${result.error}`);
    return result.dump ? new Uint8Array(result.dump) : undefined;
  } finally {
    worker.terminate();
  }
}
