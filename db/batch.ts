/**
 * Reads asked for in one turn of the event loop, sent to the database as one statement.
 *
 * A statement costs far more than a row: the driver builds and parses its messages, the server binds, runs
 * and syncs it, and on a shared core the two take turns for each. The token endpoint's client lookup is such a
 * statement (one row of a join): under load, the requests that reach it in the same turn share one. Each
 * statement leaves after every request it answers arrived, so it reads what was committed before each of them:
 * live as a statement of its own would be. Only the pool batches; a transaction's reads are its own. A key
 * asked again in the same turn can be read once for all who asked (`same`): a gateway's token asking the same
 * question for a burst of requests costs one row.
 */
import { setImmediate } from "node:timers";
import { isTransaction, isUnavailable, type Sql } from "./connection.ts";

/** At most this many reads share a statement; more wait for the next. */
export const BATCH_MAX = 64;

type Waiting<R> = { resolve: (r: R | undefined) => void; reject: (e: unknown) => void };

/** A key of a batch and the requests waiting for its answer (more than one when the same key was asked twice). */
type Asked<K, R> = { key: K; waiting: Waiting<R>[] };

/**
 * `read(sql, keys)` answers each key with a row (or undefined), in the keys' order, in one statement. The
 * function returned reads one key: on a transaction at once and alone, on the pool together with the other
 * keys asked for in the same turn of the event loop.
 *
 * With `same`, a key asked again in the same turn (`same(key)` the same string) is read once and its answer
 * given to each request that asked: the same statement, parameters and snapshot would answer each the same,
 * and the statement still leaves after every one of them arrived. Such answers are shared objects: read-only.
 */
export function batchedRead<K, R>(
  read: (sql: Sql, keys: K[]) => Promise<(R | undefined)[]>,
  same?: (key: K) => string,
): (sql: Sql, key: K) => Promise<R | undefined> {
  const pending = new WeakMap<Sql, { asked: Asked<K, R>[]; byKey: Map<string, Asked<K, R>> | null }>();
  const flush = (sql: Sql) => {
    const batch = pending.get(sql);
    if (!batch) return;
    pending.delete(sql);
    const { asked } = batch;
    for (let i = 0; i < asked.length; i += BATCH_MAX) {
      const part = asked.slice(i, i + BATCH_MAX);
      read(sql, part.map((a) => a.key)).then(
        (rows) => {
          for (let j = 0; j < part.length; j++) for (const w of part[j].waiting) w.resolve(rows[j]);
        },
        (err) => alone(sql, part, err),
      );
    }
  };
  const rejectAll = (a: Asked<K, R>, err: unknown) => {
    for (const w of a.waiting) w.reject(err);
  };
  /**
   * A shared statement that failed fails no request but the one that caused it: unless the database itself
   * cannot answer now (which each read alone would only meet again), every key of the batch is read again
   * in a statement of its own, and each request gets its own answer, or its own error.
   */
  const alone = (sql: Sql, part: Asked<K, R>[], err: unknown) => {
    if (part.length === 1 || isUnavailable(err)) {
      for (const a of part) rejectAll(a, err);
      return;
    }
    for (const a of part) {
      read(sql, [a.key]).then((rows) => {
        for (const w of a.waiting) w.resolve(rows[0]);
      }, (e) => rejectAll(a, e));
    }
  };
  return (sql, key) => {
    if (isTransaction(sql)) {
      return read(sql, [key]).then((rows) => rows[0]);
    }
    return new Promise<R | undefined>((resolve, reject) => {
      let batch = pending.get(sql);
      if (!batch) {
        batch = { asked: [], byKey: same ? new Map() : null };
        pending.set(sql, batch);
        setImmediate(flush, sql);
      }
      const waiting = { resolve, reject };
      if (batch.byKey) {
        const k = same!(key);
        const known = batch.byKey.get(k);
        if (known) {
          known.waiting.push(waiting);
          return;
        }
        const a = { key, waiting: [waiting] };
        batch.byKey.set(k, a);
        batch.asked.push(a);
      } else batch.asked.push({ key, waiting: [waiting] });
    });
  };
}

/** A batch's rows (each with `n`, the 1-based ordinal of the key it answers) as answers in the keys' order. */
export function byOrdinal<R>(rows: (R & { n: number })[], count: number): (R | undefined)[] {
  const found: (R | undefined)[] = new Array(count);
  for (const { n, ...row } of rows) found[n - 1] = row as R;
  return found;
}
