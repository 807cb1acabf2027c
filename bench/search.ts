/**
 * `deno task bench-search`: what AuthZEN subject search costs on a large project. Starts the service as `deno
 * task start` runs it (on DATABASE_URL when set, else embedded), makes a project with SEARCH_USERS users
 * (default 10,000: half of them hold `record:read` through a role, half do not), then times, one request at a
 * time, the first 100-item page of `POST /access/v1/search/subject`, a page in the middle (with its token), and
 * an action search and an evaluation for reference. Prints the median and the 95th percentile of each.
 */
import { SECRET, startServer } from "./harness.ts";

const USERS = Number(Deno.env.get("SEARCH_USERS") ?? 10_000);
const SAMPLES = Number(Deno.env.get("SEARCH_SAMPLES") ?? 50);

const server = await startServer();
const base = server.url;

async function call(path: string, init: RequestInit & { token?: string; json?: unknown } = {}) {
  const headers: Record<string, string> = { ...(init.headers as Record<string, string> ?? {}) };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.json !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers,
    body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

async function tokenOf(id: string, secret: string): Promise<string> {
  const res = await call("/api/v1/tokens", {
    method: "POST",
    headers: {
      authorization: `Basic ${btoa(`${id}:${secret}`)}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  return res.access_token;
}

try {
  const system = await tokenOf("system-admin", SECRET);
  const project = await call("/api/v1/projects", {
    method: "POST",
    token: system,
    json: { name: `search bench ${crypto.randomUUID().slice(0, 8)}` },
  });
  const p = project.id as string;
  const token = await tokenOf(project.admin_client.client_id, project.admin_client.client_secret);
  const record = await call(`/api/v1/projects/${p}/resources`, {
    method: "POST",
    token,
    json: { name: "Record", code: "record", permissions: [{ name: "Read", code: "read" }] },
  });
  const reader = await call(`/api/v1/projects/${p}/roles`, {
    method: "POST",
    token,
    json: { code: "reader", name: "Reader", permission_ids: [record.permissions[0].id] },
  });
  const other = await call(`/api/v1/projects/${p}/roles`, {
    method: "POST",
    token,
    json: { code: "other", name: "Other", permission_ids: [] },
  });
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < USERS) {
      const i = next++;
      await call(`/api/v1/projects/${p}/users`, {
        method: "POST",
        token,
        json: {
          display_name: `User ${i}`,
          external_user_id: `u-${String(i).padStart(6, "0")}`,
          role_id: i % 2 === 0 ? reader.id : other.id,
        },
      });
    }
  }));
  console.log(`${USERS} users created in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const subjectQuery = {
    subject: { type: "user" },
    action: { name: "read" },
    resource: { type: "record", id: "r-1" },
  };
  const first = await call("/access/v1/search/subject", {
    method: "POST",
    token,
    json: { ...subjectQuery, page: { limit: 100 } },
  });
  console.log(`subject search: total ${first.page.total}, first page ${first.results.length} results`);
  // A token from the middle: walk to the page halfway through.
  let middle = first;
  for (let i = 0; i < Math.floor(first.page.total / 200); i++) {
    middle = await call("/access/v1/search/subject", {
      method: "POST",
      token,
      json: { ...subjectQuery, page: { limit: 100, token: middle.page.next_token } },
    });
  }
  const midToken = middle.page.next_token;

  const timed = async (name: string, body: unknown, path: string) => {
    const ms: number[] = [];
    for (let i = 0; i < SAMPLES + 5; i++) {
      const s = performance.now();
      await call(path, { method: "POST", token, json: body });
      if (i >= 5) ms.push(performance.now() - s);
    }
    ms.sort((a, b) => a - b);
    const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))].toFixed(1);
    console.log(`${name.padEnd(44)} median ${at(0.5)} ms, p95 ${at(0.95)} ms`);
  };
  await timed(
    "subject search, first page of 100",
    { ...subjectQuery, page: { limit: 100 } },
    "/access/v1/search/subject",
  );
  await timed(
    "subject search, a middle page of 100",
    { ...subjectQuery, page: { limit: 100, token: midToken } },
    "/access/v1/search/subject",
  );
  await timed(
    "action search (one user)",
    { subject: { type: "user", id: "u-000000" }, resource: { type: "record", id: "r-1" } },
    "/access/v1/search/action",
  );
  await timed(
    "one evaluation",
    {
      subject: { type: "user", id: "u-000000" },
      action: { name: "read" },
      resource: { type: "record", id: "r-1" },
    },
    "/access/v1/evaluation",
  );
} finally {
  await server.stop();
}
