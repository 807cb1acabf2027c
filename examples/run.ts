/**
 * Runs every example against a running service, one after another: `deno task examples`, with SERVICE_URL
 * (the service's PUBLIC_URL, default http://localhost:8000) and BOOTSTRAP_ADMIN_SECRET (the system-admin
 * client's secret). Each makes a project of its own. Exits non-zero when one fails.
 */
import { runBackend } from "./backend/run.ts";
import { runSdkModel } from "./sdk-model/main.ts";
import { serviceFromEnv } from "./support.ts";
import { runWebApp } from "./web-app/run.ts";

const { serviceUrl, adminSecret } = serviceFromEnv();

// The examples discover the service from its metadata, whose issuer is its PUBLIC_URL: they must agree.
let issuer: string;
try {
  const res = await fetch(`${serviceUrl}/.well-known/openid-configuration`);
  issuer = (await res.json()).issuer;
} catch (err) {
  console.error(`no service answers at ${serviceUrl} (start one with deno task start): ${err}`);
  Deno.exit(1);
}
if (issuer !== serviceUrl) {
  console.error(
    `SERVICE_URL is ${serviceUrl} but the service's issuer (its PUBLIC_URL) is ${issuer}: use that.`,
  );
  Deno.exit(1);
}

// The operators' client must get a token: every example starts by creating a project with it.
const res = await fetch(`${serviceUrl}/api/v1/tokens`, {
  method: "POST",
  headers: { authorization: `Basic ${btoa(`system-admin:${encodeURIComponent(adminSecret)}`)}` },
  body: new URLSearchParams({ grant_type: "client_credentials" }),
});
await res.body?.cancel();
if (res.status !== 200) {
  console.error(`system-admin cannot get a token (${res.status}): is BOOTSTRAP_ADMIN_SECRET its secret?`);
  Deno.exit(1);
}

const examples: [string, () => Promise<void>][] = [
  [
    "sdk-model: resources, roles, users and clients through the SDK",
    () => runSdkModel(serviceUrl, adminSecret),
  ],
  [
    "web-app: openid-client login, claims, userinfo, refresh, single sign-on, logout",
    () => runWebApp(serviceUrl, adminSecret),
  ],
  [
    "backend: client credentials, introspection, user lookup, the decision API",
    () => runBackend(serviceUrl, adminSecret),
  ],
];
const failed: string[] = [];
for (const [name, run] of examples) {
  console.log(`== ${name}`);
  try {
    await run();
  } catch (err) {
    console.error(err instanceof Error ? `${err.name}: ${err.message}` : err);
    failed.push(name.split(":")[0]);
  }
}
console.log(
  failed.length
    ? `examples: ${failed.length} of ${examples.length} failed (${failed.join(", ")})`
    : `examples: all ${examples.length} passed`,
);
Deno.exit(failed.length ? 1 : 0);
