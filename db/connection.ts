/**
 * Opens the database: a PostgreSQL server by DATABASE_URL (directly or behind a pooler), or an embedded PGlite
 * reached through a link inside the process (db/embedded_link.ts). Also the retry rules for transient failures:
 * transactions PostgreSQL rolled back as a conflict run again, and idempotent reads run again on a new
 * connection when theirs dropped.
 */
import postgres from "postgres";
import { join, resolve } from "node:path";
import { EmbeddedLink } from "./embedded_link.ts";
import { defaultCacheDir, makeCluster, processEnv } from "./seed.ts";

/** What query functions take: the pool, or a transaction opened on it. */
export type Sql = postgres.ISql<Record<string, never>>;
export type Tx = postgres.TransactionSql<Record<string, never>>;

/** How often a transaction or a read runs at most (the first run included). */
export const TRANSACTION_ATTEMPTS = 4;
export const READ_ATTEMPTS = 3;

/**
 * Serialization failure and deadlock: PostgreSQL rolled the whole transaction back and asks the client to run
 * it again. Nothing of it was applied, so running all of it again is safe.
 */
const CONFLICT = new Set(["40001", "40P01"]);

/** SQLSTATEs of a connection that went away: connection exceptions (08), shutdown or restart (57P01-3). */
const CONNECTION_LOST_STATE = /^(08|57P0[1-3])/;
/**
 * postgres.js's and the socket's codes for a connection that went away or could not be made. Not
 * CONNECT_TIMEOUT (its wait already took the connect timeout) nor CONNECTION_ENDED (the pool was closed by us).
 */
const CONNECTION_LOST_CODE = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
]);

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" ? code : "";
}

/** A serialization failure or deadlock: the transaction was rolled back whole. */
export function isConflict(err: unknown): boolean {
  return err instanceof postgres.PostgresError && CONFLICT.has(err.code);
}

/** The connection under a statement was lost (or none could be had); a new one may well work. */
export function isConnectionLoss(err: unknown): boolean {
  if (err instanceof postgres.PostgresError) return CONNECTION_LOST_STATE.test(err.code);
  return CONNECTION_LOST_CODE.has(codeOf(err));
}

/**
 * The database cannot answer now, whatever was asked: the connection went away or could not be had, the server
 * is short of resources or shutting down (53, 57P0x), or a deadline passed (57014, the wait for a connection,
 * the answer deadline). Running the same statement again at once, or another statement, would meet the same.
 */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof postgres.PostgresError) return /^(08|53|57)/.test(err.code);
  return isConnectionLoss(err) || DEADLINE_CODES.has(codeOf(err)) || codeOf(err) === "CONNECTION_ENDED";
}

/** The driver's codes for a deadline that passed: connecting, waiting for a connection, or for an answer. */
export const DEADLINE_CODES = new Set(["CONNECT_TIMEOUT", "QUEUE_TIMEOUT", "STATEMENT_TIMEOUT"]);

/** Whether `sql` is a transaction (or a savepoint in one) rather than the pool: only those can open savepoints. */
export function isTransaction(sql: Sql): sql is Tx {
  return typeof (sql as Partial<Tx>).savepoint === "function";
}

/** Jittered exponential backoff: about 20, 40, 80 ms (full jitter), so that retrying peers spread out. */
function backoff(attempt: number): Promise<void> {
  const ms = Math.random() * 20 * 2 ** (attempt - 1) + 5;
  return new Promise((r) => setTimeout(r, ms));
}

/** The statements each transaction opened by `transaction()` sent without waiting for their answers. */
const unawaited = new WeakMap<object, Promise<unknown>[]>();

/**
 * Sends a statement of a transaction opened by `transaction()` without waiting for its answer: it travels in
 * one write with the statements after it, COMMIT included, which saves a round trip when it is the last one
 * (an audit event). Its outcome is checked once the transaction has ended, and a failure fails the
 * transaction, which PostgreSQL then rolled back whole. Anywhere else (the pool, a savepoint) it is awaited.
 */
