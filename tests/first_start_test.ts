/**
 * A first start a newcomer can use: a port in use stops the start before anything is created or printed; while
 * no operator can sign in to the console, the banner prints a one-time link that creates one; `GET /` links
 * everything, with an icon; /openapi.json names the service and lists the default resources as they are.
 */
import assert from "node:assert/strict";
import { DEFAULTS } from "../domain/authz/defaults.ts";
import {
  ADMIN_SECRET,
  baseUrl,
  basic,
  eventually,
  freePort,
  http,
  isolatedDatabase,
  startWith,
  test,
} from "./helpers.ts";
import { exitWithin, launch, spawn } from "./processes.ts";

const NO_DATABASE = { DATABASE_URL: "", DATABASE_DIRECT_URL: "", DATABASE_POOLER: "" };
const LINK = /(http:\/\/\S+\/console\/setup\?token=(\S+))/;

test("a port in use stops the start before the database is made or a secret printed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "acs-test-" });
  const port = freePort();
  const busy = Deno.listen({ hostname: "127.0.0.1", port });
  try {
    const proc = launch({ ...NO_DATABASE, DATA_DIR: dir, LOG_LEVEL: "info" }, { port });
    const status = await exitWithin(proc, 30_000);
    assert.equal(status.code, 1, proc.output());
    assert.match(
      proc.output(),
      new RegExp(`failed to start: 127\\.0\\.0\\.1:${port} is in use by another process`),
    );
    assert.doesNotMatch(proc.output(), /client_secret|First start|console\/setup/);
    assert.deepEqual([...Deno.readDirSync(dir)], [], "no database was made");
  } finally {
    busy.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

async function linkOf(output: () => string): Promise<{ link: string; token: string }> {
  const m = await eventually("the setup link in the output", () => LINK.exec(output()) ?? undefined, {
    within: 5_000,
  }).catch(() => null);
  assert.ok(m, output());
  return { link: m[1], token: m[2] };
}

async function setUp(url: string, fields: Record<string, string>): Promise<{ status: number; html: string }> {
  const res = await fetch(`${url}/console/setup`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, html: await res.text() };
}

async function systemUsers(url: string, email: string) {
  const token = (await (await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: {
      authorization: basic("system-admin", ADMIN_SECRET),
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  })).json()).access_token;
  const res = await fetch(`${url}/api/v1/projects/system/users?search=${encodeURIComponent(email)}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return (await res.json()).data as { id: string; email: string; role_id: string | null }[];
}

test("with no operator the banner prints a link that creates one, once, and only while there is none", async () => {
  const db = await isolatedDatabase();
  const env = { ...db.env, BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET, LOG_LEVEL: "info" };
  try {
    const first = await spawn(env);
    const old = await linkOf(first.output);
    assert.match(first.output(), /No operator can sign in to the console yet/);
    assert.match(first.output(), /BOOTSTRAP_ADMIN_EMAIL/, "says how a variable makes one");
    await first.stop();

    // Still none at the next start: a new link.
    const proc = await spawn(env);
    try {
      const { link, token } = await linkOf(proc.output);
      assert.notEqual(token, old.token);
      const page = await fetch(link.replace(/^http:\/\/[^/]+/, proc.url));
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /name="email"/);
      assert.match(html, /name="password"/);
      assert.equal(
        (await setUp(proc.url, { token, email: "not an email", password: "long enough" })).status,
        400,
      );
      const short = await setUp(proc.url, { token, email: "ops@example.com", password: "short" });
      assert.equal(short.status, 400);
      assert.match(short.html, /at least 8 characters/);
      assert.equal(
        (await setUp(proc.url, { token: "made-up", email: "ops@example.com", password: "long enough" }))
          .status,
        400,
      );
      const made = await setUp(proc.url, { token, email: " Ops@Example.com ", password: "a long password" });
      assert.equal(made.status, 303, made.html);
      const [operator] = await systemUsers(proc.url, "ops@example.com");
      assert.equal(operator.email, "ops@example.com");
      assert.ok(operator.role_id, "the admin role");
      assert.equal(
        (await setUp(proc.url, { token, email: "other@example.com", password: "a long password" })).status,
        400,
        "used once",
      );
      const moot = await setUp(proc.url, {
        token: old.token,
        email: "other@example.com",
        password: "long enough",
      });
      assert.equal(moot.status, 400, "an operator exists: the older link is moot");
      assert.match(moot.html, /expired or was already used/);
      assert.deepEqual(await systemUsers(proc.url, "other@example.com"), []);
    } finally {
      await proc.stop();
    }

    const later = await spawn(env);
    await later.stop();
    assert.doesNotMatch(later.output(), /console\/setup|No operator/, "an operator exists: no link");
  } finally {
    await db.drop();
  }
});

test("BOOTSTRAP_ADMIN_EMAIL's operator without a password gets a new link at the next start", async () => {
  const db = await isolatedDatabase();
  const env = {
    ...db.env,
    BOOTSTRAP_ADMIN_SECRET: ADMIN_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: "named@example.com",
    LOG_LEVEL: "info",
  };
  try {
    const first = await spawn(env);
    await linkOf(first.output);
    await first.stop();
    const proc = await spawn(env);
    try {
      const { token } = await linkOf(proc.output);
      assert.match(proc.output(), /named@example\.com \(BOOTSTRAP_ADMIN_EMAIL\): choose a password/);
      const page = await (await fetch(`${proc.url}/console/setup?token=${token}`)).text();
      assert.doesNotMatch(page, /name="email"/, "the email is the variable's");
      assert.equal((await setUp(proc.url, { token, password: "a long password" })).status, 303);
      assert.equal((await systemUsers(proc.url, "named@example.com")).length, 1);
    } finally {
      await proc.stop();
    }
  } finally {
    await db.drop();
  }
});

test("GET / is a page linking the console, /docs and discovery, and JSON when asked", async () => {
  const res = await http("/");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
  const csp = res.headers.get("content-security-policy") ?? "";
  assert.match(csp, /default-src 'none'; style-src 'nonce-[\w-]+'; img-src 'self'/);
  const html = await res.text();
  for (const href of ["/console", "/docs", "/.well-known/openid-configuration", "/.well-known/jwks.json"]) {
    assert.ok(html.includes(`href="${href}"`), href);
  }
  assert.match(html, /<link rel="icon" href="\/favicon\.svg"/);
  assert.doesNotMatch(html, /<script/);

  const url = await baseUrl();
  const json = await http("/", { headers: { accept: "application/json" } });
  assert.equal(json.status, 200);
  assert.equal(json.headers.get("vary"), "Accept");
  const body = await json.json();
  assert.equal(body.console, `${url}/console`);
  assert.equal(body.docs, `${url}/docs`);
  assert.equal(body.openid_configuration, `${url}/.well-known/openid-configuration`);
  assert.equal(body.oauth_authorization_server, `${url}/.well-known/oauth-authorization-server`);
  assert.equal(body.jwks, `${url}/.well-known/jwks.json`);
});

test("the icon is served as SVG and as a 32x32 ICO, cached for long", async () => {
  const svg = await http("/favicon.svg");
  assert.equal(svg.headers.get("content-type"), "image/svg+xml");
  assert.match(svg.headers.get("cache-control") ?? "", /max-age=\d{7,}/);
  assert.match(await svg.text(), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  const ico = await http("/favicon.ico");
  assert.equal(ico.status, 200);
  assert.equal(ico.headers.get("content-type"), "image/x-icon");
  const bytes = new Uint8Array(await ico.arrayBuffer());
  const v = new DataView(bytes.buffer);
  assert.deepEqual([v.getUint16(0, true), v.getUint16(2, true), v.getUint16(4, true)], [0, 1, 1], "ICONDIR");
  assert.deepEqual([bytes[6], bytes[7], v.getUint16(12, true)], [32, 32, 32], "32x32, 32 bits");
  assert.equal(v.getUint32(18, true) + v.getUint32(14, true), bytes.length, "the image fills the file");
});

test("/openapi.json names the service in servers, and 'Create a project' lists every default resource", async () => {
  const doc = await (await http("/openapi.json")).json();
  assert.deepEqual(doc.servers, [{ url: await baseUrl() }]);
  const description: string = doc.paths["/api/v1/projects"].post.description;
  for (const d of DEFAULTS.filter((d) => !("systemOnly" in d))) {
    assert.ok(
      description.includes(`\`${d.code}\` (${d.actions.join(", ")})`),
      `${d.code} in: ${description}`,
    );
  }
});

