/**
 * A client's own `redirect_uris` and `post_logout_redirect_uris`: when a client has a list it is that client's
 * list (the project's no longer applies to it), otherwise the project's applies; the same rules as the project's
 * lists; the audit trail; who may change them.
 */
import assert from "node:assert/strict";
import {
  type Api,
  challengeOf,
  clientWith,
  exchangeCode,
  expectError,
  expectOAuthError,
  http,
  loginProject,
  newVerifier,
  openLoginPage,
  REDIRECT_URI,
  submitLogin,
  test,
} from "./helpers.ts";
import { LOGOUT_URI } from "./oidc_support.ts";

const OWN_URI = "https://app.example/own-callback";
const OWN_LOGOUT_URI = "https://app.example/own-signed-out";

async function authorizeQuery(clientId: string, redirectUri: string, verifier = newVerifier()) {
  return {
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
  };
}

/** GET /authorize: its status, and whether it redirected anywhere. */
async function authorizeStatus(clientId: string, redirectUri: string) {
  const res = await http(`/authorize?${new URLSearchParams(await authorizeQuery(clientId, redirectUri))}`, {
    redirect: "manual",
  });
  await res.body?.cancel();
  return { status: res.status, location: res.headers.get("location") };
}

/** GET /logout of a browser without a session: where it goes (303) or its page's status. */
async function logoutTo(clientId: string, uri: string) {
  const q = new URLSearchParams({ client_id: clientId, post_logout_redirect_uri: uri, state: "s" });
  const res = await http(`/logout?${q}`, { redirect: "manual" });
  const text = await res.text();
  return { status: res.status, location: res.headers.get("location"), text };
}

test("a client with its own redirect_uris uses them over the project's; a client without uses the project's", async () => {
  const p = await loginProject();
  const own = await p.api.clients.createClient(p.project.id, { name: "own", redirect_uris: [OWN_URI] });
  assert.deepEqual(own.redirect_uris, [OWN_URI]);
  assert.deepEqual(own.post_logout_redirect_uris, []);
  const plain = await p.api.clients.createClient(p.project.id, { name: "plain" });
  assert.deepEqual(plain.redirect_uris, []);

  // The project's URI is refused for the client with a list of its own, and nothing redirects.
  assert.deepEqual(await authorizeStatus(own.id, REDIRECT_URI), { status: 400, location: null });
  assert.equal((await authorizeStatus(own.id, OWN_URI)).status, 200);
  // The client without a list: the project's, and not another client's.
  assert.equal((await authorizeStatus(plain.id, REDIRECT_URI)).status, 200);
  assert.deepEqual(await authorizeStatus(plain.id, OWN_URI), { status: 400, location: null });

  // The whole flow with the client's own URI; the token endpoint wants the same one.
  const verifier = newVerifier();
  const page = await openLoginPage(await authorizeQuery(own.id, OWN_URI, verifier));
  assert.equal(page.status, 200, page.html);
  const res = await submitLogin(page, p.email, p.password);
  assert.equal(res.status, 303);
  const location = new URL(res.headers.get("location")!);
  assert.equal(`${location.origin}${location.pathname}`, OWN_URI);
  const code = location.searchParams.get("code")!;
  await expectOAuthError(
    exchangeCode(own.id, code, verifier, REDIRECT_URI),
    400,
    "invalid_grant",
    "different_authorize_redirect_uri",
  );
  const tokens = await exchangeCode(own.id, code, verifier, OWN_URI);
  assert.equal(tokens.status, 200, await tokens.clone().text());
  await tokens.body?.cancel();

  // Emptied, the client falls back to the project's list.
  const cleared = await p.api.clients.updateClient(p.project.id, own.id, {
    name: "own",
    is_active: true,
    redirect_uris: [],
  });
  assert.deepEqual(cleared.redirect_uris, []);
  assert.equal((await authorizeStatus(own.id, REDIRECT_URI)).status, 200);
  assert.deepEqual(await authorizeStatus(own.id, OWN_URI), { status: 400, location: null });
});

test("a login page opened with a client's URI is refused once the client's list no longer has it", async () => {
  const p = await loginProject();
  const own = await p.api.clients.createClient(p.project.id, { name: "own", redirect_uris: [OWN_URI] });
  const page = await openLoginPage(await authorizeQuery(own.id, OWN_URI));
  assert.equal(page.status, 200);
  await p.api.clients.updateClient(p.project.id, own.id, {
    name: "own",
    is_active: true,
    redirect_uris: ["https://app.example/elsewhere"],
  });
  const res = await submitLogin(page, p.email, p.password);
  assert.equal(res.status, 400);
  assert.equal(res.headers.get("location"), null);
  assert.match(await res.text(), /no longer registered/);
});

