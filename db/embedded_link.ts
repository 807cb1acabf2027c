/**
 * The embedded database's one connection, inside the process: postgres.js's `socket` option given an object
 * that speaks the wire protocol straight to PGlite, instead of a Unix socket to pglite-socket's server in the
 * same process. That server took every query through two `node:net` sockets (the driver's write, the
 * server's read, the server's write back, the driver's read) and ran each protocol message apart (Parse, Bind,
 * Execute and Sync each a call of its own behind a mutex and a promise). Here everything the driver wrote in
 * one turn of the event loop runs in one call, and its answer comes back as one chunk. And no other process
 * can reach the database: there is no socket to connect to.
 *
 * What the driver uses of a socket, and only that: `write`, `end`, `destroy`, `readyState`, the events
 * `data`, `error` and `close` (EventEmitter). The wire protocol is PostgreSQL's own, so the driver, its
 * statements, transactions and errors behave as over the socket.
 */
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import type { PGlite } from "@electric-sql/pglite";

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const TERMINATE = 0x58; // 'X'
/** A simple query `ROLLBACK`, sent when a connection ends inside a transaction. */
const ROLLBACK = (() => {
  const text = new TextEncoder().encode("ROLLBACK\0");
  const m = new Uint8Array(5 + text.length);
  m[0] = 0x51; // 'Q'
  new DataView(m.buffer).setInt32(1, 4 + text.length);
  m.set(text, 5);
  return m;
})();

/**
 * One connection of the driver to the embedded database. PGlite is one session, so only one such link may be
 * open at a time (the pool has `max: 1`); a new link after a closed one continues the same session, as a new
 * socket to pglite-socket's server did, and a transaction the closed one left open is rolled back first.
 */
export class EmbeddedLink extends EventEmitter {
  /** The started link of each database: PGlite is one session, so a second one is refused. */
  static readonly #sessions = new WeakMap<PGlite, EmbeddedLink>();

  readyState: "open" | "closed" = "open";
  /** Bytes written and not yet taken by a run, with the callbacks they were written with. */
  #pending: Uint8Array[] = [];
  #callbacks: Callback[] = [];
  /** The start of a message whose rest has not been written yet (the driver writes whole ones). */
  #partial: Uint8Array | null = null;
  /** The callbacks of the batch PGlite is running. */
  #running: Callback[] | null = null;
  #scheduled = false;
  #started = false;

  constructor(private readonly db: PGlite) {
    super();
  }

