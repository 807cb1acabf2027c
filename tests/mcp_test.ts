/**
 * An agent as agents are: the unmodified MCP TypeScript SDK's client, with its own OAuth code and a client metadata
 * URL, connects to an MCP server built with the same SDK and protected by this service's SDK
 * (createProtectedResource, RFC 9728). It finds the authorization server from the server's 401 and its protected
 * resource metadata, reads this service's RFC 8414 metadata (which admits URL client ids), names itself by the URL
 * of its Client ID Metadata Document (served over HTTPS by this test, with a CA the service is started trusting:
 * tests/client_metadata_support.ts), sends the user through the login and the consent page in Chromium, gets a
 * token whose `aud` is the MCP server's URL (RFC 8707) with the permission the user allowed, calls a tool, and
 * refreshes when the server refuses the token it has. Without /usr/bin/chromium or openssl it is skipped.
 */
import assert from "node:assert/strict";
import { hasChromium, launchChromium } from "./chromium.ts";
import {
  Client,
  McpServer,
  type OAuthClientProvider,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  WebStandardStreamableHTTPServerTransport,
} from "./mcp_deps.ts";
import { REDIRECT_URI, sdkAt, systemTokenAt, test } from "./helpers.ts";
import { documentServer, launchTrusting } from "./client_metadata_support.ts";
import { payloadOf } from "./oidc_support.ts";
import { createProtectedResource } from "../sdk/src/mod.ts";

type Tokens = { access_token: string; refresh_token?: string; token_type: string; issuer?: string };

