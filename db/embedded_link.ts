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
  readyState: "open" | "closed" = "open";
  /** Bytes written and not yet run (whole messages, and at most the start of one more). */
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  /** Write callbacks, called once what was written with them has run. */
  #callbacks: ((err?: Error) => void)[] = [];
  #scheduled = false;
  #running = false;
  #started = false;

  constructor(private readonly db: PGlite) {
    super();
  }

  write(chunk: Uint8Array, callback?: (err?: Error) => void): boolean {
    if (this.readyState !== "open") {
      const err = new Error("write after the embedded connection ended");
      if (callback) queueMicrotask(() => callback(err));
      return false;
    }
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    if (callback) this.#callbacks.push(callback);
    this.#schedule();
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

  #schedule(): void {
    if (this.#scheduled || this.#running) return;
    this.#scheduled = true;
    queueMicrotask(() => this.#run());
  }

  /**
   * Runs every whole message written so far in one call and hands the answer back as one chunk; then again,
   * while more was written meanwhile. One run at a time, so answers come back in the order of the writes.
   */
  async #run(): Promise<void> {
    this.#scheduled = false;
    this.#running = true;
    try {
      while (this.readyState === "open" && this.#pendingBytes > 0) {
        let bytes = this.#pending.length === 1 ? this.#pending[0] : Buffer.concat(this.#pending);
        const callbacks = this.#callbacks;
        this.#pending = [];
        this.#pendingBytes = 0;
        this.#callbacks = [];
        const out: Uint8Array[] = [];
        if (!this.#started) bytes = await this.#startup(bytes, out);
        const whole = completeLength(bytes);
        if (whole < bytes.length) {
          // The start of a message (the driver writes whole ones; this is only for safety): wait for the rest.
          this.#pending.unshift(bytes.subarray(whole));
          this.#pendingBytes += bytes.length - whole;
          bytes = bytes.subarray(0, whole);
        }
        if (bytes.length > 0) await this.#execute(bytes, out);
        for (const cb of callbacks) cb();
        for (const answer of out) {
          if (this.readyState !== "open") break;
          this.emit("data", Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength));
        }
      }
    } catch (err) {
      // PGlite answers a failed statement with an ErrorResponse; only a broken database throws here.
      await this.#close(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.#running = false;
    }
    if (this.readyState === "open" && this.#pendingBytes > 0) this.#schedule();
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
      if (length < 8 || bytes.length < length) break;
      if (code === SSL_REQUEST) {
        out.push(Uint8Array.of(0x4e)); // 'N'
      } else if (code === CANCEL_REQUEST) {
        queueMicrotask(() => this.#close());
        return new Uint8Array(0);
      } else {
        await this.#rollbackLeftover();
        await this.#execute(bytes.subarray(0, length), out);
        this.#started = true;
      }
      bytes = bytes.subarray(length);
    }
    if (this.#started) return bytes;
    this.#pending.unshift(bytes);
    this.#pendingBytes += bytes.length;
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
    this.#pending = [];
    this.#pendingBytes = 0;
    const callbacks = this.#callbacks;
    this.#callbacks = [];
    try {
      if (this.#started) await this.#rollbackLeftover();
    } catch { /* a broken database: the next link's startup finds out */ }
    for (const cb of callbacks) cb(err ?? new Error("the embedded connection ended"));
    if (err) this.emit("error", err);
    this.emit("close", err !== undefined);
  }
}

/** How many bytes of `bytes` are whole protocol messages (a type byte, then a length that counts itself). */
function completeLength(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (bytes.length - at >= 5) {
    const end = at + 1 + view.getInt32(at + 1);
    if (end > bytes.length) break;
    at = end;
  }
  return at;
}
