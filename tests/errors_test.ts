/** One error model on every endpoint: unknown paths, malformed bodies, size limits, database failure. */
import assert from "node:assert/strict";
import { CONSTRAINT_ERRORS, FOREIGN_KEY_ERRORS } from "../domain/shared/errors.ts";
import {
  ADMIN_SECRET,
  baseUrl,
  basic,
  expectError,
  expectOAuthError,
  http,
  newProject,
  postToken,
  service,
  startTestService,
  systemToken,
  test,
} from "./helpers.ts";

test("an unknown path or method answers 404 not_found in the error shape", async () => {
  const err = await expectError(await http("/api/v1/nothing-here"), 404, "not_found");
  assert.match(err.error_description, /GET \/api\/v1\/nothing-here/);
  await expectError(await http("/api/v1/projects", { method: "DELETE" }), 404, "not_found");
});

test("malformed, mistyped or oversized JSON bodies answer invalid_params, never 500", async () => {
  const p = await newProject();
  const path = `/api/v1/projects/${p.project.id}`;
  const send = (body: string, contentType = "application/json") =>
    http(path, {
      method: "PUT",
      headers: { authorization: `Bearer ${p.token}`, "content-type": contentType },
      body,
    });
  for (const body of ["{", "not json", "[]", "null", '"text"', '{"name": }']) {
    await expectError(await send(body), 400, "invalid_params");
  }
  const typed = await expectError(
    await send(JSON.stringify({ name: ["x"], is_active: "true" })),
    400,
    "invalid_params",
  );
  assert.deepEqual(typed.details?.map((d) => d.field).sort(), ["is_active", "name"]);
  const wrongType = await expectError(
    await send(JSON.stringify({ name: "x" }), "text/plain"),
    400,
    "invalid_params",
  );
  assert.deepEqual(wrongType.details, [{ field: "Content-Type", issue: "must be application/json" }]);
  await expectError(await send("name=x", "application/x-www-form-urlencoded"), 400, "invalid_params");
  const huge = await expectError(
    await send(JSON.stringify({ name: "x", description: "y".repeat(1024 * 1024) })),
    413,
    "invalid_params",
  );
  assert.match(huge.error_description, /1 MiB/);
  // Sent in chunks, without a Content-Length: the limit counts the bytes as they come.
  const chunked = (text: string) =>
    http(path, {
      method: "PUT",
      headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
      body: ReadableStream.from([new TextEncoder().encode(text)]),
    });
  const streamed = await expectError(
    await chunked(JSON.stringify({ description: "y".repeat(1024 * 1024) })),
    413,
    "invalid_params",
  );
  assert.match(streamed.error_description, /1 MiB/);
  // Nothing changed.
  assert.equal((await p.api.projects.getProject(p.project.id)).name, p.project.name);
  const small = await chunked(JSON.stringify({ name: "streamed" }));
  assert.equal(small.status, 200);
  assert.equal((await small.json()).name, "streamed");
});

test("the database's unique constraints carry the names the error model maps to 409 codes", async () => {
  // Resource codes are unique per project, case-insensitively: the database decides, so a race cannot
  // slip through, and the constraint's name picks the error code.
  const p = await newProject();
  const { db } = await service();
  const insert = (code: string) =>
    db.sql`insert into resources (project_id, id, name, code) values (${p.project.id}, ${crypto.randomUUID()}, 'x', ${code})`;
  await insert("orders");
  await assert.rejects(insert("ORDERS"), (err: { constraint_name?: string }) => {
    assert.equal(CONSTRAINT_ERRORS[err.constraint_name!], "resource_code_already_used");
    return true;
  });
  const [{ names }] = await db.sql<{ names: string[] }[]>`
    select array_agg(indexname::text order by indexname) as names from pg_indexes
    where indexname = any(${Object.keys(CONSTRAINT_ERRORS)})`;
  assert.deepEqual(names, Object.keys(CONSTRAINT_ERRORS).sort());
  const [{ fks }] = await db.sql<{ fks: string[] }[]>`
    select array_agg(distinct conname::text order by conname::text) as fks from pg_constraint
    where contype = 'f' and conname = any(${Object.keys(FOREIGN_KEY_ERRORS)})`;
  assert.deepEqual(fks, Object.keys(FOREIGN_KEY_ERRORS).sort());
});

