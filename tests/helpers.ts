/**
 * Test harness: one service per test process, on the embedded database (a fresh temp DATA_DIR) or, when
 * DATABASE_URL is set, on that PostgreSQL server (DATABASE_POOLER and DATABASE_DIRECT_URL pass through, for a
 * run behind PgBouncer). With TEST_SERVICE_URL the tests talk to a service running elsewhere instead (such as
 * `deno serve` with restricted permissions), and open their own connection to DATABASE_URL, its database, for
 * the few direct queries. Tests reach the service through the generated SDK and raw HTTP, and every answer of a
 * service they start (or of TEST_SERVICE_URL) is checked against the OpenAPI document (tests/schema_check.ts).
 */
import assert from "node:assert/strict";
// First: it wraps fetch before any module keeps a reference to it (the SDK's runtime does, when it loads).
import { checkAnswersOf, checkedFetch } from "./schema_check.ts";
import { loadConfig } from "../config.ts";
import { connectServer, type Database } from "../db/connection.ts";
import { type Service, startService } from "../service.ts";
import { migratedDataDir } from "./embedded_template.ts";
import {
  Api,
  ClientsApi,
  Configuration,
  GrantsApi,
  ObjectsApi,
  ProjectsApi,
  ResourcesApi,
  RolesApi,
  ServiceApi,
  TokensApi,
  UsersApi,
} from "../sdk/src/mod.ts";

export { Api };
export const ADMIN_SECRET = "test-bootstrap-secret-that-is-long-enough-0001";
export const DATABASE_URL = Deno.env.get("DATABASE_URL") || undefined;
/** The variables of a PostgreSQL run that a service started by a test must get too. */
export const DATABASE_ENV: Record<string, string> = Object.fromEntries(
  ["DATABASE_URL", "DATABASE_POOLER", "DATABASE_DIRECT_URL"]
    .map((name) => [name, Deno.env.get(name) ?? ""])
    .filter(([, value]) => value !== ""),
);
/** Set: a service started elsewhere, with BOOTSTRAP_ADMIN_SECRET=ADMIN_SECRET and PUBLIC_URL=this address. */
export const TEST_SERVICE_URL = Deno.env.get("TEST_SERVICE_URL")?.replace(/\/+$/, "") || undefined;
if (TEST_SERVICE_URL && !DATABASE_URL) {
  throw new Error("TEST_SERVICE_URL needs DATABASE_URL: the database of that service, for direct queries");
}

export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** What tests use of the shared service: its address, and a connection to its database. */
export type TestService = {
  url: string;
  db: { sql: Database["sql"] };
  /**
   * The `application_name` of its connections on PostgreSQL, its own in this process: a test that ends or
   * waits for the service's backends picks them by it, never another test file's (they run side by side).
   */
  applicationName?: string;
};

let started: Promise<TestService> | undefined;

/**
 * Work for when this test module ends, for what a whole file shares (its service, its database): `deno test`
 * dispatches `unload` at the end of every module, and nothing asynchronous runs after it, so `fn` is synchronous.
 * A test removes what it made itself in its own `finally`; this is the last resort.
 */
export function atModuleEnd(fn: () => void): void {
  globalThis.addEventListener("unload", () => {
    try {
      fn();
    } catch (err) {
      console.error(`cleanup at the end of the test module failed: ${err}`);
    }
  });
}

/**
 * The log of a file's shared service: standard error, until `mute()` at the end of the file, where its jobs may
 * still tick once while it closes, on a database already removed.
 */
export function mutableLog(): { write(lines: string): void; mute(): void } {
  let muted = false;
  const encoder = new TextEncoder();
  return {
    write(lines) {
      if (muted) return;
      const bytes = encoder.encode(lines);
      let written = 0;
      while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
    },
    mute() {
      muted = true;
    },
  };
}

