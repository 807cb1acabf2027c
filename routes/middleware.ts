/** The middleware every request passes: request ids and headers, no caching of the API, body size and type. */
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { routePath } from "hono/route";
import { AppError } from "../domain/shared/errors.ts";
import { EdgeError } from "./errors.ts";
import type { Logger } from "../log.ts";
import type { AppEnv, Deps } from "./env.ts";
import { httpDuration, httpRequests, inFlight } from "../telemetry/families.ts";
import {
  endSpan,
  parseTraceparent,
  runInSpan,
  type Span,
  startServerSpan,
  tracing,
} from "../telemetry/trace.ts";
import { isFormEndpoint } from "./form_endpoints.ts";

const JSON_TYPE = /^application\/json(;\s*[a-zA-Z0-9\-]+=([^;]+))*$/i;
const FORM_TYPE = /^application\/x-www-form-urlencoded(;\s*[a-zA-Z0-9\-]+=([^;]+))*$/i;
/** JSON lines, as the user import takes them besides JSON (routes/api/provisioning/users_import.ts). */
const JSON_LINES_TYPE = /^application\/(x-ndjson|jsonl)(;\s*[a-zA-Z0-9\-]+=([^;]+))*$/i;

/**
 * Hands the service's dependencies and a request id to the request (the caller's `X-Request-ID` when it is a
 * short token of letters, digits, `.`, `_` and `-`, else a new UUID); tags the answer with it; counts and times
 * the request (telemetry/families.ts) and, with tracing on, runs it in a server span that continues the caller's
 * `traceparent`; writes the request log's line (log.ts) once the answer is made.
 */
export function requestContext(deps: Deps): MiddlewareHandler<AppEnv> {
  const logged = deps.log.enabled("info");
  const traced = tracing();
  return async (c, next) => {
    const started = performance.now();
    const incoming = c.req.header("x-request-id");
    const id = incoming && /^[\w.\-]{1,64}$/.test(incoming) ? incoming : crypto.randomUUID();
    c.set("deps", deps);
    c.set("requestId", id);
    // AuthZEN (§ "Request Identification") echoes the PEP's identifier as it was sent, whatever its characters;
    // the logs keep the plain one above.
    const echo = incoming && incoming !== id && incoming.length <= 1024 && isAuthzen(c.req.path)
      ? incoming
      : id;
    let traceId: string | undefined;
    inFlight.value++;
    try {
      if (traced) {
        const span = startServerSpan(c.req.method, c.req.header("traceparent"));
        traceId = span.traceId;
        c.set("span", span);
        await runInSpan(span, () => answerWith(c, next, [["X-Request-Id", echo], NOSNIFF]));
        endRequestSpan(c, span, id);
      } else {
        await answerWith(c, next, [["X-Request-Id", echo], NOSNIFF]);
        if (logged) traceId = parseTraceparent(c.req.header("traceparent"))?.traceId;
      }
    } finally {
      inFlight.value--;
    }
    const seconds = (performance.now() - started) / 1000;
    const route = routePath(c);
    const method = METHODS.has(c.req.method) ? c.req.method : "other";
    const status = c.res.status;
    const key = `${route} ${method} ${status}`;
    let series = requestSeries.get(key);
    if (!series) {
      series = {
        count: httpRequests.child(route, method, String(status)),
        time: httpDuration.child(route, method),
      };
      requestSeries.set(key, series);
    }
    series.count.value++;
    series.time.observe(seconds);
    if (logged) logRequest(c, deps.log, id, seconds, traceId);
  };
}

/** Each route, method and status's series, found with one lookup (as many as the metric has series). */
const requestSeries = new Map<string, { count: { value: number }; time: { observe(v: number): void } }>();

/** The methods counted by name; any other is counted as `other` (a label value never comes from the caller). */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

function endRequestSpan(c: Context<AppEnv>, span: Span, id: string): void {
  const route = routePath(c);
  const status = c.res.status;
  span.name = `${c.req.method} ${route}`;
  span.attributes["http.route"] = route;
  span.attributes["http.response.status_code"] = status;
  span.attributes["acs.request_id"] = id;
  if (status >= 500) span.error = String(status);
  endSpan(span);
}

const isAuthzen = (path: string) =>
  path.startsWith("/access/") || path === "/.well-known/authzen-configuration";

/**
 * The request's line: the matched route's pattern (never the path, whose segments may be anything the caller
 * typed, nor the query, where codes and tokens travel), and the caller as the service authenticated it: the
 * token's project, client and user (the gate's principal), or the client at the form endpoints. A request no
 * route matched shows the pattern of the last middleware it passed (`*`, `/api/*`). A page's refusal adds its
 * `reason` (e.g. `redirect_uri_not_registered`), a fixed code, never the input that caused it.
 */
