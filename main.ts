/**
 * The entry point, served two ways:
 * - `deno task start` (`deno run … main.ts --listen`), a plain `deno run main.ts`, a compiled binary: runs the
 *   service (service.ts) in a thread of its own whose JavaScript heap is bounded by HEAP_YOUNG_GENERATION_MB and
 *   HEAP_LIMIT_MB, and which starts at once and listens on HOST:PORT;
 * - `deno serve main.ts` and Deno Deploy: the default export's `fetch`, which starts the service on the first
 *   request and hands every request to it.
 * This module loads the service only where it runs it: the main thread of a `deno run` holds none of it.
 */
import { isMainThread, Worker, workerData } from "node:worker_threads";
import { heapOf } from "./heap.ts";

/** For `deno serve main.ts` and Deno Deploy. */
const declarative = {
  fetch: async (request: Request, info: Deno.ServeHandlerInfo) =>
    await (await import("./service.ts")).serveRequest(request, info),
} satisfies Deno.ServeDefaultExport;
export default declarative;

/** What the service thread is started with, so that it knows itself (a worker of another kind would not). */
const SERVICE_THREAD = "access-control-service";

/**
 * Runs the service in a thread of its own (this module again, as a `node:worker_threads` worker) with the
 * configured heap: V8 sizes a process's heap from command-line flags before any code runs, and with its defaults
 * on a large machine the service's RSS passed 200 MB under load though it keeps about 20 MB live; a worker's
 * `resourceLimits` bound it however the process was started. SIGINT and SIGTERM ask the thread to close the
 * service (a second one ends the process at once); the process ends with the thread's exit code, 1 when the
 * start failed (a bad configuration included: the thread names it) or the thread died (an uncaught error, the
 * heap limit).
 */
function superviseService(): void {
  const heap = heapOf(Deno.env.toObject());
  const thread = new Worker(new URL(import.meta.url), {
    workerData: SERVICE_THREAD,
    resourceLimits: {
      maxYoungGenerationSizeMb: heap.youngGenerationMb,
      maxOldGenerationSizeMb: heap.limitMb,
    },
  });
  thread.on("error", (err) => console.error(`the service thread failed: ${err?.message ?? err}`));
  thread.on("exit", (code) => Deno.exit(code));
  let stopping = false;
  const stop = () => {
    if (stopping) Deno.exit(1);
    stopping = true;
    thread.postMessage("stop");
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

if (!isMainThread && workerData === SERVICE_THREAD) {
  await (await import("./service.ts")).serviceThread();
} else if (import.meta.main) {
  if (Deno.args.includes("--listen")) {
    // Not served declaratively: without its `fetch`, `deno run` does not ask "did you mean deno serve?".
    Reflect.deleteProperty(declarative, "fetch");
    superviseService();
  } else {
    // Deno runs this module alike under `deno run` and `deno serve` and says nothing of which (Deno issues
    // 25179, 29447). `deno serve` (and Deploy) serve the default export by calling Deno.serve right after this
    // module is evaluated: a wrapper notices that. If nothing served it by the next task, this is a plain
    // `deno run main.ts`, which listens on HOST:PORT as it always did. Served, the service still starts on the
    // first request, but a bad configuration ends the process now.
    const serve = Deno.serve;
    let servedByRuntime = false;
    Deno.serve = ((...args: Parameters<typeof Deno.serve>) => {
      servedByRuntime = true;
      return serve(...args);
    }) as typeof Deno.serve;
    setTimeout(async () => {
      Deno.serve = serve;
      if (!servedByRuntime) return superviseService();
      (await import("./service.ts")).exitOnBadConfig();
    }, 0);
  }
}
