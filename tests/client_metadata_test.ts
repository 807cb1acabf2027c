/**
 * Client ID Metadata Documents, black-box: a `client_id` that is an https URL names the client its JSON document
 * describes. The service runs as its own process trusting a test CA (tests/client_metadata_support.ts) and
 * fetches documents from this file's HTTPS server. Covered: the project's setting (off, any, hosts) at /authorize
 * and live at the token endpoint; the first use recorded and shown to admins, the consent page naming the
 * document's host, a token for the API asked and its refresh; the document cached as its headers say; every bad
 * document refused with a page, nothing recorded and an audit event saying why; a blocked client; the fields the
 * document decides; the address guard (on the file's shared service, which reaches no private address); and least
 * privilege for the setting. Without `openssl` the tests return.
 */
import assert from "node:assert/strict";
import {
  type Answer,
  documentServer,
  launchTrusting,
  type TrustingService,
} from "./client_metadata_support.ts";
import {
  type Api,
  baseUrl,
  challengeOf,
  clientWith,
  expectError,
  newProject,
  newVerifier,
  REDIRECT_URI,
  type Sdk,
  sdkAt,
  systemTokenAt,
  test,
} from "./helpers.ts";
import { Browser, payloadOf } from "./oidc_support.ts";

/** A project's `client_metadata_documents`, as the SDK's generated enums take it. */
type Documents = "off" | "any" | { hosts: string[] };
const setting = (v: Documents) => v as never;

let started: Promise<TrustingService | null> | undefined;
/** The file's service, trusting the test CA (null without openssl). */
const trusting = () => started ??= launchTrusting();

type Setup = {
  url: string;
  api: Sdk;
  projectId: string;
  indicator: string;
  email: string;
  password: string;
  userId: string;
};

/**
 * A project of `svc` admitting URL clients as told, with a "Notes API" (read, write) at a new indicator, and a user
 * whose role holds `read`.
 */
async function setup(
  url: string,
  documents: Documents = "any",
): Promise<Setup> {
  const admin = sdkAt(url, await systemTokenAt(url));
  const created = await admin.projects.createProject({
    name: `cimd ${crypto.randomUUID().slice(0, 8)}`,
    client_metadata_documents: setting(documents),
  });
  assert.deepEqual(created.client_metadata_documents, documents);
  const token = await systemTokenAt(url);
  const api = sdkAt(url, token);
  const projectId = created.id;
  const indicator = `https://notes-${crypto.randomUUID().slice(0, 8)}.example/mcp`;
  const resource = await api.resources.createResource(projectId, {
    name: "Notes API",
    code: "notes",
    indicator,
    permissions: [
      { name: "Read", code: "read", description: "Read your notes" },
      { name: "Write", code: "write", description: "Change your notes" },
    ],
  });
  const read = resource.permissions.find((x) => x.code === "read")!.id;
  const role = await api.roles.createRole(projectId, {
    name: "Reader",
    code: "reader",
    permission_ids: [read],
  });
  const email = `ann-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery";
  const user = await api.users.createUser(projectId, {
    display_name: "Ann",
    email,
    password,
    role_id: role.id,
  });
  return { url, api, projectId, indicator, email, password, userId: user.id };
}

/** A client metadata document as an agent publishes it. */
const documentOf = (clientId: string, fields: Record<string, unknown> = {}) => ({
  client_id: clientId,
  client_name: "Notes agent",
  client_uri: "https://agent.example",
  redirect_uris: [REDIRECT_URI],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  ...fields,
});

/** GET /authorize for the URL client, in `browser`. */
async function authorize(
  browser: Browser,
  s: Setup,
  clientId: string,
  extra: Record<string, string | null> = {},
) {
  const verifier = newVerifier();
  const query: Record<string, string> = {
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
    resource: s.indicator,
    scope: "read",
    state: "st",
  };
  for (const [k, v] of Object.entries(extra)) v === null ? delete query[k] : query[k] = v;
  const res = await browser.get(`/authorize?${new URLSearchParams(query)}`);
  return { res, html: await res.text(), verifier };
}

const field = (html: string, name: string) =>
  new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
const hiddenFields = (html: string) =>
  Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]),
  );

/** The login form, then the consent page (checked to name the client and its host), allowed: the redirect. */
async function signInAndAllow(browser: Browser, s: Setup, html: string, host: string): Promise<URL> {
  const login = await browser.post("/authorize", {
    request_id: field(html, "request_id"),
    csrf: field(html, "csrf"),
    email: s.email,
    password: s.password,
  });
  assert.equal(login.status, 303, await login.text());
  const to = new URL(login.headers.get("location")!);
  assert.equal(to.pathname, "/authorize/consent", "a URL client is another party's: the user consents");
  const page = await browser.get(to.pathname + to.search);
  const consent = await page.text();
  assert.equal(page.status, 200, consent);
  assert.match(consent, /id="client-name">Notes agent</);
  assert.match(consent, new RegExp(`id="client-host">${host.replace(/\./g, "\\.")}<`), "the document's host");
  assert.match(consent, /Read your notes/);
  const allowed = await browser.post("/authorize/consent", { ...hiddenFields(consent), decision: "allow" });
  assert.equal(allowed.status, 303, await allowed.text());
  return new URL(allowed.headers.get("location")!);
}

async function postTokenAt(url: string, form: Record<string, string>) {
  const res = await fetch(`${url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, body: await res.json() };
}

