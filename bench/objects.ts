/**
 * Objects and grants at scale, on PostgreSQL (DATABASE_URL): spawns the service, seeds 100,001 objects of one
 * resource in batches of 1,000 (`root` → 100 folders → 999 documents each, three levels), and prints what the
 * issue's targets name: the time of each 1,000-object batch, a 100-item page of AuthZEN resource search (a user
 * holding the permission project-wide, and one reaching all 100,001 objects through one grant on `root`), and a
 * decision through a grant three levels up against a project-wide one (sequential latency, then a closed loop
 * of BENCH_CONCURRENCY workers for BENCH_SECONDS each). Figures, not a test: run it on a quiet machine.
 *
 *   DATABASE_URL=postgres://… deno run -A bench/objects.ts
 */
import { CONCURRENCY, run, SECONDS, SECRET, startServer } from "./harness.ts";

if (!Deno.env.get("DATABASE_URL")) {
  console.error("bench/objects.ts measures PostgreSQL: set DATABASE_URL");
  Deno.exit(2);
}

const server = await startServer();
const base = server.url;

async function call(path: string, token: string, method = "GET", body?: unknown): Promise<Response> {
  return await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function json(res: Response) {
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status} ${res.url}: ${text}`);
  return JSON.parse(text);
}

async function clientToken(id: string, secret: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: `Basic ${btoa(`${id}:${secret}`)}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  return (await json(res)).access_token;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const max = (xs: number[]) => Math.max(...xs);
const ms = (x: number) => `${x.toFixed(1)} ms`;

try {
  const system = await clientToken("system-admin", SECRET);
  const project = await json(await call("/api/v1/projects", system, "POST", { name: "objects bench" }));
  const pid = project.id;
  const token = await clientToken(project.admin_client.client_id, project.admin_client.client_secret);
  const doc = await json(
    await call(`/api/v1/projects/${pid}/resources`, token, "POST", {
      name: "Document",
      code: "doc",
      permissions: [{ name: "Read", code: "read" }],
    }),
  );
  const viewer = await json(
    await call(`/api/v1/projects/${pid}/roles`, token, "POST", {
      code: "viewer",
      name: "Viewer",
      permission_ids: [doc.permissions[0].id],
    }),
  );
  const user = async (ext: string, roleId?: string) =>
    await json(
      await call(`/api/v1/projects/${pid}/users`, token, "POST", {
        display_name: ext,
        external_user_id: ext,
        ...(roleId ? { role_id: roleId } : {}),
      }),
    );
  await user("alice", viewer.id); // project-wide
  const carol = await user("carol"); // through one grant on root

  const objects = `/api/v1/projects/${pid}/resources/${doc.id}/objects`;
  await json(await call(objects, token, "POST", { id: "root", name: "Root" }));
  const batches: number[] = [];
  for (let f = 0; f < 100; f++) {
    const folder = `f${String(f).padStart(2, "0")}`;
    const items = [{ id: folder, parent_id: "root" }];
    for (let d = 0; d < 999; d++) {
      items.push({ id: `${folder}/d${String(d).padStart(3, "0")}`, parent_id: folder });
    }
    const t0 = performance.now();
    await json(await call(`${objects}/batch`, token, "POST", { objects: items }));
    batches.push(performance.now() - t0);
  }
  await json(
    await call(`/api/v1/projects/${pid}/grants`, token, "POST", {
      subject: { type: "user", id: carol.id },
      role_id: viewer.id,
      object: { type: "doc", id: "root" },
    }),
  );
  // The project's admin client holds access:evaluate and access:search.
  const pdp = token;

  console.log(`objects: 100,001 in ${batches.length + 1} requests`);
  console.log(
    `batch of 1,000 objects (POST …/objects/batch, HTTP round trip): median ${ms(median(batches))}, ` +
      `first ${ms(batches[0])}, last ${ms(batches.at(-1)!)}, max ${ms(max(batches))}`,
  );

  const search = async (who: string, pageToken?: string) => {
    const t0 = performance.now();
    const body = await json(
      await call("/access/v1/search/resource", pdp, "POST", {
        subject: { type: "user", id: who },
        action: { name: "read" },
        resource: { type: "doc" },
        page: { limit: 100, ...(pageToken ? { token: pageToken } : {}) },
      }),
    );
    return { time: performance.now() - t0, body };
  };
  for (const who of ["alice", "carol"]) {
    const first: number[] = [];
    const later: number[] = [];
    let next = "";
    let total = 0;
    for (let i = 0; i < 30; i++) {
      const a = await search(who);
      first.push(a.time);
      total = a.body.page.total;
      const b = await search(who, next || a.body.page.next_token);
      later.push(b.time);
      next = b.body.page.next_token;
    }
    console.log(
      `resource search, 100-item page, ${who === "alice" ? "project-wide" : "through one grant on root"} ` +
        `(total ${total}): first page median ${ms(median(first))} (max ${ms(max(first))}), ` +
        `following pages median ${ms(median(later))} (max ${ms(max(later))})`,
    );
  }

  const decide = (who: string) => async () => {
    const res = await call("/access/v1/evaluation", pdp, "POST", {
      subject: { type: "user", id: who },
      action: { name: "read" },
      resource: { type: "doc", id: "f42/d420" },
    });
    const body = await res.json();
    return res.ok && body.decision === true;
  };
  for (const who of ["alice", "carol"]) {
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      if (!(await decide(who)())) throw new Error(`${who} was not allowed`);
      times.push(performance.now() - t0);
    }
    console.log(`evaluation, sequential, ${who}: median ${ms(median(times))}`);
  }
  const wide = await run("evaluation, project-wide (role)", decide("alice"));
  const granted = await run("evaluation, through a grant three levels up", decide("carol"));
  for (const r of [wide, granted]) {
    console.log(
      `${r.name}: ${r.rate.toFixed(0)} req/s, p50 ${ms(r.p50)}, p99 ${ms(r.p99)}, errors ${r.errors} ` +
        `(${CONCURRENCY} workers, ${SECONDS} s)`,
    );
  }
  console.log(`grant / project-wide cost ratio (by throughput): ${(wide.rate / granted.rate).toFixed(2)}`);
} finally {
  await server.stop();
}
