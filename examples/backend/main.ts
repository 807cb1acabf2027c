/**
 * Runs the example backend on BACKEND_PORT (default 3001) for a person to call with curl; setup.ts prints
 * this command with the credentials filled in.
 *
 *   SERVICE_URL=http://localhost:8000 PROJECT_ID=… CLIENT_ID=… CLIENT_SECRET=… \
 *     deno run --allow-net --allow-env --lock=examples/deno.lock examples/backend/main.ts
 */
import { createBackend } from "./server.ts";

const need = (name: string) => {
  const value = Deno.env.get(name);
  if (!value) {
    console.error(`Set ${name} (examples/backend/setup.ts prints the command).`);
    Deno.exit(2);
  }
  return value;
};
const serviceUrl = (Deno.env.get("SERVICE_URL") ?? "http://localhost:8000").replace(/\/+$/, "");
const backend = await createBackend({
  serviceUrl,
  projectId: need("PROJECT_ID"),
  clientId: need("CLIENT_ID"),
  clientSecret: need("CLIENT_SECRET"),
});
const port = Number(Deno.env.get("BACKEND_PORT") ?? 3001);
console.log(
  backend.evaluationEndpoint
    ? `decisions from the decision API: ${backend.evaluationEndpoint}`
    : "no decision API on this service (no /.well-known/authzen-configuration): decisions from introspection",
);
Deno.serve({
  hostname: "localhost",
  port,
  onListen: () => console.log(`listening on http://localhost:${port}/`),
}, backend.handler);
