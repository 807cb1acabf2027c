/**
 * What `deno task bench` and bench/event_cost.ts share: their settings, spawning the service as its own process
 * (as `deno task start` or `deno serve` runs it), and the closed loop that times an operation.
 */

/** `config`: a deno.json to run the service with instead of the project's (bench/event_cost.ts). */
export type ServiceOptions = { config?: string };

export const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 5);
export const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 32);
const MAX_OPERATIONS = 500_000;
/** On a PostgreSQL database bootstrapped before, pass the system admin's secret as BOOTSTRAP_ADMIN_SECRET. */
export const SECRET = Deno.env.get("BOOTSTRAP_ADMIN_SECRET") ??
  "bench-bootstrap-secret-that-is-long-enough-000001";
export const REDIRECT = "http://127.0.0.1:9/callback";

export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

const START_TASK = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url))).tasks
  .start as string;
/** The permissions of `deno task start` (deno.json), so that the figures are those of the service as it is run. */
const RUN_PERMISSIONS: string[] = START_TASK.match(/--allow-\S+/g) ?? [];
/** Deno Deploy's restricted set, as `deno serve` gets it in CI. */
const SERVE_PERMISSIONS = ["--allow-net", "--allow-env", "--allow-read"];

/**
 * Spawns the service on a free port: `run` as `deno task start` (starts, then listens), `serve` as `deno serve`
 * with Deno Deploy's restricted permissions (listens at once, starts on the first request). `spawnedAt` is
 * taken just before the process is spawned.
 */
export async function spawnService(
  mode: "run" | "serve",
  stderr: "inherit" | "null",
  opts: ServiceOptions = {},
) {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    BOOTSTRAP_ADMIN_SECRET: SECRET,
    LOG_LEVEL: "error",
    // The login scenario sends each login from an address of its own (X-Forwarded-For), so that it measures
    // logins rather than the per-address limit of login pages (600 per 10 minutes), which a fast run passes.
    TRUST_PROXY_HOPS: "1",
  };
  if (!Deno.env.get("DATABASE_URL")) env.DATA_DIR = await Deno.makeTempDir({ prefix: "acs-bench-" });
  const config = opts.config ? ["--config", opts.config] : [];
  const args = mode === "serve"
    ? [
      "serve",
      ...config,
      ...SERVE_PERMISSIONS,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "main.ts",
    ]
    : ["run", ...config, ...RUN_PERMISSIONS, "main.ts", "--listen"];
  const spawnedAt = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: new URL("../", import.meta.url),
    env,
    stdout: "null",
    stderr,
  }).spawn();
  return { url, child, spawnedAt };
}

/** The service as `deno task start` runs it, once it answers /readyz. */
export async function startServer(
  opts: ServiceOptions = {},
): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const { url, child } = await spawnService("run", "inherit", opts);
  for (let i = 0; i < 300; i++) {
    try {
      const res = await fetch(`${url}/readyz`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

export type Result = {
  name: string;
  operations: number;
  rate: number;
  p50: number;
  p99: number;
  errors: number;
};

/** Runs `op` from CONCURRENCY workers for SECONDS after a short warm-up; `op` says whether it succeeded. */
export async function run(
  name: string,
  op: (worker: number) => Promise<boolean>,
  warmup = 20,
): Promise<Result> {
  for (let i = 0; i < warmup; i++) await op(i % CONCURRENCY);
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + SECONDS * 1000;
  const worker = async (w: number) => {
    while (performance.now() < end && latencies.length < MAX_OPERATIONS) {
      const t0 = performance.now();
      const ok = await op(w);
      latencies.push(performance.now() - t0);
      if (!ok) errors++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    name,
    operations: latencies.length,
    rate: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    errors,
  };
}
