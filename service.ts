/**
 * The service: config → database → migrations and bootstrap → app, opened either in the thread main.ts starts
 * for `deno run` (`serviceThread`, which listens on HOST:PORT) or, under `deno serve` and Deno Deploy, on the
 * first request (`serveRequest`). main.ts loads this module only where it runs the service, so that the main
 * thread of a `deno run` holds none of it.
 */
import process from "node:process";
import { parentPort } from "node:worker_threads";
import { trimFreedMemorySoon } from "./heap.ts";
import { type Config, loadConfig } from "./config.ts";
import { connectServer, type Database, describeUrl, openDatabase, waitForDatabase } from "./db/connection.ts";
import { migrate } from "./db/migrate.ts";
import { bootstrap, type BootstrapResult } from "./domain/system/bootstrap.ts";
import { KeyVault } from "./domain/keys/key_vault.ts";
import type { KeySettings } from "./domain/keys/keys.ts";
import { TokenService } from "./domain/keys/tokens.ts";
import { jobsOf, startJobs } from "./jobs.ts";
import { SYSTEM_ADMIN_CLIENT_ID } from "./openapi/projects.ts";
import { createApp } from "./routes/app.ts";
import { detailedReadiness } from "./routes/api/system/system.ts";
import { createLogger, type Logger } from "./log.ts";
import type { App } from "./routes/env.ts";
import { statementHooks } from "./telemetry/statements.ts";
import { serveMetrics, startProcessMetrics, watchService } from "./telemetry/runtime.ts";
import { startTracing, stopTracing } from "./telemetry/trace.ts";

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

/** The signing keys' settings from the configuration. */
export function keySettings(config: Config): KeySettings {
  return {
    alg: config.signingAlg,
    rotationDays: config.signingKeyRotationDays,
    accessTokenTtl: config.accessTokenTtl,
    vault: config.keyEncryptionKey ? new KeyVault(config.keyEncryptionKey) : null,
  };
}

/** Where the service's log lines go; tests pass their own `write` to read them. */
export type ServiceOptions = {
  /** Leaves out the first-start banner. */
  quiet?: boolean;
  /** Receives the log's lines (several at once, each ending in a newline); by default standard error. */
  write?: (lines: string) => void;
};

/** The service's logger, as LOG_LEVEL and LOG_FORMAT say. */
export function loggerOf(config: Config, opts: ServiceOptions = {}): Logger {
  return createLogger({ level: config.logLevel, format: config.logFormat, write: opts.write });
}

const operatorOf = (c: Config, link: boolean) => ({
  email: c.bootstrapAdminEmail,
  password: c.bootstrapAdminPassword,
  link,
});

/**
 * Migrations and bootstrap, under one transaction-level advisory lock each (which, unlike a session lock, also
 * holds through a transaction-mode pooler), so instances starting together on one database apply them once.
 * On a PostgreSQL server they run on a short-lived connection of their own (to DATABASE_DIRECT_URL when set),
 * outside the pool's deadlines.
 */
async function prepareDatabase(
  config: Config,
  db: Database,
  keys: KeySettings,
  link: boolean,
): Promise<BootstrapResult> {
  if (!config.databaseUrl) {
    await migrate(db.sql);
    return await bootstrap(db.sql, config.bootstrapAdminSecret, keys, operatorOf(config, link));
  }
  // Not the pool: a migration may take longer than the pool's deadlines allow a statement (and an instance
  // starting beside another waits for its migration under the lock).
  const [url, pooler, name] = config.databaseDirectUrl
    ? [config.databaseDirectUrl, "none" as const, "DATABASE_DIRECT_URL"]
    : [config.databaseUrl, config.databasePooler, "DATABASE_URL"];
  const direct = connectServer(url, { max: 1, pooler });
  try {
    await waitForDatabase(direct, {
      timeoutSeconds: config.databaseStartTimeout,
      what: `${describeUrl(url)} (${name})`,
    });
    await migrate(direct);
    return await bootstrap(direct, config.bootstrapAdminSecret, keys, operatorOf(config, link));
  } finally {
    await direct.end({ timeout: 5 });
  }
}

/** Opens the database (waiting a bounded time for it), migrates, bootstraps and builds the app. */
export async function openService(config: Config, opts: ServiceOptions = {}): Promise<OpenedService> {
  return await openServiceWith(config, opts, loggerOf(config, opts));
}

