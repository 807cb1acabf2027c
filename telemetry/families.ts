/**
 * The service's metric families (docs/observability.md lists them with their meanings). Counters and
 * histograms are incremented where the event happens; gauges are set by collectors when /metrics is scraped
 * (service.ts: the pool, the process; db/system/observability.ts: backlogs and the signing key, read from the
 * database, which several instances share). Labels take values from fixed sets only.
 */
import { Counter, Gauge, Histogram, REGISTRY } from "./metrics.ts";

/** Seconds: 1 ms … 10 s, for requests. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds: 0.25 ms … 5 s, for statements. */
const STATEMENT_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

const r = REGISTRY;

export const httpRequests = r.register(
  new Counter("acs_http_requests_total", "HTTP requests answered, by route pattern, method and status.", [
    "route",
    "method",
    "status",
  ]),
);
export const httpDuration = r.register(
  new Histogram(
    "acs_http_request_duration_seconds",
    "Time from a request's arrival to its answer's headers, by route pattern and method.",
    REQUEST_BUCKETS,
    ["route", "method"],
  ),
);

/** Requests being answered now: the request middleware adds and takes away, a scrape reads it. */
export const inFlight = { value: 0 };
const inFlightGauge = r.register(new Gauge("acs_http_requests_in_flight", "Requests being answered now."));
r.collect(() => inFlightGauge.set(inFlight.value));

export const GRANT_TYPES = [
  "client_credentials",
  "authorization_code",
  "refresh_token",
  "urn:ietf:params:oauth:grant-type:device_code",
] as const;
export const tokensIssued = r.register(
  new Counter("acs_tokens_issued_total", "Access tokens issued by the token endpoint, by grant type.", [
    "grant_type",
  ]),
).preset(...GRANT_TYPES.map((g) => [g]));

export const decisions = r.register(
  new Counter(
    "acs_decisions_total",
    "AuthZEN access decisions, by endpoint (evaluation, evaluations) and outcome (allow, deny).",
    ["endpoint", "outcome"],
  ),
).preset(["evaluation", "allow"], ["evaluation", "deny"], ["evaluations", "allow"], ["evaluations", "deny"]);

export const LOGIN_OUTCOMES = ["succeeded", "failed", "throttled"] as const;
export const logins = r.register(
  new Counter(
    "acs_logins_total",
    "Password logins on the login page, by outcome (succeeded, failed, throttled).",
    ["outcome"],
  ),
).preset(...LOGIN_OUTCOMES.map((o) => [o]));

export const refreshReuse = r.register(
  new Counter(
    "acs_refresh_token_reuse_total",
    "Spent refresh tokens presented again (RFC 9700): each ended its session.",
  ),
);

export const poolSize = r.register(new Gauge("acs_db_pool_size", "Connections the pool may open."));
export const poolOpen = r.register(new Gauge("acs_db_pool_open", "Connections the pool has open."));
export const poolInUse = r.register(
  new Gauge("acs_db_pool_in_use", "Connections running a statement or holding a transaction."),
);
export const poolWaiting = r.register(
  new Gauge("acs_db_pool_waiting", "Statements and transactions waiting for a free connection."),
);
export const statementDuration = r.register(
  new Histogram(
    "acs_db_statement_duration_seconds",
    "Time from a statement's sending to its answer (or failure).",
    STATEMENT_BUCKETS,
  ),
);
export const statementErrors = r.register(
  new Counter(
    "acs_db_statement_errors_total",
    "Statements that failed, by class: conflict (40001, 40P01, run again), connection (lost or refused), " +
      "timeout (queue, statement or connect deadline), constraint (23…, expected by some writes), other.",
    ["class"],
  ),
).preset(["conflict"], ["connection"], ["timeout"], ["constraint"], ["other"]);
export const dbTimeouts = r.register(
  new Counter(
    "acs_db_timeouts_total",
    "Deadlines that passed: queue (no free connection in DATABASE_QUEUE_TIMEOUT), statement " +
      "(DATABASE_STATEMENT_TIMEOUT), connect.",
    ["kind"],
  ),
).preset(["queue"], ["statement"], ["connect"]);

