/**
 * One table for every operation behind the bearer gate, read from the OpenAPI document (`x-permission` and
 * `x-permission-scope`): each refuses a missing or bad token; by its scope, it refuses another project's token,
 * a token without its permission and an unknown project; and a token holding exactly its permission gets past
 * the gate. Every other operation is on an explicit list of public ones.
 */
import assert from "node:assert/strict";
import { buildOpenApiDocument } from "../routes/document.ts";
import {
  clientWith,
  expectError,
  http,
  newProject,
  sdk,
  systemToken,
  test,
  type TestProject,
} from "./helpers.ts";

type Scope = "token" | "system" | "own" | "own-or-system" | "audience";
type Op = { method: string; path: string; operationId: string; permission: string | null; scope: Scope };
type DocOp = {
  operationId: string;
  security?: Record<string, unknown>[];
  "x-permission"?: string | null;
  "x-permission-scope"?: Scope;
  "x-also-needs"?: string[];
};

/** The operations anyone may call; any other operation must be behind the gate. */
const PUBLIC_OPERATIONS = [
  "acceptInvitation",
  "authorize",
  "authorizeDevice",
  "deviceCallback",
  "exchangeCredentials",
  "federatedLoginCallback",
  "getAuthorizationServerMetadata",
  "getAuthzenConfiguration",
  "getHealth",
  "getJwks",
  "getOpenIdConfiguration",
  "getProjectLogo",
  "getProtectedResourceMetadata",
  "getReadiness",
  "getUserInfo",
  "introspectToken",
  "invitationPage",
  "logout",
  "postUserInfo",
  "revokeToken",
  "showConsent",
  "showDevicePage",
  "signup",
  "startFederatedLogin",
  "submitConsent",
  "submitDeviceCode",
  "submitDeviceDecision",
  "submitLogin",
  "submitLogout",
  "submitSecondFactor",
  "submitSignup",
];

function documentOperations(): (DocOp & { method: string; path: string })[] {
  const doc = buildOpenApiDocument() as { paths: Record<string, Record<string, DocOp>> };
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ ...op, method: method.toUpperCase(), path }))
  );
}

/** Every operation that states its permission (`x-permission`, null for "a live token") and its scope. */
function guardedOperations(): Op[] {
  return documentOperations().filter((op) => "x-permission" in op).map((op) => ({
    method: op.method,
    path: op.path,
    operationId: op.operationId,
    permission: op["x-permission"]!,
    scope: op["x-permission-scope"]!,
  }));
}

const byScope = (scope: Scope) => guardedOperations().filter((op) => op.scope === scope);

test("every operation is public by name or states its permission and scope in the OpenAPI document", () => {
  const ops = documentOperations();
  assert.deepEqual(
    ops.filter((op) => !("x-permission" in op)).map((op) => op.operationId).sort(),
    PUBLIC_OPERATIONS,
    "the operations without x-permission are exactly the public ones",
  );
  for (const op of ops.filter((o) => "x-permission" in o)) {
    assert.ok(op.security?.some((s) => "bearerAuth" in s), `${op.operationId} is behind the bearer gate`);
    const scope = op["x-permission-scope"];
    assert.ok(
      ["token", "system", "own", "own-or-system", "audience"].includes(scope!),
      `${op.operationId}: ${scope}`,
    );
    if (scope === "token") assert.equal(op["x-permission"], null, op.operationId);
    else assert.match(op["x-permission"]!, /^[a-z_]+:[a-z]+$/, op.operationId);
    for (const code of op["x-also-needs"] ?? []) assert.match(code, /^[a-z_]+:[a-z]+$/, op.operationId);
  }
  for (const op of ops.filter((o) => !("x-permission" in o))) {
    assert.ok(!op.security?.some((s) => "bearerAuth" in s), `${op.operationId} is public`);
  }
  const names = (scope: Scope) => byScope(scope).map((o) => o.operationId).sort();
  assert.deepEqual(names("token"), [
    "confirmTotpEnrolment",
    "getCurrentSecondFactors",
    "getCurrentUser",
    "listCurrentUserIdentities",
    "listCurrentUserSessions",
    "regenerateRecoveryCodes",
    "removeCurrentTotp",
    "revokeCurrentUserSession",
    "startTotpEnrolment",
    "unlinkCurrentUserIdentity",
    "updateCurrentUser",
  ]);
  assert.deepEqual(names("system"), ["createProject", "listKeys", "listProjects", "revokeKey", "rotateKeys"]);
  assert.deepEqual(names("own-or-system"), [
    "deleteProjectLogo",
    "getProject",
    "setProjectLogo",
    "updateProject",
  ]);
  assert.deepEqual(names("audience"), [
    "evaluateAccess",
    "evaluateAccessBatch",
    "searchActions",
    "searchResources",
    "searchSubjects",
  ]);
  assert.equal(byScope("own").length, 81, names("own").join(", "));
});

test("the permissions an operation checks beyond the gate's are published with it", () => {
  const also = documentOperations().filter((op) => op["x-also-needs"]);
  assert.deepEqual(
    also.map((op) => [op.operationId, op["x-also-needs"]]).sort(),
    [
      ["createWebhook", ["audit:read"]],
      ["listWebhookDeliveries", ["audit:read"]],
      ["retryWebhookDelivery", ["audit:read"]],
      ["rotateWebhookSecret", ["audit:read"]],
      ["updateWebhook", ["audit:read"]],
    ],
  );
});

