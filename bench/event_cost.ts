/**
 * What the audit event adds to an admin write (the issue's limit: at most 10 %). Runs in one process on the
 * embedded database, or on DATABASE_URL: the admin write through the app (`PUT …/roles/{id}`: gate, update,
 * event), then the write's own transaction with and without its event, alternated, and prints the event's
 * share. `deno run -A bench/event_cost.ts`; BENCH_SECONDS (default 5) and BENCH_CONCURRENCY (default 32).
 */
import { loadConfig } from "../config.ts";
import { transaction } from "../db/connection.ts";
import { findRole, updateRoleRow } from "../db/roles.ts";
import { diff, record } from "../domain/audit.ts";
import { openService } from "../main.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 5);
const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 32);
/** On a PostgreSQL database bootstrapped before, pass the system admin's secret as BOOTSTRAP_ADMIN_SECRET. */
const SECRET = Deno.env.get("BOOTSTRAP_ADMIN_SECRET") ?? "bench-bootstrap-secret-that-is-long-enough-000001";

const env: Record<string, string> = { BOOTSTRAP_ADMIN_SECRET: SECRET, LOG_LEVEL: "error" };
const databaseUrl = Deno.env.get("DATABASE_URL");
if (databaseUrl) env.DATABASE_URL = databaseUrl;
else env.DATA_DIR = await Deno.makeTempDir({ prefix: "acs-event-cost-" });
const svc = await openService(loadConfig(env), { quiet: true });

type Result = { rate: number; meanMs: number; p50: number };

/** `op` from CONCURRENCY workers for SECONDS, after a warm-up. */
async function run(op: (w: number) => Promise<void>): Promise<Result> {
  for (let i = 0; i < 20; i++) await op(i % CONCURRENCY);
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + SECONDS * 1000;
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, w) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      await op(w);
      latencies.push(performance.now() - t0);
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
  return { rate: latencies.length / elapsed, meanMs: mean, p50: latencies[Math.floor(latencies.length / 2)] };
}

try {
  const call = async (method: string, path: string, token: string | null, body?: unknown, basic?: string) =>
    await svc.app.fetch(
      new Request(`http://bench${path}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(basic ? { authorization: basic, "content-type": "application/x-www-form-urlencoded" } : {}),
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        body: basic ? "grant_type=client_credentials" : body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  const tokenOf = async (id: string, secret: string) =>
    (await (await call("POST", "/api/v1/tokens", null, undefined, `Basic ${btoa(`${id}:${secret}`)}`))
      .json()).access_token as string;
  const system = await tokenOf("system-admin", SECRET);
  const project = await (await call("POST", "/api/v1/projects", system, { name: "event cost" })).json();
  const token = await tokenOf(project.admin_client.client_id, project.admin_client.client_secret);
  const roles: string[] = [];
  for (let w = 0; w < CONCURRENCY; w++) {
    const res = await call("POST", `/api/v1/projects/${project.id}/roles`, token, {
      code: `r${w}`,
      name: `R${w}`,
    });
    roles.push((await res.json()).id);
  }
  let n = 0;
  const http = await run(async (w) => {
    const res = await call("PUT", `/api/v1/projects/${project.id}/roles/${roles[w]}`, token, {
      code: `r${w}`,
      name: `R${w} ${n++ % 2}`,
    });
    if (res.status !== 200) throw new Error(`PUT answered ${res.status}`);
    await res.arrayBuffer();
  });
  const source = {
    actor: { type: "client" as const, id: project.admin_client.client_id, token_jti: "bench" },
    request: { id: "bench", ip: "127.0.0.1", user_agent: "bench" },
  };
  /** updateRole's transaction (domain/roles.ts) without the permission checks, with or without its event. */
  const write = (withEvent: boolean) => async (w: number) => {
    await transaction(svc.db.sql, async (tx) => {
      const current = (await findRole(tx, project.id, roles[w], { lock: true }))!;
      await updateRoleRow(tx, project.id, roles[w], {
        code: `r${w}`,
        name: `R${w} ${n++ % 2}`,
        description: null,
      });
      const role = (await findRole(tx, project.id, roles[w]))!;
      if (withEvent) {
        await record(tx, {
          projectId: project.id,
          type: "role.updated",
          source,
          target: { type: "role", id: roles[w] },
          changes: diff(current, role),
        });
      }
    });
  };
  const without: Result[] = [];
  const withEvent: Result[] = [];
  for (let i = 0; i < 2; i++) {
    without.push(await run(write(false)));
    withEvent.push(await run(write(true)));
  }
  const mean = (rs: Result[], k: keyof Result) => rs.reduce((a, r) => a + r[k], 0) / rs.length;
  const added = mean(withEvent, "meanMs") - mean(without, "meanMs");
  const fmt = (label: string, r: { rate: number; meanMs: number; p50: number }) =>
    console.log(
      `${label.padEnd(62)}${r.rate.toFixed(0).padStart(8)} ops/s  mean ${r.meanMs.toFixed(2)} ms  p50 ${
        r.p50.toFixed(2)
      } ms`,
    );
  console.log(
    `\n${
      databaseUrl ? "PostgreSQL server" : "embedded PGlite"
    }, ${CONCURRENCY} in flight, ${SECONDS}s per run\n`,
  );
  fmt("PUT …/roles/{id} through the app (gate, update, event)", http);
  const avg = (rs: Result[]) => ({
    rate: mean(rs, "rate"),
    meanMs: mean(rs, "meanMs"),
    p50: mean(rs, "p50"),
  });
  fmt("the write's transaction without its event (mean of 2 runs)", avg(without));
  fmt("the write's transaction with its event (mean of 2 runs)", avg(withEvent));
  console.log(
    `\nthe event adds ${added.toFixed(2)} ms per write: ${
      (100 * added / (http.meanMs - added)).toFixed(1)
    } % of the admin write without it`,
  );
} finally {
  await svc.close();
}