async function openServiceWith(config: Config, opts: ServiceOptions, log: Logger): Promise<OpenedService> {
  const metricsOn = config.metricsListen !== undefined || config.metricsToken !== undefined;
  startTracing(config.tracing);
  if (metricsOn) startProcessMetrics();
  const statementLog = log.enabled("debug") ? log.statement : undefined;
  // The statements' metrics and spans only when something reads them: otherwise the debug log alone, as before.
  const hooks = metricsOn || config.tracing ? statementHooks(statementLog) : undefined;
  const metricsServer = config.metricsListen ? serveMetrics(config.metricsListen) : undefined;
  let db: Database;
  try {
    db = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      clusterCacheDir: config.embeddedCacheDir,
      onWarning: (message) => log.warn(message),
      poolSize: config.databasePoolSize,
      pipelineDepth: config.databasePipelineDepth,
      applicationName: config.databaseApplicationName,
      pooler: config.databasePooler,
      deadlines: config.databaseDeadlines,
      onStatement: hooks?.on_statement ?? statementLog,
      statementContext: hooks?.statement_context,
    });
  } catch (err) {
    await metricsServer?.close();
    throw err;
  }
  const unwatch = watchService(db.sql, config.signingKeyRotationDays);
  try {
    if (config.databaseUrl) {
      await waitForDatabase(db.sql, {
        timeoutSeconds: config.databaseStartTimeout,
        what: `${describeUrl(config.databaseUrl)} (DATABASE_URL)`,
      });
    }
    const keys = keySettings(config);
    const boot = await prepareDatabase(config, db, keys, !opts.quiet);
    if (!opts.quiet) printBootstrap(boot, config);
    if (!opts.quiet) console.log(mailBanner(config));
    for (const project of boot.clashes) {
      log.warn(
        "a resource of the project has the code of a default resource; that default is missing there",
        {
          project_id: project,
        },
      );
    }
    const tokens = new TokenService(db.sql, config.publicUrl, config.accessTokenTtl, keys.vault);
    const jobs = startJobs(db.sql, jobsOf(db.sql, keys, config, tokens, db.kind, log), log);
    const app = createApp({ sql: db.sql, tokens, keys, config, log, jobs });
    metricsServer?.serveReadiness(() => detailedReadiness({ sql: db.sql, tokens, jobs }));
    return {
      app,
      db,
      close: async () => {
        await jobs.stop();
        unwatch();
        await metricsServer?.close();
        await db.close();
        await stopTracing();
        log.flush();
      },
    };
  } catch (err) {
    unwatch();
    await metricsServer?.close();
    await db.close().catch(() => {}); // the start's own error, thrown below, is the one to tell
    log.flush();
    throw err;
  }
}

/**
 * Listens on HOST:PORT first, so that a port in use stops the start before anything is created or printed;
 * then opens the service, answering 503 until it is ready. `quiet` leaves out the first-start banner.
 */
export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const log = loggerOf(config, opts);
  const ready: { app?: App } = {};
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve(
      { port: config.port, hostname: config.host, onListen: () => {} },
      (request, info) => ready.app ? ready.app.fetch(request, info) : starting(),
    );
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) {
      throw new Error(
        `${config.host}:${config.port} is in use by another process (HOST, PORT): stop it, or set another PORT`,
      );
    }
    throw err;
  }
  let opened: OpenedService;
  try {
    opened = await openServiceWith(config, opts, log);
  } catch (err) {
    await server.shutdown();
    throw err;
  }
  ready.app = opened.app;
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
}

/** What the start says about mail: where it goes. */
export function mailBanner(config: Config): string {
  return config.smtp
    ? `Mail: sent through ${config.smtp.display} from ${config.mailFrom}`
    : "Mail: SMTP_URL is not set, so mails (password resets, invitations, verifications) are written to the " +
      "log, not sent. Set SMTP_URL to send them (docs/email.md).";
}

/** The answer while the service starts (migrations, bootstrap): retry in a moment. */
function starting(): Response {
  return Response.json(
    { error: "system_error", error_description: "the service is starting; retry in a moment" },
    { status: 503, headers: { "Retry-After": "1", "Cache-Control": "no-store" } },
  );
}

function printBootstrap(boot: BootstrapResult, config: Config) {
  if (boot.created) {
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
  printConsole(boot, config);
}

/** The console's address, and a one-time setup link while no operator can sign in to it. */
function printConsole(boot: BootstrapResult, config: Config) {
  console.log(`Admin console: ${config.publicUrl}/console`);
  const op = boot.operator;
  const link = (token: string) => `  ${config.publicUrl}/console/setup?token=${token}`;
  switch (op.kind) {
    case "none":
      return;
    case "created":
      return console.log(
        op.setupToken
          ? `First operator ${op.email}: choose a password within an hour at\n${link(op.setupToken)}`
          : `First operator ${op.email}: sign in at ${config.publicUrl}/console`,
      );
    case "password":
      return console.log(
        `No operator can sign in to the console yet. ${op.email} (BOOTSTRAP_ADMIN_EMAIL): choose a password ` +
          `within an hour at\n${link(op.setupToken)}`,
      );
    case "create":
      return console.log(
        "No operator can sign in to the console yet. Create the first one (an email and a password of your " +
          `choice) at this link, which works once, within an hour, and only while there is none:\n` +
          `${link(op.setupToken)}\n` +
          "Or set BOOTSTRAP_ADMIN_EMAIL (and BOOTSTRAP_ADMIN_PASSWORD) and start again: that makes the operator.",
      );
  }
}

const failed = (err: unknown) => `failed to start: ${err instanceof Error ? err.message : err}`;

/** The configuration the lazily started service opens with, parsed once. */
let lazyConfig: Config | undefined;

/** Under `deno serve`: a bad configuration ends the process at once, naming every bad variable. */
export function exitOnBadConfig(): void {
  try {
    lazyConfig = loadConfig();
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

function lazyService(): Promise<OpenedService> {
  lazy ??= (async () => {
    lazyConfig ??= loadConfig();
    const opened = await openService(lazyConfig);
    const stop = async () => {
      await opened.close().catch(() => {}); // exiting anyway: what did not close ends with the process
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

/** `deno serve` and Deno Deploy: starts the service on the first request, then hands it every request. */
export async function serveRequest(request: Request, info: Deno.ServeHandlerInfo): Promise<Response> {
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

/**
 * The body of main.ts's service thread: opens the service and listens on HOST:PORT; closes it and ends the thread
 * when main.ts asks (SIGINT, SIGTERM). A failed start ends the thread with 1, naming why.
 */
export async function serviceThread(): Promise<void> {
  let service: Service;
  try {
    service = await startService(loadConfig());
    trimFreedMemorySoon(500);
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
