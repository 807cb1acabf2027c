/**
 * Test harness: one service per test process, on the embedded database (a fresh temp DATA_DIR) or, when
 * DATABASE_URL is set, on that PostgreSQL server. Tests reach it through the generated SDK and raw HTTP.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../config.ts";
import { type Service, startService } from "../main.ts";
import {
  Api,
  ClientsApi,
  Configuration,
  ProjectsApi,
  ResourcesApi,
  RolesApi,
  ServiceApi,
  TokensApi,
  UsersApi,
} from "../sdk/index.ts";

export { Api };
export const ADMIN_SECRET = "test-bootstrap-secret-that-is-long-enough-0001";
export const DATABASE_URL = Deno.env.get("DATABASE_URL") || undefined;

export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

let started: Promise<Service> | undefined;

/** Starts a service in this process on the test database (or a fresh embedded one) and a free port. */
export async function startTestService(): Promise<Service> {
  const port = freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
    LOG_LEVEL: "error",
  };
  if (DATABASE_URL) env.DATABASE_URL = DATABASE_URL;
  else env.DATA_DIR = await Deno.makeTempDir({ prefix: "acs-test-" });
  return await startService(loadConfig(env), { quiet: true });
}

/** The shared in-process service. */
export function service(): Promise<Service> {
  started ??= (async () => {
    const svc = await startTestService();
    globalThis.addEventListener("unload", () => svc.close());
    return svc;
  })();
  return started;
}

/** Deno.test with the sanitizers off: the shared service outlives any one test. */
export function test(name: string, fn: () => void | Promise<void>, opts: { ignore?: boolean } = {}) {
  Deno.test({ name, fn, sanitizeOps: false, sanitizeResources: false, ...opts });
}

export async function baseUrl(): Promise<string> {
  return (await service()).url;
}

export type Sdk = {
  projects: ProjectsApi;
  resources: ResourcesApi;
  roles: RolesApi;
  users: UsersApi;
  clients: ClientsApi;
  tokens: TokensApi;
  service: ServiceApi;
};

/** SDK clients bound to a bearer token (or none). */
export async function sdk(token?: string): Promise<Sdk> {
  const config = new Configuration({ basePath: await baseUrl(), ...(token ? { authorization: token } : {}) });
  return {
    projects: new ProjectsApi(config),
    resources: new ResourcesApi(config),
    roles: new RolesApi(config),
    users: new UsersApi(config),
    clients: new ClientsApi(config),
    tokens: new TokensApi(config),
    service: new ServiceApi(config),
  };
}

/** A client-credentials token through the SDK. */
export async function clientToken(clientId: string, secret: string): Promise<string> {
  const tokens = new TokensApi(
    new Configuration({ basePath: await baseUrl(), username: clientId, password: secret }),
  );
  return (await tokens.exchangeCredentials({ grant_type: Api.TokenRequest.GrantTypeEnum.ClientCredentials }))
    .access_token;
}

export function systemToken(): Promise<string> {
  return clientToken("system-admin", ADMIN_SECRET);
}

export type TestProject = {
  project: Api.CreatedProject;
  clientId: string;
  secret: string;
  token: string;
  api: Sdk;
};

/** A fresh project for one test, with its admin client's token and SDK. */
export async function newProject(body: Partial<Api.CreateProjectRequest> = {}): Promise<TestProject> {
  const admin = await sdk(await systemToken());
  const project = await admin.projects.createProject({
    name: `test ${crypto.randomUUID().slice(0, 8)}`,
    ...body,
  });
  const clientId = project.admin_client.client_id;
  const secret = project.admin_client.client_secret;
  const token = await clientToken(clientId, secret);
  return { project, clientId, secret, token, api: await sdk(token) };
}

/** Raw HTTP to the service. */
export async function http(path: string, init: RequestInit = {}): Promise<Response> {
  return await fetch(`${await baseUrl()}${path}`, init);
}

export type ErrorBody = {
  error: string;
  error_description: string;
  details?: { field: string; issue: string }[];
};

/** Asserts that an SDK call or a raw response fails with exactly this status and error code. */
export async function expectError(
  call: Promise<unknown> | Response,
  status: number,
  code: string,
): Promise<ErrorBody & { headers: Headers }> {
  let res: Response;
  if (call instanceof Response) res = call;
  else {
    try {
      const value = await call;
      if (value instanceof Response) res = value;
    } catch (err) {
      if (!(err instanceof Response)) throw err;
      res = err;
    }
    assert.ok(res!, `expected ${status} ${code}, but the call succeeded`);
  }
  const body = await res.json() as ErrorBody;
  assert.equal(res.status, status, `status of ${JSON.stringify(body)}`);
  assert.equal(body.error, code, JSON.stringify(body));
  assert.equal(typeof body.error_description, "string");
  return { ...body, headers: res.headers };
}

export function basic(clientId: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  return `Basic ${btoa(`${enc(clientId)}:${enc(secret)}`)}`;
}

/** POST /api/v1/tokens as a raw form post. */
export async function postToken(form: Record<string, string> | string, headers: Record<string, string> = {}) {
  return await http("/api/v1/tokens", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: typeof form === "string" ? form : new URLSearchParams(form).toString(),
  });
}

/** Permission ids by `resource:permission` code, for every resource of the project. */
export async function permissionIds(p: TestProject): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (let page = 1;; page++) {
    const res = await p.api.resources.listResources(
      p.project.id,
      page,
      100,
      undefined,
      undefined,
      undefined,
      undefined,
    );
    for (const r of res.data) for (const perm of r.permissions) out[`${r.code}:${perm.code}`] = perm.id;
    if (page * 100 >= res.pagination.total) return out;
  }
}

/** A client of the project with exactly these permissions, and its token. */
export async function clientWith(
  p: TestProject,
  codes: string[],
): Promise<{ id: string; secret: string; token: string; api: Sdk }> {
  const ids = await permissionIds(p);
  const created = await p.api.clients.createClient(p.project.id, {
    name: "limited",
    permission_ids: codes.map((c) => ids[c]),
  });
  const token = await clientToken(created.id, created.client_secret);
  return { id: created.id, secret: created.client_secret, token, api: await sdk(token) };
}