/** Removes a directory and what it holds, now (for atModuleEnd); gone already is fine. */
export function removeDirSync(dir: string): void {
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/**
 * Starts a service in this process on the test database (or a fresh embedded one, in a temp DATA_DIR that
 * `close` removes, and `dataDir` names) and a free port.
 */
export async function startTestService(
  opts: { write?: (lines: string) => void } = {},
): Promise<Service & { dataDir?: string; applicationName?: string }> {
  const port = freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
    LOG_LEVEL: "error",
  };
  if (DATABASE_URL) {
    Object.assign(env, DATABASE_ENV);
    env.DATABASE_APPLICATION_NAME = `acs-test-${crypto.randomUUID()}`;
  } else env.DATA_DIR = await migratedDataDir("acs-test-");
  const dataDir = env.DATA_DIR;
  let svc: Service;
  try {
    svc = await startService(loadConfig(env), { quiet: true, write: opts.write });
  } catch (err) {
    if (dataDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    throw err;
  }
  return checked({
    ...svc,
    dataDir,
    applicationName: env.DATABASE_APPLICATION_NAME,
    close: async () => {
      try {
        await svc.close();
      } finally {
        if (dataDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      }
    },
  });
}

/** The service's answers are checked against the document from now on. */
function checked<T extends { url: string }>(svc: T): T {
  checkAnswersOf(svc.url);
  return svc;
}

/** The shared service: in this process, or the one at TEST_SERVICE_URL. */
export function service(): Promise<TestService> {
  started ??= (async () => {
    const log = mutableLog();
    const svc: TestService & { close(): Promise<unknown>; dataDir?: string } = TEST_SERVICE_URL
      ? external(TEST_SERVICE_URL, DATABASE_URL!)
      : await startTestService({ write: log.write });
    // The service lives as long as the file's tests; its embedded data directory goes with the file.
    atModuleEnd(() => {
      log.mute();
      void svc.close().catch(() => {});
      if (svc.dataDir) removeDirSync(svc.dataDir);
    });
    // Every test logs in from 127.0.0.1: earlier runs on the same database must not throttle this one.
    await svc.db.sql`delete from login_failures where key like 'address:%'`;
    return svc;
  })();
  return started;
}

/** A connection of the test's own to a database of the PostgreSQL run, through its pooler if it has one. */
export function connectTestDatabase(url: string, max = 1): Database["sql"] {
  const pooler = Deno.env.get("DATABASE_POOLER") === "transaction" ? "transaction" : "none";
  return connectServer(url, { max, pooler });
}

function external(url: string, databaseUrl: string): TestService & { close(): Promise<unknown> } {
  const sql = connectTestDatabase(databaseUrl, 4);
  checkAnswersOf(url);
  // Started by someone else, with the service's default application_name unless told otherwise.
  const applicationName = Deno.env.get("DATABASE_APPLICATION_NAME") ?? "access-control";
  return { url, db: { sql }, applicationName, close: () => sql.end({ timeout: 1 }) };
}

/**
 * Polls `probe` until it gives a value (anything but undefined or false), every `every` ms, and fails naming
 * `what` after `within` ms: for what no event announces (a row a background job writes, a counter, a log
 * line). Never a fixed sleep: it returns as soon as the value is there.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  opts: { within?: number; every?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.within ?? 15_000);
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${opts.within ?? 15_000} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, opts.every ?? 50));
  }
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
  objects: ObjectsApi;
  grants: GrantsApi;
};

/** SDK clients bound to a bearer token (or none). */
export async function sdk(token?: string): Promise<Sdk> {
  return sdkAt(await baseUrl(), token);
}

/** SDK clients of the service at `url` (one a test started), bound to a bearer token (or none). */
export function sdkAt(url: string, token?: string): Sdk {
  const config = new Configuration({ basePath: url, ...(token ? { authorization: token } : {}) });
  return {
    projects: new ProjectsApi(config, undefined, checkedFetch),
    resources: new ResourcesApi(config, undefined, checkedFetch),
    roles: new RolesApi(config, undefined, checkedFetch),
    users: new UsersApi(config, undefined, checkedFetch),
    clients: new ClientsApi(config, undefined, checkedFetch),
    tokens: new TokensApi(config, undefined, checkedFetch),
    service: new ServiceApi(config, undefined, checkedFetch),
    objects: new ObjectsApi(config, undefined, checkedFetch),
    grants: new GrantsApi(config, undefined, checkedFetch),
  };
}

/** A client-credentials token through the SDK. */
export async function clientToken(clientId: string, secret: string): Promise<string> {
  const tokens = new TokensApi(
    new Configuration({ basePath: await baseUrl(), username: clientId, password: secret }),
    undefined,
    checkedFetch,
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

/**
 * Asserts an error of the token, revocation or introspection endpoints: its status, its RFC 6749 §5.2 `error`
 * and the service's `error_code`, `Cache-Control: no-store`, and on 401 the `WWW-Authenticate: Basic` challenge.
 */
export async function expectOAuthError(
  call: Promise<unknown> | Response,
  status: number,
  error: string,
  errorCode: string,
): Promise<ErrorBody & { error_code: string; headers: Headers }> {
  const body = await expectError(call, status, error) as ErrorBody & { error_code: string; headers: Headers };
  assert.equal(body.error_code, errorCode, JSON.stringify(body));
  assert.equal(body.headers.get("cache-control"), "no-store");
  const challenge = body.headers.get("www-authenticate");
  if (status === 401) assert.match(challenge ?? "", /^Basic realm="[^"]+", charset="UTF-8"$/);
  else assert.equal(challenge, null, "only a 401 challenges");
  return body;
}

export function basic(clientId: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  return `Basic ${btoa(`${enc(clientId)}:${enc(secret)}`)}`;
}

/** A system admin token from the service at `url` (one started by a test, or the shared one's address). */
export async function systemTokenAt(url: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: basic("system-admin", ADMIN_SECRET),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).access_token;
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
  return (await projectPermissions(p.api, p.project.id)).ids;
}

/** A project's resources and its permission ids by `resource:permission` code, as `api` may read them. */
export async function projectPermissions(
  api: Sdk,
  projectId: string,
): Promise<{ resources: Api.Resource[]; ids: Record<string, string> }> {
  const resources: Api.Resource[] = [];
  for (let page = 1;; page++) {
    const res = await api.resources.listResources(
      projectId,
      page,
      100,
      undefined,
      undefined,
      undefined,
      undefined,
    );
    resources.push(...res.data);
    if (page * 100 >= res.pagination.total) break;
  }
  const ids: Record<string, string> = {};
  for (const r of resources) for (const perm of r.permissions) ids[`${r.code}:${perm.code}`] = perm.id;
  return { resources, ids };
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

export const REDIRECT_URI = "http://127.0.0.1:9/callback";

/** BASE64URL(SHA-256(verifier)), RFC 7636 §4.2. */
export async function challengeOf(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return btoa(String.fromCharCode(...digest)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function newVerifier(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A project with a registered redirect URI and a user who logs in with email and password. */
export async function loginProject(): Promise<
  TestProject & { email: string; password: string; userId: string }
> {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const email = `user-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery";
  const user = await p.api.users.createUser(p.project.id, { display_name: "Login User", email, password });
  return { ...p, email, password, userId: user.id };
}

export type LoginPage = {
  status: number;
  cookie: string;
  requestId: string;
  csrf: string;
  html: string;
  headers: Headers;
};

/** GET /authorize as a browser: the page, its hidden fields and the binding cookie. */
export async function openLoginPage(query: Record<string, string>): Promise<LoginPage> {
  const res = await http(`/authorize?${new URLSearchParams(query)}`, { redirect: "manual" });
  const html = await res.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
  return {
    status: res.status,
    cookie,
    requestId: field("request_id"),
    csrf: field("csrf"),
    html,
    headers: res.headers,
  };
}

/** POST /authorize as the login form would. */
export async function submitLogin(
  page: Pick<LoginPage, "cookie" | "requestId" | "csrf">,
  email: string,
  password: string,
): Promise<Response> {
  return await http("/authorize", {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(page.cookie ? { cookie: page.cookie } : {}),
    },
    body: new URLSearchParams({ request_id: page.requestId, csrf: page.csrf, email, password }).toString(),
  });
}

/** The whole browser part: authorize, log in, and return the code from the redirect. */
export async function authorizationCode(
  p: { clientId: string; email: string; password: string },
  opts: { verifier?: string; state?: string; redirectUri?: string } = {},
): Promise<{ code: string; verifier: string; location: URL }> {
  const verifier = opts.verifier ?? newVerifier();
  const page = await openLoginPage({
    client_id: p.clientId,
    redirect_uri: opts.redirectUri ?? REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    ...(opts.state !== undefined ? { state: opts.state } : {}),
  });
  assert.equal(page.status, 200, page.html);
  const res = await submitLogin(page, p.email, p.password);
  assert.equal(res.status, 303, await res.text());
  const location = new URL(res.headers.get("location")!);
  return { code: location.searchParams.get("code")!, verifier, location };
}

/** Exchanges a code at the token endpoint as a public client. */
export async function exchangeCode(
  clientId: string,
  code: string,
  verifier: string,
  redirectUri = REDIRECT_URI,
): Promise<Response> {
  return await postToken({
    grant_type: "authorization_code",
    client_id: clientId,
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
  });
}

/** Logs the user in and returns the token response. */
export async function userTokens(
  p: { clientId: string; email: string; password: string },
): Promise<
  { access_token: string; refresh_token: string; expires_in: number; refresh_token_expires_in: number }
> {
  const { code, verifier } = await authorizationCode(p);
  const res = await exchangeCode(p.clientId, code, verifier);
  assert.equal(res.status, 200);
  return await res.json();
}

/** A database of a test's own: the settings that reach it, and how to remove it. */
export type IsolatedDatabase = {
  env: Record<string, string>;
  drop(): Promise<void>;
  /** The same, now and synchronously: for atModuleEnd, where a file's shared service's database goes. */
  dropSync(): void;
};

/**
 * A database of its own for a test that needs a service with other settings, or several services in turn:
 * a fresh database on the PostgreSQL server under test, or a fresh embedded data directory.
 */
export async function isolatedDatabase(): Promise<IsolatedDatabase> {
  if (!DATABASE_URL) {
    const dir = await migratedDataDir("acs-iso-");
    return {
      env: { DATA_DIR: dir },
      drop: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
      dropSync: () => removeDirSync(dir),
    };
  }
  const name = `acs_iso_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const { db } = await service();
  await db.sql.unsafe(`create database ${name}`);
  // The same way to the server as the run's own database (through a pooler with its settings, and a direct
  // connection for migrations when the run has one), to the new database.
  const on = (base: string) => {
    const url = new URL(base);
    url.pathname = `/${name}`;
    return url.href;
  };
  const env: Record<string, string> = { ...DATABASE_ENV, DATABASE_URL: on(DATABASE_URL) };
  if (DATABASE_ENV.DATABASE_DIRECT_URL) env.DATABASE_DIRECT_URL = on(DATABASE_ENV.DATABASE_DIRECT_URL);
  return {
    env,
    drop: async () => {
      await db.sql.unsafe(`drop database if exists ${name} with (force)`);
    },
    dropSync: () => dropDatabaseSync(name),
  };
}

/**
 * Drops a database of the run's server now, from a short process of its own (nothing asynchronous of this
 * one runs any more when a test module ends).
 */
function dropDatabaseSync(name: string): void {
  const connection = new URL("../db/connection.ts", import.meta.url).href;
  const script = `
    import { connectServer } from ${JSON.stringify(connection)};
    const pooler = Deno.env.get("DATABASE_POOLER") === "transaction" ? "transaction" : "none";
    const sql = connectServer(Deno.env.get("DATABASE_URL"), { max: 1, pooler });
    await sql.unsafe(\`drop database if exists ${name} with (force)\`);
    await sql.end({ timeout: 1 });
  `;
  const out = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-lock", script],
    cwd: new URL("../", import.meta.url),
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  if (!out.success) throw new Error(`dropping ${name}: ${new TextDecoder().decode(out.stderr)}`);
}

/**
 * Starts a service in this process with these settings on a free port (quiet, the test secret); `write`
 * receives its log lines instead of standard error.
 */
export async function startWith(
  env: Record<string, string>,
  opts: { write?: (lines: string) => void } = {},
): Promise<Service> {
  const port = freePort();
  return checked(
    await startService(
      loadConfig({
        PORT: String(port),
        HOST: "127.0.0.1",
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
        LOG_LEVEL: "error",
        ...env,
      }),
      { quiet: true, write: opts.write },
    ),
  );
}
