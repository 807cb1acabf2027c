/**
 * config → database → migrations and bootstrap → app, served two ways:
 * - `deno task start` (`deno run … main.ts --listen`, a compiled binary): starts at once and listens with
 *   Deno.serve on HOST:PORT, in a thread of its own whose JavaScript heap is bounded by the configuration
 *   (HEAP_YOUNG_GENERATION_MB, HEAP_LIMIT_MB) rather than by command-line flags;
 * - `deno serve main.ts` and Deno Deploy: the default export's `fetch`, which starts the service on the first
 *   request and hands every request to it.
 */
import process from "node:process";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { type Config, loadConfig } from "./config.ts";
import { connectServer, type Database, describeUrl, openDatabase, waitForDatabase } from "./db/connection.ts";
import { migrate } from "./db/migrate.ts";
import { bootstrap, type BootstrapResult } from "./domain/bootstrap.ts";
import { KeyVault } from "./domain/key_vault.ts";
import type { KeySettings } from "./domain/keys.ts";
import { TokenService } from "./domain/tokens.ts";
import { jobsOf, startJobs } from "./jobs.ts";
import { SYSTEM_ADMIN_CLIENT_ID } from "./openapi/projects.ts";
import { createApp } from "./routes/app.ts";
import type { Logger } from "./log.ts";
import type { App } from "./routes/env.ts";

/** The service with its database, ready to answer requests, and not yet listening. */
export type OpenedService = {
  app: App;
  db: Database;
  close(): Promise<void>;
};

export type Service = OpenedService & {
  /** The address the server listens on, e.g. http://127.0.0.1:8000. */
  url: string;
};

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;

/** The signing keys' settings from the configuration. */
export function keySettings(config: Config): KeySettings {
  return {
    alg: config.signingAlg,
    rotationDays: config.signingKeyRotationDays,
    accessTokenTtl: config.accessTokenTtl,
    vault: config.keyEncryptionKey ? new KeyVault(config.keyEncryptionKey) : null,
  };
}

export function createLogger(level: Config["logLevel"]): Logger {
  const at = (l: keyof typeof LEVELS) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[l] < LEVELS[level]) return;
    console.error(JSON.stringify({ time: new Date().toISOString(), level: l, msg, ...fields }));
  };
  return { error: at("error"), warn: at("warn"), info: at("info") };
}

const operatorOf = (c: Config) => ({ email: c.bootstrapAdminEmail, password: c.bootstrapAdminPassword });

/**
 * Migrations and bootstrap, under one transaction-level advisory lock each (which, unlike a session lock, also
 * holds through a transaction-mode pooler), so instances starting together on one database apply them once.
 * With DATABASE_DIRECT_URL they run on a short-lived direct connection instead of the pool.
 */
async function prepareDatabase(config: Config, db: Database, keys: KeySettings): Promise<BootstrapResult> {
  if (!config.databaseDirectUrl) {
    await migrate(db.sql);
    return await bootstrap(db.sql, config.bootstrapAdminSecret, keys, operatorOf(config));
  }
  const direct = connectServer(config.databaseDirectUrl, { max: 1 });
  try {
    await waitForDatabase(direct, {
      timeoutSeconds: config.databaseStartTimeout,
      what: `${describeUrl(config.databaseDirectUrl)} (DATABASE_DIRECT_URL)`,
    });
    await migrate(direct);
    return await bootstrap(direct, config.bootstrapAdminSecret, keys, operatorOf(config));
  } finally {
    await direct.end({ timeout: 5 });
  }
}

