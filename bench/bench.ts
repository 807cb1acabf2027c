/**
 * `deno task bench`: runs the service as its own process (embedded database, or DATABASE_URL) and drives it
 * over loopback from this process, printing requests per second, latency percentiles and the server's memory.
 * Every scenario is bounded in time and count. BENCH_SECONDS (default 5) and BENCH_CONCURRENCY (default 32).
 */
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 5);
const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 32);
const MAX_REQUESTS = 500_000;
/** On a PostgreSQL database bootstrapped before, pass the system admin's secret as BOOTSTRAP_ADMIN_SECRET. */
const SECRET = Deno.env.get("BOOTSTRAP_ADMIN_SECRET") ?? "bench-bootstrap-secret-that-is-long-enough-000001";

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function startServer(): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    BOOTSTRAP_ADMIN_SECRET: SECRET,
    LOG_LEVEL: "error",
  };
  if (!Deno.env.get("DATABASE_URL")) env.DATA_DIR = await Deno.makeTempDir({ prefix: "acs-bench-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-sys",
      "--allow-ffi",
      "main.ts",
    ],
    cwd: new URL("../", import.meta.url),
    env,
    stdout: "null",
    stderr: "inherit",
  }).spawn();
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

function rssMiB(pid: number): number {
  const out = new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)] }).outputSync();
  return Number(new TextDecoder().decode(out.stdout).trim()) / 1024;
}

type Result = { name: string; requests: number; rps: number; p50: number; p99: number; errors: number };

async function run(name: string, request: () => Promise<Response>, expectStatus = 200): Promise<Result> {
  // Warm up, then measure for SECONDS with CONCURRENCY requests in flight.
  for (let i = 0; i < 50; i++) await (await request()).body?.cancel();
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + SECONDS * 1000;
  const worker = async () => {
    while (performance.now() < end && latencies.length < MAX_REQUESTS) {
      const t0 = performance.now();
      const res = await request();
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
      if (res.status !== expectStatus) errors++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    name,
    requests: latencies.length,
    rps: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    errors,
  };
}

const server = await startServer();
try {
  const form = { "content-type": "application/x-www-form-urlencoded" };
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });
  const tokenOf = async (id: string, secret: string) =>
    (await (await fetch(`${server.url}/api/v1/tokens`, {
      method: "POST",
      headers: { ...form, ...basic(id, secret) },
      body: "grant_type=client_credentials",
    })).json()).access_token as string;
  const admin = await tokenOf("system-admin", SECRET);
  if (!admin) {
    throw new Error("no system token: on a database bootstrapped before, set BOOTSTRAP_ADMIN_SECRET");
  }
  const project = await (await fetch(`${server.url}/api/v1/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench" }),
  })).json();
  const projectToken = await tokenOf(project.admin_client.client_id, project.admin_client.client_secret);
  const authed = { authorization: `Bearer ${projectToken}`, "content-type": "application/json" };
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${server.url}/api/v1/projects/${project.id}/roles`, {
      method: "POST",
      headers: authed,
      body: JSON.stringify({ code: `role-${i}`, name: `Role ${i}`, description: "bench" }),
    });
    if (res.status !== 201) throw new Error(`could not create a role: ${res.status} ${await res.text()}`);
  }

  const results: Result[] = [];
  const rssBefore = rssMiB(server.pid);
  results.push(await run("GET /healthz (bare route)", () => fetch(`${server.url}/healthz`)));
  results.push(
    await run("POST /api/v1/tokens client_credentials", () =>
      fetch(`${server.url}/api/v1/tokens`, {
        method: "POST",
        headers: { ...form, ...basic(project.admin_client.client_id, project.admin_client.client_secret) },
        body: "grant_type=client_credentials",
      })),
  );
  results.push(
    await run(
      "GET /api/v1/projects/{id} (JWT + live permission check)",
      () =>
        fetch(`${server.url}/api/v1/projects/${project.id}`, {
          headers: { authorization: `Bearer ${projectToken}` },
        }),
    ),
  );
  results.push(
    await run(
      "GET .../roles?page_size=10 (admin read: gate + list of 10)",
      () => fetch(`${server.url}/api/v1/projects/${project.id}/roles?page_size=10`, { headers: authed }),
    ),
  );
  results.push(
    await run(
      "GET /api/v1/projects/{id} with a forged token (401)",
      () =>
        fetch(`${server.url}/api/v1/projects/${project.id}`, { headers: { authorization: "Bearer a.b.c" } }),
      401,
    ),
  );
  const rssAfter = rssMiB(server.pid);

  const db = Deno.env.get("DATABASE_URL") ? "PostgreSQL server" : "embedded PGlite";
  console.log(
    `\naccess-control bench: ${db}, ${CONCURRENCY} in flight, ${SECONDS}s per scenario, ` +
      `client and server on this machine (${navigator.hardwareConcurrency} cores)\n`,
  );
  console.log(
    "scenario".padEnd(58) + "req/s".padStart(9) + "p50 ms".padStart(9) + "p99 ms".padStart(9) +
      "errors".padStart(8),
  );
  for (const r of results) {
    console.log(
      r.name.padEnd(58) + r.rps.toFixed(0).padStart(9) + r.p50.toFixed(2).padStart(9) +
        r.p99.toFixed(2).padStart(9) +
        String(r.errors).padStart(8),
    );
  }
  console.log(`\nserver RSS: ${rssBefore.toFixed(0)} MiB before, ${rssAfter.toFixed(0)} MiB after the runs`);
} finally {
  await server.stop();
}