function logRequest(c: Context<AppEnv>, log: Logger, id: string, seconds: number, traceId?: string): void {
  const principal = c.get("principal");
  const client = principal ? undefined : c.get("client")?.authenticated;
  log.request({
    request_id: id,
    method: c.req.method,
    route: routePath(c),
    status: c.res.status,
    duration_ms: Math.round(seconds * 100_000) / 100,
    trace_id: traceId,
    project: principal?.projectId ?? client?.projectId,
    client: principal?.clientId ?? client?.clientId,
    user: principal?.userId,
    reason: c.get("reason"),
  });
}

/**
 * The edge of the JSON API and the AuthZEN endpoints, one middleware (each layer of Hono's chain costs a request
 * a dispatch and a closure): a NUL byte in the URL refused, `Cache-Control: no-store` (responses of the API carry
 * secrets and live authorization state: nothing may cache them), the body's size and its media type (below).
 */
export const apiEdge: MiddlewareHandler<AppEnv> = (c, next) => {
  refuseNulInUrl(c.req.url);
  const body = bodyKind(c);
  return answerWith(c, () => LIMITS[body](c, () => bodyType(c, body, next)), NO_STORE);
};

/**
 * A NUL byte (`%00`) anywhere in the path or query is refused before any route sees it: no id, code or filter
 * holds one, and PostgreSQL refuses it in text, so it could only ever fail a statement (db/batch.ts shares
 * some statements between requests, which must never fail for another request's input).
 */
function refuseNulInUrl(url: string): void {
  if (url.indexOf("%00") < 0 && url.indexOf("\0") < 0) return;
  throw new AppError("invalid_params", {
    details: [{ field: "url", issue: "must not contain a NUL byte (%00)" }],
  });
}

/**
 * Runs the rest of the chain and makes sure its answer carries `headers`. They are set before the handler runs,
 * so that the answer it builds through the context (`c.json`, `c.body`) is made with them: a header set on a
 * finished answer makes Hono copy the whole Response, once per header. An answer built as a Response object of
 * its own, or one that overrode a header, gets it set afterwards.
 */
async function answerWith(c: Context, next: () => Promise<unknown>, headers: Header[]): Promise<void> {
  for (const [name, value] of headers) c.header(name, value);
  await next();
  const sent = c.res.headers;
  for (const [name, value] of headers) if (sent.get(name) !== value) c.header(name, value);
}

type Header = [name: string, value: string];

/** Every answer carries it (requestContext); the API's carry NO_STORE too (apiEdge). */
const NOSNIFF: Header = ["X-Content-Type-Options", "nosniff"];
const NO_STORE: Header[] = [["Cache-Control", "no-store"]];

/**
 * A body of at most `size`, answering 413 `body_too_large`: by its declared length when it has one (Deno's
 * server ends a body that does not match it), else by the bytes as Hono's limit reads them, which it does only
 * then (asking for the body makes Deno build a stream for it).
 */
function limitBody(maxSize: number, size: string): MiddlewareHandler<AppEnv> {
  const tooLarge = () => {
    throw new EdgeError("body_too_large", {
      description: `the request body is larger than ${size}`,
      details: [{ field: "body", issue: `at most ${size}` }],
    });
  };
  const streamed = bodyLimit({ maxSize, onError: tooLarge });
  return (c, next) => {
    // Deno hands a GET's or HEAD's body to nobody (its Request has none), so none is limited.
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const length = c.req.header("content-length");
    if (length === undefined || c.req.header("transfer-encoding") !== undefined) return streamed(c, next);
    return parseInt(length, 10) > maxSize ? tooLarge() : next();
  };
}

const apiLimit = limitBody(1024 * 1024, "1 MiB");

/**
 * The form endpoints' bodies are short (a token request is a few hundred bytes): at most 64 KiB, and 64 fields
 * (`parseFormOnce`). A megabyte of `a&a&…` would otherwise cost a parse of half a million fields before any
 * check.
 */
const FORM_MAX_FIELDS = 64;
const formLimit = limitBody(64 * 1024, "64 KiB");

/** A project's logo is the body itself (an image the route checks), of at most 100 KiB. */
const LOGO_PATH = /^\/api\/v1\/projects\/[^/]+\/branding\/logo$/;
const logoLimit = limitBody(100 * 1024, "100 KiB");

