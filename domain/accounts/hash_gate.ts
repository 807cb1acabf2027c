/**
 * A process-wide limit on concurrent verifications of imported (foreign) password hashes. Each may cost up to
 * about a second of CPU and 64 MiB (password_schemes.ts, `BOUNDS`), and the address throttle allows about a
 * hundred attempts per address per ten minutes: without a limit, a burst of sign-ins against imported accounts
 * (or unknown addresses, whose decoy is an imported hash) would exhaust the CPU and the 128 MB heap. At most
 * `limit` run at once (twice the cores), at most `queue` more wait; beyond that the sign-in is refused at once as
 * throttled (429 `too_many_requests` with Retry-After), never queued without bound and never a 500.
 */
import { availableParallelism } from "node:os";
import { throttled } from "../shared/throttle.ts";

export type Gate = {
  /** Runs `work` when a slot is free, or throws `throttled` when every slot and the queue are taken. */
  run<T>(work: () => Promise<T>): Promise<T>;
  readonly limit: number;
  readonly queue: number;
  /** How many run now and how many wait (for tests and metrics). */
  readonly running: number;
  readonly waiting: number;
};

/**
 * A gate of `limit` concurrent runs and at most `queue` waiting ones (first come, first served); `description`
 * is the 429's.
 */
export function createGate(
  limit: number,
  queue: number,
  description = "too many sign-ins are being checked at once; retry in a moment",
): Gate {
  let running = 0;
  const waiters: (() => void)[] = [];
  const release = () => {
    const next = waiters.shift();
    if (next) next(); // the slot passes to the next waiter: `running` stays
    else running--;
  };
  return {
    limit,
    queue,
    async run<T>(work: () => Promise<T>): Promise<T> {
      if (running < limit) running++;
      else if (waiters.length < queue) await new Promise<void>((resolve) => waiters.push(resolve));
      else throw throttled(1, description);
      try {
        return await work();
      } finally {
        release();
      }
    },
    get running() {
      return running;
    },
    get waiting() {
      return waiters.length;
    },
  };
}

const cores = (() => {
  try {
    return Math.max(1, availableParallelism());
  } catch {
    return 1;
  }
})();

/** The gate of every foreign-hash verification: 2 × cores at once, 8 × cores waiting. */
export const FOREIGN_HASH_GATE = createGate(2 * cores, 8 * cores);