  write(chunk: Uint8Array, callback?: Callback): boolean {
    if (this.readyState !== "open") {
      const err = new Error("write after the embedded connection ended");
      if (callback) queueMicrotask(() => callback(err));
      return false;
    }
    this.#pending.push(chunk);
    if (callback) this.#callbacks.push(callback);
    if (!this.#scheduled && this.#running === null) {
      this.#scheduled = true;
      queueMicrotask(() => this.#run());
    }
    return true;
  }

  /** The driver ends with a Terminate message, which closes the link and goes no further. */
  end(chunk?: Uint8Array): this {
    if (chunk && chunk.length > 0 && chunk[0] !== TERMINATE) this.write(chunk);
    queueMicrotask(() => this.#close());
    return this;
  }

  destroy(err?: Error): this {
    this.#close(err);
    return this;
  }

  /**
   * Runs every whole message written so far in one call and hands the answer back as one chunk. One run at a
   * time, so answers come back in the order of the writes; what is written meanwhile runs next, after a turn
   * of the event loop (so that a steady stream of statements never starves the loop's I/O and timers).
   */
  async #run(): Promise<void> {
    this.#scheduled = false;
    if (this.readyState !== "open" || this.#pending.length === 0) return;
    const chunks = this.#partial ? [this.#partial, ...this.#pending] : this.#pending;
    let bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    const callbacks = this.#callbacks;
    this.#pending = [];
    this.#callbacks = [];
    this.#partial = null;
    this.#running = callbacks;
    const out: Uint8Array[] = [];
    try {
      if (!this.#started) bytes = await this.#startup(bytes, out);
      const whole = completeLength(bytes);
      if (whole < bytes.length) this.#partial = bytes.slice(whole);
      if (whole > 0 && this.readyState === "open") await this.#execute(bytes.subarray(0, whole), out);
    } catch (err) {
      // PGlite answers a failed statement with an ErrorResponse: only a broken database or a malformed message
      // throws here.
      await this.#close(err instanceof Error ? err : new Error(String(err)));
      return;
    } finally {
      this.#running = null;
    }
    for (const cb of callbacks) call(cb);
    for (const answer of out) {
      if (this.readyState !== "open") return;
      this.emit("data", Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength));
    }
    if (this.readyState === "open" && this.#pending.length > 0 && !this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#run());
    }
  }

  /**
   * The first packet of a connection has no type byte: a startup message, which PGlite answers; a cancel
   * request, which PGlite cannot act on (one session, nothing runs beside it) and which ends the link, as it
   * ends the connection that sent it; or an SSL request, answered "no" (nothing leaves the process). Returns
   * what follows the startup message, or nothing while it is incomplete.
   */
  async #startup(bytes: Uint8Array, out: Uint8Array[]): Promise<Uint8Array> {
    while (!this.#started && bytes.length >= 8) {
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const length = view.getInt32(0);
      const code = view.getInt32(4);
      if (length < 8) {
        throw new Error(`a malformed start-up packet (length ${length}) on the embedded connection`);
      }
      if (bytes.length < length) break;
      if (code === SSL_REQUEST) {
        out.push(Uint8Array.of(0x4e)); // 'N'
      } else if (code === CANCEL_REQUEST) {
        queueMicrotask(() => this.#close());
        return new Uint8Array(0);
      } else {
        const other = EmbeddedLink.#sessions.get(this.db);
        if (other && other !== this && other.readyState === "open") {
          throw new Error("the embedded database is one session, and another connection holds it");
        }
        EmbeddedLink.#sessions.set(this.db, this);
        await this.#rollbackLeftover();
        await this.#execute(bytes.subarray(0, length), out);
        this.#started = true;
      }
      bytes = bytes.subarray(length);
    }
    if (this.#started) return bytes;
    if (bytes.length > 0) this.#partial = bytes.slice();
    return new Uint8Array(0);
  }

  /**
   * Runs `messages` and adds PGlite's answer to `out`, copied out of its memory, which the next call reuses.
   * `execProtocolRawStream` hands the raw answer over as it is written; `execProtocolRawSync` would also parse
   * it into a result list of PGlite's own that nothing here reads. Its file-system sync is left out: PGlite's
   * NodeFS writes through to the data directory, and its `syncToFs` does nothing.
   */
  async #execute(messages: Uint8Array, out: Uint8Array[]): Promise<void> {
    const parts: Uint8Array[] = [];
    await this.db.execProtocolRawStream(messages, {
      syncToFs: false,
      onRawData: (bytes) => parts.push(bytes.slice()),
    });
    if (parts.length === 1) out.push(parts[0]);
    else if (parts.length > 1) out.push(Buffer.concat(parts));
  }

  /** A transaction left open by a link that ended mid-way is not the next connection's: roll it back. */
  async #rollbackLeftover(): Promise<void> {
    if (this.db.isInTransaction()) await this.#execute(ROLLBACK, []);
  }

  async #close(err?: Error): Promise<void> {
    if (this.readyState === "closed") return;
    this.readyState = "closed";
    const callbacks = [...(this.#running ?? []), ...this.#callbacks];
    this.#pending = [];
    this.#callbacks = [];
    this.#partial = null;
    if (EmbeddedLink.#sessions.get(this.db) === this) {
      EmbeddedLink.#sessions.delete(this.db);
      try {
        await this.#rollbackLeftover();
      } catch { /* a broken database: the next link's startup finds out */ }
    }
    const ended = err ?? new Error("the embedded connection ended");
    for (const cb of callbacks) call(cb, ended);
    if (err) this.emit("error", err);
    this.emit("close", err !== undefined);
  }
}

type Callback = (err?: Error) => void;

/** A write callback's failure is the writer's: it must not end the link after its statements ran. */
function call(cb: Callback, err?: Error): void {
  try {
    cb(err);
  } catch { /* the writer's own */ }
}

/**
 * How many bytes of `bytes` are whole protocol messages (a type byte, then a length that counts itself and is
 * at least 4). A smaller length is no message of the protocol: the link ends rather than misread what follows.
 */
function completeLength(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (bytes.length - at >= 5) {
    const length = view.getInt32(at + 1);
    if (length < 4) throw new Error(`a malformed message (length ${length}) on the embedded connection`);
    if (at + 1 + length > bytes.length) break;
    at += 1 + length;
  }
  return at;
}