/** Opens the database (waiting a bounded time for it), migrates, bootstraps and builds the app. */
export async function openService(config: Config, opts: { quiet?: boolean } = {}): Promise<OpenedService> {
  const log = createLogger(config.logLevel);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
    pooler: config.databasePooler,
  });
  try {
    if (config.databaseUrl) {
      await waitForDatabase(db.sql, {
        timeoutSeconds: config.databaseStartTimeout,
        what: `${describeUrl(config.databaseUrl)} (DATABASE_URL)`,
      });
    }
    const keys = keySettings(config);
    const boot = await prepareDatabase(config, db, keys);
    if (!opts.quiet) printBootstrap(boot, config);
    for (const project of boot.clashes) {
      log.warn(
        "a resource of the project has the code of a default resource; that default is missing there",
        {
          project_id: project,
        },
      );
    }
    const tokens = new TokenService(db.sql, config.publicUrl, config.accessTokenTtl, keys.vault);
    const app = createApp({ sql: db.sql, tokens, keys, config, log });
    const jobs = startJobs(db.sql, jobsOf(db.sql, keys, config, tokens), log);
    return {
      app,
      db,
      close: async () => {
        await jobs.stop();
        await db.close();
      },
    };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

/** Opens the service and serves it with Deno.serve on HOST:PORT. `quiet` leaves out the first-start banner. */
export async function startService(config: Config, opts: { quiet?: boolean } = {}): Promise<Service> {
  const opened = await openService(config, opts);
  const log = createLogger(config.logLevel);
  try {
    const server = Deno.serve(
      { port: config.port, hostname: config.host, onListen: () => {} },
      opened.app.fetch,
    );
    const host = server.addr.hostname === "0.0.0.0" ? "127.0.0.1" : server.addr.hostname;
    const url = `http://${host.includes(":") ? `[${host}]` : host}:${server.addr.port}`;
    log.info("listening", { url, public_url: config.publicUrl, database: opened.db.kind });
    return {
      ...opened,
      url,
      close: async () => {
        await server.shutdown();
        await opened.close();
      },
    };
  } catch (err) {
    await opened.close().catch(() => {});
    throw err;
  }
}

function printBootstrap(boot: BootstrapResult, config: Config) {
  printConsole(boot, config);
  if (!boot.created) return;
  const secretLine = boot.generated
    ? `  client_secret: ${boot.secret}\n\n  This secret is shown once. Keep it; rotate it with POST ` +
      `/api/v1/projects/system/clients/${SYSTEM_ADMIN_CLIENT_ID}/secret.`
    : "  client_secret: the value of BOOTSTRAP_ADMIN_SECRET";
  console.log(`
First start: created the system project and its admin client.
  client_id:     ${SYSTEM_ADMIN_CLIENT_ID}
${secretLine}

What next:
  curl -s -u '${SYSTEM_ADMIN_CLIENT_ID}:<client_secret>' -d grant_type=client_credentials ${config.publicUrl}/api/v1/tokens
  then create a project with POST ${config.publicUrl}/api/v1/projects (see ${config.publicUrl}/docs).
`);
}

/** The console's address, and the first operator's one-time setup link when this start made one. */
function printConsole(boot: BootstrapResult, config: Config) {
  console.log(`Admin console: ${config.publicUrl}/console`);
  if (!boot.operator.created) return;
  console.log(
    boot.operator.setupToken
      ? `First operator ${boot.operator.email}: choose a password within an hour at\n  ` +
        `${config.publicUrl}/console/setup?token=${boot.operator.setupToken}`
      : `First operator ${boot.operator.email}: sign in at ${config.publicUrl}/console`,
  );
}

const failed = (err: unknown) => `failed to start: ${err instanceof Error ? err.message : err}`;

/** Parses the configuration of this process, or ends it naming every bad variable. */
function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    console.error(failed(err));
    Deno.exit(1);
  }
}

/**
 * The lazily started service behind the default export. Concurrent first requests wait for one start; a start
 * that fails answers 503 and is tried again by the next request (a bounded wait each time, never a hang).
 */
let lazy: Promise<OpenedService> | undefined;
let lazyConfig: Config | undefined;

