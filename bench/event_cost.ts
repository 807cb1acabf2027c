/**
 * What the audit event adds to an admin write (issue: at most 10 %), measured as `deno task bench` measures an
 * admin write: `PUT …/roles/{id}` (gate, update, event) through HTTP, 32 in flight, against the service as
 * `deno task start` runs it. A second service runs the same code with `record` writing nothing (its deno.json
 * maps domain/audit/audit.ts to bench/audit_without_events.ts), and runs of the two alternate. `deno task bench`
 * prints the result last; `deno run -A bench/event_cost.ts` prints it alone. On the embedded database, or on
 * DATABASE_URL (both services on that database; never a real one: the second service writes changes without
 * their events). BENCH_SECONDS (default 5) and BENCH_CONCURRENCY (default 32); each service first runs once
 * unmeasured.
 */
import { CONCURRENCY, run, SECRET, startServer } from "./harness.ts";

const ROOT = new URL("../", import.meta.url);
/** Beside deno.json, so that the service finds the same node_modules/ and deno.lock. */
const WITHOUT_EVENTS_CONFIG = new URL("deno.bench-without-events.json", ROOT);
const ROUNDS = 3;

export type EventCost = { withEvents: number; withoutEvents: number; share: number };

/** A project with CONCURRENCY roles on the service at `base`, and a `PUT` of one of them (by worker). */
async function roleWriter(base: string): Promise<(w: number) => Promise<boolean>> {
  const tokenOf = async (id: string, secret: string) =>
    (await (await fetch(`${base}/api/v1/tokens`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${btoa(`${id}:${secret}`)}`,
      },
      body: "grant_type=client_credentials",
    })).json()).access_token as string;
  const system = await tokenOf("system-admin", SECRET);
  const json = (token: string) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });
  const project = await (await fetch(`${base}/api/v1/projects`, {
    method: "POST",
    headers: json(system),
    body: JSON.stringify({ name: "event cost" }),
  })).json();
  const headers = json(await tokenOf(project.admin_client.client_id, project.admin_client.client_secret));
  const roles: string[] = [];
  for (let w = 0; w < CONCURRENCY; w++) {
    const res = await fetch(`${base}/api/v1/projects/${project.id}/roles`, {
      method: "POST",
      headers,
      body: JSON.stringify({ code: `r${w}`, name: `R${w}` }),
    });
    roles.push((await res.json()).id);
  }
  let n = 0;
  return async (w) => {
    const res = await fetch(`${base}/api/v1/projects/${project.id}/roles/${roles[w]}`, {
      method: "PUT",
      headers,
      body: JSON.stringify({ code: `r${w}`, name: `R${w} ${n++}` }),
    });
    await res.arrayBuffer();
    return res.status === 200;
  };
}

/** Both services at once, then ROUNDS alternating runs of each; rates are means over the rounds. */
export async function measureEventCost(): Promise<EventCost> {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  config.imports[new URL("domain/audit/audit.ts", ROOT).href] = "./bench/audit_without_events.ts";
  await Deno.writeTextFile(WITHOUT_EVENTS_CONFIG, JSON.stringify(config, null, 2));
  const started: { url: string; stop: () => Promise<void> }[] = [];
  try {
    const withEvents = await startServer();
    started.push(withEvents);
    const withoutEvents = await startServer({ config: decodeURIComponent(WITHOUT_EVENTS_CONFIG.pathname) });
    started.push(withoutEvents);
    const writeWith = await roleWriter(withEvents.url);
    const writeWithout = await roleWriter(withoutEvents.url);
    // One unmeasured run of each first: both services compile their hot paths, and PostgreSQL caches both's
    // plans and pages, before any run counts (20 writes each, run's own warm-up, are far from enough: measured
    // first, the service with events lost 19-40 % in its first two runs against 12-14 % in the next two).
    for (const op of [writeWith, writeWithout]) await run("warm-up", op);
    const rates = { with: 0, without: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [key, op] of [["with", writeWith], ["without", writeWithout]] as const) {
        const r = await run(`PUT …/roles/{id} ${key} its event`, op);
        if (r.errors) throw new Error(`${r.errors} admin writes failed (${key} events)`);
        rates[key] += r.rate / ROUNDS;
      }
    }
    // Time per write with the event over time per write without it.
    return { withEvents: rates.with, withoutEvents: rates.without, share: rates.without / rates.with - 1 };
  } finally {
    for (const server of started) await server.stop();
    await Deno.remove(WITHOUT_EVENTS_CONFIG).catch(() => {});
  }
}

export function describeEventCost(c: EventCost): string {
  return `the audit event adds ${
    (100 * c.share).toFixed(1)
  } % to an admin write (PUT …/roles/{id} through HTTP, ` +
    `${c.withEvents.toFixed(0)}/s with its event, ${c.withoutEvents.toFixed(0)}/s without, ` +
    `means of ${ROUNDS} alternating runs after one unmeasured run of each)`;
}

if (import.meta.main) console.log(describeEventCost(await measureEventCost()));
