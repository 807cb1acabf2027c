/**
 * `deno task soak`: mixed traffic against a running service for a bounded time, every request with a deadline.
 * It makes a project of its own (with the system admin's secret), then SOAK_CONCURRENCY workers run for
 * SOAK_SECONDS a mix of client-credentials tokens, refresh-token rotations, introspections, bearer-gated reads,
 * list pages, admin writes (users and roles made and changed), logins through the login page (authorization code
 * with PKCE, at most SOAK_LOGINS_PER_SECOND) and malformed requests, which must answer 4xx. It prints a table of
 * the answers per request and status with latency percentiles, and exits 1 when a request went unanswered
 * (no answer within SOAK_TIMEOUT_SECONDS, or the connection failed), answered 5xx, or answered a status its
 * request does not expect.
 *
 *   SOAK_URL=http://127.0.0.1:8000 BOOTSTRAP_ADMIN_SECRET=… deno task soak
 *
 * Logins send X-Forwarded-For, an address of their own each: a service with TRUST_PROXY_HOPS=1 counts each
 * against its own address (600 login pages per address per 10 minutes); without, they all count against the
 * soak's, and SOAK_LOGINS_PER_SECOND must keep them under that.
 */
import {
  basic,
  clientToken,
  FORM,
  login,
  type Project,
  type Send,
  setUpProject,
  type Tokens,
} from "./flows.ts";
import { REDIRECT } from "./harness.ts";

