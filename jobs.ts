/**
 * The service's background work, in one place: each job runs on a timer in every instance, and a leased job
 * runs only in the instance that holds its lease in the database, so exactly one instance does it at a time
 * (another takes over within a lease's length when that instance stops). main.ts starts them.
 */
import { purgeExpired } from "./db/system/maintenance.ts";
import { releaseLease, takeLease } from "./db/system/jobs.ts";
import type { Config } from "./config.ts";
import { purgeEvents } from "./db/audit/audit.ts";
import { fillResourceDocuments } from "./db/authz/resources.ts";
import { vacuumDue } from "./db/vacuum.ts";
import type { Sql } from "./db/connection.ts";
import { deliverDue } from "./domain/events/webhook_delivery.ts";
import { deliverMailDue } from "./domain/events/mail.ts";
import { purgeExpiredGrants } from "./domain/authz/object_grants.ts";
import { type KeySettings, maintainKeys } from "./domain/keys/keys.ts";
import type { TokenService } from "./domain/keys/tokens.ts";
import type { Jobs, JobState } from "./domain/system/jobs.ts";
import type { Logger } from "./log.ts";
import { jobFailures, jobLastSuccess, jobRuns } from "./telemetry/families.ts";

type Job = {
  name: string;
  everyMs: number;
  /** The first run, when sooner than `everyMs` after the start. */
  firstAfterMs?: number;
  /** Leased: one instance at a time. Otherwise every instance runs it (work it claims row by row). */
  leased: boolean;
  /**
   * A tick that finds the previous run still going skips its turn. Without it runs may overlap, as webhook
   * deliveries must: a receiver that takes its 10 s does not hold up the next second's deliveries.
   */
  alone?: boolean;
  /** `signal` aborts when the service stops: a long job ends at its next step. */
  run(signal: AbortSignal): Promise<unknown>;
};

export function jobsOf(
  sql: Sql,
  keys: KeySettings,
  config: Config,
  tokens: TokenService,
  database: "postgres" | "embedded",
  log?: Logger,
): Job[] {
  const webhooks = {
    vault: keys.vault,
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    retryBaseSeconds: config.webhookRetryBaseSeconds,
  };
  return [
    // Webhook deliveries: every instance sends, each delivery claimed by one worker (SKIP LOCKED).
    { name: "webhook-deliveries", everyMs: 1_000, leased: false, run: () => deliverDue(sql, webhooks) },
    // Mails: every instance sends, each mail claimed by one worker (SKIP LOCKED), like webhook deliveries.
    ...(log
      ? [{
        name: "mail",
        everyMs: 1_000,
        leased: false,
        // At most one batch (10 connections) per instance at a time: SMTP servers limit connections.
        alone: true,
        run: () =>
          deliverMailDue(sql, {
            smtp: config.smtp,
            from: config.mailFrom,
            vault: keys.vault,
            publicUrl: config.publicUrl,
            retryBaseSeconds: config.mailRetryBaseSeconds,
            log,
          }),
      }]
      : []),
    // The audit trail keeps AUDIT_RETENTION_DAYS days; the deliveries of older events go with them.
    {
      name: "audit-retention",
      everyMs: 60 * 60_000,
      leased: true,
      run: () => purgeEvents(sql, config.auditRetentionDays),
    },
    // Grants on objects expired more than GRANT_RETENTION_DAYS ago go, each with its `grant.expired` event.
    {
      name: "grant-retention",
      everyMs: 10 * 60_000,
      leased: true,
      alone: true,
      run: (signal: AbortSignal) => purgeExpiredGrants(sql, config.grantRetentionDays, signal),
    },
    // Expired login pages, codes, tokens and throttle counters: unauthenticated traffic cannot grow tables.
    { name: "purge-expired", everyMs: 10 * 60_000, leased: true, run: () => purgeExpired(sql) },
    // Signing keys: publish the next key, promote it when due, retire keys whose tokens have expired.
    { name: "signing-keys", everyMs: 60_000, leased: true, run: () => maintainKeys(sql, keys) },
    // Every instance learns newly published keys long before they sign (see TokenService.loadPublishedKeys).
    { name: "published-keys", everyMs: 60_000, leased: false, run: () => tokens.loadPublishedKeys() },
    // Resources written before migration 0011 get their stored document, a few hundred rows to a statement;
    // then each run finds none (a partial index of the rows without one).
    {
      name: "resource-documents",
      everyMs: 60 * 60_000,
      firstAfterMs: 10_000,
      leased: true,
      alone: true,
      run: (signal: AbortSignal) => fillResourceDocuments(sql, signal),
    },
    // The embedded database has no autovacuum (db/vacuum.ts): its one process vacuums what is due, first a
    // minute after the start (the counts behind the rules start again at each start).
    ...(database === "embedded"
      ? [{
        name: "embedded-vacuum",
        everyMs: 10 * 60_000,
        firstAfterMs: 60_000,
        leased: false,
        alone: true,
        run: (signal: AbortSignal) => vacuumDue(sql, { signal }),
      }]
      : []),
  ];
}

export function startJobs(sql: Sql, jobs: Job[], log: Logger): Jobs {
  const holder = crypto.randomUUID();
  const timers: ReturnType<typeof setInterval>[] = [];
  const firsts: ReturnType<typeof setTimeout>[] = [];
  const running = new Set<Promise<unknown>>();
  const stopping = new AbortController();
  const states: JobState[] = [];
  for (const job of jobs) {
    let busy = false;
    const state: JobState = { name: job.name, everyMs: job.everyMs, leased: job.leased, failuresInARow: 0 };
    states.push(state);
    jobRuns.preset([job.name]);
    jobFailures.preset([job.name]);
    const runs = jobRuns.child(job.name);
    const failures = jobFailures.child(job.name);
    const tick = async () => {
      if (stopping.signal.aborted || (job.alone && busy)) return;
      busy = true;
      let ran = false;
      try {
        // The lease outlives two periods, so a holder that runs on time always renews it first.
        if (job.leased && !(await takeLease(sql, job.name, holder, Math.ceil((job.everyMs * 2) / 1000)))) {
          return;
        }
        ran = true;
        state.lastRun = Date.now();
        runs.value++;
        await job.run(stopping.signal);
        state.lastSuccess = Date.now();
        state.failuresInARow = 0;
        state.lastError = undefined;
        jobLastSuccess.set(state.lastSuccess / 1000, job.name);
      } catch (err) {
        // A lease that could not be asked for (the database down) is a failed run too.
        if (!ran) {
          state.lastRun = Date.now();
          runs.value++;
        }
        failures.value++;
        state.failuresInARow++;
        state.lastError = String(err);
        log.error("background job failed", { job: job.name, error: String(err) });
      } finally {
        busy = false;
      }
    };
    const start = () => {
      const run = tick();
      running.add(run);
      run.finally(() => running.delete(run));
    };
    const timer = setInterval(start, job.everyMs);
    Deno.unrefTimer(timer);
    timers.push(timer);
    if (job.firstAfterMs !== undefined && job.firstAfterMs < job.everyMs) {
      const first = setTimeout(start, job.firstAfterMs);
      Deno.unrefTimer(first);
      firsts.push(first);
    }
  }
  return {
    startedAt: Date.now(),
    states: () => states,
    async stop() {
      stopping.abort();
      for (const t of timers) clearInterval(t);
      for (const t of firsts) clearTimeout(t);
      await Promise.allSettled(running);
      await Promise.allSettled(jobs.filter((j) => j.leased).map((j) => releaseLease(sql, j.name, holder)));
    },
  };
}
