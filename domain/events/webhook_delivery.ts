/**
 * Webhook delivery (Standard Webhooks): each instance's worker claims due deliveries from the outbox (SKIP
 * LOCKED, so each is sent by one worker), POSTs the event as JSON with `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` (`v1,` HMAC-SHA256), and counts a 2xx within 10 s as delivered. Otherwise it retries
 * with exponential backoff and jitter for about a day, then marks the delivery failed. At least once; a
 * crash after the receiver answered but before the answer was recorded sends it again. Order is not kept.
 */
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { Sql } from "../../db/connection.ts";
import {
  claimDeliveries,
  type ClaimedDelivery,
  markAttemptFailed,
  markDelivered,
} from "../../db/events/webhooks.ts";
import { resolveTarget, targetIssue, TargetRefused } from "../outbound/webhook_targets.ts";
import { secretOf, type WebhookSettings } from "./webhooks.ts";
import { webhookDeliveries } from "../../telemetry/families.ts";
import { startClientSpan } from "../../telemetry/trace.ts";

/** Seconds before each retry: about a day in all, each stretched or shrunk by up to a fifth. */
export const RETRY_DELAYS = [5, 30, 120, 300, 900, 1800, 3600, 7200, 14_400, 28_800, 28_800];
const TIMEOUT_MS = 10_000;
/** A claimed delivery that was not answered within this is claimed again (its worker died). */
const LEASE_SECONDS = 60;

/** Standard Webhooks: base64 of HMAC-SHA256 over `${id}.${timestamp}.${body}` with the secret's bytes. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/**
 * Seconds before the retry after attempt `attempts`, or null when the schedule is over. `firstDelay` scales the
 * whole schedule (WEBHOOK_RETRY_BASE_SECONDS; 5, the schedule above, unless a test shortens it). Fractions of a
 * second are kept: the column takes them, and a shortened schedule needs them.
 */
export function retryIn(attempts: number, firstDelay = RETRY_DELAYS[0]): number | null {
  const base = RETRY_DELAYS[attempts - 1];
  if (base === undefined) return null;
  const scaled = base * (firstDelay / RETRY_DELAYS[0]);
  return Math.round(scaled * (0.8 + Math.random() * 0.4) * 1000) / 1000;
}

type Outcome = { ok: true; status: number } | {
  ok: false;
  status: number | null;
  error: string;
  final?: boolean;
};

/** One POST, connected to the address its own lookup checked; redirects are not followed. */
function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  allowPrivate: boolean,
): Promise<Outcome> {
  return new Promise((resolve) => {
    const lib = url.protocol === "https:" ? https : http;
    const req = lib.request({
      method: "POST",
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      timeout: TIMEOUT_MS,
      lookup: (host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
        resolveTarget(host, allowPrivate).then(
          (found) => opts?.all ? cb(null, found) : cb(null, found[0].address, found[0].family),
          (err) => cb(err),
        );
      },
    } as http.RequestOptions, (res) => {
      res.resume();
      res.on("end", () => {
        const status = res.statusCode ?? 0;
        resolve(
          status >= 200 && status < 300 ? { ok: true, status } : {
            ok: false,
            status,
            error: `the receiver answered ${status}${
              status >= 300 && status < 400 ? " (redirects are not followed)" : ""
            }`,
          },
        );
      });
    });
    const deadline = setTimeout(
      () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)),
      TIMEOUT_MS,
    );
    req.on("close", () => clearTimeout(deadline));
    req.on("timeout", () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)));
    req.on("error", (err) => {
      clearTimeout(deadline);
      const refused = err instanceof TargetRefused;
      resolve({
        ok: false,
        status: null,
        error: refused ? `target refused: ${err.message}` : String(err.message),
        final: refused,
      });
    });
    req.end(body);
  });
}

async function deliver(sql: Sql, s: WebhookSettings, d: ClaimedDelivery): Promise<void> {
  try {
    await attempt(sql, s, d);
  } catch (err) {
    // An attempt that could not even be made (a secret that cannot be opened, say) is retried like a failure.
    const retryInSeconds = retryIn(d.attempts, s.retryBaseSeconds);
    webhookDeliveries.child(retryInSeconds === null ? "failed" : "retry").value++;
    await markAttemptFailed(sql, d, { status: null, error: String(err), retryInSeconds });
  }
}

async function attempt(sql: Sql, s: WebhookSettings, d: ClaimedDelivery): Promise<void> {
  let outcome: Outcome;
  const url = new URL(d.url);
  const issue = targetIssue(url, s.allowPrivateTargets);
  if (!d.webhook_active) outcome = { ok: false, status: null, error: "the webhook is inactive", final: true };
  else if (issue) outcome = { ok: false, status: null, error: `target refused: ${issue}`, final: true };
  else {
    const body = JSON.stringify(d.event);
    const timestamp = Math.floor(Date.now() / 1000);
    // With tracing on, the delivery is a client span of its own (a new trace: no request waits for it), and
    // the receiver gets its `traceparent`.
    const span = startClientSpan("POST webhook", {
      "http.request.method": "POST",
      "server.address": url.hostname,
      "acs.webhook.attempt": d.attempts,
    });
    outcome = await post(
      url,
      {
        "content-type": "application/json",
        "user-agent": "access-control-webhooks/1",
        "webhook-id": d.event.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": sign(secretOf(s, d.webhook_id, d), d.event.id, timestamp, body),
        ...(span ? { traceparent: span.traceparent } : {}),
      },
      body,
      s.allowPrivateTargets,
    );
    span?.end(
      outcome.ok ? undefined : outcome.status === null ? "no answer" : String(outcome.status),
      outcome.status === null ? undefined : { "http.response.status_code": outcome.status },
    );
  }
  const retryInSeconds = outcome.ok || outcome.final ? null : retryIn(d.attempts, s.retryBaseSeconds);
  webhookDeliveries.child(outcome.ok ? "delivered" : retryInSeconds === null ? "failed" : "retry").value++;
  if (outcome.ok) await markDelivered(sql, d, outcome.status);
  else await markAttemptFailed(sql, d, { status: outcome.status, error: outcome.error, retryInSeconds });
}

/** Claims and sends what is due, up to `limit` at once; returns how many were claimed. */
export async function deliverDue(sql: Sql, s: WebhookSettings, limit = 20): Promise<number> {
  const claimed = await claimDeliveries(sql, limit, LEASE_SECONDS);
  await Promise.all(claimed.map((d) => deliver(sql, s, d)));
  return claimed.length;
}
