/** Opens the database: a PostgreSQL server by DATABASE_URL, or an embedded PGlite reached over a Unix socket. */
import postgres from "postgres";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { join, resolve } from "node:path";

/** What query functions take: the pool, or a transaction opened on it. */
export type Sql = postgres.ISql<Record<string, never>>;
export type Tx = postgres.TransactionSql<Record<string, never>>;

/** Runs `fn` in a transaction: a new one on the pool, or a savepoint inside the caller's transaction. */
export function transaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const s = sql as Partial<postgres.Sql<Record<string, never>> & Tx>;
  if (typeof s.savepoint === "function") return s.savepoint(fn) as Promise<T>;
  return s.begin!(fn) as Promise<T>;
}

export type Database = {
  sql: postgres.Sql<Record<string, never>>;
  kind: "postgres" | "embedded";
  close(): Promise<void>;
};

type Options = { databaseUrl?: string; dataDir: string; poolSize: number };

const common = {
  onnotice: () => {},
  connect_timeout: 5,
  idle_timeout: 60,
};

export async function openDatabase(opts: Options): Promise<Database> {
  if (opts.databaseUrl) {
    const sql = postgres(opts.databaseUrl, { ...common, max: opts.poolSize });
    return { sql, kind: "postgres", close: () => sql.end({ timeout: 5 }) };
  }
  return await openEmbedded(opts.dataDir);
}

/**
 * PGlite is one database session, so postgres.js gets exactly one connection to it: with more, one
 * request's transaction would swallow another request's statements. That connection is never let go (no
 * idle timeout, no maximum lifetime), and the socket lives in a private 0700 directory: PGlite's socket
 * server has no authentication, so no other process may take the one connection. A lock file keeps a
 * second process from opening the same data directory, which PGlite itself does not prevent.
 */
async function openEmbedded(dataDir: string): Promise<Database> {
  const dir = resolve(dataDir);
  await Deno.mkdir(dir, { recursive: true });
  const lock = await Deno.open(join(dir, "service.lock"), { create: true, write: true });
  if (!(await lock.tryLock(true))) {
    lock.close();
    throw new Error(
      `the embedded database in ${dir} is in use by another process; ` +
        "run one instance per DATA_DIR, or set DATABASE_URL to share a PostgreSQL server",
    );
  }
  const db = await PGlite.create(join(dir, "pgdata"));
  // A Unix socket path is limited to about 107 bytes: under a deep DATA_DIR, a private temp dir instead.
  let socketDir = join(dir, "socket");
  const temporary = join(socketDir, ".s.PGSQL.5432").length > 100;
  if (temporary) socketDir = await Deno.makeTempDir({ prefix: "acs-pglite-" });
  else await Deno.mkdir(socketDir, { recursive: true });
  await Deno.chmod(socketDir, 0o700);
  const socketPath = join(socketDir, ".s.PGSQL.5432");
  // We hold the lock, so a socket file left here belongs to a process that is gone.
  await Deno.remove(socketPath).catch(() => {});
  const server = new PGLiteSocketServer({ db, path: socketPath });
  await server.start();
  const sql = postgres({
    ...common,
    host: socketDir,
    port: 5432,
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
      await server.stop();
      await db.close();
      if (temporary) await Deno.remove(socketDir, { recursive: true }).catch(() => {});
      await lock.unlock();
      lock.close();
    },
  };
}
