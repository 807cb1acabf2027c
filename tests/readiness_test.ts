/**
 * Readiness (docs/observability.md): `/readyz` answers 200, or 503 naming the failing check: a database that
 * stopped answering (a relay cut in front of it), a schema behind this build, no current signing key. Strangers
 * get the names alone; each check's outcome and why it fails come to a bearer of METRICS_TOKEN and on
 * METRICS_PORT.
 */
import assert from "node:assert/strict";
import { DATABASE_URL, eventually, freePort, isolatedDatabase, startWith, test } from "./helpers.ts";

const newMetricsToken = () =>
  crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
import { sample } from "./telemetry_support.ts";

/** A TCP relay to PostgreSQL that can be cut (its listener closed and every connection dropped) and restored. */
function relayTo(target: URL) {
  const port = freePort();
  const conns = new Set<Deno.Conn>();
  let listener: Deno.Listener | null = null;
  const open = () => {
    listener = Deno.listen({ hostname: "127.0.0.1", port });
    (async () => {
      for await (const client of listener!) {
        const server = await Deno.connect({ hostname: target.hostname, port: Number(target.port || 5432) });
        conns.add(client).add(server);
        client.readable.pipeTo(server.writable).catch(() => {});
        server.readable.pipeTo(client.writable).catch(() => {});
      }
    })().catch(() => {});
  };
  open();
  const url = new URL(target.href);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.href,
    cut() {
      listener?.close();
      listener = null;
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      conns.clear();
    },
    restore: open,
  };
}

test(
  "readiness answers each check, and 503 naming the database when it stops answering; ready again after",
  async () => {
    const iso = await isolatedDatabase();
    const relay = relayTo(new URL(iso.env.DATABASE_URL));
    const metricsToken = newMetricsToken();
    const detailed = { headers: { authorization: `Bearer ${metricsToken}` } };
    const svc = await startWith({
      ...iso.env,
      DATABASE_URL: relay.url,
      DATABASE_DIRECT_URL: iso.env.DATABASE_DIRECT_URL ?? iso.env.DATABASE_URL,
      DATABASE_STATEMENT_TIMEOUT: "1",
      DATABASE_QUEUE_TIMEOUT: "1",
      METRICS_TOKEN: metricsToken,
    }, { write: () => {} }); // its jobs log each failure while the database is away
    const metrics = async () =>
      await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } }))
        .text();
    try {
      assert.deepEqual(await (await fetch(`${svc.url}/readyz`)).json(), { status: "ready" });
      const ready = await fetch(`${svc.url}/readyz`, detailed);
      const body = await ready.json();
      assert.equal(ready.status, 200, JSON.stringify(body));
      assert.equal(body.status, "ready");
      for (const check of ["database", "migrations", "signing_key", "jobs"]) {
        assert.equal(body.checks[check].status, "ok", check);
      }
      assert.equal(body.checks.migrations.applied, body.checks.migrations.expected);
      assert.ok(body.checks.jobs.jobs.some((j: { name: string }) => j.name === "webhook-deliveries"));

      relay.cut();
      const started = Date.now();
      const anonymous = await fetch(`${svc.url}/readyz`);
      assert.equal(anonymous.status, 503);
      assert.deepEqual(await anonymous.json(), {
        error: "system_error",
        error_description: "not ready: database",
        status: "not_ready",
        failing: ["database"],
      });
      const down = await fetch(`${svc.url}/readyz`, detailed);
      const why = await down.json();
      assert.equal(down.status, 503, JSON.stringify(why));
      assert.ok(Date.now() - started < 4000, "readiness waited too long on a stopped database");
      assert.equal(down.headers.get("retry-after"), "1");
      assert.equal(why.error, "system_error");
      assert.equal(why.status, "not_ready");
      assert.deepEqual(why.failing, ["database"]);
      assert.match(why.error_description, /^not ready: database \(the database did not answer/);
      assert.equal(why.checks.database.status, "failing");
      assert.equal(why.checks.migrations.status, "unknown");
      // The webhook job fails every second now, and a scrape still answers, counting the read it could not make.
      const failures = 'acs_job_failures_total{name="webhook-deliveries"}';
      const before = sample(await metrics(), failures);
      const text = await eventually(`${failures} above ${before}`, async () => {
        const scraped = await metrics();
        return sample(scraped, failures) > before && scraped;
      }, { within: 10_000, every: 200 });
      assert.ok(sample(text, failures) > before, `${failures}: ${before} → ${sample(text, failures)}`);
      assert.ok(sample(text, "acs_metrics_collector_errors_total") >= 1, text);
      assert.ok(sample(text, 'acs_db_statement_errors_total{class="connection"}') >= 1, text);

      relay.restore();
      await eventually("ready again", async () => {
        const res = await fetch(`${svc.url}/readyz`);
        await res.body?.cancel();
        return res.status === 200;
      }, { within: 10_000, every: 250 });
    } finally {
      relay.cut();
      await svc.close();
      await iso.drop();
    }
  },
  { ignore: !DATABASE_URL },
);