test("an upgrade that adds default permissions gives them to the operators' role, and to no other role", async () => {
  const db = await isolatedDatabase();
  const env = {
    ...db.env,
    BOOTSTRAP_ADMIN_EMAIL: "ops@example.com",
    BOOTSTRAP_ADMIN_PASSWORD: "a long password",
  };
  try {
    const first = await startWith(env);
    try {
      const sql = first.db.sql;
      // A role holding one default permission only.
      await sql`insert into roles (project_id, id, code, name) values ('system', 'reader-role', 'reader', 'Reader')`;
      await sql`
        insert into role_permissions (project_id, role_id, permission_id)
        select 'system', 'reader-role', pe.id from permissions pe join resources r on r.id = pe.resource_id
        where pe.project_id = 'system' and r.code = 'users' and pe.code = 'read'`;
      // The database as an older version left it: no scim resource, no users:export_secrets.
      await sql`
        delete from permissions pe using resources r
        where r.id = pe.resource_id and r.is_default and (r.code = 'scim' or pe.code = 'export_secrets')`;
      await sql`delete from resources where is_default and code = 'scim'`;
    } finally {
      await first.close();
    }
    const next = await startWith(env);
    try {
      const held = (role: string) =>
        next.db.sql<{ code: string }[]>`
          select r.code || ':' || pe.code as code from role_permissions rp
          join permissions pe on pe.id = rp.permission_id join resources r on r.id = pe.resource_id
          where rp.role_id = ${role} and (r.code = 'scim' or pe.code = 'export_secrets') order by 1`
          .then((rows) => rows.map((r) => r.code));
      const [operator] = await next.db.sql<{ role_id: string }[]>`
        select role_id from users where project_id = 'system' and email = 'ops@example.com'`;
      assert.deepEqual(await held(operator.role_id), ["scim:read", "scim:write", "users:export_secrets"]);
      assert.deepEqual(await held("reader-role"), [], "a role that held less gains nothing");
    } finally {
      await next.close();
    }
  } finally {
    await db.drop();
  }
});
