/**
 * Traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set: a server span per request (continuing the caller's W3C
 * `traceparent`), a child span per database statement (its kind and table, never its values) and per outbound
 * call (webhooks; mail and upstream providers call `startClientSpan` too), exported over OTLP/HTTP with the
 * JSON encoding, in batches, from a queue that never holds up a request: a collector that is down or slow
 * costs dropped spans (`acs_trace_spans_dropped_total`), never a wait.
 *
 * Our own small exporter rather than Deno's built-in OpenTelemetry (`OTEL_DENO=true`): that one is switched on
 * by the runtime's environment at process start (not by the service's configuration), instruments
 * `Deno.serve` and `fetch` but not the driver's statements nor the `node:http` requests that deliver webhooks,
 * and offers no drop counter; the service under `deno run` answers in a worker thread, and the statements'
 * spans need their request's span handed through the driver (patch 11's `statement_context`). Leave
 * OTEL_DENO unset, or the requests get two server spans.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { spansDropped, spansExported } from "./families.ts";

export type SpanKind = "server" | "client" | "internal";
const KIND_NUMBER = { internal: 1, server: 2, client: 3 } as const;

type Attribute = string | number | boolean;

export type Span = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  /** Recorded and exported (the caller's `traceparent` did not say "not sampled"). */
  sampled: boolean;
  name: string;
  kind: SpanKind;
  startMs: number;
  attributes: Record<string, Attribute>;
  error?: string;
};

export type TraceSettings = {
  /** The collector's base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans go to `<it>/v1/traces`. */
  endpoint: string;
  serviceName: string;
  headers: Record<string, string>;
};

const storage = new AsyncLocalStorage<Span>();
let exporter: Exporter | null = null;

/** Whether spans are recorded (an endpoint is configured). */
export function tracing(): boolean {
  return exporter !== null;
}

/** Starts exporting (service.ts, once per process: a second service in the process shares it). */
export function startTracing(settings: TraceSettings | undefined): void {
  if (!settings || exporter) return;
  exporter = new Exporter(settings);
}

/** Exports what is queued and stops (the service closing). */
export async function stopTracing(): Promise<void> {
  const e = exporter;
  exporter = null;
  await e?.close();
}

/** The span the current asynchronous context runs in (a request's, or an outbound call's). */
export function currentSpan(): Span | undefined {
  return storage.getStore();
}

const HEX = /^[0-9a-f]+$/;
const randomHex = (bytes: number) => {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
};

