/**
 * Attempt counters shared by every instance (table login_failures): failed logins per account and per
 * address, failed client authentications, login pages per address. One statement counts an attempt unless
 * the key is blocked, so parallel attempts are all counted and a refused attempt never extends a block.
 */
import { fixed } from "../columns.ts";
import { retryConflict, type Sql } from "../connection.ts";

/**
 * `delay`: after `free` attempts in the window, each further one must wait 2^(n - free - 1) seconds (at most
 * `maxDelay`) after the one before. `limit`: at most `free` attempts per window.
 */
export type ThrottlePolicy =
  | { kind: "delay"; free: number; maxDelay: number; window: number }
  | { kind: "limit"; free: number; window: number };

/** A policy's number written into SQL text: policies are this code's constants, never input. */
function num(n: number): string {
  if (!Number.isFinite(n) || n < 0) {
    throw new Error(`a throttle policy's numbers are finite and not negative: ${n}`);
  }
  return String(n);
}

/** When the key is blocked until, given its row `f` as it stands before this attempt (SQL text). */
function blockedUntil(p: ThrottlePolicy): string {
  if (p.kind === "limit") {
    return `case when f.failures >= ${num(p.free)}
      then f.window_started_at + make_interval(secs => ${num(p.window)}) else '-infinity'::timestamptz end`;
  }
  return `case when f.failures >= ${num(p.free)}
    then f.last_failed_at + make_interval(secs => least(${
    num(p.maxDelay)
  }::float8, power(2, least(f.failures - ${num(p.free)}, 30))))
    else '-infinity'::timestamptz end`;
}

/** The SQL of a policy, written once: as text, the token endpoint's query builds no fragment (db/columns.ts). */
type PolicyText = { expired: string; blockedUntil: string; waitOfRow: string };
const texts = new WeakMap<ThrottlePolicy, PolicyText>();

function textOf(p: ThrottlePolicy): PolicyText {
  let t = texts.get(p);
  if (!t) {
    const until = blockedUntil(p);
    t = {
      expired: `f.window_started_at < now() - make_interval(secs => ${num(p.window)})`,
      blockedUntil: until,
      waitOfRow: `case when f.window_started_at >= now() - make_interval(secs => ${num(p.window)})
                   and ${until} > now()
             then ceil(extract(epoch from ${until} - now()))::int end`,
    };
    texts.set(p, t);
  }
  return t;
}

/**
 * Counts an attempt against `key` unless the key is blocked now. Returns null when counted, or the seconds to
 * wait when blocked (the attempt is then not counted). A key whose window has passed starts again at 1.
 */
export async function countAttempt(sql: Sql, key: string, p: ThrottlePolicy): Promise<number | null> {
  const text = textOf(p);
  const expired = fixed(sql, text.expired);
  // A deadlock between parallel attempts rolls the one statement back whole: safe to run again.
  const counted = await retryConflict(sql, () =>
    sql`
    insert into login_failures as f (key, failures, window_started_at, last_failed_at)
    values (${key}, 1, now(), now())
    on conflict (key) do update set
      failures = case when ${expired} then 1 else f.failures + 1 end,
      window_started_at = case when ${expired} then now() else f.window_started_at end,
      previous_failed_at = f.last_failed_at,
      last_failed_at = now()
    where ${expired} or ${fixed(sql, text.blockedUntil)} <= now()
    returning 1`);
  if (counted.length === 1) return null;
  return await waitFor(sql, key, p) ?? 1;
}

/**
 * Seconds until the key of the `login_failures` row `f` may try again, or null when it may now (or when `f` is
 * null: no row). For a query that joins the row in (`left join login_failures f on f.key = …`).
 */
export function waitOfRow(sql: Sql, p: ThrottlePolicy) {
  return fixed(sql, waitOfRowText(p));
}

/** `waitOfRow` as SQL text, for a statement written as text. */
export function waitOfRowText(p: ThrottlePolicy): string {
  return textOf(p).waitOfRow;
}

/** Seconds until `key` may try again, or null when it may now. Reads only. */
export async function waitFor(sql: Sql, key: string, p: ThrottlePolicy): Promise<number | null> {
  const [row] = await sql<{ wait: number | null }[]>`
    select ${waitOfRow(sql, p)} as wait from (select 1) one left join login_failures f on f.key = ${key}`;
  return row.wait;
}

/** Takes back an attempt that succeeded (for counters of failures only). */
export async function uncountAttempt(sql: Sql, key: string): Promise<void> {
  await retryConflict(
    sql,
    () => sql`update login_failures set failures = greatest(failures - 1, 0) where key = ${key}`,
  );
}

export async function clearAttempts(sql: Sql, key: string): Promise<void> {
  await retryConflict(sql, () => sql`delete from login_failures where key = ${key}`);
}
