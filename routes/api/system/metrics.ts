/**
 * GET /metrics on the main port, for a bearer of METRICS_TOKEN (compared in constant time); not served at all
 * without it (404, as for any unknown path). Not part of the API's document: it answers Prometheus's text
 * format to a scraper, not JSON to a client. METRICS_PORT serves the same on a listener of its own
 * (telemetry/runtime.ts).
 */
import { AppError } from "../../../domain/shared/errors.ts";
import { bearerMatches, metricsResponse } from "../../../telemetry/exposition.ts";
import type { App } from "../../env.ts";

export function registerMetricsRoute(app: App, token: string | undefined): void {
  if (!token) return;
  app.get("/metrics", (c) => {
    c.header("Cache-Control", "no-store");
    if (!bearerMatches(c.req.header("authorization"), token)) {
      c.header("WWW-Authenticate", 'Bearer realm="metrics"');
      throw new AppError("invalid_authorization_token");
    }
    return metricsResponse();
  });
}
