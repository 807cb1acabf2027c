/**
 * The service thread's JavaScript heap (main.ts), read where nothing else of the service is loaded: config.ts
 * checks the same variables with the rest and names a bad one; here a bad value only falls back to the default,
 * and the thread's start then fails on it.
 */
export const HEAP_DEFAULTS = { youngGenerationMb: 24, limitMb: 1024 };

export type Heap = typeof HEAP_DEFAULTS;

export function heapOf(env: Record<string, string | undefined>): Heap {
  const mb = (value: string | undefined, fallback: number) => {
    const n = Number(value);
    return value && Number.isInteger(n) && n > 0 ? n : fallback;
  };
  return {
    youngGenerationMb: mb(env.HEAP_YOUNG_GENERATION_MB, HEAP_DEFAULTS.youngGenerationMb),
    limitMb: mb(env.HEAP_LIMIT_MB, HEAP_DEFAULTS.limitMb),
  };
}