test("a client with its own post_logout_redirect_uris uses them over the project's at /logout", async () => {
  const p = await loginProject();
  await p.api.projects.updateProject(p.project.id, {
    name: p.project.name,
    post_logout_redirect_uris: [LOGOUT_URI],
  });
  const own = await p.api.clients.createClient(p.project.id, {
    name: "own",
    post_logout_redirect_uris: [OWN_LOGOUT_URI],
  });
  const plain = await p.api.clients.createClient(p.project.id, { name: "plain" });

  const refused = await logoutTo(own.id, LOGOUT_URI);
  assert.equal(refused.status, 400);
  assert.equal(refused.location, null);
  assert.match(refused.text, /not registered/);
  const sent = await logoutTo(own.id, OWN_LOGOUT_URI);
  assert.equal(sent.status, 303);
  assert.equal(sent.location, `${OWN_LOGOUT_URI}?state=s`);
  // Its redirect URIs are still the project's: only the list it has of its own is its own.
  assert.equal((await authorizeStatus(own.id, REDIRECT_URI)).status, 200);

  assert.equal((await logoutTo(plain.id, LOGOUT_URI)).status, 303);
  const other = await logoutTo(plain.id, OWN_LOGOUT_URI);
  assert.equal(other.status, 400);
  assert.equal(other.location, null);
});

test("a client's redirect lists are checked as the project's: 400 invalid_params with details", async () => {
  const p = await loginProject();
  const created = await p.api.clients.createClient(p.project.id, { name: "c" });
  const bad: [Record<string, unknown>, string][] = [
    [{ redirect_uris: ["http://example.com/cb"] }, "redirect_uris.0"],
    [{ redirect_uris: ["https://example.com/cb#frag"] }, "redirect_uris.0"],
    [{ redirect_uris: ["/relative"] }, "redirect_uris.0"],
    [{ redirect_uris: [OWN_URI, "https://user:pw@example.com/cb"] }, "redirect_uris.1"],
    [{ redirect_uris: ["https://A.example/cb"] }, "redirect_uris.0"],
    [{ redirect_uris: ["https://a.example/cb?code=1"] }, "redirect_uris.0"],
    [{ redirect_uris: [OWN_URI, OWN_URI] }, "redirect_uris"],
    [{ redirect_uris: OWN_URI }, "redirect_uris"],
    [{ redirect_uris: Array.from({ length: 51 }, (_, i) => `${OWN_URI}/${i}`) }, "redirect_uris"],
    [{ post_logout_redirect_uris: ["javascript:alert(1)"] }, "post_logout_redirect_uris.0"],
    [{ post_logout_redirect_uris: ["http://example.com/out"] }, "post_logout_redirect_uris.0"],
  ];
  for (const [fields, field] of bad) {
    for (
      const call of [
        () => p.api.clients.createClient(p.project.id, { name: "c", ...fields } as Api.CreateClientRequest),
        () =>
          p.api.clients.updateClient(p.project.id, created.id, {
            name: "c",
            is_active: true,
            ...fields,
          } as Api.UpdateClientRequest),
      ]
    ) {
      const err = await expectError(call(), 400, "invalid_params");
      assert.ok(
        err.details?.some((d) => d.field === field),
        `${JSON.stringify(fields)} → ${JSON.stringify(err.details)}`,
      );
    }
  }
  // Nothing was written.
  const now = await p.api.clients.getClient(p.project.id, created.id);
  assert.deepEqual([now.redirect_uris, now.post_logout_redirect_uris], [[], []]);
});