export async function sendWithCommit(sql: Sql, statement: () => Promise<unknown>): Promise<void> {
  const sent = unawaited.get(sql);
  if (!sent) {
    await statement();
    return;
  }
  const pending = statement();
  pending.catch(() => {}); // checked by `transaction` once the COMMIT is answered
  sent.push(pending);
}

/**
 * Runs `fn` in a transaction: a new one on the pool, or a savepoint inside the caller's transaction. A new
 * transaction that PostgreSQL rolled back as a conflict (40001, 40P01), or whose connection was lost before
 * COMMIT was sent, runs again from the start, up to TRANSACTION_ATTEMPTS times: in both cases nothing of it
 * was applied. A connection lost during COMMIT is not retried (the outcome is unknown), and a savepoint is
 * never retried alone: the conflict aborted the enclosing transaction, whose own runner retries it.
 * `fn` must therefore keep its effects inside the transaction (it may run more than once).
 */
export async function transaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (isTransaction(sql)) return await (sql.savepoint(fn) as Promise<T>);
  const s = sql as postgres.Sql<Record<string, never>>;
  for (let attempt = 1;; attempt++) {
    let committing = false;
    const sent: Promise<unknown>[] = [];
    try {
      const result = await (s.begin(async (tx) => {
        unawaited.set(tx, sent);
        const result = await fn(tx);
        committing = true;
        return result;
      }) as Promise<T>);
      // A statement sent without waiting that failed aborted the transaction, so PostgreSQL answered its COMMIT
      // with ROLLBACK: nothing was written, and its error is the transaction's (a conflict runs it again).
      await Promise.all(sent);
      return result;
    } catch (err) {
      const again = isConflict(err) || (!committing && isConnectionLoss(err));
      if (!again || attempt >= TRANSACTION_ATTEMPTS) throw err;
      await backoff(attempt);
    }
  }
}

/**
 * Runs an idempotent read, again on a new connection when its connection was lost under it (a pooler or
 * server restart, an idle connection cut by the network), up to READ_ATTEMPTS times. Only for reads: a write
 * whose connection dropped may or may not have been applied, so it is never run again outside a transaction.
 */
export async function retryRead<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(isConnectionLoss(err) || isConflict(err)) || attempt >= READ_ATTEMPTS) throw err;
      await backoff(attempt);
    }
  }
}

/**
 * Runs one autocommit statement that writes (a throttle counter, a webhook claim) again when PostgreSQL rolled
 * it back as a conflict (40001, 40P01), up to TRANSACTION_ATTEMPTS times: a statement outside a transaction is
 * its own transaction, and PostgreSQL rolled all of it back, so nothing of it was applied. A lost connection
 * is not retried (the write may or may not have been applied), and neither is a statement inside the caller's
 * transaction (`sql` a transaction): the conflict aborted that transaction, whose own runner retries it.
 */
export async function retryConflict<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
  if (isTransaction(sql)) return await fn();
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isConflict(err) || attempt >= TRANSACTION_ATTEMPTS) throw err;
      await backoff(attempt);
    }
  }
}

export type Database = {
  sql: postgres.Sql<Record<string, never>>;
  kind: "postgres" | "embedded";
  close(): Promise<void>;
};

export type DatabaseOptions = {
  databaseUrl?: string;
  dataDir: string;
  poolSize: number;
  /** Statements outside a transaction pipelined on one connection before another is taken (0: off). */
  pipelineDepth?: number;
  /** The connections' `application_name` (the driver's `postgres.js`, or PGAPPNAME, when omitted). */
  applicationName?: string;
  /** `transaction`: behind a transaction-mode pooler (PgBouncer), so no named prepared statements. */
  pooler?: "none" | "session" | "transaction";
  /**
   * The embedded database: where the initialised cluster of each PGlite version is cached (db/seed.ts);
   * EMBEDDED_CACHE_DIR, XDG_CACHE_HOME or HOME of the process's environment when omitted.
   */
  clusterCacheDir?: string;
  /** Told what making a new embedded database could not do as usual (an unusable or unwritable cache). */
  onWarning?: (message: string) => void;
  /** Bounds on every wait for the database (`Deadlines`); none when omitted. */
  deadlines?: Deadlines;
  /**
   * Told each statement's text and duration (ms) once it is answered or failed, with its error and the context
   * `statementContext` gave when it was issued (telemetry/statements.ts); never its parameters.
   */
  onStatement?: (statement: string, durationMs: number, error?: unknown, context?: unknown) => void;
  /** Called where a statement is issued, in its caller's context (the request's trace span). */
  statementContext?: () => unknown;
};