const env = (name: string, fallback: number) => {
  const raw = Deno.env.get(name);
  const n = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number (got ${raw})`);
  return n;
};
const BASE = (Deno.env.get("SOAK_URL") ?? "").replace(/\/+$/, "");
const SECRET = Deno.env.get("BOOTSTRAP_ADMIN_SECRET") ?? "";
const SECONDS = env("SOAK_SECONDS", 120);
const CONCURRENCY = Math.max(1, Math.floor(env("SOAK_CONCURRENCY", 16)));
const TIMEOUT_MS = env("SOAK_TIMEOUT_SECONDS", 15) * 1000;
const LOGINS_PER_SECOND = env("SOAK_LOGINS_PER_SECOND", 2);
/** A worker's pause between two operations, so that the soak's own CPU stays small beside the service's. */
const PAUSE_MS = env("SOAK_PAUSE_MS", 5);
if (!BASE || !SECRET) {
  console.error(
    "usage: SOAK_URL=<service base URL> BOOTSTRAP_ADMIN_SECRET=<system admin secret> deno task soak",
  );
  Deno.exit(2);
}

// ---------------------------------------------------------------------------------------------------------------
// Every request is counted here, by label and status ("unanswered" when none came in time).

type Tally = { count: number; latencies: number[] };
const tallies = new Map<string, Map<string, Tally>>();
/** The statuses each label expects; a malformed request expects any 4xx. */
const expected = new Map<string, (status: number) => boolean>();
const failures: string[] = [];
let unanswered = 0;
let serverErrors = 0;
let unexpected = 0;

function record(label: string, status: string, ms: number) {
  let byStatus = tallies.get(label);
  if (!byStatus) tallies.set(label, byStatus = new Map());
  let t = byStatus.get(status);
  if (!t) byStatus.set(status, t = { count: 0, latencies: [] });
  t.count++;
  t.latencies.push(ms);
}

function fail(line: string) {
  if (failures.length < 30) failures.push(line);
}

/**
 * Sends a request with a deadline over the whole exchange, body included: the body is read here (and handed on
 * as a new Response), so that a service that answers its headers and then stalls counts as unanswered too.
 */
const send: Send = async (label, url, init = {}) => {
  const t0 = performance.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) });
    const body = await res.arrayBuffer();
    const ms = performance.now() - t0;
    record(label, String(res.status), ms);
    const ok = expected.get(label) ?? ((s: number) => s < 400);
    if (res.status >= 500) {
      serverErrors++;
      fail(`${label}: ${res.status} ${new TextDecoder().decode(body).slice(0, 300)}`);
    } else if (!ok(res.status)) {
      unexpected++;
      fail(`${label}: unexpected ${res.status} ${new TextDecoder().decode(body).slice(0, 300)}`);
    }
    return new Response(res.status === 204 || res.status === 304 ? null : body, {
      status: res.status,
      headers: res.headers,
    });
  } catch (err) {
    const ms = performance.now() - t0;
    record(label, "unanswered", ms);
    unanswered++;
    const why = err instanceof DOMException && err.name === "TimeoutError"
      ? `no answer in ${TIMEOUT_MS / 1000} s`
      : String(err);
    fail(`${label}: unanswered after ${(ms / 1000).toFixed(1)} s (${why})`);
    throw new Unanswered(label);
  }
};

class Unanswered extends Error {}

const exactly = (...statuses: number[]) => (s: number) => statuses.includes(s);
const clientError = (s: number) => s >= 400 && s < 500;

// ---------------------------------------------------------------------------------------------------------------
// The operations.

const PASSWORD = "soak password 1";
const started = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
console.log(`soak: setting up a project on ${BASE}`);
const project: Project = await setUpProject(BASE, SECRET, {
  name: `soak-${started}`,
  redirect: REDIRECT,
  roles: 10,
  users: CONCURRENCY,
  password: PASSWORD,
  domain: `soak-${started}.test`,
});
const api = `${BASE}/api/v1/projects/${project.id}`;
/** The project's admin token, replaced by every client-credentials token the soak takes (they last 15 minutes). */
let projectToken = project.token;
const bearer = () => ({ authorization: `Bearer ${projectToken}` });
const json = () => ({ ...bearer(), "content-type": "application/json" });

/** When the timed run began (the setup's logins are not paced). */
let soakStart = Infinity;
let logins = 0;
let loginsBefore = 0;
/** Logins are paced: each is a password hash on the service, and a login page counted against an address. */
const mayLogin = () => logins - loginsBefore < LOGINS_PER_SECOND * (performance.now() - soakStart) / 1000 + 1;
function userLogin(w: number): Promise<Tokens | null> {
  const n = ++logins;
  return login(send, BASE, {
    clientId: project.clientId,
    redirect: REDIRECT,
    email: project.users[w],
    password: PASSWORD,
    from: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
    scope: "openid", // so that its access token reads /userinfo
  });
}
expected.set("GET /authorize (login page)", exactly(200));
expected.set("POST /authorize (password)", exactly(303));
expected.set("POST /api/v1/tokens authorization_code", exactly(200));

/** Each worker's own refresh chain (a refresh token is single use) and its latest user access token. */
const chains: (Tokens | null)[] = Array(CONCURRENCY).fill(null);
/** Users the soak made, for updates. */
const made: { id: string; external: string }[] = [];
let serial = 0;

type Op = {
  label: string;
  weight: number;
  expect: (status: number) => boolean;
  run: (w: number) => Promise<void>;
};

const ops: Op[] = [
  {
    label: "POST /api/v1/tokens client_credentials",
    weight: 12,
    expect: exactly(200),
    run: async () => {
      const token = await clientToken(send, BASE, project.clientId, project.clientSecret);
      if (token) projectToken = token;
    },
  },
  {
    label: "POST /api/v1/tokens refresh_token",
    weight: 10,
    expect: exactly(200),
    run: async (w) => {
      const chain = chains[w];
      if (!chain) return void (mayLogin() && (chains[w] = await userLogin(w)));
      // Until the answer is in, the old token may or may not have been used: a lost answer ends the chain.
      chains[w] = null;
      const res = await send("POST /api/v1/tokens refresh_token", `${BASE}/api/v1/tokens`, {
        method: "POST",
        headers: FORM,
        body: new URLSearchParams({
          grant_type: "refresh_token",
          client_id: project.clientId,
          refresh_token: chain.refresh_token,
        }),
      });
      if (res.status === 200) chains[w] = await res.json();
    },
  },
  {
    label: "POST /api/v1/tokens/introspect",
    weight: 8,
    expect: exactly(200),
    run: async () => {
      const res = await send("POST /api/v1/tokens/introspect", `${BASE}/api/v1/tokens/introspect`, {
        method: "POST",
        headers: { ...FORM, ...basic(project.clientId, project.clientSecret) },
        body: new URLSearchParams({ token: projectToken }),
      });
      if (res.status === 200 && (await res.json()).active !== true) {
        unexpected++;
        fail("POST /api/v1/tokens/introspect: a live token answered inactive");
      }
    },
  },
  {
    label: "GET /api/v1/projects/{id}",
    weight: 10,
    expect: exactly(200),
    run: async () => void await send("GET /api/v1/projects/{id}", api, { headers: bearer() }),
  },
  {
    label: "GET /userinfo",
    weight: 5,
    expect: exactly(200),
    run: async (w) => {
      const chain = chains[w];
      if (!chain) return;
      await send("GET /userinfo", `${BASE}/userinfo`, {
        headers: { authorization: `Bearer ${chain.access_token}` },
      });
    },
  },
  {
    label: "GET .../roles?page_size=10",
    weight: 8,
    expect: exactly(200),
    run: async () =>
      void await send("GET .../roles?page_size=10", `${api}/roles?page_size=10`, { headers: bearer() }),
  },
  {
    label: "GET .../users?page_size=20 (two pages)",
    weight: 5,
    expect: exactly(200),
    run: async () => {
      const label = "GET .../users?page_size=20 (two pages)";
      const res = await send(label, `${api}/users?page_size=20`, { headers: bearer() });
      if (res.status !== 200) return;
      const { pagination } = await res.json();
      const pages = Math.ceil((pagination?.total ?? 0) / 20);
      if (pages > 1) {
        const page = 2 + serial++ % (pages - 1);
        await send(label, `${api}/users?page_size=20&page_num=${page}&sort_by=created_at`, {
          headers: bearer(),
        });
      }
    },
  },
  {
    label: "PUT .../roles/{id}",
    weight: 8,
    expect: exactly(200),
    run: async (w) => {
      const i = w % project.roles.length;
      await send("PUT .../roles/{id}", `${api}/roles/${project.roles[i]}`, {
        method: "PUT",
        headers: json(),
        body: JSON.stringify({ code: `role-${i}`, name: `Role ${i} ${serial++ % 2}` }),
      });
    },
  },
  {
    label: "POST .../roles",
    weight: 2,
    expect: exactly(201),
    run: async () => {
      const n = serial++;
      await send("POST .../roles", `${api}/roles`, {
        method: "POST",
        headers: json(),
        body: JSON.stringify({ code: `soak-${n}`, name: `Soak ${n}`, description: "made by the soak" }),
      });
    },
  },
  {
    label: "POST .../users",
    weight: 3,
    expect: exactly(201),
    run: async () => {
      const n = serial++;
      const res = await send("POST .../users", `${api}/users`, {
        method: "POST",
        headers: json(),
        body: JSON.stringify({ display_name: `Soak ${n}`, external_user_id: `soak-${n}`, is_active: true }),
      });
      if (res.status === 201) made.push({ id: (await res.json()).id, external: `soak-${n}` });
    },
  },
  {
    label: "PUT .../users/{id}",
    weight: 3,
    expect: exactly(200),
    run: async () => {
      if (made.length === 0) return;
      const user = made[serial++ % made.length];
      await send("PUT .../users/{id}", `${api}/users/${user.id}`, {
        method: "PUT",
        headers: json(),
        body: JSON.stringify({
          display_name: `Soak ${serial % 1000}`,
          external_user_id: user.external,
          is_active: true,
          role_id: project.roles[serial % project.roles.length],
        }),
      });
    },
  },
  {
    label: "login (page, password, code)",
    weight: 4,
    expect: () => true,
    run: async (w) => {
      if (!mayLogin()) return;
      const tokens = await userLogin(w);
      if (tokens) chains[w] = tokens;
      else {
        unexpected++;
        fail("login: did not end with tokens");
      }
    },
  },
  {
    label: "malformed",
    weight: 5,
    expect: clientError,
    run: async () => {
      const m = MALFORMED[serial++ % MALFORMED.length];
      await send(m.label, m.url(), m.init?.());
    },
  },
];

const LONG = "x".repeat(5000);
/** Requests that are wrong on purpose: each must answer 4xx (never 5xx, never a timeout). */
const MALFORMED: { label: string; url: () => string; init?: () => RequestInit }[] = [
  {
    label: "malformed: token, client_id with %00",
    url: () => `${BASE}/api/v1/tokens`,
    init: () => ({
      method: "POST",
      headers: FORM,
      body: "grant_type=client_credentials&client_id=soak%00client&client_secret=x",
    }),
  },
  {
    label: "malformed: token, over-long client_id",
    url: () => `${BASE}/api/v1/tokens`,
    init: () => ({
      method: "POST",
      headers: FORM,
      body: `grant_type=client_credentials&client_id=${LONG}&client_secret=x`,
    }),
  },
  {
    label: "malformed: token, JSON body",
    url: () => `${BASE}/api/v1/tokens`,
    init: () => ({ method: "POST", headers: { "content-type": "application/json" }, body: '{"grant_type":' }),
  },
  {
    label: "malformed: authorize, client_id with %00",
    url: () => `${BASE}/authorize?client_id=soak%00client&response_type=code&redirect_uri=${REDIRECT}`,
  },
  {
    label: "malformed: authorize, over-long client_id",
    url: () => `${BASE}/authorize?client_id=${LONG}&response_type=code`,
  },
  {
    label: "malformed: project, over-long id",
    url: () => `${BASE}/api/v1/projects/${LONG}`,
    init: () => ({ headers: bearer() }),
  },
  {
    label: "malformed: user id with %00",
    url: () => `${api}/users/soak%00user`,
    init: () => ({
      method: "PUT",
      headers: json(),
      body: JSON.stringify({ display_name: "x", is_active: true }),
    }),
  },
  {
    label: "malformed: forged bearer",
    url: () => api,
    init: () => ({ headers: { authorization: "Bearer a.b.c" } }),
  },
  {
    label: "malformed: introspect without client",
    url: () => `${BASE}/api/v1/tokens/introspect`,
    init: () => ({ method: "POST", headers: FORM, body: "token=x" }),
  },
  {
    label: "malformed: role with a bad body",
    url: () => `${api}/roles`,
    init: () => ({ method: "POST", headers: json(), body: JSON.stringify({ code: 7, name: LONG }) }),
  },
];
for (const op of ops) if (op.label !== "malformed") expected.set(op.label, op.expect);
for (const m of MALFORMED) expected.set(m.label, clientError);

// ---------------------------------------------------------------------------------------------------------------
// The run.

const totalWeight = ops.reduce((sum, op) => sum + op.weight, 0);
function pick(): Op {
  let r = Math.random() * totalWeight;
  for (const op of ops) if ((r -= op.weight) < 0) return op;
  return ops[0];
}

// Each worker starts with a refresh chain of its own, from a login.
for (let w = 0; w < CONCURRENCY; w++) chains[w] = await userLogin(w).catch(() => null);

console.log(
  `soak: ${SECONDS} s, ${CONCURRENCY} workers, ${TIMEOUT_MS / 1000} s deadline a request, ` +
    `at most ${LOGINS_PER_SECOND} logins a second, project ${project.id}`,
);
soakStart = performance.now();
loginsBefore = logins;
const end = soakStart + SECONDS * 1000;
let lastReport = soakStart;
let operations = 0;
async function worker(w: number) {
  while (performance.now() < end) {
    try {
      await pick().run(w);
    } catch (err) {
      if (!(err instanceof Unanswered)) {
        unexpected++;
        fail(`worker ${w}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    operations++;
    if (w === 0 && performance.now() - lastReport > 30_000) {
      lastReport = performance.now();
      console.log(
        `soak: ${((lastReport - soakStart) / 1000).toFixed(0)} s, ${operations} operations, ` +
          `${unanswered} unanswered, ${serverErrors} 5xx, ${unexpected} unexpected`,
      );
    }
    if (PAUSE_MS > 0) await new Promise((r) => setTimeout(r, PAUSE_MS));
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
const elapsed = (performance.now() - soakStart) / 1000;

// ---------------------------------------------------------------------------------------------------------------
// The report.

const at = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const row = (cells: string[]) =>
  console.log(
    cells[0].padEnd(52) + cells[1].padStart(11) + cells.slice(2).map((c) => c.padStart(9)).join(""),
  );
console.log();
row(["request", "status", "count", "p50 ms", "p95 ms", "p99 ms", "max ms"]);
const all: number[] = [];
let requests = 0;
for (const label of [...tallies.keys()].sort()) {
  const byStatus = tallies.get(label)!;
  for (const status of [...byStatus.keys()].sort()) {
    const t = byStatus.get(status)!;
    const sorted = t.latencies.sort((a, b) => a - b);
    all.push(...sorted);
    requests += t.count;
    row([
      label.length > 51 ? label.slice(0, 50) + "…" : label,
      status,
      String(t.count),
      at(sorted, 0.5).toFixed(1),
      at(sorted, 0.95).toFixed(1),
      at(sorted, 0.99).toFixed(1),
      sorted[sorted.length - 1].toFixed(1),
    ]);
  }
}
all.sort((a, b) => a - b);
row([
  "all requests",
  "",
  String(requests),
  at(all, 0.5).toFixed(1),
  at(all, 0.95).toFixed(1),
  at(all, 0.99).toFixed(1),
  all[all.length - 1].toFixed(1),
]);
if (failures.length > 0) {
  console.log("\nfirst failures:");
  for (const f of failures) console.log(`  ${f}`);
}
const ok = unanswered === 0 && serverErrors === 0 && unexpected === 0;
console.log(
  `\nsoak ${ok ? "passed" : "FAILED"}: ${requests} requests (${operations} operations, ${logins} logins) ` +
    `in ${elapsed.toFixed(0)} s, ${(requests / elapsed).toFixed(0)}/s; ${unanswered} unanswered, ` +
    `${serverErrors} 5xx, ${unexpected} unexpected`,
);
Deno.exit(ok ? 0 : 1);
