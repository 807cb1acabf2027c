/** /metrics's answer, and the check of METRICS_TOKEN on the main port (routes/api/system/metrics.ts). */
import { createHash, timingSafeEqual } from "node:crypto";
import { METRICS_CONTENT_TYPE, REGISTRY } from "./metrics.ts";

/** The exposition as an answer. */
export async function metricsResponse(): Promise<Response> {
  return new Response(await REGISTRY.render(), {
    headers: { "content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store" },
  });
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Whether `Authorization` carries `Bearer <token>`, compared in constant time (digests of equal length). */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  return timingSafeEqual(digest(m?.[1] ?? ""), digest(token)) && m !== null;
}
