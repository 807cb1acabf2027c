/**
 * Webhooks: subscriptions with a Standard Webhooks secret shown once; durable delivery from the outbox (signed,
 * retried, resumed after a restart, sent once by several instances); no server-side request forgery.
 */
import assert from "node:assert/strict";
import { Webhook as Verifier } from "./deps.ts";
import type { Service } from "../service.ts";
import { privateAddress, resolveTarget } from "../domain/outbound/webhook_targets.ts";
import { buildOpenApiDocument } from "../routes/document.ts";
import { markAttemptFailed, markDelivered } from "../db/events/webhooks.ts";
import { spawn } from "./processes.ts";
import {
  ADMIN_SECRET,
  basic,
  clientWith,
  DATABASE_URL,
  eventually,
  expectError,
  freePort,
  http,
  isolatedDatabase,
  newProject,
  service,
  startWith,
  test,
  type TestProject,
} from "./helpers.ts";

type Received = { headers: Headers; body: string };

/** A webhook receiver on loopback; `status` decides its answers; `times` holds when each request came. */
function receiver(status: () => number = () => 200, port = freePort()) {
  const got: Received[] = [];
  const times: number[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, async (req) => {
    const body = await req.text();
    times.push(Date.now());
    const answer = status();
    if (answer >= 200 && answer < 300) got.push({ headers: req.headers, body });
    return new Response(null, { status: answer });
  });
  return { url: `http://127.0.0.1:${port}/hooks`, got, times, close: () => server.shutdown() };
}

/** The services whose delivery runs a test waits for are started with it (their readiness's details). */
const METRICS_TOKEN = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");

const until = <T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 15_000): Promise<T> =>
  eventually(what, fn, { within: ms, every: 100 });

/**
 * Waits until the delivery job of the service at `url` has finished two runs from now (runs never overlap): a
 * delivery in flight now is over after the first, and the second found nothing more to send. What a wait "for
 * any duplicate to arrive" waited for, without a fixed time.
 */
async function twoDeliveryRuns(url: string): Promise<void> {
  const lastSuccess = async (): Promise<string | null> => {
    // The jobs' runs are told only to a bearer of METRICS_TOKEN.
    const res = await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const body = await res.json();
    const job = body.checks?.jobs?.jobs?.find((j: { name: string }) => j.name === "webhook-deliveries");
    return job?.last_success ?? null;
  };
  let seen = await lastSuccess();
  for (let run = 0; run < 2; run++) {
    const before = seen;
    seen = await until("a run of the delivery job", async () => {
      const now = await lastSuccess();
      return now !== null && now !== before ? now : undefined;
    }, 10_000);
  }
}

type Reachable = Pick<Service, "url">;

