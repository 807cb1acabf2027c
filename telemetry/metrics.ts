/**
 * Prometheus metrics, the few kinds the service needs (no client library): counters and histograms kept in
 * place and incremented on the hot paths (a map lookup by the label values, an add), gauges read when scraped,
 * and the text exposition format (version 0.0.4). One registry per process (`REGISTRY`): an instance is a
 * process, and under `deno run` the service's thread. Label values come from fixed sets the code names (a
 * route's pattern, a grant type, an outcome), never from what a request carried: no ids, no paths, no emails.
 */

type Labels = readonly string[];

/** A metric family: its name, help, type and the lines of its samples. */
type Family = {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  render(out: string[]): void;
};

/** `le` values, label values and help text, escaped as the text format asks. */
const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
const formatNumber = (n: number) =>
  Number.isFinite(n) ? String(n) : Number.isNaN(n) ? "NaN" : n > 0 ? "+Inf" : "-Inf";

function labelText(names: Labels, values: Labels, extra?: string): string {
  const parts: string[] = [];
  for (let i = 0; i < names.length; i++) parts.push(`${names[i]}="${escapeLabel(values[i])}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** The key of one label set in a family's map. */
const keyOf = (values: Labels) => values.length === 1 ? values[0] : values.join("\u001f");

/** A counter: only goes up (since the process started). */
export class Counter<N extends string = never> {
  readonly #children = new Map<string, { values: Labels; value: number }>();
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly N[] = []) {}

  /** Adds `n` (default 1) to the series of these label values, in the order of `labelNames`. */
  inc(values: { [K in N]: string } | undefined = undefined, n = 1): void {
    const list = values ? this.labelNames.map((k) => values[k]) : [];
    this.#child(list).value += n;
  }

  /** The series of these values, for a hot path that increments it often (`child.value++`). */
  child(...values: string[]): { value: number } {
    return this.#child(values);
  }

  #child(values: Labels) {
    const key = keyOf(values);
    let c = this.#children.get(key);
    if (!c) {
      c = { values: [...values], value: 0 };
      this.#children.set(key, c);
    }
    return c;
  }

  /** Declares series at 0, so that they exist (and `rate()` works) before their first event. */
  preset(...sets: Labels[]): this {
    for (const values of sets) this.#child(values);
    return this;
  }

  /** The current value of a series (tests, readiness). */
  get(...values: string[]): number {
    return this.#children.get(keyOf(values))?.value ?? 0;
  }

  family(): Family {
    return {
      name: this.name,
      help: this.help,
      type: "counter",
      render: (out) => {
        if (this.labelNames.length === 0 && this.#children.size === 0) out.push(`${this.name} 0`);
        for (const c of this.#children.values()) {
          out.push(`${this.name}${labelText(this.labelNames, c.values)} ${formatNumber(c.value)}`);
        }
      },
    };
  }
}

/** A histogram with fixed upper bounds (seconds): observe() is a short scan and two adds. */
export class Histogram<N extends string = never> {
  readonly #children = new Map<
    string,
    { values: Labels; counts: Float64Array; sum: number; count: number }
  >();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
    readonly labelNames: readonly N[] = [],
  ) {}

  /** Observes `v` in the series of these label values, in the order of `labelNames`. */
  observe(v: number, ...values: string[]): void {
    this.#observe(this.#child(values), v);
  }

  /** The series of these values, for a hot path that keeps it (`child.observe(v)`). */
  child(...values: string[]): { observe(v: number): void } {
    const c = this.#child(values);
    return { observe: (v) => this.#observe(c, v) };
  }

  #child(values: Labels) {
    const key = keyOf(values);
    let c = this.#children.get(key);
    if (!c) {
      c = { values: [...values], counts: new Float64Array(this.buckets.length), sum: 0, count: 0 };
      this.#children.set(key, c);
    }
    return c;
  }

  #observe(c: { counts: Float64Array; sum: number; count: number }, v: number): void {
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]) {
        c.counts[i]++;
        break;
      }
    }
    c.sum += v;
    c.count++;
  }

  /** How many observations a series has (tests). */
  count(...values: string[]): number {
    return this.#children.get(keyOf(values))?.count ?? 0;
  }

  family(): Family {
    return {
      name: this.name,
      help: this.help,
      type: "histogram",
      render: (out) => {
        for (const c of this.#children.values()) {
          let cumulative = 0;
          for (let i = 0; i < this.buckets.length; i++) {
            cumulative += c.counts[i];
            const le = `le="${formatNumber(this.buckets[i])}"`;
            out.push(`${this.name}_bucket${labelText(this.labelNames, c.values, le)} ${cumulative}`);
          }
          out.push(`${this.name}_bucket${labelText(this.labelNames, c.values, 'le="+Inf"')} ${c.count}`);
          out.push(`${this.name}_sum${labelText(this.labelNames, c.values)} ${formatNumber(c.sum)}`);
          out.push(`${this.name}_count${labelText(this.labelNames, c.values)} ${c.count}`);
        }
      },
    };
  }
}

/** A gauge: its series are set when the registry is scraped (by a collector) or whenever something changes. */
export class Gauge<N extends string = never> {
  #series = new Map<string, { values: Labels; value: number }>();
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly N[] = []) {}

  set(value: number, ...values: string[]): void {
    const key = keyOf(values);
    const s = this.#series.get(key);
    if (s) s.value = value;
    else this.#series.set(key, { values: [...values], value });
  }

  /** Forgets every series (a collector that sets them all again). */
  clear(): void {
    this.#series = new Map();
  }

  get(...values: string[]): number | undefined {
    return this.#series.get(keyOf(values))?.value;
  }

  family(): Family {
    return {
      name: this.name,
      help: this.help,
      type: "gauge",
      render: (out) => {
        for (const s of this.#series.values()) {
          out.push(`${this.name}${labelText(this.labelNames, s.values)} ${formatNumber(s.value)}`);
        }
      },
    };
  }
}

type Metric = { family(): Family };

/** What a scrape runs first: sets gauges (from the process, the pool, the database). */
export type Collector = () => void | Promise<void>;

export class Registry {
  readonly #metrics: Metric[] = [];
  readonly #collectors = new Set<Collector>();

  register<M extends Metric>(metric: M): M {
    this.#metrics.push(metric);
    return metric;
  }

  /** Adds a collector; the function returned removes it (a service that closes). */
  collect(collector: Collector): () => void {
    this.#collectors.add(collector);
    return () => this.#collectors.delete(collector);
  }

  /**
   * The text exposition format. Collectors run first, together; one that fails (a database that does not
   * answer) leaves its gauges as they were and is counted in `acs_metrics_collector_errors_total`, so that a
   * scrape still answers with everything else.
   */
  async render(): Promise<string> {
    const failures = await Promise.allSettled([...this.#collectors].map((c) => c()));
    collectorErrors.inc(undefined, failures.filter((f) => f.status === "rejected").length);
    const out: string[] = [];
    for (const m of this.#metrics) {
      const f = m.family();
      out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
      f.render(out);
    }
    return out.join("\n") + "\n";
  }
}

/** The process's registry: every family of the service is registered here (telemetry/families.ts). */
export const REGISTRY = new Registry();

const collectorErrors = REGISTRY.register(
  new Counter(
    "acs_metrics_collector_errors_total",
    "Scrape-time reads that failed (the database did not answer): their gauges keep their last values.",
  ),
);

/** The content type of the text exposition format. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
