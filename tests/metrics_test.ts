/**
 * Metrics (docs/observability.md): a real Prometheus server scrapes a service process (`deno run`, its worker
 * thread) on METRICS_PORT during scripted traffic, and its query API shows the series; /metrics on the main
 * port only for a bearer of METRICS_TOKEN (also under a restricted `deno serve`); no label carries an id; the
 * shipped alert rules pass `promtool check rules` and `promtool test rules` and name only exported metrics;
 * webhook, login, refresh and grant counters move; statement and queue timeouts are counted by kind.
 * Traces: tests/traces_test.ts; readiness: tests/readiness_test.ts.
 */
import assert from "node:assert/strict";
import {
  ADMIN_SECRET,
  basic,
  challengeOf,
  DATABASE_URL,
  freePort,
  isolatedDatabase,
  loginProject,
  newVerifier,
  openLoginPage,
  postToken,
  REDIRECT_URI,
  startWith,
  submitLogin,
  systemTokenAt,
  test,
  TEST_SERVICE_URL,
  userTokens,
} from "./helpers.ts";
import { spawn } from "./processes.ts";
import { assertNestedTrace, attr, otlpReceiver, type OtlpSpan, sample } from "./telemetry_support.ts";

const PROMETHEUS = "/usr/bin/prometheus";
const PROMTOOL = "/usr/bin/promtool";
const hasPrometheus = (() => {
  try {
    return Deno.statSync(PROMETHEUS).isFile;
  } catch {
    return false;
  }
})();
if (!hasPrometheus) {
  console.warn(`SKIPPED: the Prometheus tests need Debian's prometheus package (${PROMETHEUS} is absent)`);
}
const ROOT = new URL("../", import.meta.url);
const RULES = new URL("docs/observability/alerts.yml", ROOT).pathname;
const DASHBOARD = new URL("docs/observability/grafana-dashboard.json", ROOT).pathname;

/** The label names the service's series may carry; anything else would be a leak of request data. */
const LABELS = new Set([
  "__name__",
  "instance",
  "job",
  "route",
  "method",
  "status",
  "le",
  "grant_type",
  "endpoint",
  "outcome",
  "class",
  "kind",
  "type",
  "name",
]);
/** An id of ours (UUIDv7, a base64url kid or secret) or an email: never a label value. */
const ID_LIKE = /[0-9a-f]{8}-[0-9a-f]{4}-|[A-Za-z0-9_-]{32,}|@/;

async function tokenRequest(url: string, secret: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: basic("system-admin", secret),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  await res.body?.cancel();
  return res.status;
}

function startPrometheus(target: string) {
  const port = freePort();
  const dir = Deno.makeTempDirSync({ prefix: "acs-prom-" });
  Deno.writeTextFileSync(
    `${dir}/prometheus.yml`,
    `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: acs\n` +
      `    static_configs:\n      - targets: ["${target}"]\n`,
  );
  const child = new Deno.Command(PROMETHEUS, {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let log = "";
  (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) log += chunk;
  })().catch(() => {});
  const api = `http://127.0.0.1:${port}`;
  return {
    api,
    log: () => log,
    async ready() {
      for (let i = 0; i < 100; i++) {
        try {
          const res = await fetch(`${api}/-/ready`);
          await res.body?.cancel();
          if (res.ok) return;
        } catch { /* not yet */ }
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`prometheus did not start:\n${log}`);
    },
    async query(q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
      const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(q)}`);
      const body = await res.json();
      assert.equal(body.status, "success", JSON.stringify(body));
      return body.data.result;
    },
    async get(path: string) {
      const body = await (await fetch(`${api}${path}`)).json();
      assert.equal(body.status, "success", JSON.stringify(body));
      return body.data;
    },
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** Waits until the query has a sample whose value passes `ok` (Prometheus scrapes every second). */
async function eventually(
  prom: ReturnType<typeof startPrometheus>,
  q: string,
  ok: (v: number) => boolean = (v) => v > 0,
) {
  let last: unknown;
  for (let i = 0; i < 60; i++) {
    const result = await prom.query(q);
    last = result;
    if (result.some((r) => ok(Number(r.value[1])))) return result;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${q}: no sample as expected, last ${JSON.stringify(last)}`);
}

