/**
 * Run by .ci/run from a scratch project that installed the packed SDK (`npm pack` of sdk/): compiled with tsc
 * and run by Node, and run by Deno from the same project. It manages a project the way the README shows, with
 * createAdminClient, and checks the errors. ACS_URL and ACS_SYSTEM_SECRET name the running service.
 */
import process from "node:process";
import {
  type AdminClient,
  Api,
  ApiError,
  type ApiErrorCode,
  createAdminClient,
  createProtectedResource,
} from "@access-control/sdk";
import { protectedResource } from "@access-control/sdk/hono";

const baseUrl = process.env.ACS_URL!;
const systemSecret = process.env.ACS_SYSTEM_SECRET!;
let checks = 0;

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`failed: ${what}`);
  checks++;
}

/** The ApiError a call fails with. */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("the call succeeded");
}

/** A fetch that counts the token requests it sends. */
function counting(): { fetch: typeof fetch; tokenRequests: () => number } {
  let n = 0;
  return {
    fetch: (input, init) => {
      if (String(input).endsWith("/api/v1/tokens")) n++;
      return fetch(input, init);
    },
    tokenRequests: () => n,
  };
}

const system = createAdminClient({ baseUrl, clientId: "system-admin", clientSecret: systemSecret });
const created = await system.projects.createProject({
  name: `SDK ${Math.random().toString(36).slice(2, 8)}`,
  redirect_uris: ["http://localhost:3000/callback"],
});
check(typeof created.admin_client.client_secret === "string", "the project's admin client is shown once");

const counter = counting();
const shop: AdminClient = createAdminClient({
  baseUrl,
  clientId: created.admin_client.client_id,
  clientSecret: created.admin_client.client_secret,
  fetch: counter.fetch,
});
const projectId = created.id;

const orders = await shop.resources.createResource(projectId, {
  name: "Orders",
  code: "orders",
  permissions: [{ name: "Read orders", code: "read" }, { name: "Refund orders", code: "refund" }],
});
const id = Object.fromEntries(orders.permissions.map((p) => [p.code, p.id]));
const clerk = await shop.roles.createRole(projectId, {
  code: "clerk",
  name: "Clerk",
  permission_ids: [id.read, id.refund],
});
await shop.users.createUser(projectId, {
  display_name: "Ada",
  external_user_id: "crm-42",
  role_id: clerk.id,
});
const job = await shop.clients.createClient(projectId, { name: "nightly report", permission_ids: [id.read] });
const ada = await shop.users.getExternalUser(projectId, "crm-42", true);
check(
  JSON.stringify(ada.permissions) === JSON.stringify(["orders:read", "orders:refund"]),
  "Ada's permissions",
);
await shop.roles.updateRole(projectId, clerk.id, { code: "clerk", name: "Clerk", permission_ids: [id.read] });
const after = await shop.users.getExternalUser(projectId, "crm-42", true);
check(JSON.stringify(after.permissions) === JSON.stringify(["orders:read"]), "a role change applies at once");
const roles = await shop.roles.listRoles(
  projectId,
  1,
  10,
  Api.ListRolesSortByEnum.Code,
  undefined,
  undefined,
  undefined,
);
check(roles.pagination.total === 1 && roles.data[0].code === "clerk", "listRoles");
check(counter.tokenRequests() === 1, `one cached token for all calls (${counter.tokenRequests()} requests)`);

// Errors: one ApiError class, with the status, the typed code, the description and the details.
const duplicate = await failure(shop.roles.createRole(projectId, { code: "CLERK", name: "Again" }));
const code: ApiErrorCode = duplicate.code;
check(
  duplicate.status === 409 && code === "role_code_already_used",
  `409 role_code_already_used: ${duplicate}`,
);
const invalid = await failure(
  shop.resources.createResource(projectId, { name: "x".repeat(51), code: "bad code" }),
);
check(
  invalid.status === 400 && invalid.error === "invalid_params" &&
    invalid.details!.some((d) => d.field === "name") && invalid.details!.some((d) => d.field === "code"),
  `400 invalid_params with details: ${JSON.stringify(invalid.details)}`,
);
const missing = await failure(shop.users.getExternalUser(projectId, "nobody", false));
check(missing.status === 404 && missing.error === "user_not_found", `404 user_not_found: ${missing}`);
const foreign = await failure(shop.projects.getProject("system"));
check(foreign.status === 403 && foreign.error === "insufficient_permission", `403: ${foreign}`);
const wrong = createAdminClient({ baseUrl, clientId: job.id, clientSecret: "not-the-secret" });
const refused = await failure(
  wrong.roles.listRoles(projectId, 1, 10, undefined, undefined, undefined, undefined),
);
// The token endpoint answers the RFC 6749 §5.2 code in `error` and the service's in `error_code` (and `code`).
check(
  refused.status === 401 && refused.error === "invalid_client" &&
    refused.error_code === "invalid_client_credentials" && refused.code === "invalid_client_credentials",
  `401: ${refused}`,
);
check(
  refused instanceof Error && refused.message.startsWith("401 invalid_client (invalid_client_credentials)"),
  "message",
);
check(
  duplicate.error === duplicate.code && duplicate.error_code === undefined,
  "an admin error has no error_code",
);

