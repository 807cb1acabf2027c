/**
 * Traces (docs/observability.md): an OTLP receiver written in the test gets a trace whose spans nest request →
 * statement, continuing the caller's `traceparent`; the request log carries the trace id; a collector that is
 * down costs dropped spans, counted. (The service's thread under `deno run`, and a restricted `deno serve`, are
 * checked in tests/metrics_test.ts; webhook attempts' client spans there too.)
 */
import assert from "node:assert/strict";
import { isolatedDatabase, startWith, systemTokenAt, test } from "./helpers.ts";
import { attr, otlpReceiver, type OtlpSpan } from "./telemetry_support.ts";

test("traces: a request's server span continues its traceparent, its statements nest under it, the log carries the trace id; a collector that is down costs dropped spans", async () => {
  const receiver = otlpReceiver();
  const iso = await isolatedDatabase();
  const metricsToken = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
  let log = "";
  const svc = await startWith({
    ...iso.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    METRICS_TOKEN: metricsToken,
    LOG_LEVEL: "info",
  }, { write: (lines) => log += lines });
  try {
    const token = await systemTokenAt(svc.url);
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const parentId = traceId.slice(0, 16);
    const res = await fetch(`${svc.url}/api/v1/projects/system/users?limit=5`, {
      headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${parentId}-01` },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    let server: OtlpSpan | undefined;
    let statements: OtlpSpan[] = [];
    for (let i = 0; i < 50 && (!server || statements.length === 0); i++) {
      await new Promise((r) => setTimeout(r, 200));
      server = receiver.spans.find((s) => s.traceId === traceId && s.kind === 2);
      statements = receiver.spans.filter((s) => server && s.parentSpanId === server.spanId);
    }
    assert.ok(server, `no server span for the trace: ${JSON.stringify(receiver.spans.slice(0, 5))}`);
    assert.equal(server.parentSpanId, parentId);
    assert.equal(server.name, "GET /api/v1/projects/:project_id/users");
    assert.equal(attr(server, "http.route"), "/api/v1/projects/:project_id/users");
    assert.equal(attr(server, "http.response.status_code"), "200");
    assert.ok(statements.length >= 1, "no statement span under the request's");
    for (const s of statements) {
      assert.equal(s.traceId, traceId);
      assert.equal(s.kind, 3);
      assert.equal(attr(s, "db.system.name"), "postgresql");
      assert.match(s.name, /^(select|insert|update|delete|with)\b/);
      // Inside the request's time, and never a value: not the token, not the project's id.
      assert.ok(BigInt(s.startTimeUnixNano) >= BigInt(server.startTimeUnixNano) - 1_000_000n);
      assert.ok(BigInt(s.endTimeUnixNano) <= BigInt(server.endTimeUnixNano) + 1_000_000n);
      assert.ok(!JSON.stringify(s).includes(token.slice(-20)));
    }
    const line = log.split("\n").find((l) => l.includes('"route":"/api/v1/projects/:project_id/users"'));
    assert.ok(line, log.slice(-2000));
    assert.equal(JSON.parse(line).trace_id, traceId);

    // A request without traceparent starts a trace of its own; a "not sampled" one is not exported.
    const quiet = crypto.randomUUID().replaceAll("-", "");
    const unsampled = await fetch(`${svc.url}/readyz`, {
      headers: { traceparent: `00-${quiet}-${quiet.slice(0, 16)}-00` },
    });
    await unsampled.body?.cancel();

    // The collector down: spans are dropped and counted, requests answer as before.
    receiver.state.down = true;
    const metrics = async () =>
      await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } }))
        .text();
    const dropped = (text: string) => Number(/^acs_trace_spans_dropped_total (\d+)/m.exec(text)![1]);
    const before = dropped(await metrics());
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${svc.url}/healthz`)).status, 200);
    let after = before;
    for (let i = 0; i < 30 && after <= before; i++) {
      await new Promise((r) => setTimeout(r, 200));
      after = dropped(await metrics());
    }
    assert.ok(after > before, `dropped ${before} → ${after}`);
    assert.ok(!receiver.spans.some((s) => s.traceId === quiet), "a span of a not-sampled trace was exported");
  } finally {
    await svc.close();
    await receiver.close();
    await iso.drop();
  }
});
