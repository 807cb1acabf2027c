/**
 * What the web app needs from the service, made through the SDK with the system project's admin client: a
 * project that lists the app's callback in `redirect_uris` and its signed-out page in
 * `post_logout_redirect_uris`, a public client (no secret: PKCE proves each login) and a user who can log in.
 *
 *   SERVICE_URL=http://localhost:8000 BOOTSTRAP_ADMIN_SECRET=… APP_URL=http://localhost:3000 \
 *     deno run --allow-net --allow-env --lock=examples/deno.lock examples/web-app/setup.ts
 *
 * prints the CLIENT_ID, the user's email and password, and the command that starts the app.
 */
import { Api, createAdminClient } from "../../sdk/src/mod.ts";
import { serviceFromEnv, suffix } from "../support.ts";

export type WebAppSetup = { projectId: string; clientId: string; email: string; password: string };

export async function setupWebApp(
  p: { serviceUrl: string; adminSecret: string; appUrl: string },
): Promise<WebAppSetup> {
  const system = createAdminClient({
    baseUrl: p.serviceUrl,
    clientId: "system-admin",
    clientSecret: p.adminSecret,
  });
  // 1. A project whose logins may come back to the app, and whose logouts may return to it.
  const project = await system.projects.createProject({
    name: `Web app example ${suffix()}`,
    redirect_uris: [`${p.appUrl}/callback`],
    post_logout_redirect_uris: [`${p.appUrl}/signed-out`],
  });
  // The project's own admin client, shown once: it manages what is inside the project.
  const admin = createAdminClient({
    baseUrl: p.serviceUrl,
    clientId: project.admin_client.client_id,
    clientSecret: project.admin_client.client_secret,
  });
  // 2. A public client for the app: token_endpoint_auth_method "none" (the default) needs no secret.
  const client = await admin.clients.createClient(project.id, {
    name: "Web app",
    token_endpoint_auth_method: Api.TokenEndpointAuthMethod.None,
  });
  // 3. A user with an email and a password, who logs in on the service's page.
  const email = `ada-${suffix()}@example.com`;
  const password = `correct horse ${suffix()}`;
  await admin.users.createUser(project.id, { display_name: "Ada Lovelace", email, password });
  return { projectId: project.id, clientId: client.id, email, password };
}

if (import.meta.main) {
  const { serviceUrl, adminSecret } = serviceFromEnv();
  const appUrl = (Deno.env.get("APP_URL") ?? "http://localhost:3000").replace(/\/+$/, "");
  const s = await setupWebApp({ serviceUrl, adminSecret, appUrl });
  console.log(`project ${s.projectId}, public client ${s.clientId}`);
  console.log(`log in as ${s.email} with the password ${s.password}`);
  console.log("start the app with:");
  console.log(
    `  SERVICE_URL=${serviceUrl} CLIENT_ID=${s.clientId} APP_URL=${appUrl} ` +
      "deno run --allow-net --allow-env --lock=examples/deno.lock examples/web-app/main.ts",
  );
}