/** A user import is up to 10,000 users, as JSON or JSON lines, of at most 16 MiB. */
const IMPORT_PATH = /^\/api\/v1\/projects\/[^/]+\/users\/import$/;
export const IMPORT_MAX_BYTES = 16 * 1024 * 1024;
const importLimit = limitBody(IMPORT_MAX_BYTES, "16 MiB");

/**
 * What a request's body is: a form (the form endpoints), a logo (its image), a user import (JSON or JSON lines),
 * or JSON (every other).
 */
type BodyKind = "form" | "logo" | "import" | "json";

function bodyKind(c: Context<AppEnv>): BodyKind {
  if (isFormEndpoint(c.req.path)) return "form";
  if (c.req.method === "POST" && IMPORT_PATH.test(c.req.path)) return "import";
  return c.req.method === "PUT" && LOGO_PATH.test(c.req.path) ? "logo" : "json";
}

/** At most 1 MiB, less at the form endpoints and for a logo, more for a user import. */
const LIMITS: Record<BodyKind, MiddlewareHandler<AppEnv>> = {
  form: formLimit,
  logo: logoLimit,
  import: importLimit,
  json: apiLimit,
};

/** JSON bodies everywhere but the form endpoints and the logo; the same patterns the validators apply. */
async function bodyType(c: Context<AppEnv>, kind: BodyKind, next: () => Promise<void>): Promise<void> {
  const method = c.req.method;
  if (method === "POST" || method === "PUT" || method === "PATCH") {
    if (kind === "logo") return await next();
    const form = kind === "form";
    const contentType = c.req.header("content-type");
    const ok = contentType === undefined ? !hasBody(c) : (form ? FORM_TYPE : JSON_TYPE).test(contentType) ||
      (kind === "import" && JSON_LINES_TYPE.test(contentType));
    if (!ok) {
      const expected = form
        ? "application/x-www-form-urlencoded"
        : kind === "import"
        ? "application/json or application/x-ndjson"
        : "application/json";
      throw new AppError("invalid_params", {
        description: `the body must be ${expected}`,
        details: [{ field: "Content-Type", issue: `must be ${expected}` }],
      });
    }
    if (form && contentType !== undefined) await parseFormOnce(c);
  }
  await next();
}

/**
 * An urlencoded body parsed once, for the route's form validator, which takes it from Hono's body cache:
 * otherwise Hono parses it with `new Response(body).formData()`, which sniffs the MIME type again and reads a
 * stream through a parser that also handles multipart, about 4 µs a token request against 1 µs here. The
 * result is the Fetch standard's (its application/x-www-form-urlencoded parser, see `urlencodedText`). More
 * than 64 fields answer 400 `invalid_params`.
 */
async function parseFormOnce(c: Context): Promise<void> {
  let body: ArrayBuffer;
  try {
    body = await c.req.arrayBuffer();
  } catch {
    // Within its limit (apiEdge); what fails here is the client's connection.
    throw new AppError("invalid_params", {
      description: "the request body could not be read",
      details: [{ field: "body", issue: "could not be read" }],
    });
  }
  const data = new FormData();
  let fields = 0;
  for (const [name, value] of new URLSearchParams(urlencodedText(new Uint8Array(body)))) {
    if (++fields > FORM_MAX_FIELDS) {
      throw new AppError("invalid_params", {
        description: `a form has at most ${FORM_MAX_FIELDS} fields`,
        details: [{ field: "body", issue: `at most ${FORM_MAX_FIELDS} fields` }],
      });
    }
    data.append(name, value);
  }
  (c.req.bodyCache as { formData?: Promise<FormData> }).formData = Promise.resolve(data);
}

const UTF8 = new TextDecoder("utf-8");

/**
 * The body as a text that `URLSearchParams` parses into exactly what the Fetch standard's parser makes of the
 * bytes (split on `&` and `=`, `+` as a space, percent-decoded, then decoded as UTF-8). An ASCII body, which is
 * what clients send (they percent-encode the rest), is its own text. A raw byte above 0x7F is percent-encoded,
 * so that it is decoded together with the percent-encoded bytes around it, as the standard decodes bytes. A
 * leading `?` stays part of the first name (`URLSearchParams` would drop it).
 */
export function urlencodedText(bytes: Uint8Array): string {
  let text: string;
  if (bytes.every((b) => b < 0x80)) {
    text = UTF8.decode(bytes);
  } else {
    const parts: string[] = [];
    for (const b of bytes) {
      parts.push(b < 0x80 ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, "0")}`);
    }
    text = parts.join("");
  }
  return text.startsWith("?") ? `&${text}` : text;
}

function hasBody(c: Context): boolean {
  const length = c.req.header("content-length");
  return (length !== undefined && length !== "0") || c.req.header("transfer-encoding") !== undefined;
}
