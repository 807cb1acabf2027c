/**
 * For the tests of OAuth Client ID Metadata Documents, where the client id is an https:// URL whose JSON document
 * the service fetches: a test CA and a leaf certificate for 127.0.0.1 and localhost (made with `openssl`, once
 * per test file), an HTTPS server on 127.0.0.1 whose answers a test sets per path, and the service started as a
 * process of its own that trusts the test CA.
 *
 * The service fetches such URLs with `node:https` (domain/outbound/outbound.ts), and what that trusts in Deno
 * (2.9) is not what `fetch` trusts: `node:https` reads the CA of DENO_CERT (or `--cert`) only while
 * NODE_EXTRA_CA_CERTS is unset or empty; set, it trusts the certificates of that file (besides its built-in roots)
 * and ignores DENO_CERT. Machines and CI images often set NODE_EXTRA_CA_CERTS to the system's bundle, and a
 * spawned service inherits it, so the service gets both, naming the test CA (`fetch` reads either). A set
 * NODE_EXTRA_CA_CERTS also makes every `node:https` request need `--allow-sys` (Deno reads the system's roots:
 * `NotCapable: Requires sys access to "ca"`, thrown by the request), which the restricted `deno serve` of
 * tests/processes.ts lacks: there the service gets DENO_CERT and an empty NODE_EXTRA_CA_CERTS instead.
 *
 * Without `openssl` there is no CA: `testCa`, `documentServer` and `launchTrusting` give null, and a test returns.
 */
import { ADMIN_SECRET, atModuleEnd, DATABASE_ENV, DATABASE_URL, removeDirSync } from "./helpers.ts";
import { migratedDataDir } from "./embedded_template.ts";
import { type Mode, type Proc, spawn } from "./processes.ts";

/** A CA and a leaf certificate it signed for 127.0.0.1 and localhost: PEM texts, and the CA's file. */
export type TestCa = {
  /** The CA's certificate, for DENO_CERT and NODE_EXTRA_CA_CERTS. */
  caFile: string;
  /** The leaf's certificate and key, for a server. */
  cert: string;
  key: string;
  /** The temporary directory that holds them, removed when the test file ends (a test may put files there). */
  dir: string;
};

let ca: Promise<TestCa | null> | undefined;

/** The test file's CA (made on the first call), or null without `openssl`. */
export function testCa(): Promise<TestCa | null> {
  ca ??= makeCa();
  return ca;
}

