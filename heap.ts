/**
 * The service process's memory. The service thread's JavaScript heap (main.ts), read where nothing else of the
 * service is loaded: config.ts checks the same variables with the rest and names a bad one; here a bad value only
 * falls back to the default, and the thread's start then fails on it. And the one trim of freed memory after a
 * start.
 */
export const HEAP_DEFAULTS = { youngGenerationMb: 24, limitMb: 128 };

/** The values config.ts accepts, in MB. */
export const HEAP_RANGES = { youngGenerationMb: [4, 1024], limitMb: [128, 65_536] } as const;

export type Heap = typeof HEAP_DEFAULTS;

/** The heap the environment asks for; a value config.ts would refuse is replaced by the default. */
export function heapOf(env: Record<string, string | undefined>): Heap {
  const mb = (value: string | undefined, key: keyof Heap) => {
    const n = Number(value);
    const [min, max] = HEAP_RANGES[key];
    return value && Number.isInteger(n) && n >= min && n <= max ? n : HEAP_DEFAULTS[key];
  };
  return {
    youngGenerationMb: mb(env.HEAP_YOUNG_GENERATION_MB, "youngGenerationMb"),
    limitMb: mb(env.HEAP_LIMIT_MB, "limitMb"),
  };
}

/**
 * Hands memory the C allocator holds free back to the system (glibc's `malloc_trim`), once, `ms` after the
 * service has started: a start leaves tens of MB freed but kept (the database cluster unpacked, PGlite's start, the
 * migrations), about 20 MB of RSS right after a first start on the embedded database. Where it cannot be done
 * (no FFI permission, not Linux, not glibc), nothing happens.
 */
export function trimFreedMemorySoon(ms: number): void {
  if (Deno.build.os !== "linux" || Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return;
  const timer = setTimeout(() => {
    try {
      const libc = Deno.dlopen("libc.so.6", { malloc_trim: { parameters: ["usize"], result: "i32" } });
      libc.symbols.malloc_trim(0n);
      libc.close();
    } catch { /* not glibc */ }
  }, ms);
  Deno.unrefTimer(timer);
}