test(
  "a real Prometheus scrapes METRICS_PORT of a `deno run` service during traffic: the expected series, no ids",
  async () => {
    const iso = await isolatedDatabase();
    const metricsPort = freePort();
    const receiver = otlpReceiver();
    const svc = await spawn({
      ...iso.env,
      BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
      METRICS_PORT: String(metricsPort),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    });
    const prom = startPrometheus(`127.0.0.1:${metricsPort}`);
    try {
      // Loopback only, and not on the main port without METRICS_TOKEN.
      const main = await fetch(`${svc.url}/metrics`);
      assert.equal(main.status, 404);
      await main.body?.cancel();
      // Loopback only: another address of this machine is refused.
      const other = Deno.networkInterfaces().find((i) =>
        i.family === "IPv4" && !i.address.startsWith("127.")
      );
      if (other) {
        await assert.rejects(
          Deno.connect({ hostname: other.address, port: metricsPort }),
          `METRICS_PORT answered on ${other.address}`,
        );
      }
      await prom.ready();
      // Scripted traffic: tokens, refused secrets, a decision, an admin read, a missing endpoint.
      for (let i = 0; i < 5; i++) assert.equal(await tokenRequest(svc.url, ADMIN_SECRET), 200);
      for (let i = 0; i < 3; i++) assert.equal(await tokenRequest(svc.url, `${ADMIN_SECRET}-wrong`), 401);
      const token = await systemTokenAt(svc.url);
      const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
      const decision = await fetch(`${svc.url}/access/v1/evaluation`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({
          subject: { type: "user", id: "nobody@example.com" },
          action: { name: "read" },
          resource: { type: "projects", id: "system" },
        }),
      });
      assert.equal(decision.status, 200, await decision.clone().text());
      assert.equal((await decision.json()).decision, false);
      const created = await fetch(`${svc.url}/api/v1/projects`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ name: "Metrics shop" }),
      });
      assert.equal(created.status, 201);
      const project = await created.json();
      for (const path of ["/api/v1/projects/system", `/api/v1/projects/${project.id}`, "/nowhere"]) {
        await (await fetch(`${svc.url}${path}`, { headers: auth })).body?.cancel();
      }

      await eventually(prom, 'up{job="acs"}');
      await eventually(prom, 'acs_tokens_issued_total{grant_type="client_credentials"}', (v) => v >= 6);
      await eventually(
        prom,
        'acs_http_requests_total{route="/api/v1/tokens",method="POST",status="401"}',
        (v) => v >= 3,
      );
      await eventually(
        prom,
        'acs_http_requests_total{route="/api/v1/projects/:project_id",method="GET",status="200"}',
        (v) => v >= 2,
      );
      await eventually(prom, 'acs_decisions_total{endpoint="evaluation",outcome="deny"}', (v) => v >= 1);
      await eventually(prom, 'acs_audit_events_total{type="project.created"}', (v) => v >= 1);
      await eventually(
        prom,
        'histogram_quantile(0.99, sum by (le) (acs_http_request_duration_seconds_bucket{route="/api/v1/tokens"}))',
        (v) => v > 0 && v <= 10,
      );
      await eventually(prom, "acs_http_requests_in_flight", (v) => v === 0);
      await eventually(prom, "acs_db_pool_size");
      await eventually(prom, "acs_db_pool_open");
      await eventually(prom, "acs_db_pool_in_use", (v) => v >= 0);
      await eventually(prom, "acs_db_pool_waiting", (v) => v >= 0);
      await eventually(prom, "acs_db_statement_duration_seconds_count", (v) => v >= 10);
      await eventually(prom, 'acs_db_statement_errors_total{class="timeout"}', (v) => v === 0);
      await eventually(prom, 'acs_job_runs_total{name="webhook-deliveries"}');
      await eventually(prom, 'acs_job_failures_total{name="webhook-deliveries"}', (v) => v === 0);
      await eventually(
        prom,
        'time() - acs_job_last_success_timestamp_seconds{name="webhook-deliveries"}',
        (v) => v < 30,
      );
      await eventually(prom, "acs_webhook_backlog", (v) => v === 0);
      await eventually(prom, 'acs_webhook_delivery_attempts_total{outcome="delivered"}', (v) => v === 0);
      await eventually(prom, "acs_signing_key_age_seconds", (v) => v >= 0 && v < 3600);
      await eventually(prom, "acs_signing_key_rotation_seconds", (v) => v === 30 * 86_400);
      await eventually(prom, 'acs_logins_total{outcome="failed"}', (v) => v === 0);
      await eventually(prom, "acs_refresh_token_reuse_total", (v) => v === 0);
      await eventually(prom, 'acs_process_memory_bytes{kind="rss"}', (v) => v > 10_000_000);
      await eventually(prom, 'acs_process_memory_bytes{kind="heap_used"}');
      await eventually(prom, "acs_event_loop_delay_seconds_count");
      // The service's thread exports traces too.
      await assertNestedTrace(svc.url, receiver);
      await eventually(prom, "acs_trace_spans_exported_total");

      // No label carries an id, an email or a path: only the known names, and no value that looks like an id.
      const names: string[] = await prom.get("/api/v1/labels");
      for (const name of names) assert.ok(LABELS.has(name), `unexpected label ${name}`);
      for (const name of names) {
        if (name === "__name__" || name === "instance") continue;
        const values: string[] = await prom.get(`/api/v1/label/${name}/values`);
        for (const v of values) {
          assert.doesNotMatch(v, ID_LIKE, `${name}="${v}"`);
          assert.ok(!v.includes(project.id) && !v.includes("nobody"), `${name}="${v}"`);
        }
      }
      const routes: string[] = await prom.get("/api/v1/label/route/values");
      assert.ok(routes.includes("/api/v1/projects/:project_id"), routes.join(" "));
      assert.ok(!routes.some((r) => r.includes("system") || r.includes("nowhere")), routes.join(" "));
    } finally {
      await prom.stop();
      await svc.stop();
      await receiver.close();
      await iso.drop();
    }
  },
  { ignore: !hasPrometheus },
);