/** The MCP client's storage, as an application keeps it: its client information, PKCE verifier, tokens. */
function provider(clientMetadataUrl: string, redirected: URL[]): OAuthClientProvider & { saved: Tokens[] } {
  let verifier = "";
  const saved: Tokens[] = [];
  let information: { client_id: string } | undefined;
  return {
    saved,
    clientMetadataUrl,
    get redirectUrl() {
      return REDIRECT_URI;
    },
    get clientMetadata() {
      return {
        client_name: "Notes agent",
        redirect_uris: [REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      };
    },
    clientInformation: () => information,
    saveClientInformation: (info: { client_id: string }) => {
      information = info;
    },
    tokens: () => saved.at(-1),
    saveTokens: (tokens: Tokens) => {
      saved.push(tokens);
    },
    redirectToAuthorization: (url: URL) => {
      redirected.push(url);
    },
    saveCodeVerifier: (v: string) => {
      verifier = v;
    },
    codeVerifier: () => verifier,
  } as OAuthClientProvider & { saved: Tokens[] };
}

test(
  "the MCP SDK's client names itself by its metadata URL, signs in by discovery, consent in Chromium and a resource indicator, calls a tool and refreshes",
  async () => {
    // This service, started trusting the test CA of the HTTPS server that publishes the agent's document.
    const [svc, docs] = await Promise.all([launchTrusting(), documentServer()]);
    if (!svc || !docs) return; // no openssl here
    const issuer = svc.url;
    const admin = sdkAt(issuer, await systemTokenAt(issuer));
    // The project admits agents that name themselves by the URL of their metadata document.
    const project = await admin.projects.createProject({
      name: "Notes",
      client_metadata_documents: "any" as never,
    });
    const p = {
      api: admin,
      project,
      email: `ann-${crypto.randomUUID().slice(0, 8)}@example.com`,
      password: "correct horse battery",
      userId: "",
    };

    // The MCP server: its URL is the API's resource indicator; the user's role may read notes.
    const refused = new Set<string>();
    let calls = 0;
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => handle(req));
    const mcpUrl = `http://127.0.0.1:${server.addr.port}/mcp`;
    const api = createProtectedResource({
      issuer,
      resource: mcpUrl,
      scopesSupported: ["read_notes"],
      resourceName: "Notes MCP",
    });
    async function handle(req: Request): Promise<Response> {
      const metadata = api.handleMetadata(req);
      if (metadata) return metadata;
      if (new URL(req.url).pathname !== "/mcp") return new Response(null, { status: 404 });
      const auth = await api.authenticate(req, { scopes: ["read_notes"] });
      if (!auth.ok) return auth.response;
      // A token the server has stopped accepting (as after a key's removal): 401 like any invalid token.
      if (refused.has(auth.claims.jti)) {
        return new Response(JSON.stringify({ error: "invalid_token" }), {
          status: 401,
          headers: {
            "content-type": "application/json",
            "www-authenticate": `Bearer error="invalid_token", resource_metadata="${api.metadataUrl}"`,
          },
        });
      }
      const mcp = new McpServer({ name: "notes", version: "1.0.0" });
      mcp.registerTool("whoami", { description: "Who the token speaks for" }, () => {
        calls++;
        return { content: [{ type: "text", text: `${auth.claims.sub} ${auth.claims.scope}` }] };
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await mcp.connect(transport);
      return await transport.handleRequest(req, {
        authInfo: {
          token: "",
          clientId: auth.claims.client_id,
          scopes: (auth.claims.scope ?? "").split(" "),
          resource: new URL(mcpUrl),
        },
      });
    }

    const resource = await p.api.resources.createResource(p.project.id, {
      name: "Notes MCP",
      code: "notes",
      indicator: mcpUrl,
      permissions: [
        { name: "Read notes", code: "read_notes", description: "Read your notes" },
        { name: "Write notes", code: "write_notes", description: "Change your notes" },
      ],
    });
    const read = resource.permissions.find((x) => x.code === "read_notes")!.id;
    const role = await p.api.roles.createRole(p.project.id, {
      name: "Reader",
      code: "reader",
      permission_ids: [read],
    });
    p.userId = (await p.api.users.createUser(p.project.id, {
      display_name: "Login User",
      email: p.email,
      password: p.password,
      role_id: role.id,
    })).id;
    // The agent is someone else's application, known to the service only by the document it publishes.
    const clientMetadataUrl = docs.url("/notes-agent/client.json");
    docs.route("/notes-agent/client.json", {
      body: {
        client_id: clientMetadataUrl,
        client_name: "Notes agent",
        redirect_uris: [REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      headers: { "cache-control": "max-age=600" },
    });

    const redirected: URL[] = [];
    const storage = provider(clientMetadataUrl, redirected);
    const client = new Client({ name: "notes-agent", version: "1.0.0" });
    const browser = await launchChromium();
    try {
      // 1. No token: the server's 401 names its metadata, which names this service; the SDK sends the user there.
      await assert.rejects(
        client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: storage })),
        UnauthorizedError,
      );
      assert.equal(redirected.length, 1);
      const authorize = redirected[0];
      assert.equal(authorize.origin + authorize.pathname, `${issuer}/authorize`);
      assert.equal(authorize.searchParams.get("resource"), mcpUrl);
      assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
      assert.equal(
        authorize.searchParams.get("client_id"),
        clientMetadataUrl,
        "the document's URL (SEP-991)",
      );

      // 2. The user signs in and allows the agent in a real browser; the callback is the agent's.
      const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
      await page.route(
        `${new URL(REDIRECT_URI).origin}/**`,
        (route) =>
          route.fulfill({
            contentType: "text/html",
            body: "<!doctype html><title>Agent</title><h1>Done</h1>",
          }),
      );
      await page.goto(authorize.href);
      await page.getByLabel("Email").fill(p.email);
      await page.getByLabel("Password").fill(p.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL(/\/authorize\/consent/);
      assert.equal((await page.textContent("h1"))?.trim(), "Allow Notes agent?");
      assert.equal(await page.textContent("#client-host"), new URL(clientMetadataUrl).host);
      assert.match((await page.textContent("#permissions"))!, /Read your notes/);
      await page.getByRole("button", { name: "Allow" }).click();
      await page.waitForURL((u) => u.href.startsWith(REDIRECT_URI));
      const landed = new URL(page.url());
      assert.equal(landed.searchParams.get("iss"), issuer);
      const code = landed.searchParams.get("code");
      assert.ok(code);

      // 3. The SDK exchanges the code (with the resource) and connects; the token is for the MCP server.
      const finishing = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: storage });
      await finishing.finishAuth(code);
      const first = storage.saved.at(-1)!;
      const claims = payloadOf(first.access_token);
      assert.equal(claims.aud, mcpUrl);
      assert.equal(claims.iss, issuer);
      assert.equal(claims.scope, "read_notes");
      assert.equal(claims.sub, p.userId);
      assert.ok(first.refresh_token);
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: storage }));
      const answer = await client.callTool({ name: "whoami", arguments: {} });
      assert.deepEqual(answer.content, [{ type: "text", text: `${p.userId} read_notes` }]);

      // 4. The server stops accepting that token: the SDK refreshes (rotating the refresh token) and goes on.
      refused.add(claims.jti as string);
      const again = await client.callTool({ name: "whoami", arguments: {} });
      assert.deepEqual(again.content, [{ type: "text", text: `${p.userId} read_notes` }]);
      const second = storage.saved.at(-1)!;
      assert.notEqual(second.access_token, first.access_token);
      assert.notEqual(second.refresh_token, first.refresh_token);
      assert.equal(payloadOf(second.access_token).aud, mcpUrl);
      assert.equal(redirected.length, 1, "no second sign-in");
      assert.equal(calls, 2);
      await client.close();
      // The agent was recorded on its first use; admins see it by its URL.
      const clients = await p.api.clients.listClients(
        p.project.id,
        1,
        100,
        undefined,
        undefined,
        undefined,
        undefined,
      );
      assert.deepEqual(clients.data.filter((c) => c.metadata_url).map((c) => c.metadata_url), [
        clientMetadataUrl,
      ]);
      assert.equal(docs.hits("/notes-agent/client.json"), 1);
    } finally {
      await browser.close();
      await server.shutdown();
      await svc.stop();
    }
  },
  { ignore: !hasChromium },
);