test("PUT …/clients/{id} keeps omitted lists, records them in client.updated, and needs a caller covering the project", async () => {
  const p = await loginProject();
  const created = await p.api.clients.createClient(p.project.id, { name: "c", redirect_uris: [OWN_URI] });
  const kept = await p.api.clients.updateClient(p.project.id, created.id, {
    name: "c2",
    is_active: true,
    post_logout_redirect_uris: [OWN_LOGOUT_URI],
  });
  assert.deepEqual(kept.redirect_uris, [OWN_URI]);
  assert.deepEqual(kept.post_logout_redirect_uris, [OWN_LOGOUT_URI]);
  const listed = await p.api.clients.listClients(
    p.project.id,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  const row = listed.data.find((c) => c.id === created.id)!;
  assert.deepEqual([row.redirect_uris, row.post_logout_redirect_uris], [[OWN_URI], [OWN_LOGOUT_URI]]);

  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=client.updated`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  const events = (await res.json()).data as { target: { id: string }; changes: Record<string, unknown> }[];
  const event = events.find((e) => e.target.id === created.id)!;
  assert.deepEqual(event.changes.post_logout_redirect_uris, { before: [], after: [OWN_LOGOUT_URI] });
  assert.equal(event.changes.redirect_uris, undefined, "unchanged lists are not in the changes");

  // A caller that may update the client but does not cover the project cannot move where its codes go.
  const limited = await clientWith(p, ["clients:create", "clients:read", "clients:update"]);
  const mine = await limited.api.clients.createClient(p.project.id, { name: "mine" });
  const refused = await expectError(
    limited.api.clients.updateClient(p.project.id, mine.id, {
      name: "mine",
      is_active: true,
      redirect_uris: [OWN_URI],
    }),
    403,
    "insufficient_permission",
  );
  assert.equal(refused.details?.[0].field, "redirect_uris");
  await expectError(
    limited.api.clients.createClient(p.project.id, {
      name: "x",
      post_logout_redirect_uris: [OWN_LOGOUT_URI],
    }),
    403,
    "insufficient_permission",
  );
  // Unchanged lists need nothing more than before.
  const renamed = await limited.api.clients.updateClient(p.project.id, mine.id, {
    name: "mine2",
    is_active: true,
    redirect_uris: [],
  });
  assert.equal(renamed.name, "mine2");
});

/** The visible text of a page, its tags dropped and its entities read back (what a person reads). */
function textOf(html: string): string {
  return html.replace(/<style[\s\S]*?<\/style>/g, "").replace(/<[^>]+>/g, " ").replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&")
    .replace(/\s+/g, " ");
}

test("an unregistered redirect_uri's page shows it escaped, the byte-for-byte rule and where to register it", async () => {
  const p = await loginProject();
  const url = (await http("/")).url.replace(/\/$/, "");
  const hostile = `https://evil.example/cb?x="><script>alert('x')</script>`;
  const res = await http(`/authorize?${new URLSearchParams(await authorizeQuery(p.clientId, hostile))}`, {
    redirect: "manual",
  });
  assert.equal(res.status, 400);
  assert.equal(res.headers.get("location"), null, "never a redirect to an unregistered URI");
  const html = await res.text();
  assert.doesNotMatch(html, /<script>alert/, "the received URI is escaped");
  assert.match(html, /&lt;script&gt;alert\(&#39;x&#39;\)&lt;\/script&gt;/);
  const text = textOf(html);
  assert.match(text, /The redirect_uri is not registered for this application\./);
  assert.ok(text.includes(`Received redirect_uri : ${hostile}`), text);
  assert.match(text, /must match one registered for this client byte for byte/);
  // The client has no list of its own: the project's console page and API.
  const projectPage = `${url}/console/projects/${p.project.id}`;
  assert.ok(text.includes(`project's console page ${projectPage}`), text);
  assert.match(html, new RegExp(`<a href="${projectPage}">`));
  assert.ok(text.includes(`PUT /api/v1/projects/${p.project.id} (field redirect_uris )`), text);
  // Nothing registered is listed.
  assert.ok(!text.includes(REDIRECT_URI), "the registered URIs stay unlisted");

  // A client with its own list: its own page and API.
  const own = await p.api.clients.createClient(p.project.id, { name: "own", redirect_uris: [OWN_URI] });
  const theirs = await http(
    `/authorize?${new URLSearchParams(await authorizeQuery(own.id, REDIRECT_URI))}`,
    { redirect: "manual" },
  );
  assert.equal(theirs.status, 400);
  const ownText = textOf(await theirs.text());
  assert.ok(
    ownText.includes(`console page ${url}/console/projects/${p.project.id}/clients/${own.id}`),
    ownText,
  );
  assert.ok(ownText.includes(`PUT /api/v1/projects/${p.project.id}/clients/${own.id}`), ownText);
  assert.ok(!ownText.includes(OWN_URI), "the client's URIs stay unlisted");

  // A long URI is shown shortened.
  const long = `https://evil.example/${"a".repeat(3000)}`;
  const longRes = await http(`/authorize?${new URLSearchParams(await authorizeQuery(p.clientId, long))}`, {
    redirect: "manual",
  });
  const longText = textOf(await longRes.text());
  assert.ok(!longText.includes(long));
  assert.match(longText, /\(the first 200 of 3021 characters\)/);
});

test("an unregistered post_logout_redirect_uri's page shows it escaped and where to register it, without a redirect", async () => {
  const p = await loginProject();
  const own = await p.api.clients.createClient(p.project.id, {
    name: "own",
    post_logout_redirect_uris: [OWN_LOGOUT_URI],
  });
  const hostile = `https://evil.example/out?"<b>x</b>`;
  const out = await logoutTo(own.id, hostile);
  assert.equal(out.status, 400);
  assert.equal(out.location, null);
  assert.doesNotMatch(out.text, /<b>x<\/b>/);
  const text = textOf(out.text);
  assert.match(text, /The post_logout_redirect_uri is not registered for this application\./);
  assert.ok(text.includes(`Received post_logout_redirect_uri : ${hostile}`), text);
  assert.match(text, /byte for byte/);
  assert.ok(text.includes(`/console/projects/${p.project.id}/clients/${own.id}`), text);
  assert.match(text, /field post_logout_redirect_uris/);
  assert.ok(!text.includes(OWN_LOGOUT_URI));
});
