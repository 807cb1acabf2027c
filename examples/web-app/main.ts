/**
 * Runs the example web app for a person with a browser: make its project, client and user first with
 * setup.ts, which prints this command with the CLIENT_ID filled in.
 *
 *   SERVICE_URL=http://localhost:8000 CLIENT_ID=… APP_URL=http://localhost:3000 \
 *     deno run --allow-net --allow-env --lock=examples/deno.lock examples/web-app/main.ts
 */
import { createApp } from "./app.ts";

const serviceUrl = (Deno.env.get("SERVICE_URL") ?? "http://localhost:8000").replace(/\/+$/, "");
const appUrl = (Deno.env.get("APP_URL") ?? "http://localhost:3000").replace(/\/+$/, "");
const clientId = Deno.env.get("CLIENT_ID");
if (!clientId) {
  console.error("Set CLIENT_ID to the public client that examples/web-app/setup.ts made.");
  Deno.exit(2);
}
const handler = await createApp({ serviceUrl, clientId, appUrl });
const { hostname, port } = new URL(appUrl);
Deno.serve({ hostname, port: Number(port || 80), onListen: () => console.log(`open ${appUrl}/`) }, handler);