test("/metrics on the main port: 401 without METRICS_TOKEN's bearer or with a wrong one, the text with it", async () => {
  const iso = await isolatedDatabase();
  const metricsToken = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
  let log = "";
  const svc = await startWith({ ...iso.env, METRICS_TOKEN: metricsToken, LOG_LEVEL: "info" }, {
    write: (lines) => log += lines,
  });
  try {
    for (
      const headers of [{}, { authorization: `Bearer ${metricsToken}x` }, {
        authorization: `Basic ${metricsToken}`,
      }, {
        authorization: `Bearer ${await systemTokenAt(svc.url)}`,
      }] as Record<string, string>[]
    ) {
      const res = await fetch(`${svc.url}/metrics`, { headers });
      assert.equal(res.status, 401, JSON.stringify(headers).slice(0, 40));
      assert.equal((await res.json()).error, "invalid_authorization_token");
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
    }
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const res = await fetch(`${svc.url}/metrics`, {
      headers: {
        authorization: `Bearer ${metricsToken}`,
        traceparent: `00-${traceId}-${traceId.slice(0, 16)}-01`,
      },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(text, /^# TYPE acs_http_requests_total counter$/m);
    assert.match(text, /^acs_http_requests_total\{route="\/metrics",method="GET",status="401"\} [1-9]/m);
    assert.match(text, /^acs_db_pool_size [1-9]/m);
    // Without tracing, the request log still carries the caller's trace id.
    await new Promise((r) => setTimeout(r, 50));
    const line = log.split("\n").find((l) => l.includes(traceId));
    assert.ok(line, log.slice(-1000));
    assert.equal(JSON.parse(line).route, "/metrics");
  } finally {
    await svc.close();
    await iso.drop();
  }
});

test(
  "/metrics with METRICS_TOKEN under `deno serve` with only --allow-net --allow-env --allow-read",
  async () => {
    const iso = await isolatedDatabase();
    const metricsToken = "m".repeat(8) + crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID();
    const receiver = otlpReceiver();
    const svc = await spawn(
      {
        ...iso.env,
        BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
        METRICS_TOKEN: metricsToken,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      },
      {
        mode: "serve",
      },
    );
    try {
      assert.equal(await tokenRequest(svc.url, ADMIN_SECRET), 200);
      const refused = await fetch(`${svc.url}/metrics`);
      assert.equal(refused.status, 401);
      await refused.body?.cancel();
      const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, /^acs_tokens_issued_total\{grant_type="client_credentials"\} [1-9]/m);
      assert.match(text, /^acs_process_memory_bytes\{kind="rss"\} [1-9]/m);
      await assertNestedTrace(svc.url, receiver);
      assert.doesNotMatch(svc.output(), /PermissionDenied|Requires .* access/);
    } finally {
      await svc.stop();
      await receiver.close();
      await iso.drop();
    }
  },
  { ignore: !DATABASE_URL },
);

test("the shipped alert rules pass promtool check and test, and the rules and the dashboard name only exported metrics", async () => {
  const families = await exportedFamilies();
  const rules = await Deno.readTextFile(RULES);
  const dashboard = await Deno.readTextFile(DASHBOARD);
  JSON.parse(dashboard);
  for (const [what, text] of [["alerts.yml", rules], ["grafana-dashboard.json", dashboard]]) {
    const used = new Set(
      [...text.matchAll(/\bacs_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, "")),
    );
    assert.ok(used.size > 5, what);
    for (const name of used) {
      assert.ok(families.has(name), `${what} names ${name}, which the service does not export`);
    }
  }
  for (const alert of ["ErrorRate", "Latency", "PoolSaturat", "JobFail", "Backlog", "SigningKey"]) {
    assert.match(rules, new RegExp(`alert: \\w*${alert}`), alert);
  }
  if (!hasPrometheus) return;
  const out = await new Deno.Command(PROMTOOL, {
    args: ["check", "rules", RULES],
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.match(text, /SUCCESS/);
  // The rules' unit tests: the error rate, pool saturation, key rotation, job failure and backlog alerts fire on
  // series that should fire them, and only there.
  const unit = await new Deno.Command(PROMTOOL, {
    args: ["test", "rules", RULES.replace(/alerts\.yml$/, "alerts_test.yml")],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const unitText = new TextDecoder().decode(unit.stdout) + new TextDecoder().decode(unit.stderr);
  assert.equal(unit.code, 0, unitText);
  assert.match(unitText, /SUCCESS/);
});

/** The families a service registers, from the process's registry. */
async function exportedFamilies(): Promise<Set<string>> {
  await import("../telemetry/families.ts");
  const { REGISTRY } = await import("../telemetry/metrics.ts");
  const text = await REGISTRY.render();
  return new Set([...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]));
}

test("webhook deliveries are counted by outcome, their backlog read from the database, each a client span whose traceparent the receiver gets", async () => {
  const iso = await isolatedDatabase();
  const collector = otlpReceiver();
  const metricsToken = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
  const svc = await startWith({
    ...iso.env,
    METRICS_TOKEN: metricsToken,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_BASE_SECONDS: "60",
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
  });
  let answer = 200;
  const traceparents: string[] = [];
  const rx = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    traceparents.push(req.headers.get("traceparent") ?? "");
    await req.body?.cancel();
    return new Response(null, { status: answer });
  });
  const metrics = async () =>
    await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } }))
      .text();
  const until = async (what: string, ok: (text: string) => boolean) => {
    for (let i = 0; i < 50; i++) {
      const text = await metrics();
      if (ok(text)) return text;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(
      `${what}:\n${(await metrics()).split("\n").filter((l) => l.includes("webhook")).join("\n")}`,
    );
  };
  try {
    const system = {
      authorization: `Bearer ${await systemTokenAt(svc.url)}`,
      "content-type": "application/json",
    };
    const created = await (await fetch(`${svc.url}/api/v1/projects`, {
      method: "POST",
      headers: system,
      body: JSON.stringify({ name: "Hooks" }),
    })).json();
    const tokenRes = await fetch(`${svc.url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: basic(created.admin_client.client_id, created.admin_client.client_secret),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    const auth = {
      authorization: `Bearer ${(await tokenRes.json()).access_token}`,
      "content-type": "application/json",
    };
    const base = `${svc.url}/api/v1/projects/${created.id}`;
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 201, await res.clone().text());
      return await res.json();
    };
    const before = await metrics();
    await post("/webhooks", { url: `http://127.0.0.1:${rx.addr.port}/hook`, event_types: ["role.*"] });
    await post("/roles", { code: "clerk", name: "Clerk" });
    const delivered = 'acs_webhook_delivery_attempts_total{outcome="delivered"}';
    await until("a delivered attempt", (t) => sample(t, delivered) > sample(before, delivered));
    answer = 503;
    const retry = 'acs_webhook_delivery_attempts_total{outcome="retry"}';
    await post("/roles", { code: "cashier", name: "Cashier" });
    const after = await until("a failed attempt to retry", (t) => sample(t, retry) > sample(before, retry));
    // Due again only in about a minute: pending, in the backlog every instance reads.
    assert.ok(sample(after, "acs_webhook_backlog") >= 1, after);
    // Each attempt was a client span, and the receiver got its traceparent.
    assert.ok(traceparents.length >= 2);
    for (const header of traceparents) {
      const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(header) ?? [];
      assert.ok(traceId, header);
      let span: OtlpSpan | undefined;
      for (let i = 0; i < 30 && !span; i++) {
        span = collector.spans.find((s) => s.spanId === spanId && s.traceId === traceId);
        if (!span) await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(span, `no span ${header}`);
      assert.equal(span.name, "POST webhook");
      assert.equal(span.kind, 3);
      assert.equal(attr(span, "server.address"), "127.0.0.1");
    }
  } finally {
    await collector.close();
    await rx.shutdown();
    await svc.close();
    await iso.drop();
  }
});

test(
  "logins, refresh token reuse and user grants are counted (the shared service runs in this process)",
  async () => {
    const { REGISTRY } = await import("../telemetry/metrics.ts");
    const before = await REGISTRY.render();
    const p = await loginProject();
    const tokens = await userTokens(p);
    const page = await openLoginPage({
      client_id: p.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      code_challenge: await challengeOf(newVerifier()),
      code_challenge_method: "S256",
    });
    const wrong = await submitLogin(page, p.email, "not the password");
    assert.equal(wrong.status, 400);
    await wrong.body?.cancel();
    const refresh = () =>
      postToken({ grant_type: "refresh_token", client_id: p.clientId, refresh_token: tokens.refresh_token });
    assert.equal((await refresh()).status, 200);
    assert.equal((await refresh()).status, 400);
    const after = await REGISTRY.render();
    const grew = (series: string, by: number) =>
      assert.ok(
        sample(after, series) - sample(before, series) >= by,
        `${series}: ${sample(before, series)} → ${sample(after, series)}`,
      );
    grew('acs_logins_total{outcome="succeeded"}', 1);
    grew('acs_logins_total{outcome="failed"}', 1);
    grew('acs_tokens_issued_total{grant_type="authorization_code"}', 1);
    grew('acs_tokens_issued_total{grant_type="refresh_token"}', 1);
    grew("acs_refresh_token_reuse_total", 1);
    grew('acs_audit_events_total{type="refresh_token.reuse_detected"}', 1);
    grew('acs_audit_events_total{type="login.failed"}', 1);
  },
  { ignore: TEST_SERVICE_URL !== undefined },
);

test(
  "statement timeouts and queue timeouts are counted by kind",
  async () => {
    const iso = await isolatedDatabase();
    const metricsToken = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
    const svc = await startWith({
      ...iso.env,
      METRICS_TOKEN: metricsToken,
      DATABASE_POOL_SIZE: "1",
      DATABASE_QUEUE_TIMEOUT: "0.2",
      DATABASE_STATEMENT_TIMEOUT: "0.4",
    }, { write: () => {} });
    const metrics = async () =>
      await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } }))
        .text();
    try {
      const before = await metrics();
      // The pool's one connection holds a transaction that sleeps past the statement timeout; a statement behind
      // it waits out the queue's.
      const slow = svc.db.sql.begin((tx) => tx`select pg_sleep(2)`).catch((err) => err);
      await new Promise((r) => setTimeout(r, 50));
      const queued = await svc.db.sql`select 1`.catch((err) => err);
      assert.equal(queued.code, "QUEUE_TIMEOUT");
      const code = (await slow).code;
      assert.ok(["57014", "STATEMENT_TIMEOUT"].includes(code), code);
      let after = await metrics();
      for (let i = 0; i < 20 && sample(after, 'acs_db_timeouts_total{kind="statement"}') === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await metrics();
      }
      const grew = (series: string) =>
        assert.ok(
          sample(after, series) > sample(before, series),
          `${series}: ${sample(before, series)} → ${sample(after, series)}`,
        );
      grew('acs_db_timeouts_total{kind="queue"}');
      grew('acs_db_timeouts_total{kind="statement"}');
      grew('acs_db_statement_errors_total{class="timeout"}');
    } finally {
      await svc.close();
      await iso.drop();
    }
  },
  // The embedded database runs a statement to its end inside this process: nothing times out there.
  { ignore: !DATABASE_URL },
);
