/**
 * The embedded database's files are the host's, reached through Emscripten's NODEFS, and there PostgreSQL's
 * cheapest file operation is a costly one: the size of a relation (`lseek` to its end, which PostgreSQL does
 * at the start of every sequential or bitmap heap scan and for every relation and index it plans a statement
 * on) is a `node:fs` `fstatSync`, about 11 µs in Deno against under 1 µs for the system call, plus Emscripten's
 * wrappers. Under the admin-write load of `deno task bench` that was 7 % of the service thread's busy time.
 *
 * So each file's size is kept beside its Emscripten node once it has been asked for, and kept right: every
 * way PostgreSQL changes a file's size goes through NODEFS's `write` (which makes the file longer when it
 * writes past its end) or a `setattr` with a size (`ftruncate`, `truncate`), and the database's files have
 * no other writer (db/connection.ts holds a lock on the data directory, and PGlite is the only code that
 * opens them). A write that fails forgets the size, and the next `lseek` asks the file again. Nodes are
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

/** The operations already wrapped: each PGlite instance has a NODEFS of its own, wrapped once. */
const wrapped = new WeakSet<StreamOps>();

/**
 * Keeps the sizes of the embedded database's files (above). Returns false, and changes nothing, when PGlite's
 * file system is not the one this was written for (another version may mount or name it differently): the
 * database then works as before, only without the saving.
 */
export function keepFileSizes(db: PGlite): boolean {
  const mod = db.Module as unknown as { FS?: EmscriptenFs; NODEFS?: { stream_ops?: StreamOps } };
  const fs = mod.FS;
  if (!fs) return false;
  let node: Node;
  try {
    node = fs.lookupPath(`${DATA_MOUNT}/PG_VERSION`).node;
  } catch {
    return false;
  }
  const streamOps = node.stream_ops;
  const nodeOps = node.node_ops;
  // The data directory must be NODEFS's (the host's files), whose operations every file of it shares.
  if (!streamOps || streamOps !== mod.NODEFS?.stream_ops) return false;
  const ops = [streamOps.llseek, streamOps.write, streamOps.setattr, nodeOps?.setattr];
  if (ops.some((op) => typeof op !== "function")) return false;
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
