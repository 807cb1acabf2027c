/**
 * `deno task bench`: runs the service as its own process (embedded database, or DATABASE_URL) and drives it
 * over loopback from this process, printing operations per second, latency percentiles and the server's memory.
 * Every scenario is bounded in time and count. BENCH_SECONDS (default 5) and BENCH_CONCURRENCY (default 32). Last,
 * the time from a process's start to its first answer (cold start), as `deno task start` and as `deno serve`,
 * and what the audit event adds to an admin write (bench/event_cost.ts).
 */
import { hashPassword, passwordBackend, verifyPassword } from "../domain/accounts/passwords.ts";
import { describeEventCost, measureEventCost } from "./event_cost.ts";
import { basic, FORM, login as userLogin, plainSend, setUpProject } from "./flows.ts";
import {
  CONCURRENCY,
  REDIRECT,
  type Result,
  run,
  SECONDS,
  SECRET,
  spawnService,
  startServer,
} from "./harness.ts";

/**
 * Cold start: from spawning a fresh process to its first successful answer (200 from /readyz), on a database
 * that is already migrated. `run` is `deno task start` (starts, then listens); `serve` is `deno serve` with
 * the restricted permissions of Deno Deploy, which listens at once and starts on that first request.
 */
async function coldStartMs(mode: "run" | "serve"): Promise<number> {
  const { url, child, spawnedAt: t0 } = await spawnService(mode, "null");
  try {
    while (performance.now() - t0 < 60_000) {
      try {
        const res = await fetch(`${url}/readyz`);
        await res.body?.cancel();
        if (res.ok) return performance.now() - t0;
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`no answer from a cold ${mode} instance within 60 s`);
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

function rssMiB(pid: number): number {
  const out = new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)] }).outputSync();
  return Number(new TextDecoder().decode(out.stdout).trim()) / 1024;
}

/** One request whose body is read and whose status is checked. */
const expect = (status: number, request: (worker: number) => Promise<Response>) => async (worker: number) => {
  const res = await request(worker);
  await res.arrayBuffer();
  return res.status === status;
};