test("readiness names a schema behind this build and a missing signing key, each alone", async () => {
  const iso = await isolatedDatabase();
  const metricsToken = newMetricsToken();
  const svc = await startWith({ ...iso.env, METRICS_TOKEN: metricsToken });
  const readyz = async () => {
    const res = await fetch(`${svc.url}/readyz`, { headers: { authorization: `Bearer ${metricsToken}` } });
    return { status: res.status, body: await res.json() };
  };
  try {
    const ok = await readyz();
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual(Object.keys(ok.body.checks).sort(), ["database", "jobs", "migrations", "signing_key"]);
    assert.ok(ok.body.checks.jobs.jobs.every((j: { status: string }) => j.status !== "failing"));
    const last = ok.body.checks.migrations.expected as number;

    const [row] = await svc.db.sql`delete from schema_migrations where version = ${last} returning name`;
    // The schema is now at the latest migration left (numbers may skip, as on a branch).
    const [{ at }] = await svc.db.sql<
      { at: number }[]
    >`select max(version)::int as at from schema_migrations`;
    const behind = await readyz();
    assert.equal(behind.status, 503);
    assert.deepEqual(behind.body.failing, ["migrations"]);
    assert.equal(behind.body.checks.migrations.applied, at);
    assert.match(
      behind.body.error_description,
      new RegExp(`migrations \\(the schema is at ${at}, this build needs ${last}\\)`),
    );
    await svc.db.sql`insert into schema_migrations (version, name) values (${last}, ${row.name})`;

    const [key] = await svc.db
      .sql`update signing_keys set state = 'previous' where state = 'current' returning kid`;
    // A stranger learns which check fails, not why.
    const stranger = await fetch(`${svc.url}/readyz`);
    assert.equal(stranger.status, 503);
    assert.equal(stranger.headers.get("retry-after"), "1");
    assert.deepEqual(await stranger.json(), {
      error: "system_error",
      error_description: "not ready: signing_key",
      status: "not_ready",
      failing: ["signing_key"],
    });
    const keyless = await readyz();
    assert.equal(keyless.status, 503);
    assert.deepEqual(keyless.body.failing, ["signing_key"]);
    assert.equal(keyless.body.checks.signing_key.detail, "no current signing key");
    await svc.db.sql`update signing_keys set state = 'current' where kid = ${key.kid}`;
    assert.equal((await readyz()).status, 200);
  } finally {
    await svc.close();
    await iso.drop();
  }
});

test("readiness tells strangers nothing: the checks only with METRICS_TOKEN, or on METRICS_PORT", async () => {
  const iso = await isolatedDatabase();
  const metricsToken = newMetricsToken();
  const metricsPort = freePort();
  const svc = await startWith({ ...iso.env, METRICS_TOKEN: metricsToken, METRICS_PORT: String(metricsPort) });
  const readyz = async (url: string, authorization?: string) => {
    const res = await fetch(`${url}/readyz`, authorization ? { headers: { authorization } } : {});
    assert.equal(res.headers.get("cache-control"), "no-store");
    return { status: res.status, body: await res.json() };
  };
  try {
    // Anonymous, and with a wrong or malformed token: the status alone.
    for (
      const authorization of [
        undefined,
        `Bearer ${newMetricsToken()}`,
        "Basic eDp5",
        `Bearer ${metricsToken}x`,
      ]
    ) {
      assert.deepEqual(await readyz(svc.url, authorization), { status: 200, body: { status: "ready" } });
    }
    // The token's bearer, and the metrics listener: every check, migrations and jobs included.
    for (
      const answer of [
        await readyz(svc.url, `Bearer ${metricsToken}`),
        await readyz(`http://127.0.0.1:${metricsPort}`),
      ]
    ) {
      assert.equal(answer.status, 200);
      assert.equal(answer.body.status, "ready");
      assert.deepEqual(Object.keys(answer.body.checks).sort(), [
        "database",
        "jobs",
        "migrations",
        "signing_key",
      ]);
      assert.equal(typeof answer.body.checks.migrations.applied, "number");
      assert.ok(answer.body.checks.jobs.jobs.some((j: { name: string }) => j.name === "webhook-deliveries"));
    }
  } finally {
    await svc.close();
    await iso.drop();
  }
});