function lazyService(): Promise<OpenedService> {
  lazy ??= (async () => {
    lazyConfig ??= loadConfig();
    const opened = await openService(lazyConfig);
    const stop = async () => {
      await opened.close().catch(() => {});
      Deno.exit(0);
    };
    try {
      // `deno serve` stops its listener on these signals; the pool must go too, or idle connections keep the
      // process alive until they time out. (Where signals cannot be listened to, such as Deploy, nothing to do.)
      Deno.addSignalListener("SIGTERM", stop);
      Deno.addSignalListener("SIGINT", stop);
    } catch { /* no signals here */ }
    return opened;
  })().catch((err) => {
    lazy = undefined;
    throw err;
  });
  return lazy;
}

async function fetch(request: Request, info: Deno.ServeHandlerInfo): Promise<Response> {
  let opened: OpenedService;
  try {
    opened = await lazyService();
  } catch (err) {
    console.error(failed(err));
    return Response.json(
      {
        error: "system_error",
        error_description: "the service could not start (its log says why); retry later",
      },
      { status: 503, headers: { "Retry-After": "1", "Cache-Control": "no-store" } },
    );
  }
  return await opened.app.fetch(request, info);
}

/** For `deno serve main.ts` and Deno Deploy. */
const declarative = { fetch } satisfies Deno.ServeDefaultExport;
export default declarative;

/** What the service thread is started with, so that it knows itself (a worker of another kind would not). */
const SERVICE_THREAD = "access-control-service";

/**
 * Runs the service in a thread of its own (this module again, as a `node:worker_threads` worker) with the
 * configured heap: V8 sizes a process's heap from command-line flags before any code runs, and with its defaults
 * on a large machine the service's RSS passed 200 MB under load though it keeps about 20 MB live; a worker's
 * `resourceLimits` bound it however the process was started. SIGINT and SIGTERM ask the thread to close the
 * service (a second one ends the process at once); the process ends with the thread's exit code, 1 when the
 * start failed or the thread died (an uncaught error, the heap limit).
 */
function superviseService(config: Config): void {
  const thread = new Worker(new URL(import.meta.url), {
    workerData: SERVICE_THREAD,
    resourceLimits: {
      maxYoungGenerationSizeMb: config.heap.youngGenerationMb,
      maxOldGenerationSizeMb: config.heap.limitMb,
    },
  });
  thread.on("error", (err) => console.error(`the service thread failed: ${err?.message ?? err}`));
  thread.on("exit", (code) => Deno.exit(code));
  let stopping = false;
  const stop = () => {
    if (stopping) Deno.exit(1);
    stopping = true;
    thread.postMessage("stop");
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

/** The service thread: opens the service and listens on HOST:PORT; closes it when asked. */
async function serviceThread(): Promise<void> {
  let service: Service;
  try {
    service = await startService(loadConfig());
  } catch (err) {
    console.error(failed(err));
    process.exit(1);
  }
  parentPort!.on("message", async (message) => {
    if (message !== "stop") return;
    await service.close();
    process.exit(0);
  });
}

if (!isMainThread && workerData === SERVICE_THREAD) {
  await serviceThread();
} else if (import.meta.main) {
  const config = configOrExit();
  lazyConfig = config;
  if (Deno.args.includes("--listen")) {
    // Not served declaratively: without its `fetch`, `deno run` does not ask "did you mean deno serve?".
    Reflect.deleteProperty(declarative, "fetch");
    superviseService(config);
  } else {
    // Deno runs this module alike under `deno run` and `deno serve` and says nothing of which (Deno issues
    // 25179, 29447). `deno serve` (and Deploy) serve the default export by calling Deno.serve right after this
    // module is evaluated: a wrapper notices that. If nothing served it by the next task, this is a plain
    // `deno run main.ts`, which listens on HOST:PORT as it always did.
    const serve = Deno.serve;
    let servedByRuntime = false;
    Deno.serve = ((...args: Parameters<typeof Deno.serve>) => {
      servedByRuntime = true;
      return serve(...args);
    }) as typeof Deno.serve;
    setTimeout(() => {
      Deno.serve = serve;
      if (!servedByRuntime) superviseService(config);
    }, 0);
  }
}