/**
 * How long a request may wait for the database, in seconds. `statement`: the server's `statement_timeout` on a
 * direct connection (a pooler refuses startup parameters, so behind one only the next bound holds), and the
 * answer deadline: a statement unanswered a second past it is cancelled through the server's cancel request
 * (the pooler forwards it), and its connection given up when not even that is answered as long again.
 * `queue`: how long a statement or transaction may wait for a free connection; past it, it fails without
 * having run. Every one of these answers 503 `system_error` with `Retry-After` (routes/errors.ts).
 */
export type Deadlines = { statement: number; queue: number };

function deadlineOptions(d: Deadlines | undefined) {
  if (!d) return {};
  return { queue_timeout: d.queue * 1000, statement_deadline: d.statement * 1000 + 1000 };
}

/**
 * A direct connection's startup parameters (a pooler refuses them): the statement deadline, and generic plans
 * for the prepared statements. The service's statements are fixed texts whose parameters never change which
 * index serves them (no `$n is null or …` that a custom plan would fold away), and the gate's batched statement
 * takes its parameters as arrays, whose length a custom plan knows and a generic one does not, so PostgreSQL's
 * own choice is to plan it afresh at every execution: a third of the server's time on an AuthZEN decision.
 */
function startupParameters(d: Deadlines | undefined, genericPlans: boolean): Record<string, string | number> {
  return {
    ...(genericPlans ? { plan_cache_mode: "force_generic_plan" } : {}),
    ...(d ? { statement_timeout: d.statement * 1000 } : {}),
  };
}

/** The driver's statement hooks (patches 10 and 11), when given. */
const hooks = (o: Pick<DatabaseOptions, "onStatement" | "statementContext">) => ({
  ...(o.onStatement ? { on_statement: o.onStatement } : {}),
  ...(o.statementContext ? { statement_context: o.statementContext } : {}),
});

const common = {
  onnotice: () => {},
  connect_timeout: 5,
  idle_timeout: 60,
};

/**
 * A pool on a PostgreSQL server. Behind a transaction-mode pooler consecutive statements may reach different
 * server connections, so nothing may live in a session: no named prepared statements (`prepare: false`), and
 * the service itself uses no SET, LISTEN, temporary tables or session-level advisory locks.
 *
 * `pipelineDepth` (vendor/postgres/README.md): a statement outside a transaction joins the connection that took
 * the statement before, while that one has fewer than this many in flight and has been on its current
 * statement for less than 2 ms, instead of waking an idle one. Statements issued together then leave in one
 * write and are answered by one server process in turn, which costs both sides fewer system calls and context
 * switches; a slow statement takes no more behind it once it has run 2 ms. Transactions still take connections
 * of their own, so `max` bounds how many commits wait on the disk at once. Off (0) unless given.
 */
