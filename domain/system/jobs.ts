/** What the background jobs (jobs.ts) report of themselves: readiness reads it, the HTTP floor carries it. */

/** A job's runs in this instance, for readiness (times as `Date.now()`). */
export type JobState = {
  name: string;
  everyMs: number;
  leased: boolean;
  lastRun?: number;
  lastSuccess?: number;
  lastError?: string;
  /** Runs that failed in a row, up to the last one. */
  failuresInARow: number;
};

export type Jobs = { stop(): Promise<void>; states(): JobState[]; startedAt: number };
