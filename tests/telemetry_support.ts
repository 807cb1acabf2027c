/**
 * What the observability tests share: an OTLP/HTTP receiver written here (JSON), the check that a request's
 * trace reaches it nested (request → statement), and reading one series from a /metrics text.
 */
import assert from "node:assert/strict";

export type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: Record<string, unknown> }[];
};

/** An OTLP/HTTP receiver (JSON): keeps every span it is sent; `down` makes it answer 503. */
export function otlpReceiver() {
  const spans: OtlpSpan[] = [];
  const state = { down: false };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/traces") {
      return new Response(null, { status: 404 });
    }
    assert.match(req.headers.get("content-type") ?? "", /^application\/json/);
    const body = await req.json();
    if (state.down) return new Response(null, { status: 503 });
    for (const rs of body.resourceSpans) {
      assert.ok(rs.resource.attributes.some((a: { key: string }) => a.key === "service.name"));
      for (const ss of rs.scopeSpans) spans.push(...ss.spans);
    }
    return Response.json({});
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, spans, state, close: () => server.shutdown() };
}

/** A request with a `traceparent` reaches the receiver as a server span with a statement's span under it. */
export async function assertNestedTrace(
  url: string,
  receiver: ReturnType<typeof otlpReceiver>,
): Promise<void> {
  const traceId = crypto.randomUUID().replaceAll("-", "");
  const parentId = traceId.slice(8, 24);
  const res = await fetch(`${url}/.well-known/oauth-authorization-server`, {
    headers: { traceparent: `00-${traceId}-${parentId}-01` },
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  for (let i = 0; i < 50; i++) {
    const server = receiver.spans.find((s) => s.traceId === traceId && s.kind === 2);
    if (server && receiver.spans.some((s) => s.parentSpanId === server.spanId && attr(s, "db.system.name"))) {
      assert.equal(server.parentSpanId, parentId);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no nested trace ${traceId}: ${JSON.stringify(receiver.spans.slice(-5))}`);
}

export const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

/** The value of one series in an exposition, 0 when absent. */
export const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
};

/** A METRICS_TOKEN for a test: 64 random hex digits. */
export const newMetricsToken = () =>
  crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