/** A W3C trace context `traceparent` (version 00 and later, as the spec asks of a version-00 reader). */
export function parseTraceparent(value: string | undefined | null) {
  if (!value || value.length < 55) return null;
  const [version, traceId, parentId, flags] = value.trim().split("-");
  if (
    version?.length !== 2 || !HEX.test(version) || version === "ff" ||
    traceId?.length !== 32 || !HEX.test(traceId) || /^0+$/.test(traceId) ||
    parentId?.length !== 16 || !HEX.test(parentId) || /^0+$/.test(parentId) ||
    flags?.length !== 2 || !HEX.test(flags)
  ) return null;
  if (version === "00" && value.trim().length !== 55) return null;
  return { traceId, parentId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

export function traceparentOf(span: Span): string {
  return `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`;
}

/** A request's server span, continuing the caller's trace when its `traceparent` is valid. */
export function startServerSpan(method: string, traceparent: string | null | undefined): Span {
  const parent = parseTraceparent(traceparent);
  return {
    traceId: parent?.traceId ?? randomHex(16),
    spanId: randomHex(8),
    parentSpanId: parent?.parentId,
    sampled: parent ? parent.sampled : true,
    name: method,
    kind: "server",
    startMs: performance.timeOrigin + performance.now(),
    attributes: { "http.request.method": method },
  };
}

/** Runs `fn` with `span` as the current span (its statements and calls become its children). */
export function runInSpan<T>(span: Span, fn: () => T): T {
  return storage.run(span, fn);
}

/** Ends a span and queues it for export. */
export function endSpan(span: Span, endMs = performance.timeOrigin + performance.now()): void {
  if (span.sampled) exporter?.add(span, endMs);
}

/** A child of the current span (or a new trace's root when there is none). */
export function childSpan(name: string, kind: SpanKind, parent = currentSpan(), startMs?: number): Span {
  return {
    traceId: parent?.traceId ?? randomHex(16),
    spanId: randomHex(8),
    parentSpanId: parent?.spanId,
    sampled: parent ? parent.sampled : true,
    name,
    kind,
    startMs: startMs ?? performance.timeOrigin + performance.now(),
    attributes: {},
  };
}

/**
 * An outbound call's span (a webhook delivery, a mail, an upstream provider's endpoint): `traceparent` is the
 * header to send with it, `end` records its outcome. Null when tracing is off.
 */
export function startClientSpan(
  name: string,
  attributes: Record<string, Attribute>,
): { traceparent: string; end(error?: string, attributes?: Record<string, Attribute>): void } | null {
  if (!exporter) return null;
  const span = childSpan(name, "client");
  Object.assign(span.attributes, attributes);
  return {
    traceparent: traceparentOf(span),
    end(error, more) {
      if (more) Object.assign(span.attributes, more);
      if (error) span.error = error;
      endSpan(span);
    },
  };
}

/** Spans waiting for export at most; more are dropped (and counted). */
const MAX_QUEUED = 4096;
const BATCH = 512;
const EVERY_MS = 1000;
const TIMEOUT_MS = 5000;
const CLOSE_MS = 2000;

type Finished = { span: Span; endMs: number };

const nanos = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

function attributeList(attrs: Record<string, Attribute>) {
  return Object.entries(attrs).map(([key, v]) => ({
    key,
    value: typeof v === "string"
      ? { stringValue: v }
      : typeof v === "boolean"
      ? { boolValue: v }
      : Number.isInteger(v)
      ? { intValue: String(v) }
      : { doubleValue: v },
  }));
}

/**
 * The batching exporter: spans are queued as they end; a timer sends up to BATCH of them at a time, one POST
 * in flight at most, each bounded by TIMEOUT_MS. A failed POST drops its batch (the collector is down: keeping
 * spans would only grow the queue).
 */
class Exporter {
  #queue: Finished[] = [];
  #sending: Promise<void> | null = null;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #url: string;
  readonly #resource: unknown;

  constructor(readonly settings: TraceSettings) {
    this.#url = `${settings.endpoint.replace(/\/+$/, "")}/v1/traces`;
    this.#resource = {
      attributes: attributeList({ "service.name": settings.serviceName, "telemetry.sdk.language": "js" }),
    };
    this.#timer = setInterval(() => this.#flush(), EVERY_MS);
    Deno.unrefTimer(this.#timer);
  }

  add(span: Span, endMs: number): void {
    if (this.#queue.length >= MAX_QUEUED) {
      spansDropped.child().value++;
      return;
    }
    this.#queue.push({ span, endMs });
    if (this.#queue.length >= BATCH && !this.#sending) this.#flush();
  }

  #flush(): void {
    if (this.#sending || this.#queue.length === 0) return;
    const batch = this.#queue.splice(0, BATCH);
    this.#sending = this.#send(batch).finally(() => this.#sending = null);
  }

  async #send(batch: Finished[]): Promise<void> {
    const body = JSON.stringify({
      resourceSpans: [{
        resource: this.#resource,
        scopeSpans: [{
          scope: { name: "access-control-service" },
          spans: batch.map(({ span, endMs }) => ({
            traceId: span.traceId,
            spanId: span.spanId,
            ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
            name: span.name,
            kind: KIND_NUMBER[span.kind],
            startTimeUnixNano: nanos(span.startMs),
            endTimeUnixNano: nanos(endMs),
            attributes: attributeList(span.attributes),
            status: span.error ? { code: 2, message: span.error } : { code: 0 },
          })),
        }],
      }],
    });
    try {
      const res = await fetch(this.#url, {
        method: "POST",
        headers: { ...this.settings.headers, "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      await res.body?.cancel();
      if (res.ok) spansExported.child().value += batch.length;
      else spansDropped.child().value += batch.length;
    } catch {
      spansDropped.child().value += batch.length; // told by the dropped-spans counter, not a log line per batch
    }
  }

  /** Sends what is queued, for at most about CLOSE_MS more (a collector that is down must not hold a stop). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    const deadline = performance.now() + CLOSE_MS;
    await this.#sending;
    while (this.#queue.length > 0 && performance.now() < deadline) {
      this.#flush();
      await this.#sending;
    }
    spansDropped.child().value += this.#queue.length;
    this.#queue = [];
  }
}
