/**
 * Requests to URLs an admin gave the service (an identity provider's discovery document, JWKS and token
 * endpoint), through the one address guard of domain/outbound/webhook_targets.ts: the scheme and an address literal are
 * checked before, and a name's addresses inside the connection's own lookup, so the address checked is the one
 * connected to. Redirects are not followed, answers are capped in size and time.
 */
import { startClientSpan } from "../../telemetry/trace.ts";
import { Buffer } from "node:buffer";
import http from "node:http";
import https from "node:https";
import { resolveTarget, targetIssue } from "./webhook_targets.ts";

const TIMEOUT_MS = 10_000;
const MAX_BYTES = 1024 * 1024;

/** Why an outbound request failed, in words fit for an admin (never a stack). */
export class OutboundError extends Error {}

export type OutboundAnswer = {
  status: number;
  contentType: string;
  body: string;
  /** The answer's headers, names lower-cased (repeated ones joined with ", "). */
  headers: Record<string, string>;
};

/** One request to `url`, or OutboundError. */
type OutboundOptions = {
  allowPrivate: boolean;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** A larger answer is refused (default 1 MiB). */
  maxBytes?: number;
  /** No whole answer within this many milliseconds is refused (default 10 s). */
  timeoutMs?: number;
};

/**
 * The request, as a client span of the request that makes it when tracing is on (the upstream gets its
 * `traceparent`); the span names the method and host, never the path's values or the answer.
 */
export async function outbound(url: string, opts: OutboundOptions): Promise<OutboundAnswer> {
  const method = opts.method ?? "GET";
  const span = startClientSpan(`${method} upstream`, {
    "http.request.method": method,
    "server.address": URL.canParse(url) ? new URL(url).hostname : "",
  });
  if (!span) return await send(url, opts);
  try {
    const answer = await send(url, { ...opts, headers: { ...opts.headers, traceparent: span.traceparent } });
    span.end(undefined, { "http.response.status_code": answer.status });
    return answer;
  } catch (err) {
    span.end(err instanceof Error ? err.message : String(err));
    throw err;
  }
}

function send(url: string, opts: OutboundOptions): Promise<OutboundAnswer> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.reject(new OutboundError(`${url.slice(0, 200)} is not a URL`));
  }
  const issue = targetIssue(target, opts.allowPrivate);
  if (issue) return Promise.reject(new OutboundError(`${target.origin}: ${issue}`));
  const body = opts.body ?? "";
  const timeoutMs = opts.timeoutMs ?? TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? MAX_BYTES;
  const late = () => new OutboundError(`${target.origin} did not answer within ${timeoutMs / 1000} s`);
  return new Promise<OutboundAnswer>((resolve, reject) => {
    const lib = target.protocol === "https:" ? https : http;
    const req = lib.request({
      method: opts.method ?? "GET",
      hostname: target.hostname.replace(/^\[|\]$/g, ""),
      port: target.port || undefined,
      path: `${target.pathname}${target.search}`,
      headers: {
        accept: "application/json",
        "user-agent": "access-control/1",
        ...(opts.headers ?? {}),
        ...(opts.method === "POST" ? { "content-length": String(Buffer.byteLength(body)) } : {}),
      },
      timeout: timeoutMs,
      lookup: (host: string, o: { all?: boolean }, cb: (...args: unknown[]) => void) => {
        resolveTarget(host, opts.allowPrivate).then(
          (found) => o?.all ? cb(null, found) : cb(null, found[0].address, found[0].family),
          (err) => cb(err),
        );
      },
    } as http.RequestOptions, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          abort(new OutboundError(`the answer is larger than ${sizeText(maxBytes)}`));
        } else chunks.push(chunk);
      });
      res.on("end", () => {
        clearTimeout(deadline);
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers["content-type"] ?? ""),
          body: Buffer.concat(chunks).toString("utf8"),
          headers: Object.fromEntries(
            Object.entries(res.headers).map((
              [k, v],
            ) => [k.toLowerCase(), Array.isArray(v) ? v.join(", ") : v ?? ""]),
          ),
        });
      });
      res.on("error", (err) => fail(err));
    });
    const fail = (err: Error) => {
      clearTimeout(deadline);
      reject(
        err instanceof OutboundError
          ? err
          : new OutboundError(`${target.origin} could not be reached: ${err.message.slice(0, 200)}`),
      );
    };
    // Refused at once, whether or not the connection reports its end (Deno's node:http does not always).
    const abort = (err: OutboundError) => {
      fail(err);
      req.destroy(err);
    };
    const deadline = setTimeout(() => abort(late()), timeoutMs);
    req.on("timeout", () => abort(late()));
    req.on("error", fail);
    req.end(opts.method === "POST" ? body : undefined);
  }).catch((err) => {
    // Thrown by the request itself rather than sent as its error event (under `deno serve` without --allow-sys, a
    // set NODE_EXTRA_CA_CERTS makes every https request throw NotCapable): a failure to reach, never a 500.
    if (err instanceof OutboundError) throw err;
    throw new OutboundError(
      `${target.origin} could not be reached: ${String(err?.message ?? err).slice(0, 200)}`,
    );
  });
}

const sizeText = (bytes: number) =>
  bytes % (1024 * 1024) === 0
    ? `${bytes / 1024 / 1024} MiB`
    : bytes % 1024 === 0
    ? `${bytes / 1024} KiB`
    : `${bytes} bytes`;

/** A JSON object from a GET (or a POST's answer), or OutboundError saying what was wrong with it. */
export async function outboundJson(
  url: string,
  opts: OutboundOptions,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const answer = await outbound(url, opts);
  let json: unknown;
  try {
    json = JSON.parse(answer.body);
  } catch {
    throw new OutboundError(`${new URL(url).origin} answered ${answer.status} without JSON`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new OutboundError(`${new URL(url).origin} answered ${answer.status} without a JSON object`);
  }
  return { status: answer.status, json: json as Record<string, unknown> };
}
