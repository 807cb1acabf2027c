/**
 * Readiness that explains itself: each check with its outcome, so that a 503 names what fails. The database
 * (one statement, bounded in time), the schema (every migration this build knows is applied), the signing key
 * (there is a current key and this instance can sign with it), and the background jobs that run in every
 * instance (each has succeeded recently). Jobs that run in one instance at a time (leased) are shown but do not
 * decide: another instance may hold them.
 */
import type { Sql } from "../../db/connection.ts";
import { readMigrations } from "../../db/migrate.ts";
import { readReadiness } from "../../db/system/observability.ts";
import type { JobState } from "./jobs.ts";
import type { TokenService } from "../keys/tokens.ts";

export type Check = { status: "ok" | "failing" | "unknown"; detail?: string };
export type JobCheck = {
  name: string;
  leased: boolean;
  last_run: string | null;
  last_success: string | null;
  status: "ok" | "failing" | "waiting";
};
export type Readiness = {
  ready: boolean;
  failing: string[];
  checks: {
    database: Check;
    migrations: Check & { applied?: number; expected: number };
    signing_key: Check;
    jobs: Check & { jobs: JobCheck[] };
  };
};

/** How long the database has to answer readiness's statement. */
const DATABASE_MS = 2000;
/** A job that runs everywhere fails readiness once it has not succeeded for this many of its periods… */
const STALE_PERIODS = 3;
/** …and at least this long (a slow webhook receiver holds a run for its 10 s). */
const STALE_MIN_MS = 60_000;

let expectedVersion: Promise<number> | undefined;
const expected = () =>
  expectedVersion ??= readMigrations().then((m) => m.at(-1)?.version ?? 0).catch((err) => {
    expectedVersion = undefined;
    throw err;
  });

/** A message for readiness without the database's own words (they may name tables or statements). */
function unavailable(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" && code !== ""
    ? `the database did not answer (${code})`
    : "the database did not answer";
}

export async function readiness(
  deps: { sql: Sql; tokens: TokenService; jobs?: { states(): JobState[]; startedAt: number } },
): Promise<Readiness> {
  const want = await expected();
  const checks: Readiness["checks"] = {
    database: { status: "ok" },
    migrations: { status: "unknown", expected: want },
    signing_key: { status: "unknown" },
    jobs: jobsCheck(deps.jobs),
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const row = await Promise.race([
      readReadiness(deps.sql),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject({ code: "no answer within 2 s" }), DATABASE_MS);
      }),
    ]);
    checks.migrations = row.version >= want ? { status: "ok", applied: row.version, expected: want } : {
      status: "failing",
      applied: row.version,
      expected: want,
      detail: `the schema is at ${row.version}, this build needs ${want}`,
    };
    checks.signing_key = await signingKeyCheck(deps.tokens, row.kid);
  } catch (err) {
    checks.database = { status: "failing", detail: unavailable(err) };
  } finally {
    clearTimeout(timer);
  }
  const failing = Object.entries(checks).filter(([, c]) => c.status === "failing").map(([name]) => name);
  return { ready: failing.length === 0, failing, checks };
}

async function signingKeyCheck(tokens: TokenService, kid: string | null): Promise<Check> {
  if (!kid) return { status: "failing", detail: "no current signing key" };
  try {
    await tokens.prepareSigner(kid);
    return { status: "ok" };
  } catch {
    // The answer names the failing check; the cause is the start's to tell (prepareKeys stops on a key that
    // does not open), and a probe every few seconds would log it again and again.
    return { status: "failing", detail: "the current signing key cannot be loaded (KEY_ENCRYPTION_KEY?)" };
  }
}

function jobsCheck(jobs?: { states(): JobState[]; startedAt: number }): Readiness["checks"]["jobs"] {
  if (!jobs) return { status: "ok", jobs: [] };
  const now = Date.now();
  const iso = (t?: number) => t === undefined ? null : new Date(t).toISOString();
  const list = jobs.states().map((j): JobCheck => {
    const since = j.lastSuccess ?? jobs.startedAt;
    const stale = !j.leased && now - since > Math.max(STALE_PERIODS * j.everyMs, STALE_MIN_MS);
    return {
      name: j.name,
      leased: j.leased,
      last_run: iso(j.lastRun),
      last_success: iso(j.lastSuccess),
      status: stale ? "failing" : j.lastRun === undefined ? "waiting" : "ok",
    };
  });
  const failing = list.filter((j) => j.status === "failing").map((j) => j.name);
  return failing.length
    ? { status: "failing", detail: `no recent success: ${failing.join(", ")}`, jobs: list }
    : { status: "ok", jobs: list };
}