// A token the service stopped accepting (the client was deactivated and reactivated) is renewed once.
const jobCounter = counting();
const jobClient = createAdminClient({
  baseUrl,
  clientId: job.id,
  clientSecret: job.client_secret,
  fetch: jobCounter.fetch,
});
const readable = await failure(
  jobClient.roles.listRoles(projectId, 1, 10, undefined, undefined, undefined, undefined),
);
check(readable.status === 403 && readable.error === "insufficient_permission", "the job may not read roles");
await shop.clients.updateClient(projectId, job.id, { name: "nightly report", is_active: false });
await shop.clients.updateClient(projectId, job.id, { name: "nightly report", is_active: true });
const again = await failure(
  jobClient.roles.listRoles(projectId, 1, 10, undefined, undefined, undefined, undefined),
);
check(again.status === 403, `after renewal the call reaches the permission check: ${again}`);
check(jobCounter.tokenRequests() === 2, `the refused token was renewed once (${jobCounter.tokenRequests()})`);

// Webhooks and the audit trail with the project's admin client; the signing keys with the system client only.
const hook = await shop.webhooks.createWebhook(projectId, {
  url: "https://hooks.example.com/in",
  event_types: ["role.*"],
  is_active: false,
});
check(typeof hook.secret === "string" && hook.secret.length > 0, "a webhook's secret is shown once");
const hooks = await shop.webhooks.listWebhooks(projectId, 1, 10, undefined, undefined, undefined, undefined);
check(hooks.data.length === 1 && hooks.data[0].id === hook.id, "listWebhooks");
await shop.webhooks.deleteWebhook(projectId, hook.id);
const trail = await shop.audit.listAuditEvents(
  projectId,
  "role.updated",
  undefined,
  clerk.id,
  undefined,
  undefined,
  10,
  undefined,
);
check(
  trail.data.length === 1 && trail.data[0].target?.id === clerk.id,
  "the role's update is in the audit trail",
);
const keys = await system.keys.listKeys();
check(keys.keys.some((k) => k.state === "current"), "the system client lists the signing keys");
const notSystem = await failure(shop.keys.listKeys());
check(notSystem.status === 403 && notSystem.error === "insufficient_permission", `keys: 403: ${notSystem}`);

// Introspection with the client's own credentials.
const live = await shop.tokens.introspectToken({ token: await shop.accessToken() });
check(live.active && live.aud === projectId, "introspection of the cached token");

// A protected resource (RFC 9728), through the package's `./hono` export: its metadata, and the project's own
// admin token refused (typ JWT, aud the project) after jose loaded the service's keys.
const mcp = createProtectedResource({ issuer: baseUrl, resource: "https://mcp.example.com/mcp" });
const guard = protectedResource(mcp, { scopes: ["tools:call"] });
const context = (authorization?: string) => ({
  req: {
    raw: new Request("https://mcp.example.com/mcp", { headers: authorization ? { authorization } : {} }),
  },
  set() {},
});
const next = () => Promise.resolve();
const served = await guard({ ...context(), req: { raw: new Request(mcp.metadataUrl) } }, next);
check(
  served instanceof Response && (await served.json()).authorization_servers[0] === baseUrl,
  "the metadata",
);
const anonymous = await guard(context(), next);
check(
  anonymous instanceof Response && anonymous.status === 401 &&
    anonymous.headers.get("www-authenticate")!.includes(`resource_metadata="${mcp.metadataUrl}"`),
  "no token: 401 with resource_metadata",
);
const foreignToken = await guard(context(`Bearer ${await shop.accessToken()}`), next);
check(
  foreignToken instanceof Response && foreignToken.status === 401 &&
    (await foreignToken.json()).error === "invalid_token",
  "the project's admin token is not one for the resource",
);

const runtime = "Deno" in globalThis ? "Deno" : `Node ${process.versions.node}`;
console.log(`sdk smoke (${runtime}): ${checks} checks passed against ${baseUrl}`);
