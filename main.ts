/** config → database → migrations and bootstrap → app → Deno.serve. */
import { type Config, loadConfig } from "./config.ts";
import { type Database, openDatabase } from "./db/connection.ts";
import { migrate } from "./db/migrate.ts";
import { purgeExpired } from "./db/maintenance.ts";
import { bootstrap, type BootstrapResult } from "./domain/bootstrap.ts";
import { SYSTEM_ADMIN_CLIENT_ID } from "./domain/projects.ts";
import { TokenService } from "./domain/tokens.ts";
import { type App, createApp, type Logger } from "./routes/app.ts";

export type Service = {
  app: App;
  db: Database;
  /** The address the server listens on, e.g. http://127.0.0.1:8000. */
  url: string;
  close(): Promise<void>;
};

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
/** How often each instance deletes expired login pages, codes, tokens and throttle counters. */
const PURGE_EVERY_MS = 10 * 60 * 1000;

export function createLogger(level: Config["logLevel"]): Logger {
  const at = (l: keyof typeof LEVELS) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[l] < LEVELS[level]) return;
    console.error(JSON.stringify({ time: new Date().toISOString(), level: l, msg, ...fields }));
  };
  return { error: at("error"), info: at("info") };
}

/** Opens the database, migrates, bootstraps and serves. `quiet` leaves out the first-start banner. */
export async function startService(config: Config, opts: { quiet?: boolean } = {}): Promise<Service> {
  const log = createLogger(config.logLevel);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
  });
  try {
    await migrate(db.sql);
    const boot = await bootstrap(db.sql, config.bootstrapAdminSecret);
    if (!opts.quiet) printBootstrap(boot, config);
    const tokens = new TokenService(db.sql, config.publicUrl, config.accessTokenTtl);
    await tokens.init();
    const app = createApp({ sql: db.sql, tokens, config, log });
    const server = Deno.serve({ port: config.port, hostname: config.host, onListen: () => {} }, app.fetch);
    const purge = setInterval(() => {
      purgeExpired(db.sql).catch((err) => log.error("purge of expired rows failed", { error: String(err) }));
    }, PURGE_EVERY_MS);
    Deno.unrefTimer(purge);
    const host = server.addr.hostname === "0.0.0.0" ? "127.0.0.1" : server.addr.hostname;
    const url = `http://${host.includes(":") ? `[${host}]` : host}:${server.addr.port}`;
    log.info("listening", { url, public_url: config.publicUrl, database: db.kind });
    return {
      app,
      db,
      url,
      close: async () => {
        clearInterval(purge);
        await server.shutdown();
        await db.close();
      },
    };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

function printBootstrap(boot: BootstrapResult, config: Config) {
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

if (import.meta.main) {
  let service: Service;
  try {
    service = await startService(loadConfig());
  } catch (err) {
    console.error(`failed to start: ${err instanceof Error ? err.message : err}`);
    Deno.exit(1);
  }
  const stop = async () => {
    await service.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