/** A project on `svc`; `call` acts as its admin client on `svc` (or on `on`, another service). */
async function projectOn(svc: Reachable) {
  const sys = await token(svc.url, "system-admin", ADMIN_SECRET);
  const res = await fetch(`${svc.url}/api/v1/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${sys}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "hooks" }),
  });
  const project = await res.json();
  const call = async (method: string, path: string, body?: unknown, on: Reachable = svc) => {
    const admin = await token(on.url, project.admin_client.client_id, project.admin_client.client_secret);
    const r = await fetch(`${on.url}/api/v1/projects/${project.id}${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };
  return { id: project.id as string, call };
}

async function token(url: string, id: string, secret: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: { authorization: basic(id, secret), "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
  return (await res.json()).access_token;
}

/** The project's API as its admin client on the shared service: asserts success; the JSON body, or null. */
function adminCall(p: TestProject) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await http(`/api/v1/projects/${p.project.id}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${p.token}`,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
}

test("webhooks: CRUD with the secret shown once; audit:read needed; bad URLs and event types refused", async () => {
  const p = await newProject();
  const call = (method: string, path: string, body?: unknown, tokenOf = p.token) =>
    http(`/api/v1/projects/${p.project.id}/webhooks${path}`, {
      method,
      headers: {
        authorization: `Bearer ${tokenOf}`,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
  const created = await call("POST", "", {
    url: "https://hooks.example.com/in",
    event_types: ["role.*", "user.deactivated"],
  });
  assert.equal(created.status, 201);
  const hook = await created.json();
  assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.deepEqual(hook.event_types, ["role.*", "user.deactivated"]);
  const got = await (await call("GET", `/${hook.id}`)).json();
  assert.equal(got.secret, undefined, "the secret is shown only once");
  const list = await (await call("GET", "")).json();
  assert.deepEqual(list.data.map((w: { id: string }) => w.id), [hook.id]);
  assert.ok(!JSON.stringify(list).includes(hook.secret));
  const put = await call("PUT", `/${hook.id}`, {
    url: "https://hooks.example.com/v2",
    event_types: ["*"],
    is_active: false,
  });
  assert.equal((await put.json()).is_active, false);
  const rotated = await (await call("POST", `/${hook.id}/secret`)).json();
  assert.notEqual(rotated.secret, hook.secret);
  for (
    const [body, field] of [
      [{ url: "http://hooks.example.com/in", event_types: ["*"] }, "url"],
      [{ url: "https://127.0.0.1/in", event_types: ["*"] }, "url"],
      [{ url: "https://10.1.2.3/in", event_types: ["*"] }, "url"],
      [{ url: "https://[::1]/in", event_types: ["*"] }, "url"],
      [{ url: "https://localhost/in", event_types: ["*"] }, "url"],
      [{ url: "https://169.254.169.254/latest/meta-data", event_types: ["*"] }, "url"],
      [{ url: "not a url", event_types: ["*"] }, "url"],
      [{ url: "https://hooks.example.com/in", event_types: ["role.nope"] }, "event_types.0"],
      [{ url: "https://hooks.example.com/in", event_types: [] }, "event_types"],
    ] as [unknown, string][]
  ) {
    const err = await expectError(await call("POST", "", body), 400, "invalid_params");
    assert.equal(err.details?.[0].field, field, JSON.stringify(body));
  }
  // Another project's webhook is not found; webhooks:create without audit:read is refused.
  const other = await newProject();
  await expectError(
    await call("GET", `/${hook.id}`, undefined, other.token),
    403,
    "insufficient_permission",
  );
  const otherHook = await http(`/api/v1/projects/${other.project.id}/webhooks/${hook.id}`, {
    headers: { authorization: `Bearer ${other.token}` },
  });
  await expectError(otherHook, 404, "webhook_not_found");
  const narrow = await clientWith(p, ["webhooks:create"]);
  await expectError(
    await call("POST", "", { url: "https://hooks.example.com/in", event_types: ["*"] }, narrow.token),
    403,
    "insufficient_permission",
  );
  assert.equal((await call("DELETE", `/${hook.id}`)).status, 204);
  await expectError(await call("GET", `/${hook.id}`), 404, "webhook_not_found");
  // Each change is in the trail, without the secret.
  const trail = await (await http(`/api/v1/projects/${p.project.id}/audit-events?type=webhook.*`, {
    headers: { authorization: `Bearer ${p.token}` },
  })).json();
  assert.deepEqual(trail.data.map((e: { type: string }) => e.type), [
    "webhook.deleted",
    "webhook.secret_rotated",
    "webhook.updated",
    "webhook.created",
  ]);
  assert.ok(!JSON.stringify(trail).includes("whsec_"));
});

test("the operations publishing x-also-needs refuse a caller with only their own permission, after finding the webhook", async () => {
  const doc = buildOpenApiDocument() as {
    paths: Record<
      string,
      Record<string, { operationId: string; "x-permission": string; "x-also-needs"?: string[] }>
    >;
  };
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).filter(([, op]) => op["x-also-needs"]).map(([method, op]) => ({
      path,
      method,
      op,
    }))
  );
  assert.ok(ops.length > 0);
  const p = await newProject();
  const body = JSON.stringify({ url: "https://hooks.example.com/in", event_types: ["*"] });
  let deliveryId = "";
  const call = (path: string, method: string, token: string, webhookId: string) =>
    http(
      path.replace("{project_id}", p.project.id).replace("{webhook_id}", webhookId)
        .replace("{delivery_id}", deliveryId),
      {
        method: method.toUpperCase(),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: method === "get" ? undefined : body,
      },
    );
  const hook = await (await call("/api/v1/projects/{project_id}/webhooks", "post", p.token, "")).json();
  await adminCall(p)("POST", "/roles", { code: "delivered", name: "Delivered" });
  const deliveries = await adminCall(p)("GET", `/webhooks/${hook.id}/deliveries`);
  deliveryId = deliveries.data[0].id;
  for (const { path, method, op } of ops) {
    const also = op["x-also-needs"]!;
    const narrow = await clientWith(p, [op["x-permission"]]);
    if (path.includes("{webhook_id}")) {
      // The webhook is looked up first: an unknown one is 404 whatever else the caller lacks.
      await expectError(await call(path, method, narrow.token, "no-such-id"), 404, "webhook_not_found");
    }
    const refused = await expectError(
      await call(path, method, narrow.token, hook.id),
      403,
      "insufficient_permission",
    );
    for (const code of also) assert.match(refused.error_description, new RegExp(code), op.operationId);
    const enough = await clientWith(p, [op["x-permission"], ...also]);
    const res = await call(path, method, enough.token, hook.id);
    assert.ok([200, 201].includes(res.status), `${op.operationId}: ${res.status} ${await res.text()}`);
  }
});

test("a webhook's deliveries name audit events: listing or retrying them without audit:read is refused", async () => {
  const p = await newProject();
  const admin = adminCall(p);
  const hook = await admin("POST", "/webhooks", {
    url: "https://hooks.example.com/in",
    event_types: ["role.*"],
  });
  await admin("POST", "/roles", { code: "watched", name: "Watched" });
  const [delivery] = (await admin("GET", `/webhooks/${hook.id}/deliveries`)).data;
  assert.equal(delivery.event_type, "role.created");
  const list = `/api/v1/projects/${p.project.id}/webhooks/${hook.id}/deliveries`;
  const retry = `${list}/${delivery.id}/retry`;
  const as = (token: string, path: string, method = "GET") =>
    http(path, { method, headers: { authorization: `Bearer ${token}` } });

  const webhooksOnly = await clientWith(p, ["webhooks:read", "webhooks:update"]);
  for (const [path, method] of [[list, "GET"], [retry, "POST"]]) {
    const refused = await expectError(
      await as(webhooksOnly.token, path, method),
      403,
      "insufficient_permission",
    );
    assert.match(refused.error_description, /audit:read/, `${method} ${path}`);
  }
  const { db } = await service();
  const trail = await db.sql`select 1 from audit_events
    where project_id = ${p.project.id} and type = 'webhook.delivery_retried'`;
  assert.equal(trail.length, 0, "a refused retry records nothing");

  const auditors = await clientWith(p, ["webhooks:read", "webhooks:update", "audit:read"]);
  const listed = await as(auditors.token, list);
  assert.equal(listed.status, 200);
  assert.deepEqual((await listed.json()).data.map((d: { id: string }) => d.id), [delivery.id]);
  const retried = await as(auditors.token, retry, "POST");
  assert.equal(retried.status, 200, await retried.clone().text());
  assert.equal((await retried.json()).id, delivery.id);
});

test("events are delivered signed per Standard Webhooks; a receiver that is down gets them when it is back", async () => {
  const db = await isolatedDatabase();
  const svc = await startWith({ ...db.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  let answer = 200;
  const rx = receiver(() => answer);
  try {
    const p = await projectOn(svc);
    const hook = (await p.call("POST", "/webhooks", { url: rx.url, event_types: ["role.*"] })).body;
    const role = (await p.call("POST", "/roles", { code: "clerk", name: "Clerk" })).body;
    await p.call("POST", "/clients", { name: "not subscribed" });
    const first = await until("the delivery", () => rx.got[0]);
    const event = new Verifier(hook.secret).verify(first.body, {
      "webhook-id": first.headers.get("webhook-id")!,
      "webhook-timestamp": first.headers.get("webhook-timestamp")!,
      "webhook-signature": first.headers.get("webhook-signature")!,
    }) as { id: string; type: string; target: { id: string } };
    assert.equal(event.type, "role.created");
    assert.equal(event.target.id, role.id);
    assert.equal(first.headers.get("webhook-id"), event.id);
    assert.equal(rx.got.length, 1, "only subscribed types");
    // Down: the attempt fails and is retried later.
    answer = 503;
    await p.call("PUT", `/roles/${role.id}`, { code: "clerk", name: "Senior clerk" });
    const failing = await until("a failed attempt", async () => {
      const list = (await p.call("GET", `/webhooks/${hook.id}/deliveries`)).body;
      const d = list.data.find((x: { event_type: string; last_status: number }) =>
        x.event_type === "role.updated" && x.last_status === 503
      );
      return d;
    });
    assert.equal(failing.status, "pending");
    assert.equal(failing.attempts, 1);
    assert.ok(failing.next_attempt_at);
    answer = 200;
    const retried = await p.call("POST", `/webhooks/${hook.id}/deliveries/${failing.id}/retry`);
    assert.equal(retried.status, 200);
    const second = await until("the retried delivery", () => rx.got[1]);
    assert.equal(JSON.parse(second.body).type, "role.updated");
    // Asking for the retry is an event of its own.
    const asked = (await p.call("GET", "/audit-events?type=webhook.delivery_retried")).body.data;
    assert.deepEqual(
      asked.map((
        e: { target: unknown; details: { webhook_id: string } },
      ) => [e.target, e.details.webhook_id]),
      [[{ type: "webhook_delivery", id: failing.id }, hook.id]],
    );
    const delivered = await until("delivered", async () => {
      const d = (await p.call("GET", `/webhooks/${hook.id}/deliveries?status=delivered`)).body;
      return d.data.length === 2 ? d.data : undefined;
    });
    assert.ok(delivered.every((d: { attempts: number; delivered_at: string }) => d.delivered_at));
  } finally {
    await rx.close();
    await svc.close();
    await db.drop();
  }
});

test("a delivery survives the service stopping between commit and delivery, and a worker that died mid-send", async () => {
  const db = await isolatedDatabase();
  const env = { ...db.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" };
  let svc = await startWith(env);
  let up = false;
  const rx = receiver(() => up ? 200 : 503);
  try {
    const p = await projectOn(svc);
    const hook = (await p.call("POST", "/webhooks", { url: rx.url, event_types: ["client.*"] })).body;
    await p.call("POST", "/clients", { name: "one" });
    await p.call("POST", "/clients", { name: "two" });
    await svc.close();
    // While the service was down: one delivery left claimed by a worker that never finished.
    const check = await startWith({ ...env, LOG_LEVEL: "error" });
    await check.db
      .sql`update webhook_deliveries set status = 'sending', locked_until = now() - interval '1 second',
      next_attempt_at = now() where id = (select id from webhook_deliveries order by created_at limit 1)`;
    await check.db.sql`update webhook_deliveries set next_attempt_at = now() where status = 'pending'`;
    up = true;
    svc = check;
    await until("both deliveries", () => rx.got.length >= 2 ? true : undefined);
    assert.deepEqual(rx.got.map((r) => JSON.parse(r.body).type).sort(), ["client.created", "client.created"]);
    assert.equal(new Set(rx.got.map((r) => r.headers.get("webhook-id"))).size, 2);
    assert.ok(hook.id);
  } finally {
    await rx.close();
    await svc.close().catch(() => {});
    await db.drop();
  }
});

test(
  "two instances deliver each event once (PostgreSQL: the embedded database serves one process)",
  async () => {
    const db = await isolatedDatabase();
    const env = { ...db.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", METRICS_TOKEN };
    const a = await startWith(env);
    const b = await startWith(env);
    const rx = receiver();
    try {
      const p = await projectOn(a);
      await p.call("POST", "/webhooks", { url: rx.url, event_types: ["role.created"] });
      for (let i = 0; i < 20; i++) await p.call("POST", "/roles", { code: `r${i}`, name: `R${i}` });
      await until("20 deliveries", () => rx.got.length >= 20 ? true : undefined);
      await Promise.all([twoDeliveryRuns(a.url), twoDeliveryRuns(b.url)]); // any duplicate would be here now
      const ids = rx.got.map((r) => r.headers.get("webhook-id"));
      assert.equal(ids.length, 20);
      assert.equal(new Set(ids).size, 20);
    } finally {
      await rx.close();
      await b.close();
      await a.close();
      await db.drop();
    }
  },
  { ignore: !DATABASE_URL },
);

test("no server-side request forgery: private, loopback, link-local and metadata targets are refused", async () => {
  for (
    const a of [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
    ]
  ) {
    assert.ok(privateAddress(a), a);
  }
  for (
    const a of [
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "::ffff:10.0.0.1",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b::808:808", // NAT64 of a public address: the gateway decides where it goes
      "64:ff9b:1::a00:1", // local-use NAT64
      "2001::1", // Teredo
      "2001:0:4136:e378:8000:63bf:3fff:fdd2",
      "2002:a00:1::",
    ]
  ) {
    assert.ok(privateAddress(a), a);
  }
  for (const a of ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "2001:4860:4860::8888"]) {
    assert.ok(!privateAddress(a), a);
  }
  await assert.rejects(resolveTarget("localhost", false), /private/);
  // At delivery time: a webhook made while private targets were allowed is refused once they are not, even by a
  // host name that only its lookup shows to be loopback.
  const host = Deno.hostname();
  const loopbackName = (await resolveTarget(host, true).catch(() => [])).every((x) =>
    privateAddress(x.address)
  );
  const db = await isolatedDatabase();
  let svc = await startWith({ ...db.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  const rx = receiver();
  try {
    const p = await projectOn(svc);
    const port = new URL(rx.url).port;
    await p.call("POST", "/webhooks", { url: rx.url, event_types: ["role.*"] });
    await svc.close();
    svc = await startWith(db.env);
    await svc.db.sql`update webhooks set url = ${`https://${
      loopbackName ? host : "127.0.0.1"
    }:${port}/hooks`}`;
    assert.equal((await p.call("POST", "/roles", { code: "x", name: "X" }, svc)).status, 201);
    const sql = svc.db.sql;
    const [row] = await until("the refused delivery", async () => {
      const rows = await sql`select status, last_error from webhook_deliveries where status = 'failed'`;
      return rows.length ? rows : undefined;
    });
    assert.match(row.last_error, /target refused/);
    assert.equal(rx.got.length, 0, "nothing reached the receiver");
  } finally {
    await rx.close();
    await svc.close();
    await db.drop();
  }
});

test("POST /webhooks refuses every URL whose host is not a global unicast address, IPv6 forms embedding IPv4 among them", async () => {
  const p = await newProject();
  const hosts = [
    "[::127.0.0.1]", // written ::7f00:1 by the URL parser: IPv4-compatible loopback
    "[::7f00:1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:0:127.0.0.1]", // IPv4-translated
    "[::ffff:0:a9fe:a9fe]", // ::ffff:0:169.254.169.254
    "[::a00:1]", // ::10.0.0.1
    "[::]",
    "[64:ff9b::a9fe:a9fe]",
    "[100::1]",
    "[fec0::1]",
    "[fd00::1]",
    "[fe80::1]",
    "[ff02::1]",
    "[2001:db8::1]",
    "[2001::1]",
    "[2002:7f00:1::]",
    "0x7f.1", // 127.0.0.1 once the URL parser has read it
    "2130706433",
    "0.0.0.0",
    "192.0.2.1",
    "198.18.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "100.64.0.1",
    "localhost.",
    "api.localhost",
  ];
  for (const host of hosts) {
    const res = await http(`/api/v1/projects/${p.project.id}/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: `https://${host}/in`, event_types: ["*"] }),
    });
    const err = await expectError(res, 400, "invalid_params");
    assert.equal(err.details?.[0].field, "url", host);
    assert.match(err.details?.[0].issue ?? "", /global unicast/, host);
  }
  // At delivery, a literal is checked again, and so is every address a name resolves to.
  for (const literal of ["::7f00:1", "[::ffff:0:7f00:1]", "64:ff9b::808:808", "2001:db8::1"]) {
    await assert.rejects(resolveTarget(literal, false), /not global unicast/, literal);
  }
  assert.deepEqual(await resolveTarget("[2606:4700::1111]", false), [{
    address: "2606:4700::1111",
    family: 6,
  }]);
});

test("a webhook URL's query and fragment never reach the trail: the URL is recorded without them", async () => {
  const p = await newProject();
  const call = adminCall(p);
  const hook = await call("POST", "/webhooks", {
    url: "https://hooks.example.com/in?token=first-s3cret",
    event_types: ["role.*"],
  });
  // Only the query changed: "changed". The path changed: before and after, without the query.
  await call("PUT", `/webhooks/${hook.id}`, {
    url: "https://hooks.example.com/in?token=second-s3cret",
    event_types: ["role.*"],
  });
  await call("PUT", `/webhooks/${hook.id}`, {
    url: "https://hooks.example.com/v2?token=third-s3cret",
    event_types: ["role.*"],
  });
  await call("DELETE", `/webhooks/${hook.id}`);
  const trail = (await call("GET", "/audit-events?type=webhook.*")).data as {
    type: string;
    changes: Record<string, unknown> | null;
    details: Record<string, unknown> | null;
  }[];
  assert.deepEqual(trail.map((e) => [e.type, e.changes?.url ?? e.details?.url ?? null]), [
    ["webhook.deleted", "https://hooks.example.com/v2"],
    ["webhook.updated", { before: "https://hooks.example.com/in", after: "https://hooks.example.com/v2" }],
    ["webhook.updated", "changed"],
    ["webhook.created", null],
  ]);
  assert.ok(!JSON.stringify(trail).includes("s3cret"));
  // A refused URL is not echoed back either.
  const refused = await http(`/api/v1/projects/${p.project.id}/webhooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "http://hooks.example.com/in?token=fourth-s3cret", event_types: ["*"] }),
  });
  assert.equal(refused.status, 400);
  assert.ok(!(await refused.text()).includes("s3cret"));
});

test("a failing receiver gets the delivery retried automatically, each wait longer than the one before", async () => {
  const db = await isolatedDatabase();
  // The schedule scaled down (first retry after 0.5 s instead of 5 s), with its shape and jitter kept.
  const svc = await startWith({
    ...db.env,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_BASE_SECONDS: "0.5",
    METRICS_TOKEN,
  });
  let requests = 0;
  const rx = receiver(() => ++requests <= 2 ? 503 : 200);
  try {
    const p = await projectOn(svc);
    const hook = (await p.call("POST", "/webhooks", { url: rx.url, event_types: ["role.created"] })).body;
    await p.call("POST", "/roles", { code: "clerk", name: "Clerk" });
    await until("the third attempt", () => rx.got[0], 20_000);
    const [first, second, third] = rx.times;
    // 0.5 s then 3 s (each ± a fifth), picked up by a worker that looks once a second.
    assert.ok(second - first < 2_000, `first wait ${second - first} ms`);
    assert.ok(third - second > 2_000, `second wait ${third - second} ms`);
    assert.ok(third - second > second - first, "the wait grows");
    const [delivery] = await until("delivered", async () => {
      const d = (await p.call("GET", `/webhooks/${hook.id}/deliveries`)).body.data;
      return d[0]?.status === "delivered" ? d : undefined;
    });
    assert.equal(delivery.attempts, 3);
    assert.equal(delivery.last_status, 200);
    await twoDeliveryRuns(svc.url);
    assert.equal(rx.times.length, 3, "nothing more once delivered");
  } finally {
    await rx.close();
    await svc.close();
    await db.drop();
  }
});

test("an outcome is recorded only while its worker still holds the claim (not after another claimed it again)", async () => {
  const p = await newProject();
  const { db } = await service();
  const hookId = crypto.randomUUID();
  const eventId = crypto.randomUUID();
  const id = crypto.randomUUID();
  // Never due, so that no worker of the shared service takes it: claimed twice, attempts 1 then 2.
  // The event before the webhook, so that it has no delivery of its own (audit_events__fan_out).
  await db.sql`insert into audit_events (project_id, id, occurred_at, type, actor_type)
    values (${p.project.id}, ${eventId}, now(), 'role.created', 'system')`;
  await db.sql`insert into webhooks (project_id, id, url, event_types, is_active, secret)
    values (${p.project.id}, ${hookId}, 'https://hooks.example.com/in', ${["*"]}, true, 'whsec_x')`;
  await db.sql`insert into webhook_deliveries (project_id, id, webhook_id, event_id, status, attempts,
      next_attempt_at, locked_until)
    values (${p.project.id}, ${id}, ${hookId}, ${eventId}, 'sending', 2, now() + interval '1 day',
      now() + interval '1 day')`;
  const row = async () =>
    (await db.sql`select status, attempts, last_status from webhook_deliveries where id = ${id}`)[0];
  await markDelivered(db.sql, { id, attempts: 1 }, 200);
  await markAttemptFailed(db.sql, { id, attempts: 1 }, { status: 500, error: "late", retryInSeconds: 5 });
  assert.deepEqual({ ...(await row()) }, { status: "sending", attempts: 2, last_status: null });
  await markDelivered(db.sql, { id, attempts: 2 }, 204);
  assert.deepEqual({ ...(await row()) }, { status: "delivered", attempts: 2, last_status: 204 });
});

test("SIGKILL between commit and delivery: a new process on the same database delivers the event exactly once", async () => {
  const db = await isolatedDatabase();
  // The receiver's port, with nothing listening yet: the killed process cannot have delivered.
  const port = freePort();
  const env = {
    ...db.env,
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_BASE_SECONDS: "1",
    METRICS_TOKEN,
  };
  let proc = await spawn(env);
  let rx: ReturnType<typeof receiver> | undefined;
  try {
    const p = await projectOn(proc);
    const hook = (await p.call("POST", "/webhooks", {
      url: `http://127.0.0.1:${port}/hooks`,
      event_types: ["role.created"],
    })).body;
    const role = (await p.call("POST", "/roles", { code: "clerk", name: "Clerk" })).body;
    proc.child.kill("SIGKILL");
    assert.equal((await proc.exited).signal, "SIGKILL");
    rx = receiver(() => 200, port);
    proc = await spawn(env);
    const got = await until("the delivery", () => rx!.got[0], 30_000);
    const event = new Verifier(hook.secret).verify(got.body, {
      "webhook-id": got.headers.get("webhook-id")!,
      "webhook-timestamp": got.headers.get("webhook-timestamp")!,
      "webhook-signature": got.headers.get("webhook-signature")!,
    }) as { type: string; target: { id: string } };
    assert.deepEqual([event.type, event.target.id], ["role.created", role.id]);
    await twoDeliveryRuns(proc.url); // any duplicate would be here now
    assert.equal(rx.got.length, 1, "exactly once");
    const deliveries = (await p.call("GET", `/webhooks/${hook.id}/deliveries`, undefined, proc)).body.data;
    assert.deepEqual(deliveries.map((d: { status: string }) => d.status), ["delivered"]);
  } finally {
    await rx?.close();
    await proc.stop();
    await db.drop();
  }
});

test("an event gets deliveries only while its project has an active webhook, and one written without fans_out (an earlier version's) fans out", async () => {
  const p = await newProject();
  const { db } = await service();
  const call = adminCall(p);
  /** The deliveries of the event that created the role with this code, by webhook. */
  const deliveriesOf = async (roleId: string) =>
    (await db.sql<{ webhook_id: string }[]>`
      select d.webhook_id from webhook_deliveries d join audit_events a on a.id = d.event_id
      where a.project_id = ${p.project.id} and a.type = 'role.created' and a.target_id = ${roleId}`)
      .map((r) => r.webhook_id);
  const role = async (code: string) => (await call("POST", "/roles", { code, name: code })).id as string;

  assert.deepEqual(await deliveriesOf(await role("before-any-webhook")), []);
  // Unreachable on purpose: only whether a delivery is written counts here, not its sending.
  const hook = await call("POST", "/webhooks", {
    url: "https://hooks.example.invalid/in",
    event_types: ["role.*"],
  });
  const other = await call("POST", "/webhooks", {
    url: "https://hooks.example.invalid/b",
    event_types: ["user.*"],
  });
  assert.deepEqual(await deliveriesOf(await role("while-active")), [hook.id], "only the subscribed webhook");
  await call("PUT", `/webhooks/${hook.id}`, {
    url: hook.url,
    event_types: hook.event_types,
    is_active: false,
  });
  assert.deepEqual(
    await deliveriesOf(await role("while-inactive")),
    [],
    "the other webhook is active, not subscribed",
  );
  await call("PUT", `/webhooks/${other.id}`, {
    url: other.url,
    event_types: other.event_types,
    is_active: false,
  });
  assert.deepEqual(await deliveriesOf(await role("none-active")), []);
  await call("PUT", `/webhooks/${hook.id}`, {
    url: hook.url,
    event_types: hook.event_types,
    is_active: true,
  });
  assert.deepEqual(await deliveriesOf(await role("active-again")), [hook.id]);

  // An instance of the version before migration 0010 writes no fans_out: the column's default fans it out.
  const eventId = crypto.randomUUID();
  await db
    .sql`insert into audit_events (project_id, id, occurred_at, type, actor_type, target_type, target_id)
    values (${p.project.id}, ${eventId}, now(), 'role.created', 'system', 'role', 'written-by-an-older-version')`;
  assert.deepEqual(await deliveriesOf("written-by-an-older-version"), [hook.id]);
});

test("webhooks get client_auth.failed, and a failed sign-in of an unknown account without what was typed", async () => {
  const db = await isolatedDatabase();
  const svc = await startWith({ ...db.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  const rx = receiver();
  try {
    const p = await projectOn(svc);
    const redirect = "http://127.0.0.1:9/callback";
    const project = (await p.call("GET", "")).body;
    await p.call("PUT", "", { name: project.name, redirect_uris: [redirect] });
    const client = (await p.call("POST", "/clients", { name: "worker" })).body;
    await p.call("POST", "/webhooks", { url: rx.url, event_types: ["login.*", "client_auth.*"] });
    // A wrong client secret.
    const wrongSecret = `wrong-${crypto.randomUUID()}`;
    const refused = await fetch(`${svc.url}/api/v1/tokens`, {
      method: "POST",
      headers: {
        authorization: basic(client.id, wrongSecret),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
    // A password typed into the email field of the login form, for no account.
    const typed = `Tr0ub4dor-${crypto.randomUUID()}`;
    const query = new URLSearchParams({
      client_id: client.id,
      redirect_uri: redirect,
      response_type: "code",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
    });
    const page = await fetch(`${svc.url}/authorize?${query}`);
    const html = await page.text();
    const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
    const login = await fetch(`${svc.url}/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: (page.headers.get("set-cookie") ?? "").split(";")[0],
      },
      body: new URLSearchParams({
        request_id: field("request_id"),
        csrf: field("csrf"),
        email: typed,
        password: "anything",
      }).toString(),
    });
    assert.equal(login.status, 400, await login.text());
    await until("both deliveries", () => rx.got.length >= 2 ? true : undefined);
    const bodies = rx.got.map((r) => JSON.parse(r.body)).sort((a, b) => a.type.localeCompare(b.type));
    assert.deepEqual(bodies.map((e) => [e.type, e.details]), [
      ["client_auth.failed", { client_id: client.id, endpoint: "token", reason: "wrong_secret" }],
      ["login.failed", { client_id: client.id, reason: "unknown_email" }],
    ]);
    for (const r of rx.got) {
      assert.ok(!r.body.includes(wrongSecret) && !r.body.toLowerCase().includes(typed.toLowerCase()));
    }
  } finally {
    await rx.close();
    await svc.close();
    await db.drop();
  }
});