/**
 * The operation's request with fake ids and an empty body; `invalidQuery` adds a query no operation accepts
 * (`force` must be true or false), so that an operation that would act (a key rotation) stops at validation.
 */
function request(op: Op, projectId: string, token?: string, invalidQuery = false): Promise<Response> {
  const path = op.path.replace("{project_id}", projectId).replace(/\{[a-z_]+\}/g, "no-such-id");
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const hasBody = op.method === "POST" || op.method === "PUT";
  if (hasBody) headers["content-type"] = "application/json";
  const query = invalidQuery ? "?force=not-a-boolean" : "";
  return http(`${path}${query}`, { method: op.method, headers, body: hasBody ? "{}" : undefined });
}

/**
 * Past the gate the fake ids and empty bodies answer 200, 400 or a "no such record" 404, never 401/403; an
 * idempotent removal of something absent (a project's logo) answers 204.
 */
async function assertPastGate(op: Op, res: Response): Promise<void> {
  const body = await res.text();
  assert.ok([200, 204, 400, 404].includes(res.status), `${op.operationId}: ${res.status} ${body}`);
  if (res.status === 404) {
    assert.match(
      JSON.parse(body).error,
      /^(resource|role|user|client|webhook|webhook_delivery|signing_key|session|identity_provider|identity|object|grant|organization|member)_not_found$/,
      op.operationId,
    );
  }
}

async function refusesMissingAndBadTokens(op: Op, projectId: string): Promise<void> {
  const missing = await expectError(await request(op, projectId), 401, "invalid_authorization_token");
  assert.ok(missing.headers.get("www-authenticate"), op.operationId);
  await expectError(await request(op, projectId, "bad.token.here"), 401, "invalid_authorization_token");
}

/** The system project as a test project: its admin client's SDK, to make clients with chosen permissions. */
async function systemProject(): Promise<TestProject> {
  const token = await systemToken();
  return { project: { id: "system" }, token, api: await sdk(token) } as TestProject;
}

test("every project-scoped operation refuses a missing, bad, foreign or unpermitted token and an unknown project", async () => {
  const p = await newProject();
  const other = await newProject();
  const powerless = await clientWith(p, []);
  for (const op of [...byScope("own"), ...byScope("own-or-system")]) {
    const name = `${op.operationId} (${op.method} ${op.path})`;
    await refusesMissingAndBadTokens(op, p.project.id);
    await expectError(await request(op, p.project.id, other.token), 403, "insufficient_permission");
    const denied = await expectError(
      await request(op, p.project.id, powerless.token),
      403,
      "insufficient_permission",
    );
    assert.match(denied.error_description, new RegExp(op.permission!), name);
    await expectError(await request(op, "no-such-project", p.token), 404, "project_not_found");
  }
});

test("every system operation refuses a missing or bad token, another project's admin, and a system token without its permission", async () => {
  const p = await newProject();
  const powerless = await clientWith(await systemProject(), []);
  for (const op of byScope("system")) {
    await refusesMissingAndBadTokens(op, p.project.id);
    await expectError(await request(op, p.project.id, p.token), 403, "insufficient_permission");
    const denied = await expectError(
      await request(op, p.project.id, powerless.token),
      403,
      "insufficient_permission",
    );
    assert.match(denied.error_description, new RegExp(op.permission!), op.operationId);
  }
});

test("every operation on the token's own project refuses a missing or bad token and one without its permission", async () => {
  const p = await newProject();
  const powerless = await clientWith(p, []);
  for (const op of byScope("audience")) {
    await refusesMissingAndBadTokens(op, p.project.id);
    const denied = await expectError(
      await request(op, p.project.id, powerless.token),
      403,
      "insufficient_permission",
    );
    assert.match(denied.error_description, new RegExp(op.permission!), op.operationId);
  }
});

test("every operation that needs only a live token refuses a missing or bad one", async () => {
  const p = await newProject();
  for (const op of byScope("token")) await refusesMissingAndBadTokens(op, p.project.id);
});

test("a token holding exactly an operation's permission gets past the gate, for every scope", async () => {
  const p = await newProject();
  for (const op of byScope("own")) {
    const c = await clientWith(p, [op.permission!]);
    await assertPastGate(op, await request(op, p.project.id, c.token, true));
  }
  const system = await systemProject();
  for (const op of byScope("own-or-system")) {
    const own = await clientWith(p, [op.permission!]);
    await assertPastGate(op, await request(op, p.project.id, own.token, true));
    const operator = await clientWith(system, [op.permission!]);
    await assertPastGate(op, await request(op, p.project.id, operator.token, true));
  }
  for (const op of byScope("system")) {
    const c = await clientWith(system, [op.permission!]);
    await assertPastGate(op, await request(op, p.project.id, c.token, true));
  }
  for (const op of byScope("audience")) {
    const c = await clientWith(p, [op.permission!]);
    await assertPastGate(op, await request(op, p.project.id, c.token));
  }
  const anyToken = await clientWith(p, []);
  for (const op of byScope("token")) {
    await assertPastGate(op, await request(op, p.project.id, anyToken.token, true));
  }
});