test("every response carries X-Request-Id; API responses carry Cache-Control: no-store", async () => {
  const res = await http("/api/v1/projects", { headers: { "x-request-id": "trace-123" } });
  assert.equal(res.headers.get("x-request-id"), "trace-123");
  assert.equal(res.headers.get("cache-control"), "no-store");
  await res.body?.cancel();
  const other = await http("/healthz", { headers: { "x-request-id": "bad id with spaces" } });
  assert.match(other.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  assert.deepEqual(await other.json(), { status: "ok" });
});

test("with its database gone the service fails closed: 503 system_error, never allowed or invalid", async () => {
  // A service of its own, whose database connection this test ends.
  const svc = await startTestService();
  const token = await (await fetch(`${svc.url}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: basic("system-admin", ADMIN_SECRET),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  })).json();
  assert.equal((await fetch(`${svc.url}/readyz`)).status, 200);
  // One verified request first, so that the signing key is cached and only the gate's query can fail.
  const warm = await fetch(`${svc.url}/api/v1/projects/system`, {
    headers: { authorization: `Bearer ${token.access_token}` },
  });
  assert.equal(warm.status, 200);
  await warm.body?.cancel();
  await svc.db.sql.end({ timeout: 1 });
  try {
    for (
      const [path, init] of [
        ["/readyz", {}],
        ["/api/v1/projects/system", { headers: { authorization: `Bearer ${token.access_token}` } }],
        ["/api/v1/tokens", {
          method: "POST",
          headers: {
            authorization: basic("system-admin", ADMIN_SECRET),
            "content-type": "application/x-www-form-urlencoded",
          },
          body: "grant_type=client_credentials",
        }],
      ] as [string, RequestInit][]
    ) {
      const res = await fetch(`${svc.url}${path}`, init);
      // The token endpoint says it the OAuth way (RFC 6749 §4.1.2.1's code), with the service's code beside.
      const err = path === "/api/v1/tokens"
        ? await expectOAuthError(res, 503, "temporarily_unavailable", "system_error")
        : await expectError(res, 503, "system_error");
      assert.doesNotMatch(err.error_description, /select|postgres|stack/i, path);
      assert.equal(err.headers.get("retry-after"), "1", path);
    }
  } finally {
    await svc.close().catch(() => {});
  }
});

/** The status of a request sent as raw bytes (fetch sends no body with GET or HEAD), its body written alongside. */
async function rawStatus(head: string, body: Uint8Array): Promise<number> {
  const url = new URL(await baseUrl());
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  try {
    const writing = (async () => {
      await conn.write(new TextEncoder().encode(head));
      for (let at = 0; at < body.length;) at += await conn.write(body.subarray(at));
    })().catch(() => {}); // the server may answer and close before it has read the body
    const reader = conn.readable.getReader();
    let text = "";
    while (!text.includes("\r\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    await writing;
    return Number(text.split(" ")[1]);
  } finally {
    try {
      conn.close();
    } catch { /* closed */ }
  }
}

test("a GET or HEAD is answered as without its body, whatever the body's declared length", async () => {
  const big = new Uint8Array(70_000).fill(0x61);
  const head = (method: string, path: string) =>
    `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${big.length}\r\nConnection: close\r\n\r\n`;
  // Over the form endpoints' 64 KiB, at the token endpoint's path: no GET route there.
  assert.equal(await rawStatus(head("GET", "/api/v1/tokens"), big), 404);
  assert.equal(await rawStatus(head("HEAD", "/api/v1/projects"), big), 401);
});

test("POST /api/v1/tokens with an oversized body answers 413 invalid_request / invalid_params", async () => {
  const res = await postToken(`grant_type=client_credentials&state=${"x".repeat(1024 * 1024)}`);
  await expectOAuthError(res, 413, "invalid_request", "invalid_params");
});

test("a form body over 64 KiB answers 413 and one with more than 64 fields 400, invalid_params both", async () => {
  const big = await postToken(`grant_type=client_credentials&state=${"x".repeat(65 * 1024)}`);
  await expectOAuthError(big, 413, "invalid_request", "invalid_params");
  const many = await postToken(`grant_type=client_credentials${"&a".repeat(64)}`);
  const tooMany = await expectOAuthError(many, 400, "invalid_request", "invalid_params");
  assert.match(tooMany.error_description, /at most 64 fields/);
  // 64 fields pass the parse: this one is refused later, for its missing client authentication.
  const sixtyFour = await postToken(`grant_type=client_credentials${"&a".repeat(63)}`);
  assert.doesNotMatch((await sixtyFour.json()).error_description ?? "", /at most 64 fields/);
});

test("odd Content-Type values answer invalid_params, never 500", async () => {
  const p = await newProject();
  const put = (contentType: string, body = JSON.stringify({ name: "x" })) =>
    http(`/api/v1/projects/${p.project.id}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${p.token}`, "content-type": contentType },
      body,
    });
  for (
    const ct of [
      "application/json ; charset=utf-8",
      "application/json; charset=utf-8;",
      "application/json; charset",
      "application/jsonx",
      "text/plain",
    ]
  ) {
    await expectError(await put(ct), 400, "invalid_params");
  }
  await expectError(await put("text/plain", ""), 400, "invalid_params");
  assert.equal((await put("application/json; charset=utf-8")).status, 200);
  for (
    const ct of [
      "application/x-www-form-urlencoded;",
      "application/x-www-form-urlencoded ; charset=utf-8",
      "multipart/form-data",
    ]
  ) {
    await expectOAuthError(
      await postToken("grant_type=client_credentials", {
        authorization: basic(p.clientId, p.secret),
        "content-type": ct,
      }),
      400,
      "invalid_request",
      "invalid_params",
    );
  }
});

test("NUL bytes and other values the database cannot store answer 4xx, never 500", async () => {
  const p = await newProject();
  const admin = `Bearer ${await systemToken()}`;
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: `Basic ${btoa("%00:x")}` }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  await expectOAuthError(
    await postToken({ grant_type: "client_credentials" }, { authorization: `Basic ${btoa("a\u0000b:x")}` }),
    401,
    "invalid_client",
    "invalid_client_credentials",
  );
  const b64 = (o: unknown) =>
    btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  for (const kid of ["\u0000", true, 5, "x".repeat(43) + "'"]) {
    const token = `${b64({ alg: "EdDSA", typ: "at+jwt", kid })}.${b64({ sub: "x" })}.c2ln`;
    await expectError(
      await http("/api/v1/projects/system", { headers: { authorization: `Bearer ${token}` } }),
      401,
      "invalid_authorization_token",
    );
  }
  // A path project id no project can have is refused before any statement.
  await expectError(
    await http("/api/v1/projects/%00", { headers: { authorization: admin } }),
    400,
    "invalid_params",
  );
  await expectError(
    await http(`/api/v1/projects/${"x".repeat(101)}/roles`, { headers: { authorization: admin } }),
    400,
    "invalid_params",
  );
  await expectError(
    await http("/api/v1/projects/a%7Fb/roles", { headers: { authorization: admin } }),
    400,
    "invalid_params",
  );
  await expectError(
    await http("/api/v1/projects?search=%00", { headers: { authorization: admin } }),
    400,
    "invalid_params",
  );
  await expectError(
    await http("/api/v1/projects", {
      method: "POST",
      headers: { authorization: admin, "content-type": "application/json" },
      body: JSON.stringify({ name: "a\u0000b" }),
    }),
    400,
    "invalid_params",
  );
  await expectError(
    await http(`/api/v1/projects/${p.project.id}/clients/%00/secret`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.token}` },
    }),
    400,
    "invalid_params",
  );
});

