/**
 * The embedded database's files are the host's, reached through Emscripten's NODEFS, and there PostgreSQL's
 * cheapest file operation is a costly one: the size of a relation (`lseek` to its end, which PostgreSQL does
 * at the start of every sequential or bitmap heap scan and for every relation and index it plans a statement
 * on) is a `node:fs` `fstatSync`, about 11 µs in Deno against under 1 µs for the system call, plus Emscripten's
 * wrappers. Under the admin-write load of `deno task bench` that was 7 % of the service thread's busy time;
 * the database's own part of an admin write takes 16-20 % less CPU with the sizes kept (1.1 ms against 1.3 ms,
 * `deno run --allow-read --allow-write --allow-env --allow-sys bench/file_sizes.ts`, two runs on a shared
 * 2-core machine).
 *
 * So each file's size is kept beside its Emscripten node once it has been asked for, and kept right: every
 * way PostgreSQL changes a file's size goes through NODEFS's `write` (which makes the file longer when it
 * writes past its end) or a `setattr` with a size (`ftruncate`, `truncate`, and `posix_fallocate`, which
 * Emscripten turns into an `ftruncate`), and the database's files have no other writer (db/connection.ts
 * holds a lock on the data directory, and PGlite is the only code that opens them). A write that fails forgets the size, and the next `lseek` asks the file again. Nodes are
 * Emscripten's, one per file while it exists (a rename moves the node, an unlink destroys it, a new file is a
 * new node), so the size is always that of the file that the stream has open.
 */
import type { PGlite } from "@electric-sql/pglite";

const SEEK_END = 2;
const EINVAL = 28;
const O_APPEND = 0o2000;

type Node = { mode: number; stream_ops: StreamOps; node_ops: NodeOps };
type Stream = { node: Node; flags: number };
type Attr = { size?: number };
type StreamOps = {
  llseek(stream: Stream, offset: number, whence: number): number;
  write(stream: Stream, buffer: Uint8Array, offset: number, length: number, position?: number): number;
  setattr(stream: Stream, attr: Attr): void;
};
type NodeOps = { setattr(node: Node, attr: Attr): void };
type EmscriptenFs = {
  lookupPath(path: string): { node: Node };
  isFile(mode: number): boolean;
  ErrnoError: new (errno: number) => Error;
};

/** Where PGlite mounts the data directory it was given (NODEFS) in its own file system. */
const DATA_MOUNT = "/pglite/data";

/**
 * The PGlite whose private file system (Emscripten's FS and NODEFS, reached through `db.Module`) this was
 * written for and tested against (tests/embedded_files_test.ts). Another version may keep the same names and
 * change what they do, so with any other the sizes are not kept: a PGlite upgrade re-reads the operations
 * wrapped here (NODEFS's `llseek`, `write` and both `setattr`s, and every other way a file's size changes),
 * runs that test, and then moves this.
 */
export const PGLITE_WRITTEN_FOR = "0.5.16";

/** Whether the sizes may be kept with PGlite `version` (null when it could not be read): only the one above. */
export function keepsFileSizesWith(version: string | null): boolean {
  return version === PGLITE_WRITTEN_FOR;
}

/**
 * The version of the PGlite package this process loaded, from the package.json beside its entry point (the
 * package exports no version of its own), or from the `npm:` specifier it resolves to; null when neither can be
 * read.
 */
export function loadedPgliteVersion(): string | null {
  try {
    const entry = import.meta.resolve("@electric-sql/pglite");
    const pinned = /^npm:\/?@electric-sql\/pglite@(\d+\.\d+\.\d+[^/]*)/.exec(entry);
    if (pinned) return pinned[1];
    if (!entry.startsWith("file:")) return null;
    // The entry point is dist/index.js: the package's own package.json is one directory up.
    const pkg = JSON.parse(Deno.readTextFileSync(new URL("../package.json", entry)));
    return pkg?.name === "@electric-sql/pglite" && typeof pkg.version === "string" ? pkg.version : null;
  } catch {
    return null; // no package.json beside it (a compiled binary, say): the version is unknown
  }
}

/** The operations already wrapped: each PGlite instance has a NODEFS of its own, wrapped once. */
const wrapped = new WeakSet<StreamOps>();

