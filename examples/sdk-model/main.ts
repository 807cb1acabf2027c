/**
 * The SDK modelling an application's permissions, as the worked example of docs/model-permissions.md (the
 * README's "Modelling an application's permissions with the SDK") shows it, runnable: a shop wants clerks who
 * may read and refund orders, and a backend job that may only read them. Each step prints what it did and
 * checks what the service answered.
 *
 *   SERVICE_URL=http://localhost:8000 BOOTSTRAP_ADMIN_SECRET=… \
 *     deno run --allow-net --allow-env --lock=examples/deno.lock examples/sdk-model/main.ts
 *
 * From Node, import the same names from "@access-control/sdk" (the package built from sdk/).
 */
import { ApiError, createAdminClient } from "../../sdk/src/mod.ts";
import { check, serviceFromEnv, suffix } from "../support.ts";

export async function runSdkModel(baseUrl: string, systemSecret: string): Promise<void> {
  // 0. The operators (the system project's admin client) create the Shop project, whose admin client is
  //    shown once.
  const system = createAdminClient({ baseUrl, clientId: "system-admin", clientSecret: systemSecret });
  const shop = await system.projects.createProject({ name: `Shop ${suffix()}` });
  check(
    typeof shop.admin_client.client_secret === "string",
    `project ${shop.name} created with its admin client`,
  );

  const { resources, roles, users, clients, tokens } = createAdminClient({
    baseUrl,
    clientId: shop.admin_client.client_id,
    clientSecret: shop.admin_client.client_secret,
  });

  // 1. A resource with its permissions: orders:read and orders:refund.
  const orders = await resources.createResource(shop.id, {
    name: "Orders",
    code: "orders",
    permissions: [{ name: "Read orders", code: "read" }, { name: "Refund orders", code: "refund" }],
  });
  const id = Object.fromEntries(orders.permissions.map((p) => [p.code, p.id]));
  check(Boolean(id.read && id.refund), "resource orders with read and refund");

  // 2. A role that holds both.
  const clerk = await roles.createRole(shop.id, {
    code: "clerk",
    name: "Clerk",
    permission_ids: [id.read, id.refund],
  });
  check(clerk.permission_ids.length === 2, "role clerk holds both");

  // 3. A user your system already knows (external id), with the role.
  const ada = await users.createUser(shop.id, {
    display_name: "Ada",
    external_user_id: "crm-42",
    role_id: clerk.id,
  });

  // 4. A machine client that may only read orders; its secret is shown once.
  const job = await clients.createClient(shop.id, { name: "nightly report", permission_ids: [id.read] });
  check(typeof job.client_secret === "string", "client nightly report created, its secret shown once");

  // 5. What may Ada do? Evaluated now, from her role.
  let found = await users.getExternalUser(shop.id, "crm-42", true);
  check(same(found.permissions, ["orders:read", "orders:refund"]), "Ada may read and refund orders");

  // 6. Codes are unique per project, case-insensitively: the second "Clerk" is refused (409).
  const duplicate = await failure(roles.createRole(shop.id, { code: "Clerk", name: "Another clerk" }));
  check(duplicate.status === 409 && duplicate.code === "role_code_already_used", "a second Clerk: 409");

  // 7. Changes apply at once: take refund off the role and the next lookup says so.
  await roles.updateRole(shop.id, clerk.id, { code: "clerk", name: "Clerk", permission_ids: [id.read] });
  found = await users.getExternalUser(shop.id, "crm-42", true);
  check(same(found.permissions, ["orders:read"]), "refund off the role: Ada may only read, at once");

  // 8. Reading one back: the resource as it is stored, and the role.
  const stored = await resources.getResource(shop.id, orders.id);
  check(same(stored.permissions.map((p) => p.code), ["read", "refund"]), "orders read back: read and refund");
  const role = await roles.getRole(shop.id, clerk.id);
  check(same(role.permission_ids, [id.read]), "clerk read back: only read");

  // 9. Updating the resource's permissions matches them by code: read keeps its id and its grants, export is
  //    new, refund (left out) is deleted with its grants.
  const updated = await resources.updateResource(shop.id, orders.id, {
    name: "Orders",
    code: "orders",
    permissions: [{ name: "Read orders", code: "read" }, { name: "Export orders", code: "export" }],
  });
  const kept = updated.permissions.find((p) => p.code === "read");
  check(kept?.id === id.read, "orders updated by code: read keeps its id");
  check(!updated.permissions.some((p) => p.code === "refund"), "refund is gone");

  // 10. Deactivating the job's client refuses its tokens on their next use (introspection says inactive).
  const jobToken = await createAdminClient({ baseUrl, clientId: job.id, clientSecret: job.client_secret })
    .accessToken();
  check((await tokens.introspectToken({ token: jobToken })).active === true, "the job's token is active");
  await clients.updateClient(shop.id, job.id, { name: "nightly report", is_active: false });
  check(
    (await tokens.introspectToken({ token: jobToken })).active === false,
    "job deactivated: its token is not",
  );

  // 11. Deleting: the client goes (404 afterwards); a role still held by a user is refused (409 role_in_use)
  //     until the user goes too.
  await clients.deleteClient(shop.id, job.id);
  const gone = await failure(clients.getClient(shop.id, job.id));
  check(gone.status === 404 && gone.code === "client_not_found", "client deleted: 404 client_not_found");
  const inUse = await failure(roles.deleteRole(shop.id, clerk.id, undefined));
  check(inUse.status === 409 && inUse.code === "role_in_use", "a role Ada holds cannot go: 409 role_in_use");
  await users.deleteUser(shop.id, ada.id);
  await roles.deleteRole(shop.id, clerk.id, undefined);
  check((await failure(roles.getRole(shop.id, clerk.id))).status === 404, "Ada deleted, then the role");
}

/** The ApiError a call fails with; the run fails if it succeeds or fails otherwise. */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("the call succeeded");
}

function same(a: readonly string[] | undefined, b: string[]): boolean {
  return JSON.stringify([...(a ?? [])].sort()) === JSON.stringify([...b].sort());
}

if (import.meta.main) {
  const { serviceUrl, adminSecret } = serviceFromEnv();
  console.log("sdk-model: resources, roles, users and clients through the SDK");
  await runSdkModel(serviceUrl, adminSecret);
  console.log("sdk-model: passed");
}