export const jobRuns = r.register(
  new Counter("acs_job_runs_total", "Background job runs in this instance, by job (`name`).", ["name"]),
);
export const jobFailures = r.register(
  new Counter("acs_job_failures_total", "Background job runs that failed, by job (`name`).", ["name"]),
);
export const jobLastSuccess = r.register(
  new Gauge(
    "acs_job_last_success_timestamp_seconds",
    "When each background job (`name`) last finished a run without error in this instance (Unix time).",
    ["name"],
  ),
);

export const WEBHOOK_OUTCOMES = ["delivered", "retry", "failed"] as const;
export const webhookDeliveries = r.register(
  new Counter(
    "acs_webhook_delivery_attempts_total",
    "Webhook delivery attempts by outcome: delivered (2xx), retry (failed, tried again later), failed (given up).",
    ["outcome"],
  ),
).preset(...WEBHOOK_OUTCOMES.map((o) => [o]));
export const webhookBacklog = r.register(
  new Gauge(
    "acs_webhook_backlog",
    "Webhook deliveries pending or being sent (all instances: read from the database).",
  ),
);
export const webhookOldest = r.register(
  new Gauge(
    "acs_webhook_backlog_oldest_seconds",
    "How long the most overdue pending webhook delivery has been due (0: none overdue).",
  ),
);

/**
 * Mail deliveries (the SMTP outbox): incremented by the mail code with outcome delivered, retry or failed,
 * and its backlog set by a collector of its own, as for webhooks.
 */
export const mailDeliveries = r.register(
  new Counter(
    "acs_mail_deliveries_total",
    "Mail delivery attempts by outcome: delivered, retry (failed, tried again later), failed (given up).",
    ["outcome"],
  ),
).preset(["delivered"], ["retry"], ["failed"]);
export const mailBacklog = r.register(
  new Gauge("acs_mail_backlog", "Mail messages waiting to be sent (all instances: read from the database)."),
);

export const auditEvents = r.register(
  new Counter("acs_audit_events_total", "Audit events written, by event type.", ["type"]),
);

export const signingKeyAge = r.register(
  new Gauge("acs_signing_key_age_seconds", "Time since the current signing key started signing."),
);
export const signingKeyRotation = r.register(
  new Gauge(
    "acs_signing_key_rotation_seconds",
    "The rotation period (SIGNING_KEY_ROTATION_DAYS) in seconds; 0: keys are not rotated on a schedule.",
  ),
);
export const signingKeyNext = r.register(
  new Gauge("acs_signing_key_next_published", "1 when the next signing key is published, else 0."),
);

export const memory = r.register(
  new Gauge(
    "acs_process_memory_bytes",
    "Memory: rss (the whole process), heap_used and heap_total (the service's JavaScript heap), external.",
    ["kind"],
  ),
);
export const eventLoopDelay = r.register(
  new Histogram(
    "acs_event_loop_delay_seconds",
    "How late a timer set every 100 ms fires: the service's event loop busy with other work.",
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  ),
);
export const startTime = r.register(
  new Gauge("acs_process_start_time_seconds", "When the service started (Unix time)."),
);

export const spansExported = r.register(
  new Counter("acs_trace_spans_exported_total", "Trace spans the OTLP collector accepted."),
);
export const spansDropped = r.register(
  new Counter(
    "acs_trace_spans_dropped_total",
    "Trace spans dropped: the collector did not accept them, or the queue was full.",
  ),
);

/** Counts the decisions of an AuthZEN answer: how many allowed, how many denied. */
export function countDecisions(
  endpoint: "evaluation" | "evaluations",
  answer: { allowed: number; denied: number },
): void {
  if (answer.allowed) decisions.child(endpoint, "allow").value += answer.allowed;
  if (answer.denied) decisions.child(endpoint, "deny").value += answer.denied;
}