export function connectServer(
  url: string,
  opts: {
    max: number;
    pooler?: DatabaseOptions["pooler"];
    pipelineDepth?: number;
    /** The connections' `application_name`, a startup parameter every pooler passes on (PgBouncer tracks it). */
    applicationName?: string;
    /** How long a statement may have run and still take more behind it (ms, default 2); tests set it apart. */
    pipelineWait?: number;
    deadlines?: Deadlines;
    onStatement?: DatabaseOptions["onStatement"];
    statementContext?: DatabaseOptions["statementContext"];
    /**
     * The service's pool: generic plans (startupParameters). Not the short-lived connection that runs the
     * migrations, which sends no startup parameter at all (as before), wherever DATABASE_DIRECT_URL points.
     */
    genericPlans?: boolean;
  },
): Database["sql"] {
  const connection = {
    ...((opts.pooler ?? "none") === "none"
      ? startupParameters(opts.deadlines, opts.genericPlans ?? false)
      : {}),
    ...(opts.applicationName ? { application_name: opts.applicationName } : {}),
  };
  return postgres(url, {
    ...common,
    ...hooks(opts),
    ...deadlineOptions(opts.deadlines),
    ...(Object.keys(connection).length > 0 ? { connection } : {}),
    max: opts.max,
    prepare: opts.pooler !== "transaction",
    pipeline_depth: opts.pipelineDepth ?? 0,
    pipeline_wait: opts.pipelineWait ?? 2,
  }) as Database["sql"];
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.databaseUrl) {
    const sql = connectServer(opts.databaseUrl, {
      max: opts.poolSize,
      pooler: opts.pooler,
      pipelineDepth: opts.pipelineDepth,
      applicationName: opts.applicationName,
      deadlines: opts.deadlines,
      onStatement: opts.onStatement,
      statementContext: opts.statementContext,
      genericPlans: true,
    });
    return { sql, kind: "postgres", close: () => sql.end({ timeout: 5 }) };
  }
  return await openEmbedded(opts.dataDir, opts.deadlines, opts, opts);
}

/** host:port/database of a postgres:// URL, never its credentials: for messages. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return "(an unparsable URL)"; // for a message only: the connection itself reports what is wrong
  }
}

/**
 * Waits until the database answers `select 1`, trying again while it cannot be reached, for at most
 * `timeoutSeconds`; then throws one readable error. Refusals that waiting cannot cure (a wrong password, a
 * database that does not exist) throw at once.
 */
