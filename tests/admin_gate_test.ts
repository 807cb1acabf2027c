/**
 * One table for every administrative operation, read from the OpenAPI document: each refuses a missing token,
 * a bad token, another project's token and a token without its permission, and answers an unknown project
 * with 404; a token holding exactly the operation's permission gets past the gate.
 */
import assert from "node:assert/strict";
import { buildOpenApiDocument } from "../routes/document.ts";
import { clientWith, expectError, http, newProject, test } from "./helpers.ts";

type Op = { method: string; path: string; operationId: string; permission: string };
type DocOp = { operationId: string; security?: Record<string, unknown>[]; "x-permission"?: string | null };

/** Every operation behind the bearer gate must state its permission (`x-permission`, null for "a live token"). */
function guardedOperations(): (Omit<Op, "permission"> & { permission: string | null })[] {
  const doc = buildOpenApiDocument() as { paths: Record<string, Record<string, DocOp>> };
  const ops = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!op.security?.some((s) => "bearerAuth" in s)) continue;
      assert.ok("x-permission" in op, `${op.operationId} states its permission (x-permission)`);
      ops.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        permission: op["x-permission"]!,
      });
    }
  }
  return ops;
}

/** The project-scoped administrative operations and the permission each needs. */
function adminOperations(): Op[] {
  return guardedOperations().filter((op): op is Op =>
    op.path.startsWith("/api/v1/projects/{project_id}/") && op.permission !== null
  );
}

test("every operation behind the bearer gate states its permission in the OpenAPI document", () => {
  const ops = guardedOperations();
  for (const op of ops) {
    if (op.permission !== null) assert.match(op.permission, /^[a-z]+:[a-z]+$/, op.operationId);
  }
  assert.deepEqual(
    ops.filter((o) => o.permission === null).map((o) => o.operationId).sort(),
    ["getCurrentUser", "updateCurrentUser"],
    "only the current user's operations need no permission",
  );
});

function request(op: Op, projectId: string, token?: string): Promise<Response> {
  const path = op.path.replace("{project_id}", projectId).replace(/\{[a-z_]+\}/g, "no-such-id");
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const hasBody = op.method === "POST" || op.method === "PUT";
  if (hasBody) headers["content-type"] = "application/json";
  return http(path, { method: op.method, headers, body: hasBody ? "{}" : undefined });
}

test("every administrative operation refuses a missing, bad, foreign or unpermitted token", async () => {
  const ops = adminOperations();
  assert.equal(ops.length, 23, ops.map((o) => o.operationId).join(", "));
  const p = await newProject();
  const other = await newProject();
  const powerless = await clientWith(p, []);
  for (const op of ops) {
    const name = `${op.operationId} (${op.method} ${op.path})`;
    const missing = await expectError(await request(op, p.project.id), 401, "invalid_authorization_token");
    assert.ok(missing.headers.get("www-authenticate"), name);
    await expectError(await request(op, p.project.id, "bad.token.here"), 401, "invalid_authorization_token");
    await expectError(await request(op, p.project.id, other.token), 403, "insufficient_permission");
    const denied = await expectError(
      await request(op, p.project.id, powerless.token),
      403,
      "insufficient_permission",
    );
    assert.match(denied.error_description, new RegExp(op.permission), name);
    await expectError(await request(op, "no-such-project", p.token), 404, "project_not_found");
  }
});

test("a token holding exactly an operation's permission gets past the gate", async () => {
  const p = await newProject();
  for (const op of adminOperations()) {
    const c = await clientWith(p, [op.permission]);
    const res = await request(op, p.project.id, c.token);
    const body = await res.text();
    // Past the gate the fake ids and empty bodies answer 200, 400 or a "no such record" 404, never 401/403.
    assert.ok([200, 400, 404].includes(res.status), `${op.operationId}: ${res.status} ${body}`);
    if (res.status === 404) {
      assert.match(
        JSON.parse(body).error,
        /^(resource|role|user|client|webhook|webhook_delivery)_not_found$/,
        op.operationId,
      );
    }
  }
});