/** The project's audit events of a type, newest first. */
async function eventsOf(s: Setup, type: string): Promise<Api.AuditEvent[]> {
  const res = await fetch(`${s.url}/api/v1/projects/${s.projectId}/audit-events?type=${type}`, {
    headers: { authorization: `Bearer ${await systemTokenAt(s.url)}` },
  });
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

/** The project's clients recorded from metadata documents. */
async function urlClients(s: Setup): Promise<Api.Client[]> {
  const page = await s.api.clients.listClients(
    s.projectId,
    1,
    100,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  return page.data.filter((c) => c.metadata_url !== null);
}

test("a URL client signs in: its document fetched once, recorded, consent names its host, a token for the API, a refresh", async () => {
  const svc = await trusting();
  const docs = await documentServer();
  if (!svc || !docs) return;
  const s = await setup(svc.url);
  const clientId = docs.url(`/agents/${crypto.randomUUID().slice(0, 8)}/client.json`);
  const path = new URL(clientId).pathname;
  docs.route(path, { body: documentOf(clientId), headers: { "cache-control": "public, max-age=3600" } });

  // Both metadata documents tell agents that URL clients are welcome (some project admits them).
  for (const doc of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
    const metadata = await (await fetch(`${svc.url}${doc}`)).json();
    assert.equal(metadata.client_id_metadata_document_supported, true, doc);
    assert.ok(metadata.token_endpoint_auth_methods_supported.includes("none"));
    assert.deepEqual(metadata.code_challenge_methods_supported, ["S256"]);
    assert.equal(metadata.authorization_response_iss_parameter_supported, true);
  }

  const browser = new Browser(svc.url);
  const { res, html, verifier } = await authorize(browser, s, clientId);
  assert.equal(res.status, 200, html);
  assert.equal(docs.hits(path), 1);
  const location = await signInAndAllow(browser, s, html, new URL(clientId).host);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  assert.equal(location.searchParams.get("iss"), svc.url);
  const code = location.searchParams.get("code")!;

  const tokens = await postTokenAt(svc.url, {
    grant_type: "authorization_code",
    client_id: clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
  const claims = payloadOf(tokens.body.access_token);
  assert.equal(claims.aud, s.indicator);
  assert.equal(claims.scope, "read");
  assert.equal(claims.sub, s.userId);

  // Recorded once, as a third-party client of the project whose fields are the document's.
  const [recorded, ...more] = await urlClients(s);
  assert.equal(more.length, 0);
  assert.equal(recorded.metadata_url, clientId);
  assert.equal(recorded.name, "Notes agent");
  assert.deepEqual(recorded.redirect_uris, [REDIRECT_URI]);
  assert.equal(recorded.third_party, true);
  assert.equal(recorded.token_endpoint_auth_method, "none");
  assert.ok(recorded.last_used_at);
  assert.notEqual(recorded.id, clientId, "an id of the service's own; the URL is its client_id");
  const [event] = await eventsOf(s, "client.recorded");
  assert.equal(event.target?.id, recorded.id);
  assert.equal(event.details?.metadata_url, clientId);

  // The refresh names the client by its URL too; the token stays for the API.
  const refreshed = await postTokenAt(svc.url, {
    grant_type: "refresh_token",
    client_id: clientId,
    refresh_token: tokens.body.refresh_token,
  });
  assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  assert.equal(payloadOf(refreshed.body.access_token).aud, s.indicator);

  // Within the hour its document said: not fetched again, and the kept consent asks nothing.
  const again = await authorize(browser, s, clientId);
  assert.equal(docs.hits(path), 1, "cached as Cache-Control allows");
  assert.equal(again.res.status, 200, again.html);

  // An unrecorded URL at the token endpoint is no client.
  const stranger = await postTokenAt(svc.url, {
    grant_type: "authorization_code",
    client_id: docs.url("/never/used.json"),
    code: "x".repeat(43),
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  assert.equal(stranger.status, 400);
  assert.equal(stranger.body.error, "invalid_client");
});

test("the project decides: off and other hosts answer unauthorized_client, at /authorize and live at the token endpoint; blocking refuses", async () => {
  const svc = await trusting();
  const docs = await documentServer();
  if (!svc || !docs) return;
  const off = await setup(svc.url, "off");
  const clientId = docs.url(`/agents/${crypto.randomUUID().slice(0, 8)}/client.json`);
  const path = new URL(clientId).pathname;
  docs.route(path, { body: documentOf(clientId) });

  const browser = new Browser(svc.url);
  const refused = await authorize(browser, off, clientId);
  assert.equal(refused.res.status, 400);
  assert.match(refused.html, /unauthorized_client/);
  assert.equal(docs.hits(path), 0, "a project that admits none fetches nothing");
  assert.equal((await eventsOf(off, "client_metadata.refused"))[0].details?.reason, "not_admitted");

  // Admitted by host; signs in; then the host is taken off the list: the next refresh is refused.
  const s = await setup(svc.url, { hosts: ["127.0.0.1"] });
  const first = await authorize(browser, s, clientId);
  assert.equal(first.res.status, 200, first.html);
  const location = await signInAndAllow(browser, s, first.html, new URL(clientId).host);
  const tokens = await postTokenAt(svc.url, {
    grant_type: "authorization_code",
    client_id: clientId,
    code: location.searchParams.get("code")!,
    redirect_uri: REDIRECT_URI,
    code_verifier: first.verifier,
  });
  assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
  const project = await s.api.projects.getProject(s.projectId);
  await s.api.projects.updateProject(s.projectId, {
    name: project.name,
    client_metadata_documents: setting({ hosts: ["agents.example.com"] }),
  });
  const refresh = await postTokenAt(svc.url, {
    grant_type: "refresh_token",
    client_id: clientId,
    refresh_token: tokens.body.refresh_token,
  });
  assert.equal(refresh.status, 400);
  assert.equal(refresh.body.error, "unauthorized_client");
  assert.equal(refresh.body.error_code, "unauthorized_client");
  const notListed = await authorize(browser, s, clientId);
  assert.equal(notListed.res.status, 400);
  assert.match(notListed.html, /unauthorized_client/);

  // Admitted again, but blocked by an admin: refused, and so is its refresh.
  await s.api.projects.updateProject(s.projectId, {
    name: project.name,
    client_metadata_documents: setting("any"),
  });
  const [recorded] = await urlClients(s);
  // What the document decides is not the admin's to change.
  const edit = await expectError(
    s.api.clients.updateClient(s.projectId, recorded.id, {
      name: "Renamed",
      is_active: true,
      redirect_uris: ["https://elsewhere.example/cb"],
    }),
    400,
    "invalid_params",
  );
  assert.deepEqual(edit.details?.map((d) => d.field).sort(), ["name", "redirect_uris"]);
  // Nor is publishing the model's answers to it.
  const claims = await expectError(
    s.api.clients.updateClient(s.projectId, recorded.id, {
      name: recorded.name,
      is_active: true,
      decision_claims: [{ claim: "notes", resource_type: "notes", action: "read" }],
    }),
    400,
    "invalid_params",
  );
  assert.deepEqual(claims.details?.map((d) => d.field), ["decision_claims"]);
  await expectError(s.api.clients.rotateClientSecret(s.projectId, recorded.id), 400, "invalid_params");
  const blocked = await s.api.clients.updateClient(s.projectId, recorded.id, {
    name: recorded.name,
    is_active: false,
    description: "Blocked: unknown agent",
  });
  assert.equal(blocked.is_active, false);
  const page = await authorize(new Browser(svc.url), s, clientId);
  assert.equal(page.res.status, 400);
  assert.match(page.html, /disabled/);
});

test("a bad document refuses the authorization request with a page, records nothing, and an audit event says why", async () => {
  const svc = await trusting();
  const docs = await documentServer();
  if (!svc || !docs) return;
  const s = await setup(svc.url);
  const base = `/bad/${crypto.randomUUID().slice(0, 8)}`;
  const url = (name: string) => docs.url(`${base}/${name}.json`);
  const cases: { name: string; answer: (id: string) => Answer; reason: string }[] = [
    { name: "missing", answer: () => ({ status: 404, body: "gone" }), reason: "bad_status" },
    {
      name: "large",
      answer: (id) => ({ body: documentOf(id, { padding: "x".repeat(6000) }) }),
      reason: "too_large",
    },
    { name: "html", answer: () => ({ body: "<!doctype html><h1>Hi</h1>" }), reason: "not_json" },
    {
      name: "other",
      answer: () => ({ body: documentOf("https://other.example/client.json") }),
      reason: "client_id_mismatch",
    },
    {
      name: "elsewhere",
      answer: (id) => ({ body: documentOf(id, { redirect_uris: ["https://agent.example/callback"] }) }),
      reason: "redirect_uri_not_listed",
    },
    {
      name: "secret",
      answer: (id) => ({ body: documentOf(id, { token_endpoint_auth_method: "client_secret_basic" }) }),
      reason: "invalid_document",
    },
    { name: "slow", answer: (id) => ({ body: documentOf(id), delayMs: 7_000 }), reason: "timeout" },
  ];
  for (const c of cases) docs.route(new URL(url(c.name)).pathname, c.answer(url(c.name)));
  const browser = new Browser(svc.url);
  for (const c of cases) {
    const { res, html } = await authorize(browser, s, url(c.name));
    assert.equal(res.status, 400, `${c.name}: ${html}`);
    assert.doesNotMatch(html, /name="password"/, `${c.name}: no login form`);
    assert.match(html, /metadata document|redirect_uri/, c.name);
  }
  // Nothing reachable at all: a port nobody listens on.
  const closed = `https://127.0.0.1:9/agents/client.json`;
  const unreachable = await authorize(browser, s, closed);
  assert.equal(unreachable.res.status, 400);

  assert.deepEqual(await urlClients(s), [], "nothing recorded");
  const events = await eventsOf(s, "client_metadata.refused");
  const reasons = Object.fromEntries(events.map((e) => [e.details?.metadata_url, e.details?.reason]));
  for (const c of cases) assert.equal(reasons[url(c.name)], c.reason, c.name);
  assert.equal(reasons[closed], "unreachable");

  // Requests that never reach a document: no resource, an unknown one, a malformed URL.
  const good = docs.url(`${base}/good.json`);
  docs.route(new URL(good).pathname, { body: documentOf(good) });
  const noResource = await authorize(browser, s, good, { resource: null });
  assert.equal(noResource.res.status, 400);
  assert.match(noResource.html, /invalid_request/);
  const unknown = await authorize(browser, s, good, { resource: "https://nobody.example/api" });
  assert.equal(unknown.res.status, 400);
  assert.match(unknown.html, /invalid_target/);
  const dotted = await authorize(browser, s, docs.url(`${base}/../good.json`));
  assert.equal(dotted.res.status, 400);
  assert.equal(docs.hits(new URL(good).pathname), 0);
});

test("a document on a private address is refused by the address guard before any connection", async () => {
  // The file's shared service: private targets are not allowed there (the default).
  const docs = await documentServer();
  if (!docs) return;
  const p = await newProject({ client_metadata_documents: setting("any") });
  const indicator = `https://notes-${crypto.randomUUID().slice(0, 8)}.example/mcp`;
  await p.api.resources.createResource(p.project.id, { name: "Notes API", code: "notes", indicator });
  const clientId = docs.url(`/private/${crypto.randomUUID().slice(0, 8)}/client.json`);
  docs.route(new URL(clientId).pathname, { body: documentOf(clientId) });
  const s: Setup = {
    url: await baseUrl(),
    api: p.api,
    projectId: p.project.id,
    indicator,
    email: "",
    password: "",
    userId: "",
  };
  const { res, html } = await authorize(new Browser(), s, clientId);
  assert.equal(res.status, 400, html);
  assert.equal(docs.hits(new URL(clientId).pathname), 0);
  const events = await fetch(
    `${s.url}/api/v1/projects/${p.project.id}/audit-events?type=client_metadata.refused`,
    {
      headers: { authorization: `Bearer ${p.token}` },
    },
  );
  const [event] = (await events.json()).data;
  assert.equal(event.details.reason, "private_address");
});

test("least privilege: only a caller covering the whole project changes client_metadata_documents", async () => {
  const p = await newProject();
  const limited = await clientWith(p, ["projects:read", "projects:update"]);
  const err = await expectError(
    limited.api.projects.updateProject(p.project.id, {
      name: p.project.name,
      client_metadata_documents: setting("any"),
    }),
    403,
    "insufficient_permission",
  );
  assert.match(err.error_description, /client metadata documents/);
  // Unchanged, it is no change: the same caller may save the project as it is.
  await limited.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    client_metadata_documents: setting("off"),
  });
  const done = await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    client_metadata_documents: setting({ hosts: ["Agents.Example.com"] }),
  });
  assert.deepEqual(done.client_metadata_documents, { hosts: ["agents.example.com"] });
  const bad = await expectError(
    p.api.projects.updateProject(p.project.id, {
      name: p.project.name,
      client_metadata_documents: setting({ hosts: ["not a host"] }),
    }),
    400,
    "invalid_params",
  );
  assert.ok(bad.details?.some((d) => d.field.startsWith("client_metadata_documents")), JSON.stringify(bad));
});

test("one URL recorded by two projects: its code, refresh and revocation each reach their own project's row", async () => {
  const svc = await trusting();
  const docs = await documentServer();
  if (!svc || !docs) return;
  const [one, two] = [await setup(svc.url), await setup(svc.url)];
  const clientId = docs.url(`/shared/${crypto.randomUUID().slice(0, 8)}/client.json`);
  docs.route(new URL(clientId).pathname, { body: documentOf(clientId) });
  const signIn = async (s: Setup) => {
    const browser = new Browser(svc.url);
    const { res, html, verifier } = await authorize(browser, s, clientId);
    assert.equal(res.status, 200, html);
    const location = await signInAndAllow(browser, s, html, new URL(clientId).host);
    const tokens = await postTokenAt(svc.url, {
      grant_type: "authorization_code",
      client_id: clientId,
      code: location.searchParams.get("code")!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    return tokens.body as { access_token: string; refresh_token: string };
  };
  const a = await signIn(one);
  const b = await signIn(two);
  assert.equal(payloadOf(a.access_token).aud, one.indicator);
  assert.equal(payloadOf(b.access_token).aud, two.indicator);
  assert.equal((await urlClients(one)).length, 1);
  assert.equal((await urlClients(two)).length, 1);
  const refreshed = await postTokenAt(svc.url, {
    grant_type: "refresh_token",
    client_id: clientId,
    refresh_token: b.refresh_token,
  });
  assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  // Revoking an access token by the URL: the token's own project's row revokes it.
  const revoked = await fetch(`${svc.url}/api/v1/tokens/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: a.access_token, client_id: clientId }).toString(),
  });
  assert.equal(revoked.status, 200, await revoked.clone().text());
  await revoked.body?.cancel();
  const [event] = await eventsOf(one, "token.revoked");
  assert.equal(event?.target?.id, payloadOf(a.access_token).jti);
});
