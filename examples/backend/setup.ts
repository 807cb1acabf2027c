/**
 * What the backend example needs, made through the SDK with the system project's admin client: a project
 * with an `orders` resource (`read`, `refund`), two roles (clerk: both; viewer: read), two users who log in
 * (Ada the clerk, Bob the viewer), a public client for their logins, a machine client "nightly report" that
 * may only read orders, and the backend's own client: confidential, holding `users:read` (to look users up)
 * and, when the service has the decision API, `access:evaluate`.
 *
 *   SERVICE_URL=http://localhost:8000 BOOTSTRAP_ADMIN_SECRET=… \
 *     deno run --allow-net --allow-env --lock=examples/deno.lock examples/backend/setup.ts
 *
 * prints the command that starts the backend with its credentials.
 */
import { type AdminClient, Api, createAdminClient } from "../../sdk/src/mod.ts";
import { serviceFromEnv, suffix } from "../support.ts";

/** Where the service sends the users' browsers after a login: never served, the code is read from the URL. */
export const LOGIN_REDIRECT_URI = "http://127.0.0.1:9/callback";

export type BackendSetup = {
  projectId: string;
  /** The project's admin client, for the live changes the runner makes. */
  admin: AdminClient;
  backend: { clientId: string; clientSecret: string };
  report: { clientId: string; clientSecret: string };
  loginClientId: string;
  ada: { id: string; email: string; password: string };
  bob: { id: string; email: string; password: string };
  viewerRoleId: string;
  permissionIds: { read: string; refund: string };
};

export async function setupBackend(p: { serviceUrl: string; adminSecret: string }): Promise<BackendSetup> {
  const system = createAdminClient({
    baseUrl: p.serviceUrl,
    clientId: "system-admin",
    clientSecret: p.adminSecret,
  });
  const project = await system.projects.createProject({
    name: `Backend example ${suffix()}`,
    redirect_uris: [LOGIN_REDIRECT_URI],
  });
  const admin = createAdminClient({
    baseUrl: p.serviceUrl,
    clientId: project.admin_client.client_id,
    clientSecret: project.admin_client.client_secret,
  });
  const orders = await admin.resources.createResource(project.id, {
    name: "Orders",
    code: "orders",
    permissions: [{ name: "Read orders", code: "read" }, { name: "Refund orders", code: "refund" }],
  });
  const id = Object.fromEntries(orders.permissions.map((q) => [q.code, q.id]));
  const clerk = await admin.roles.createRole(project.id, {
    code: "clerk",
    name: "Clerk",
    permission_ids: [id.read, id.refund],
  });
  const viewer = await admin.roles.createRole(project.id, {
    code: "viewer",
    name: "Viewer",
    permission_ids: [id.read],
  });
  const person = async (name: string, roleId: string) => {
    const email = `${name.toLowerCase()}-${suffix()}@example.com`;
    const password = `correct horse ${suffix()}`;
    const user = await admin.users.createUser(project.id, {
      display_name: name,
      email,
      password,
      role_id: roleId,
    });
    return { id: user.id, email, password };
  };
  const ada = await person("Ada", clerk.id);
  const bob = await person("Bob", viewer.id);
  const login = await admin.clients.createClient(project.id, { name: "Orders front end" });
  const report = await admin.clients.createClient(project.id, {
    name: "nightly report",
    permission_ids: [id.read],
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });

  // The backend's client: users:read from the default `users` resource, and access:evaluate from the default
  // `access` resource when this version of the service has one (the decision API).
  const defaults = await admin.resources.listResources(
    project.id,
    1,
    100,
    undefined,
    undefined,
    undefined,
    true,
  );
  const permission = (resource: string, code: string) =>
    defaults.data.find((r) => r.code === resource)?.permissions.find((q) => q.code === code)?.id;
  const backendPermissions = [permission("users", "read"), permission("access", "evaluate")]
    .filter((x): x is string => x !== undefined);
  const backend = await admin.clients.createClient(project.id, {
    name: "Orders backend",
    permission_ids: backendPermissions,
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.ClientSecretBasic,
  });
  return {
    projectId: project.id,
    admin,
    backend: { clientId: backend.id, clientSecret: backend.client_secret },
    report: { clientId: report.id, clientSecret: report.client_secret },
    loginClientId: login.id,
    ada,
    bob,
    viewerRoleId: viewer.id,
    permissionIds: { read: id.read, refund: id.refund },
  };
}

if (import.meta.main) {
  const { serviceUrl, adminSecret } = serviceFromEnv();
  const s = await setupBackend({ serviceUrl, adminSecret });
  console.log(`project ${s.projectId}`);
  console.log(
    `users: ${s.ada.email} (clerk) and ${s.bob.email} (viewer), ` +
      `passwords ${s.ada.password} / ${s.bob.password}`,
  );
  console.log(`public client for their logins: ${s.loginClientId}, redirect URI ${LOGIN_REDIRECT_URI}`);
  console.log(`machine client "nightly report": ${s.report.clientId} / ${s.report.clientSecret}`);
  console.log("start the backend with:");
  console.log(
    `  SERVICE_URL=${serviceUrl} PROJECT_ID=${s.projectId} CLIENT_ID=${s.backend.clientId} ` +
      `CLIENT_SECRET=${s.backend.clientSecret} deno run --allow-net --allow-env --lock=examples/deno.lock ` +
      "examples/backend/main.ts",
  );
}
