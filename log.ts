/**
 * The logger every part of the service writes to (HTTP requests, database statements at `debug`, background
 * jobs): one line per event, JSON (`LOG_FORMAT=json`, the default) or a short readable line for a terminal
 * (`pretty`), at or above LOG_LEVEL. Lines are gathered and written together once per turn of the event loop
 * (or every 64 lines), which costs a request about 0.3 µs where a `console.error` per line cost 5 µs.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFormat = "json" | "pretty";

export type Fields = Record<string, unknown>;

/**
 * What the request log says of one request. Only what the service decided, never what the request carried
 * beyond its method and id: no path parameters, no query string (codes and tokens travel there), no header.
 */
export type RequestLine = {
  request_id: string;
  method: string;
  /** The matched route's pattern, e.g. `/api/v1/projects/:project_id/users`. */
  route: string;
  status: number;
  duration_ms: number;
  /** The W3C trace id: the request's span (tracing on), or the caller's `traceparent`'s. */
  trace_id?: string;
  /** The caller, once authenticated: the token's project, client and user, or the client at the token endpoint. */
  project?: string;
  client?: string;
  user?: string;
  /**
   * Why the service refused, when a page says it in words the log cannot read (a stable code such as
   * `redirect_uri_not_registered`); the API's refusals carry their code in the answer.
   */
  reason?: string;
};

export type Logger = {
  error(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  debug(msg: string, fields?: Fields): void;
  /** Whether lines of this level are written (so that callers skip building the others). */
  enabled(level: LogLevel): boolean;
  /** The request log's line (level info). */
  request(line: RequestLine): void;
  /** A database statement's text and how long it took (level debug); never its parameters. */
  statement(text: string, durationMs: number): void;
  /** Writes what is gathered now (before the process ends). */
  flush(): void;
};

export type LoggerOptions = {
  level: LogLevel;
  format?: LogFormat;
  /** Where the lines go (by default standard error); tests pass their own to read them. */
  write?: (lines: string) => void;
};

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** The time as ISO 8601, made once a millisecond: `toISOString` costs about 1 µs, a request line's largest part. */
let lastMs = 0;
let lastIso = "";
function now(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
const MAX_GATHERED = 64;
const encoder = new TextEncoder();

function writeStderr(lines: string): void {
  const bytes = encoder.encode(lines);
  let written = 0;
  while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
}

/** A logger that writes nothing: for building the app without running it (routes/document.ts). */
export const SILENT: Logger = {
  error() {},
  warn() {},
  info() {},
  debug() {},
  enabled: () => false,
  request() {},
  statement() {},
  flush() {},
};

export function createLogger(opts: LoggerOptions): Logger {
  const min = RANK[opts.level];
  const pretty = opts.format === "pretty";
  const write = opts.write ?? writeStderr;
  const colour = pretty && opts.write === undefined && Deno.stderr.isTerminal() && !Deno.noColor;
  let gathered: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (gathered.length === 0) return;
    const lines = gathered.join("\n") + "\n";
    gathered = [];
    try {
      write(lines);
    } catch { /* a closed standard error: nothing to tell it with */ }
  };
  const emit = (line: string) => {
    gathered.push(line);
    if (gathered.length >= MAX_GATHERED) flush();
    else if (timer === undefined) timer = setTimeout(flush, 0);
  };

  const at = (level: LogLevel) => (msg: string, fields?: Fields) => {
    if (RANK[level] < min) return;
    const time = now();
    emit(
      pretty ? prettyLine(time, level, msg, fields, colour) : JSON.stringify({ time, level, msg, ...fields }),
    );
  };

  return {
    error: at("error"),
    warn: at("warn"),
    info: at("info"),
    debug: at("debug"),
    enabled: (level) => RANK[level] >= min,
    request(r) {
      if (RANK.info < min) return;
      const time = now();
      emit(
        pretty ? prettyRequest(time, r, colour) : JSON.stringify({
          time,
          level: "info",
          msg: "request",
          request_id: r.request_id,
          method: r.method,
          route: r.route,
          status: r.status,
          duration_ms: r.duration_ms,
          trace_id: r.trace_id,
          project: r.project,
          client: r.client,
          user: r.user,
          reason: r.reason,
        }),
      );
    },
    statement(text, durationMs) {
      // A statement that never left the pool's queue (a queue timeout) has no text: its error says it.
      if (RANK.debug < min || text === "") return;
      const time = now();
      // One line of text, however the statement was laid out in the source.
      const statement = text.replace(/\s+/g, " ").trim();
      const duration_ms = Math.round(durationMs * 100) / 100;
      emit(
        pretty
          ? prettyLine(time, "debug", `sql ${duration_ms}ms ${statement}`, undefined, colour)
          : JSON.stringify({ time, level: "debug", msg: "statement", duration_ms, statement }),
      );
    },
    flush,
  };
}

const COLOURS = { debug: "\x1b[90m", info: "\x1b[36m", warn: "\x1b[33m", error: "\x1b[31m" } as const;
const RESET = "\x1b[0m";

/** `12:03:04.123 INFO  message key=value …` (the clock in UTC, as in the JSON lines). */
function prettyLine(time: string, level: LogLevel, msg: string, fields: Fields | undefined, colour: boolean) {
  const tag = level.toUpperCase().padEnd(5);
  let line = `${time.slice(11, 23)} ${colour ? COLOURS[level] + tag + RESET : tag} ${msg}`;
  for (const key in fields) {
    const value = fields[key];
    if (value === undefined) continue;
    line += ` ${key}=${typeof value === "string" && !/\s/.test(value) ? value : JSON.stringify(value)}`;
  }
  return line;
}

/** `12:03:04.123 INFO  POST /api/v1/tokens 200 3.2ms project=… client=… user=… id=…`. */
function prettyRequest(time: string, r: RequestLine, colour: boolean) {
  const status = colour
    ? `${r.status >= 500 ? COLOURS.error : r.status >= 400 ? COLOURS.warn : ""}${r.status}${RESET}`
    : String(r.status);
  return prettyLine(time, "info", `${r.method} ${r.route} ${status} ${r.duration_ms}ms`, {
    project: r.project,
    client: r.client,
    user: r.user,
    reason: r.reason,
    id: r.request_id,
    trace: r.trace_id,
  }, colour);
}
