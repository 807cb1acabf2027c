/**
 * Whole service processes for the tests that need them: `deno run main.ts --listen` (as `deno task start`), or
 * `deno serve` with only --allow-net --allow-env --allow-read (as on Deno Deploy), which starts on its first
 * request. The parent's environment is inherited, so a PostgreSQL run's variables reach the child.
 */
import { freePort } from "./helpers.ts";
import { checkAnswersOf } from "./schema_check.ts";

const ROOT = new URL("../", import.meta.url);

export type Mode = "run" | "serve";

export type Proc = {
  url: string;
  child: Deno.ChildProcess;
  output: () => string;
  /** Resolves when the process has exited and its output is read. */
  exited: Promise<Deno.CommandStatus>;
  stop: () => Promise<void>;
};

/** The permissions of `deno task start`, and the restricted set that `deno serve` gets here and in CI. */
export const RUN_PERMISSIONS = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-write",
  "--allow-sys",
  "--allow-ffi",
];
export const SERVE_PERMISSIONS = ["--allow-net", "--allow-env", "--allow-read"];

/** Starts main.ts as its own process on a free port; does not wait for it. */
export function launch(env: Record<string, string>, opts: { mode?: Mode; port?: number } = {}): Proc {
  const port = opts.port ?? freePort();
  const url = `http://127.0.0.1:${port}`;
  checkAnswersOf(url);
  const args = opts.mode === "serve"
    ? ["serve", ...SERVE_PERMISSIONS, "--host", "127.0.0.1", "--port", String(port), "main.ts"]
    : ["run", ...RUN_PERMISSIONS, "main.ts", "--listen"];
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: url, LOG_LEVEL: "error", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const decoder = new TextDecoder();
  const drain = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) text += decoder.decode(chunk);
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const exited = child.status.then(async (status) => (await drained, status));
  return {
    url,
    child,
    output: () => text,
    exited,
    stop: async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await exited;
    },
  };
}

/**
 * Starts main.ts and waits until /readyz answers 200 (for `serve`, that first request starts the service), or
 * until the process exits (the caller reads its output). Gives up after 60 s.
 */
export async function spawn(
  env: Record<string, string>,
  opts: { mode?: Mode; port?: number } = {},
): Promise<Proc> {
  const proc = launch(env, opts);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const exited = await Promise.race([
      proc.exited.then(() => true),
      new Promise((r) => setTimeout(r, 100, false)),
    ]);
    if (exited) return proc;
    try {
      const res = await fetch(`${proc.url}/readyz`);
      await res.body?.cancel();
      if (res.ok) return proc;
    } catch { /* not listening yet */ }
  }
  await proc.stop();
  throw new Error(`service did not become ready:\n${proc.output()}`);
}

/** The process's exit status, or a rejection after `ms`: a start must end, never hang. */
export async function exitWithin(proc: Proc, ms: number): Promise<Deno.CommandStatus> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      proc.exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`still running after ${ms} ms:\n${proc.output()}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