/** Why the sizes are not kept, said once per process (the database works as before, only slower). */
let toldWhyNot = false;
function off(reason: string, fields: Record<string, unknown> = {}): false {
  if (toldWhyNot) return false;
  toldWhyNot = true;
  let level = "info";
  try {
    level = Deno.env.get("LOG_LEVEL") ?? "info";
  } catch { /* no permission to read the environment: the default level */ }
  if (level === "debug" || level === "info") {
    console.error(JSON.stringify({
      time: new Date().toISOString(),
      level: "info",
      msg: "the embedded database's file sizes are not kept in the process (each is asked of the file)",
      reason,
      written_for: PGLITE_WRITTEN_FOR,
      ...fields,
    }));
  }
  return false;
}

/**
 * Keeps the sizes of the embedded database's files (above). Returns false, and changes nothing, when the
 * PGlite loaded is not the version this was written for (`version`, read from the package unless given), or
 * its file system is not the one expected (the data directory NODEFS's, the wrapped operations functions of
 * the arity they have there): the database then works as before, only without the saving, and the reason is
 * logged once.
 */
export function keepFileSizes(db: PGlite, version: string | null = loadedPgliteVersion()): boolean {
  if (!keepsFileSizesWith(version)) return off("another PGlite version", { pglite: version });
  const mod = db.Module as unknown as { FS?: EmscriptenFs; NODEFS?: { stream_ops?: StreamOps } };
  const fs = mod.FS;
  if (
    !fs || typeof fs.lookupPath !== "function" || typeof fs.isFile !== "function" ||
    typeof fs.ErrnoError !== "function"
  ) {
    return off("PGlite's module has no Emscripten file system of the expected shape");
  }
  let node: Node;
  try {
    node = fs.lookupPath(`${DATA_MOUNT}/PG_VERSION`).node;
  } catch {
    return off(`the data directory is not at ${DATA_MOUNT}`);
  }
  const streamOps = node.stream_ops;
  const nodeOps = node.node_ops;
  // The data directory must be NODEFS's (the host's files), whose operations every file of it shares.
  if (!streamOps || streamOps !== mod.NODEFS?.stream_ops) return off("the data directory is not NODEFS's");
  // The wrappers below take the same parameters, so a second call finds the same shape.
  const shaped = hasArity(streamOps.llseek, 3) && hasArity(streamOps.write, 5) &&
    hasArity(streamOps.setattr, 2) && hasArity(nodeOps?.setattr, 2);
  if (!shaped) return off("NODEFS's llseek, write or setattr takes other parameters");
  if (wrapped.has(streamOps)) return true;
  wrapped.add(streamOps);

  const { llseek, write, setattr } = streamOps;
  const setNodeAttr = nodeOps.setattr;
  const sizes = new WeakMap<Node, number>();
  streamOps.llseek = function (stream, offset, whence) {
    if (whence !== SEEK_END || !fs.isFile(stream.node.mode)) {
      return llseek.call(this, stream, offset, whence);
    }
    let size = sizes.get(stream.node);
    if (size === undefined) {
      size = llseek.call(this, stream, 0, SEEK_END);
      sizes.set(stream.node, size);
    }
    const position = size + offset;
    if (position < 0) throw new fs.ErrnoError(EINVAL);
    return position;
  };
  streamOps.write = function (stream, buffer, offset, length, position) {
    let written: number;
    try {
      written = write.call(this, stream, buffer, offset, length, position);
    } catch (err) {
      sizes.delete(stream.node);
      throw err;
    }
    const size = sizes.get(stream.node);
    // On an O_APPEND stream the system writes at the file's end whatever the position: ask the file again.
    if (typeof position !== "number" || (stream.flags & O_APPEND) !== 0) sizes.delete(stream.node);
    else if (size !== undefined && written > 0 && position + written > size) {
      sizes.set(stream.node, position + written);
    }
    return written;
  };
  // A `setattr` that sets a size (ftruncate through a stream, truncate through a path) forgets the file's.
  const forgettingSize = <T>(set: (target: T, attr: Attr) => void, nodeOf: (target: T) => Node) =>
    function (this: unknown, target: T, attr: Attr) {
      try {
        return set.call(this, target, attr);
      } finally {
        if (attr.size !== undefined) sizes.delete(nodeOf(target));
      }
    };
  streamOps.setattr = forgettingSize(setattr, (stream: Stream) => stream.node);
  nodeOps.setattr = forgettingSize(setNodeAttr, (target: Node) => target);
  return true;
}

/** A function taking `n` parameters, as the wrapped operation was declared in the PGlite written for. */
function hasArity(op: unknown, n: number): boolean {
  return typeof op === "function" && op.length === n;
}