test("page numbers are plain digits: hex, exponents, signs and spaces are refused", async () => {
  const headers = { authorization: `Bearer ${await systemToken()}` };
  for (
    const q of [
      "page_num=0x2",
      "page_num=1e3",
      "page_num=%205",
      "page_num=-1",
      "page_size=+5",
      "page_size=10.0",
    ]
  ) {
    await expectError(await http(`/api/v1/projects?${q}`, { headers }), 400, "invalid_params");
  }
});

test("with its database gone before any key is cached, the gate and introspection answer 503 too", async () => {
  const svc = await startTestService();
  const auth = basic("system-admin", ADMIN_SECRET);
  // A token signed by another instance: this one knows only the key it signs with (none yet), so the token's
  // key must be loaded from the database.
  const token = { access_token: await systemToken() };
  await svc.db.sql.end({ timeout: 1 });
  try {
    await expectError(
      await fetch(`${svc.url}/api/v1/projects/system`, {
        headers: { authorization: `Bearer ${token.access_token}` },
      }),
      503,
      "system_error",
    );
    await expectOAuthError(
      await fetch(`${svc.url}/api/v1/tokens/introspect`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token: token.access_token }).toString(),
      }),
      503,
      "temporarily_unavailable",
      "system_error",
    );
  } finally {
    await svc.close().catch(() => {});
  }
});
