/**
 * Reads asked for in one turn of the event loop, sent to the database as one statement.
 *
 * A statement costs far more than a row: the driver builds and parses its messages, the server binds, runs
 * and syncs it, and on a shared core the two take turns for each. The token endpoint's client lookup is such a
 * statement (one row of a join): under load, the requests that reach it in the same turn share one. Each
 * statement leaves after every request it answers arrived, so it reads what was committed before each of them:
 * live as a statement of its own would be. Only the pool batches; a transaction's reads are its own.
 */
import { setImmediate } from "node:timers";
import { isTransaction, isUnavailable, type Sql } from "./connection.ts";

/** At most this many reads share a statement; more wait for the next. */
export const BATCH_MAX = 64;

type Waiting<K, R> = { key: K; resolve: (r: R | undefined) => void; reject: (e: unknown) => void };

/**
 * `read(sql, keys)` answers each key with a row (or undefined), in the keys' order, in one statement. The
 * function returned reads one key: on a transaction at once and alone, on the pool together with the other
 * keys asked for in the same turn of the event loop.
 */
export function batchedRead<K, R>(
  read: (sql: Sql, keys: K[]) => Promise<(R | undefined)[]>,
): (sql: Sql, key: K) => Promise<R | undefined> {
  const pending = new WeakMap<Sql, Waiting<K, R>[]>();
  const flush = (sql: Sql) => {
    const batch = pending.get(sql);
    if (!batch) return;
    pending.delete(sql);
    for (let i = 0; i < batch.length; i += BATCH_MAX) {
      const part = batch.slice(i, i + BATCH_MAX);
      read(sql, part.map((w) => w.key)).then(
        (rows) => part.forEach((w, j) => w.resolve(rows[j])),
        (err) => alone(sql, part, err),
      );
    }
  };
  /**
   * A shared statement that failed fails no request but the one that caused it: unless the database itself
   * cannot answer now (which each read alone would only meet again), every key of the batch is read again
   * in a statement of its own, and each request gets its own answer, or its own error.
   */
  const alone = (sql: Sql, part: Waiting<K, R>[], err: unknown) => {
    if (part.length === 1 || isUnavailable(err)) {
      for (const w of part) w.reject(err);
      return;
    }
    for (const w of part) read(sql, [w.key]).then((rows) => w.resolve(rows[0]), w.reject);
  };
  return (sql, key) => {
    if (isTransaction(sql)) {
      return read(sql, [key]).then((rows) => rows[0]);
    }
    return new Promise<R | undefined>((resolve, reject) => {
      let batch = pending.get(sql);
      if (!batch) {
        batch = [];
        pending.set(sql, batch);
        setImmediate(flush, sql);
      }
      batch.push({ key, resolve, reject });
    });
  };
}

/** A batch's rows (each with `n`, the 1-based ordinal of the key it answers) as answers in the keys' order. */
export function byOrdinal<R>(rows: (R & { n: number })[], count: number): (R | undefined)[] {
  const found: (R | undefined)[] = new Array(count);
  for (const { n, ...row } of rows) found[n - 1] = row as R;
  return found;
}
