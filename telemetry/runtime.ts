/**
 * The metrics of the process and of the service's pool, read when /metrics is scraped, and where /metrics is
 * served: on METRICS_PORT (a listener of its own, loopback unless METRICS_HOST says otherwise), and on the main
 * port for a bearer of METRICS_TOKEN (routes/api/system/metrics.ts).
 */
import type { Database } from "../db/connection.ts";
import { readSharedGauges } from "../db/system/observability.ts";
import {
  eventLoopDelay,
  mailBacklog,
  memory,
  poolInUse,
  poolOpen,
  poolSize,
  poolWaiting,
  signingKeyAge,
  signingKeyNext,
  signingKeyRotation,
  startTime,
  webhookBacklog,
  webhookOldest,
} from "./families.ts";
import { REGISTRY } from "./metrics.ts";
import { metricsResponse } from "./exposition.ts";

let processStarted = false;

/** The process's own metrics: memory when scraped, and the event loop's delay sampled every 100 ms. */
export function startProcessMetrics(): void {
  if (processStarted) return;
  processStarted = true;
  startTime.set(Math.round(performance.timeOrigin) / 1000);
  const every = 100;
  let expected = performance.now() + every;
  const timer = setInterval(() => {
    const now = performance.now();
    eventLoopDelay.observe(Math.max(0, now - expected) / 1000);
    expected = now + every;
  }, every);
  Deno.unrefTimer(timer);
  REGISTRY.collect(() => {
    const m = Deno.memoryUsage();
    memory.set(m.rss, "rss");
    memory.set(m.heapUsed, "heap_used");
    memory.set(m.heapTotal, "heap_total");
    memory.set(m.external, "external");
  });
}

type Pool = { sql: Database["sql"]; rotationSeconds: number };
const pools: Pool[] = [];

/**
 * The pool's gauges and the shared ones (backlogs, the signing key) read from this service's database. A
 * process normally runs one service; where tests run several, the pools' gauges add up and the shared ones
 * come from the last opened. The function returned forgets the service (it closed).
 */
export function watchService(sql: Database["sql"], rotationDays: number): () => void {
  const pool = { sql, rotationSeconds: rotationDays * 86_400 };
  pools.push(pool);
  return () => {
    const at = pools.indexOf(pool);
    if (at >= 0) pools.splice(at, 1);
  };
}

REGISTRY.collect(() => {
  let max = 0, open = 0, inUse = 0, waiting = 0;
  for (const p of pools) {
    const s = p.sql.stats();
    max += s.max;
    open += s.open;
    inUse += s.inUse;
    waiting += s.waiting;
  }
  poolSize.set(max);
  poolOpen.set(open);
  poolInUse.set(inUse);
  poolWaiting.set(waiting);
});

/** At most this long for the scrape's one statement: a scrape must not wait on a database that hangs. */
const SHARED_READ_MS = 2000;

REGISTRY.collect(async () => {
  const pool = pools.at(-1);
  if (!pool) return;
  signingKeyRotation.set(pool.rotationSeconds);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const g = await Promise.race([
      readSharedGauges(pool.sql),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("no answer")), SHARED_READ_MS);
      }),
    ]);
    webhookBacklog.set(g.webhook_backlog);
    mailBacklog.set(g.mail_backlog);
    webhookOldest.set(g.webhook_oldest_seconds);
    if (g.key_age_seconds !== null) signingKeyAge.set(g.key_age_seconds);
    signingKeyNext.set(g.next_key ? 1 : 0);
  } finally {
    clearTimeout(timer);
  }
});

type Readyz = () => Promise<Response>;

let listener: { server: Deno.HttpServer<Deno.NetAddr>; port: number; users: number; readyz?: Readyz } | null =
  null;

/** The answer of the listener's /readyz while no service has said how to answer it yet (it is starting). */
function starting(): Response {
  return Response.json(
    { error: "system_error", error_description: "the service is starting; retry in a moment" },
    { status: 503, headers: { "Retry-After": "1", "Cache-Control": "no-store" } },
  );
}

/**
 * Serves GET /metrics and GET /readyz (readiness with every check's detail, as a bearer of METRICS_TOKEN gets it
 * on the main port: the listener is the operator's) on host:port, once per process (services opened together in
 * one process, as tests do, share it; it closes with the last); under `deno serve` it is opened with the
 * service, on the first request. A port in use fails the start, naming it. `serveReadiness` gives /readyz its
 * answer once the service is open.
 */
export function serveMetrics(
  listen: { port: number; host: string },
): { url: string; serveReadiness(answer: Readyz): void; close(): Promise<void> } {
  if (listener && listener.port !== listen.port) {
    throw new Error(`this process serves /metrics on port ${listener.port} already (METRICS_PORT)`);
  }
  if (!listener) {
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      server = Deno.serve({ port: listen.port, hostname: listen.host, onListen: () => {} }, (req) => {
        const path = new URL(req.url).pathname;
        if (path !== "/metrics" && path !== "/readyz") return new Response("not found\n", { status: 404 });
        if (req.method !== "GET" && req.method !== "HEAD") {
          return new Response("method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
        }
        if (path === "/readyz") return listener?.readyz?.() ?? starting();
        return metricsResponse();
      });
    } catch (err) {
      if (err instanceof Deno.errors.AddrInUse) {
        throw new Error(
          `${listen.host}:${listen.port} is in use by another process (METRICS_HOST, METRICS_PORT)`,
        );
      }
      throw err;
    }
    listener = { server, port: listen.port, users: 0 };
  }
  const mine = listener;
  mine.users++;
  const addr = mine.server.addr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let closed = false;
  let answer: Readyz | undefined;
  return {
    url: `http://${host}:${addr.port}/metrics`,
    serveReadiness: (fn) => {
      answer = fn;
      mine.readyz = fn;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      if (mine.readyz === answer) mine.readyz = undefined;
      if (--mine.users > 0) return;
      if (listener === mine) listener = null;
      await mine.server.shutdown();
    },
  };
}