async function openssl(dir: string, args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command("openssl", { args, cwd: dir, stdout: "null", stderr: "piped" })
      .output();
    if (!out.success) console.error(`openssl ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
    return out.success;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false; // no openssl here
    throw err;
  }
}

async function makeCa(): Promise<TestCa | null> {
  const dir = await Deno.makeTempDir({ prefix: "acs-cimd-ca-" });
  atModuleEnd(() => removeDirSync(dir));
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await Deno.writeTextFile(
    `${dir}/leaf.ext`,
    [
      "basicConstraints=critical,CA:false",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=serverAuth",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "",
    ].join("\n"),
  );
  const made = await openssl(dir, [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    "/CN=access-control test CA",
    "-addext",
    "basicConstraints=critical,CA:true",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]) &&
    await openssl(dir, [
      "req",
      "-new",
      ...ec,
      "-keyout",
      "leaf.key",
      "-out",
      "leaf.csr",
      "-subj",
      "/CN=127.0.0.1",
    ]) &&
    await openssl(dir, [
      "x509",
      "-req",
      "-in",
      "leaf.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "leaf.pem",
      "-days",
      "1",
      "-extfile",
      "leaf.ext",
    ]);
  if (!made) {
    removeDirSync(dir);
    return null;
  }
  return {
    caFile: `${dir}/ca.pem`,
    cert: await Deno.readTextFile(`${dir}/leaf.pem`),
    key: await Deno.readTextFile(`${dir}/leaf.key`),
    dir,
  };
}

/** What the server answers on a path: `body` a string as it is, anything else as JSON (application/json). */
export type Answer = {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Waits this long before answering (a slow server); `close` cuts the wait short. */
  delayMs?: number;
};

export type DocumentServer = {
  /** `https://127.0.0.1:<port>` */
  origin: string;
  port: number;
  /** Sets (or replaces) the answer on `path` (its path and query, as `url` is given it). */
  route(path: string, answer: Answer): void;
  /** `https://127.0.0.1:<port><path>` */
  url(path: string): string;
  /** How many requests reached `path` (with its query, if it has one) so far. */
  hits(path: string): number;
  close(): Promise<void>;
};

/**
 * An HTTPS server on 127.0.0.1 (a free port) with the test CA's leaf certificate, answering what `route` set
 * for a request's path and query (or, failing that, its path alone), and 404 on any other path. Closed when the
 * test file ends too; null without `openssl`.
 */
export async function documentServer(): Promise<DocumentServer | null> {
  const tls = await testCa();
  if (!tls) return null;
  const routes = new Map<string, Answer>();
  const counts = new Map<string, number>();
  const closing = new AbortController();
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: tls.cert, key: tls.key, onListen() {} },
    async (req) => {
      const u = new URL(req.url);
      const full = `${u.pathname}${u.search}`;
      count(full);
      if (u.search) count(u.pathname);
      const answer = routes.get(full) ?? routes.get(u.pathname);
      if (!answer) return new Response("not found", { status: 404 });
      if (answer.delayMs) await delay(answer.delayMs, closing.signal);
      const json = answer.body !== undefined && typeof answer.body !== "string";
      const headers = new Headers(json ? { "content-type": "application/json" } : {});
      for (const [name, value] of Object.entries(answer.headers ?? {})) headers.set(name, value);
      const body = answer.body === undefined
        ? null
        : json
        ? JSON.stringify(answer.body)
        : answer.body as string;
      return new Response(body, { status: answer.status ?? 200, headers });
    },
  );
  const origin = `https://127.0.0.1:${server.addr.port}`;
  let closed: Promise<void> | undefined;
  const close = () => {
    closing.abort();
    closed ??= server.shutdown();
    return closed;
  };
  atModuleEnd(() => void close().catch(() => {}));
  return {
    origin,
    port: server.addr.port,
    route: (path, answer) => void routes.set(path, answer),
    url: (path) => `${origin}${path}`,
    hits: (path) => counts.get(path) ?? 0,
    close,
  };
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** The service process, its embedded data directory (removed by `stop`) or its PostgreSQL application name. */
export type TrustingService = Proc & { dataDir?: string; applicationName?: string };

/**
 * Starts the service (by default `deno run main.ts --listen`, tests/processes.ts `spawn`: it waits for /readyz,
 * or for the process to exit, the caller reads its output) trusting the test CA, with private targets allowed
 * (the document server is on 127.0.0.1) and the test admin secret. On the embedded database it gets a migrated
 * DATA_DIR of its own, which `stop` removes; on PostgreSQL the run's database (and its pooler settings) and an
 * `application_name` of its own. `env` comes last and wins. Stopped when the test file ends too; null without
 * `openssl`. `mode: "serve"` (restricted permissions) needs PostgreSQL, as everywhere.
 */
export async function launchTrusting(
  env: Record<string, string> = {},
  opts: { mode?: Mode } = {},
): Promise<TrustingService | null> {
  const tls = await testCa();
  if (!tls) return null;
  const own: Record<string, string> = {
    DENO_CERT: tls.caFile,
    // Without --allow-sys, a set NODE_EXTRA_CA_CERTS fails every node:https request; empty, DENO_CERT counts.
    NODE_EXTRA_CA_CERTS: opts.mode === "serve" ? "" : tls.caFile,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
  };
  if (DATABASE_URL) {
    Object.assign(own, DATABASE_ENV);
    own.DATABASE_APPLICATION_NAME = `acs-cimd-${crypto.randomUUID()}`;
  } else own.DATA_DIR = await migratedDataDir("acs-cimd-");
  const merged = { ...own, ...env };
  const dataDir = DATABASE_URL ? undefined : own.DATA_DIR;
  const removeData = () =>
    dataDir ? Deno.remove(dataDir, { recursive: true }).catch(() => {}) : Promise.resolve();
  let proc: Proc;
  try {
    proc = await spawn(merged, { mode: opts.mode });
  } catch (err) {
    await removeData();
    throw err;
  }
  atModuleEnd(() => {
    try {
      proc.child.kill("SIGKILL");
    } catch { /* already gone */ }
    if (dataDir) removeDirSync(dataDir);
  });
  return {
    ...proc,
    dataDir,
    applicationName: merged.DATABASE_APPLICATION_NAME,
    stop: async () => {
      try {
        await proc.stop();
      } finally {
        await removeData();
      }
    },
  };
}
