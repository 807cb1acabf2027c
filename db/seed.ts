/**
 * Unpacks the embedded database's seed (db/embedded/seed.tar.gz, an empty cluster as PGlite's initdb leaves it)
 * onto disk, without starting PGlite. PGlite's own `loadDataDir` unpacks the same tarball file by file into
 * the data directory, but only from inside a running instance: one more PostgreSQL start, whose WebAssembly
 * memory stays with the process (or, in a worker, partly with the process after the worker ends). Read as a
 * stream, a chunk at a time.
 */
import { dirname, join } from "node:path";

const SEED = new URL("./embedded/seed.tar.gz", import.meta.url);
const BLOCK = 512;

/** Reads a byte stream in the archive's units, copying only what straddles two of the stream's chunks. */
class Bytes {
  #reader: ReadableStreamDefaultReader<Uint8Array<ArrayBuffer>>;
  #pending = new Uint8Array(0);
  constructor(stream: ReadableStream<Uint8Array<ArrayBuffer>>) {
    this.#reader = stream.getReader();
  }
  async #fill(): Promise<boolean> {
    const { value, done } = await this.#reader.read();
    if (done) return false;
    if (this.#pending.length === 0) this.#pending = value;
    else {
      const joined = new Uint8Array(this.#pending.length + value.length);
      joined.set(this.#pending);
      joined.set(value, this.#pending.length);
      this.#pending = joined;
    }
    return true;
  }
  /** Exactly `n` bytes, or fewer at the stream's end. */
  async read(n: number): Promise<Uint8Array> {
    while (this.#pending.length < n && await this.#fill());
    return this.#take(n);
  }
  /** Between 1 and `n` bytes (what the stream has ready), or none at its end. */
  async some(n: number): Promise<Uint8Array> {
    if (this.#pending.length === 0) await this.#fill();
    return this.#take(n);
  }
  #take(n: number): Uint8Array {
    const out = this.#pending.subarray(0, n);
    this.#pending = this.#pending.subarray(out.length);
    return out;
  }
  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {}); // a reader that already failed or ended has nothing to cancel
  }
}

const decoder = new TextDecoder();
const text = (b: Uint8Array, at: number, len: number) => {
  const field = b.subarray(at, at + len);
  const end = field.indexOf(0);
  return decoder.decode(end < 0 ? field : field.subarray(0, end));
};
const octal = (b: Uint8Array, at: number, len: number) => {
  const s = text(b, at, len).trim();
  if (!/^[0-7]+$/.test(s)) throw new Error(`the seed's archive has a bad number field: ${JSON.stringify(s)}`);
  return parseInt(s, 8);
};

/** The entry's path below the data directory; anything that could leave it is refused. */
function entryPath(header: Uint8Array): string {
  const name = text(header, 0, 100);
  const prefix = text(header, 257, 6) === "ustar" ? text(header, 345, 155) : "";
  const parts = (prefix ? `${prefix}/${name}` : name).split("/").filter((p) => p !== "" && p !== ".");
  if (parts.length === 0 || parts.includes("..")) {
    throw new Error(`the seed's archive has an entry outside the data directory: ${JSON.stringify(name)}`);
  }
  return parts.join("/");
}

/** The header's checksum: the sum of its bytes, with the checksum field itself read as spaces. */
function checksumHolds(header: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i];
  return sum === octal(header, 148, 8);
}

/** Writes the archive's directories and regular files below `dest`; any other kind of entry is refused. */
async function untar(bytes: Bytes, dest: string): Promise<void> {
  for (;;) {
    const header = await bytes.read(BLOCK);
    if (header.length < BLOCK) throw new Error("the seed's archive ends in the middle of an entry");
    if (header.every((b) => b === 0)) return; // the end-of-archive block
    if (!checksumHolds(header)) throw new Error("the seed's archive has a damaged header");
    const path = join(dest, entryPath(header));
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156]);
    if (type === "5") {
      await Deno.mkdir(path, { recursive: true, mode: 0o700 });
      continue;
    }
    if (type !== "0" && type !== "\0") throw new Error(`the seed's archive has an entry of type ${type}`);
    await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
    try {
      for (let left = size; left > 0;) {
        const chunk = await bytes.some(left);
        if (chunk.length === 0) throw new Error("the seed's archive ends in the middle of a file");
        for (let written = 0; written < chunk.length;) written += await file.write(chunk.subarray(written));
        left -= chunk.length;
      }
    } finally {
      file.close();
    }
    const mtime = octal(header, 136, 12);
    await Deno.utime(path, mtime, mtime);
    await bytes.read((BLOCK - (size % BLOCK)) % BLOCK); // the padding to the next block
  }
}

/**
 * Unpacks the seed as `pgdata`, which must not exist, and returns true; false when this build has no seed
 * (then PGlite's initdb makes the cluster). Unpacked beside it first and renamed into place when complete, so
 * that a start cut off halfway leaves no data directory that looks made.
 */
export async function unpackSeed(pgdata: string): Promise<boolean> {
  let archive: Deno.FsFile;
  try {
    archive = await Deno.open(SEED);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
  const partial = `${pgdata}.partial`;
  // A partial unpack left by a start that stopped, usually none: mkdir below fails if one is still there.
  await Deno.remove(partial, { recursive: true }).catch(() => {});
  await Deno.mkdir(partial, { mode: 0o700 });
  const bytes = new Bytes(archive.readable.pipeThrough(new DecompressionStream("gzip")));
  try {
    await untar(bytes, partial);
  } finally {
    await bytes.cancel();
  }
  await Deno.rename(partial, pgdata);
  return true;
}