export async function waitForDatabase(
  sql: Sql,
  opts: { timeoutSeconds: number; what: string },
): Promise<void> {
  const started = performance.now();
  const deadline = started + opts.timeoutSeconds * 1000;
  for (let attempt = 1;; attempt++) {
    try {
      await sql`select 1`;
      return;
    } catch (err) {
      const transient = isConnectionLoss(err) || codeOf(err) === "CONNECT_TIMEOUT" ||
        ["ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "53300"].includes(codeOf(err));
      const message = err instanceof Error ? err.message : String(err);
      if (/unsupported startup parameter/.test(message)) {
        // PgBouncer refuses the server-side statement_timeout that a direct connection sends.
        throw new Error(
          `the database at ${opts.what} is behind a pooler that refuses startup parameters (${message}): ` +
            "set DATABASE_POOLER=transaction (or session) to match it",
        );
      }
      if (!transient) throw new Error(`the database at ${opts.what} refused the service: ${message}`);
      const wait = Math.min(2000, 250 * 2 ** (attempt - 1));
      if (performance.now() + wait >= deadline) {
        const seconds = ((performance.now() - started) / 1000).toFixed(1);
        throw new Error(
          `cannot reach the database at ${opts.what} (tried ${attempt} times in ${seconds} s): ${message}`,
        );
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/** PGlite's own start parameters (its `defaultStartParams`), kept when ours are added. */
const PGLITE_START = [
  "--single",
  "-F",
  "-O",
  "-j",
  ...["-c", "search_path=public", "-c", "exit_on_error=false", "-c", "log_checkpoints=false"],
  ...["-c", "max_worker_processes=0", "-c", "max_parallel_workers=0"],
  ...[
    "-c",
    "max_parallel_workers_per_gather=0",
    "-c",
    "io_method=sync",
    "-c",
    "max_parallel_maintenance_workers=0",
  ],
];

/**
 * One session serves one process, and PGlite's WebAssembly memory only grows: what PostgreSQL allocates once
 * stays in the process for good. So 8 MB of shared buffers (the default 128 MB is sized for a server; the
 * embedded database's pages are in the OS page cache anyway), a handful of connection slots, and small
 * working memory for sorts (2 MB), temporary tables (2 MB) and index builds during migrations (4 MB).
 * Measured against 16 MB of buffers and PostgreSQL's other defaults: RSS right after a first start 233 MB
 * instead of 240-263 MB, peak RSS under the token load 225 MB instead of 235-241 MB, same throughput
 * (docs/performance.md, Memory).
 */
const EMBEDDED_SETTINGS = [
  ...["-c", "shared_buffers=8MB", "-c", "max_connections=8"],
  ...["-c", "work_mem=2MB", "-c", "temp_buffers=2MB", "-c", "maintenance_work_mem=4MB"],
  // As on a direct connection (startupParameters): plan each prepared statement once.
  ...["-c", "plan_cache_mode=force_generic_plan"],
];

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false; // absent, or not reachable by this process: either way not there to use
  }
}

/** Directories 0700 and files 0600 below `dir` (itself included), so no other local user reads the data. */
async function ownerOnly(dir: string): Promise<void> {
  await Deno.chmod(dir, 0o700);
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isSymlink) continue;
    if (entry.isDirectory) await ownerOnly(path);
    else await Deno.chmod(path, 0o600);
  }
}

/**
 * PGlite is one database session, so postgres.js gets exactly one connection to it: with more, one
 * request's transaction would swallow another request's statements. That connection is never let go (no
 * idle timeout, no maximum lifetime), and it is a link inside the process, not a socket, so no other process
 * can connect at all. A lock file keeps a second process from opening the same data directory, which PGlite
 * itself does not prevent. PGlite is imported only here, so that a service on a PostgreSQL server never loads
 * it (a faster cold start, and nothing that needs a writable disk).
 */
async function openEmbedded(
  dataDir: string,
  deadlines?: Deadlines,
  statementHooks: Pick<DatabaseOptions, "onStatement" | "statementContext"> = {},
  making: Pick<DatabaseOptions, "clusterCacheDir" | "onWarning"> = {},
): Promise<Database> {
  const dir = resolve(dataDir);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  await Deno.chmod(dir, 0o700);
  const lock = await Deno.open(join(dir, "service.lock"), { create: true, write: true });
  if (!(await lock.tryLock(true))) {
    lock.close();
    throw new Error(
      `the embedded database in ${dir} is in use by another process; ` +
        "run one instance per DATA_DIR, or set DATABASE_URL to share a PostgreSQL server",
    );
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const pgdata = join(dir, "pgdata");
  if (!(await exists(join(pgdata, "PG_VERSION")))) {
    if (await exists(pgdata)) {
      throw new Error(
        `${pgdata} holds no database (it has no PG_VERSION): remove it to create a new one, or set another DATA_DIR`,
      );
    }
    const made = await makeCluster(pgdata, making.clusterCacheDir ?? defaultCacheDir(processEnv()));
    if (made.warning) (making.onWarning ?? console.warn)(made.warning);
  }
  const db = await PGlite.create(pgdata, { startParams: [...PGLITE_START, ...EMBEDDED_SETTINGS] });
  // PGlite creates its files 0666 and directories 0755 whatever the umask: make the whole tree its owner's.
  await ownerOnly(dir);
  // The one connection is a link inside the process (db/embedded_link.ts): no socket, so no other process
  // can reach the database, and a query costs no socket round trip.
  const sql = postgres({
    ...common,
    socket: () => new EmbeddedLink(db),
    ...hooks(statementHooks),
    // PGlite runs a statement to its end inside this process (nothing can interrupt it), so only the wait
    // for the one connection is bounded: a long transaction or job holding it answers the others 503.
    ...(deadlines ? { queue_timeout: deadlines.queue * 1000 } : {}),
    username: "postgres",
    database: "postgres",
    max: 1,
    idle_timeout: 0,
    max_lifetime: 0,
  });
  return {
    sql,
    kind: "embedded",
    close: async () => {
      await sql.end({ timeout: 5 });
      await db.close();
      await lock.unlock();
      lock.close();
    },
  };
}
