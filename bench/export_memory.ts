/**
 * The server's memory while it exports many users (GET …/users/export): the service runs as its own process
 * (`deno run main.ts --listen`, the embedded database in a temporary DATA_DIR, or DATABASE_URL's when set), is
 * given USERS users by imports of 10,000 (POST …/users/import, timed), and then exports them while its resident
 * memory (VmRSS, /proc) is sampled every 20 ms. A streamed export holds a page of users at a time, so the peak
 * stays near the resident memory before it, far below the size of the export. Linux only (/proc).
 *
 *   deno run --allow-all bench/export_memory.ts          # USERS=100000 by default
 */
const USERS = Number(Deno.env.get("USERS") ?? 100_000);
const SECRET = "bench-bootstrap-secret-that-is-long-enough-01";
const root = new URL("../", import.meta.url);

const port = (() => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const p = (l.addr as Deno.NetAddr).port;
  l.close();
  return p;
})();
const url = `http://127.0.0.1:${port}`;
const dataDir = await Deno.makeTempDir({ prefix: "acs-bench-export-" });
const child = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "--allow-net",
    "--allow-env",
    "--allow-read",
    "--allow-write",
    "--allow-sys",
    "--allow-ffi",
    "main.ts",
    "--listen",
  ],
  cwd: root,
  env: {
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    LOG_LEVEL: "error",
    DATA_DIR: dataDir,
    BOOTSTRAP_ADMIN_SECRET: SECRET,
  },
  stdout: "null",
  stderr: "inherit",
}).spawn();

/** The child's resident memory in MiB. */
async function rssMiB(): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const mib = (n: number) => `${n.toFixed(0)} MiB`;

try {
  for (let ready = false; !ready;) {
    await new Promise((r) => setTimeout(r, 200));
    ready = await fetch(`${url}/readyz`).then(async (r) => (await r.body?.cancel(), r.ok)).catch(() => false);
  }
  const tokenOf = async (id: string, secret: string) => {
    const res = await fetch(`${url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa(`${id}:${secret}`)}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    return (await res.json()).access_token as string;
  };
  const system = await tokenOf("system-admin", SECRET);
  const created = await (await fetch(`${url}/api/v1/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${system}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "export bench" }),
  })).json();
  const token = await tokenOf(created.admin_client.client_id, created.admin_client.client_secret);
  const base = `${url}/api/v1/projects/${created.id}/users`;

  let t = performance.now();
  for (let at = 0; at < USERS; at += 10_000) {
    const lines = Array.from(
      { length: Math.min(10_000, USERS - at) },
      (_, i) =>
        JSON.stringify({ email: `u${at + i}@example.com`, given_name: "Bench", family_name: `${at + i}` }),
    ).join("\n");
    const res = await fetch(`${base}/import`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/x-ndjson" },
      body: lines,
    });
    const answer = await res.json();
    if (answer.created !== Math.min(10_000, USERS - at)) {
      throw new Error(JSON.stringify(answer).slice(0, 500));
    }
  }
  const importMs = performance.now() - t;
  console.log(
    `imported ${USERS.toLocaleString("en")} users in ${USERS / 10_000} requests: ${importMs.toFixed(0)} ms`,
  );

  await new Promise((r) => setTimeout(r, 1000));
  const before = await rssMiB();
  let peak = before;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await rssMiB());
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  t = performance.now();
  const res = await fetch(`${base}/export`, { headers: { authorization: `Bearer ${token}` } });
  let lines = 0;
  let bytes = 0;
  for await (const chunk of res.body!) {
    bytes += chunk.length;
    for (const b of chunk) if (b === 10) lines++;
  }
  const exportMs = performance.now() - t;
  sampling = false;
  await sampler;
  console.log(
    `exported ${lines.toLocaleString("en")} users (${mib(bytes / 1024 / 1024)} of JSON lines) in ` +
      `${exportMs.toFixed(0)} ms`,
  );
  console.log(
    `server resident memory: ${mib(before)} before the export, ${mib(peak)} at its peak during it ` +
      `(+${mib(peak - before)})`,
  );
} finally {
  child.kill("SIGTERM");
  await child.status;
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