const server = await startServer();
try {
  const base = server.url;
  const form = FORM;
  const password = "bench password 1";
  const project = await setUpProject(base, SECRET, {
    name: "bench",
    redirect: REDIRECT,
    roles: Math.max(10, CONCURRENCY),
    users: CONCURRENCY,
    password,
    domain: "bench.test",
  });
  const clientId = project.clientId;
  const clientSecret = project.clientSecret;
  const projectToken = project.token;
  const roles = project.roles;
  const authed = { authorization: `Bearer ${projectToken}`, "content-type": "application/json" };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}/api/v1/projects/${project.id}${path}`, {
      method: "POST",
      headers: authed,
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return await res.json();
  };
  // AuthZEN decisions: a resource with one permission, a role holding it, a user of that role (by external id).
  const doc = await post("/resources", {
    name: "Doc",
    code: "doc",
    permissions: [{ name: "Read", code: "read" }],
  });
  const reader = await post("/roles", {
    code: "reader",
    name: "Reader",
    permission_ids: [doc.permissions[0].id],
  });
  await post("/users", { display_name: "Reader", external_user_id: "bench-reader", role_id: reader.id });
  const question = { subject: { type: "user", id: "bench-reader" }, action: { name: "read" } };
  const oneDecision = JSON.stringify({ ...question, resource: { type: "doc", id: "doc-1" } });
  const hundredDecisions = JSON.stringify({
    ...question,
    evaluations: Array.from({ length: 100 }, (_, i) => ({ resource: { type: "doc", id: `doc-${i}` } })),
  });

  /** The whole user login (bench/flows.ts), from an address of its own (the service trusts one proxy hop here). */
  let logins = 0;
  const login = (w: number) => {
    const n = logins++;
    return userLogin(plainSend, base, {
      clientId,
      redirect: REDIRECT,
      email: project.users[w],
      password,
      from: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
    });
  };

  const results: Result[] = [];
  const rssBefore = rssMiB(server.pid);
  results.push(await run("GET /healthz (bare route)", expect(200, () => fetch(`${base}/healthz`))));
  results.push(
    await run(
      "POST /api/v1/tokens client_credentials",
      expect(200, () =>
        fetch(`${base}/api/v1/tokens`, {
          method: "POST",
          headers: { ...form, ...basic(clientId, clientSecret) },
          body: "grant_type=client_credentials",
        })),
    ),
  );
  results.push(
    await run(
      "GET /api/v1/projects/{id} (JWT + live permission check)",
      expect(200, () => fetch(`${base}/api/v1/projects/${project.id}`, { headers: authed })),
    ),
  );
  results.push(
    await run(
      "POST /access/v1/evaluation (AuthZEN: one decision)",
      expect(
        200,
        () => fetch(`${base}/access/v1/evaluation`, { method: "POST", headers: authed, body: oneDecision }),
      ),
    ),
  );
  // The same question asked at once is read once (db/batch.ts); a different object in every request never is.
  let asked = 0;
  results.push(
    await run(
      "POST /access/v1/evaluation (one decision, a different object each)",
      expect(200, () =>
        fetch(`${base}/access/v1/evaluation`, {
          method: "POST",
          headers: authed,
          body: JSON.stringify({ ...question, resource: { type: "doc", id: `doc-${asked++}` } }),
        })),
    ),
  );
  results.push(
    await run(
      "POST /access/v1/evaluations (AuthZEN: 100 decisions)",
      expect(
        200,
        () =>
          fetch(`${base}/access/v1/evaluations`, { method: "POST", headers: authed, body: hundredDecisions }),
      ),
    ),
  );
  results.push(
    await run(
      "POST /access/v1/evaluations (100 decisions, different objects each)",
      expect(200, () => {
        const from = (asked += 100);
        return fetch(`${base}/access/v1/evaluations`, {
          method: "POST",
          headers: authed,
          body: JSON.stringify({
            ...question,
            evaluations: Array.from(
              { length: 100 },
              (_, i) => ({ resource: { type: "doc", id: `doc-${from + i}` } }),
            ),
          }),
        });
      }),
    ),
  );
  results.push(
    await run(
      "GET .../roles?page_size=10 (admin read: gate + list of 10)",
      expect(
        200,
        () => fetch(`${base}/api/v1/projects/${project.id}/roles?page_size=10`, { headers: authed }),
      ),
    ),
  );
  // Each worker renames its own role back and forth: a real change, and its audit event, every time.
  let writes = 0;
  results.push(
    await run(
      "PUT .../roles/{id} (admin write: gate, update, audit event)",
      expect(200, (w) =>
        fetch(`${base}/api/v1/projects/${project.id}/roles/${roles[w]}`, {
          method: "PUT",
          headers: authed,
          body: JSON.stringify({ code: `role-${w}`, name: `Role ${w} ${writes++ % 2}` }),
        })),
    ),
  );
  results.push(
    await run(
      "GET /api/v1/projects/{id} with a forged token (401)",
      expect(
        401,
        () => fetch(`${base}/api/v1/projects/${project.id}`, { headers: { authorization: "Bearer a.b.c" } }),
      ),
    ),
  );
  results.push(
    await run(
      "POST /api/v1/tokens/introspect (live state, permissions)",
      async () => {
        const res = await fetch(`${base}/api/v1/tokens/introspect`, {
          method: "POST",
          headers: { ...form, ...basic(clientId, clientSecret) },
          body: new URLSearchParams({ token: projectToken }),
        });
        return res.status === 200 && (await res.json()).active === true;
      },
    ),
  );
  // Each worker refreshes its own chain: a refresh token is single use.
  const chains: string[] = [];
  for (let w = 0; w < CONCURRENCY; w++) chains[w] = (await login(w))!.refresh_token;
  results.push(
    await run("POST /api/v1/tokens refresh_token (rotation)", async (w) => {
      const res = await fetch(`${base}/api/v1/tokens`, {
        method: "POST",
        headers: form,
        body: new URLSearchParams({
          grant_type: "refresh_token",
          client_id: clientId,
          refresh_token: chains[w],
        }),
      });
      if (res.status !== 200) return (await res.body?.cancel(), false);
      chains[w] = (await res.json()).refresh_token;
      return true;
    }, 0),
  );
  results.push(
    await run("full login: authorize + form post + code exchange", async (w) => (await login(w)) !== null, 4),
  );
  const rssAfter = rssMiB(server.pid);

  // One password hash, measured here with the same backend the server uses.
  const rounds = 10;
  const hash = await hashPassword(password);
  let t0 = performance.now();
  for (let i = 0; i < rounds; i++) await hashPassword(password);
  const hashMs = (performance.now() - t0) / rounds;
  t0 = performance.now();
  for (let i = 0; i < rounds; i++) await verifyPassword(hash, password);
  const verifyMs = (performance.now() - t0) / rounds;

  // Cold starts last, with the load over: three of each, the median shown (deno serve needs PostgreSQL: its
  // restricted permissions leave no disk for the embedded database).
  const cold: string[] = [];
  for (const mode of Deno.env.get("DATABASE_URL") ? ["run", "serve"] as const : ["run"] as const) {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) times.push(await coldStartMs(mode));
    times.sort((a, b) => a - b);
    const label = mode === "run"
      ? "deno run main.ts --listen (start, then listen)"
      : "deno serve, --allow-net --allow-env --allow-read (listen, start on the first request)";
    cold.push(`  ${label}: ${times[1].toFixed(0)} ms (of ${times.map((t) => t.toFixed(0)).join(", ")})`);
  }

  // What the audit event adds to the admin write: the same write on a second service that writes no events,
  // alternated with the service as it is (bench/event_cost.ts).
  const eventCost = describeEventCost(await measureEventCost());

  const db = Deno.env.get("DATABASE_URL") ? "PostgreSQL server" : "embedded PGlite";
  console.log(
    `\naccess-control bench: ${db}, ${CONCURRENCY} in flight, ${SECONDS}s per scenario, ` +
      `client and server on this machine (${navigator.hardwareConcurrency} cores)\n`,
  );
  console.log(
    "scenario".padEnd(58) + "ops/s".padStart(9) + "p50 ms".padStart(9) + "p99 ms".padStart(9) +
      "errors".padStart(8),
  );
  for (const r of results) {
    console.log(
      r.name.padEnd(58) + r.rate.toFixed(0).padStart(9) + r.p50.toFixed(2).padStart(9) +
        r.p99.toFixed(2).padStart(9) +
        String(r.errors).padStart(8),
    );
  }
  console.log(
    `\none argon2id password hash (${await passwordBackend()}, 19 MiB, t=2): ${hashMs.toFixed(1)} ms; ` +
      `one verification: ${verifyMs.toFixed(1)} ms`,
  );
  console.log(`server RSS: ${rssBefore.toFixed(0)} MiB before, ${rssAfter.toFixed(0)} MiB after the runs`);
  console.log("cold start, process spawned to first 200 from /readyz (migrated database), median of 3:");
  for (const line of cold) console.log(line);
  console.log(eventCost);
} finally {
  await server.stop();
}
