/**
 * Client ID Metadata Documents' rules, pure (domain/oauth/client_metadata.ts): which `client_id` URLs are
 * well-formed (draft §3), what a document must say (§4), how long one is kept, and which hosts a project admits.
 */
import assert from "node:assert/strict";
import {
  clientIdUrlIssue,
  ClientMetadataRefused,
  freshFor,
  isClientIdUrl,
  MAX_FRESH,
  metadataHostAdmitted,
  MIN_FRESH,
  parseMetadataDocument,
} from "../domain/oauth/client_metadata.ts";

const URL_ID = "https://agent.example/oauth/client.json";

Deno.test("a client_id URL is https, with a path, no dot segments, fragment or credentials, in canonical form", () => {
  assert.equal(isClientIdUrl(URL_ID), true);
  assert.equal(isClientIdUrl("0190-abc"), false);
  assert.equal(isClientIdUrl("http://agent.example/client"), false, "only https names a document");
  assert.equal(clientIdUrlIssue(URL_ID), null);
  assert.equal(clientIdUrlIssue("https://agent.example:8443/c?v=1"), null, "a port and a query are allowed");
  assert.match(clientIdUrlIssue("https://agent.example/")!, /path/);
  assert.match(clientIdUrlIssue("https://agent.example")!, /canonical/);
  assert.match(clientIdUrlIssue("https://agent.example/a/../client.json")!, /dot segments/);
  assert.match(clientIdUrlIssue("https://agent.example/./client.json")!, /dot segments/);
  assert.match(clientIdUrlIssue("https://agent.example/%2e%2e/client.json")!, /dot segments/);
  assert.match(clientIdUrlIssue("https://agent.example/client.json#x")!, /fragment/);
  assert.match(clientIdUrlIssue("https://ann:pw@agent.example/client.json")!, /credentials/);
  assert.match(clientIdUrlIssue("https://AGENT.example/client.json")!, /canonical/);
  assert.match(clientIdUrlIssue(`https://agent.example/${"a".repeat(2000)}`)!, /longer/);
});

Deno.test("a document names its own URL, lists redirect URIs, says token_endpoint_auth_method none, no secret", () => {
  const doc = (fields: Record<string, unknown>) =>
    JSON.stringify({
      client_id: URL_ID,
      client_name: "Notes agent",
      redirect_uris: ["https://agent.example/callback", "http://127.0.0.1:33418/callback"],
      token_endpoint_auth_method: "none",
      logo_uri: "https://agent.example/logo.png", // unknown to this service: tolerated
      ...fields,
    });
  assert.deepEqual(parseMetadataDocument(URL_ID, doc({})), {
    name: "Notes agent",
    redirectUris: ["https://agent.example/callback", "http://127.0.0.1:33418/callback"],
  });
  assert.equal(parseMetadataDocument(URL_ID, doc({ client_name: undefined })).name, "agent.example");
  assert.deepEqual(
    parseMetadataDocument(
      URL_ID,
      doc({ redirect_uris: ["https://agent.example/cb", "myapp:/cb", "https://a.test/#f"] }),
    )
      .redirectUris,
    ["https://agent.example/cb"],
    "a redirect URI this service would not register is left out",
  );
  const reason = (body: string) => {
    try {
      parseMetadataDocument(URL_ID, body);
    } catch (err) {
      assert.ok(err instanceof ClientMetadataRefused);
      return err.reason;
    }
    assert.fail("accepted");
  };
  assert.equal(reason("<html>"), "not_json");
  assert.equal(reason("[]"), "not_json");
  assert.equal(reason(doc({ client_id: "https://other.example/client.json" })), "client_id_mismatch");
  assert.equal(reason(doc({ redirect_uris: [] })), "invalid_document");
  assert.equal(reason(doc({ redirect_uris: "https://agent.example/callback" })), "invalid_document");
  assert.equal(reason(doc({ token_endpoint_auth_method: undefined })), "invalid_document");
  assert.equal(reason(doc({ token_endpoint_auth_method: "client_secret_basic" })), "invalid_document");
  assert.equal(reason(doc({ client_secret: "s3cret" })), "invalid_document");
});

Deno.test("a document is kept as its caching headers say, between 5 minutes and 24 hours", () => {
  assert.equal(freshFor({}), MIN_FRESH);
  assert.equal(freshFor({ "cache-control": "public, max-age=3600" }), 3600);
  assert.equal(freshFor({ "cache-control": "max-age=10" }), MIN_FRESH);
  assert.equal(freshFor({ "cache-control": "max-age=31536000" }), MAX_FRESH);
  assert.equal(freshFor({ "cache-control": "no-store, max-age=3600" }), MIN_FRESH);
  assert.equal(freshFor({ "cache-control": "no-cache" }), MIN_FRESH);
  const date = "Sun, 29 Nov 2026 12:00:00 GMT";
  assert.equal(freshFor({ date, expires: "Sun, 29 Nov 2026 14:00:00 GMT" }), 7200);
  assert.equal(freshFor({ date, expires: "0" }), MIN_FRESH, "an invalid Expires is no time to keep");
});

Deno.test("a project admits no URL clients, any, or those of its hosts exactly", () => {
  assert.equal(metadataHostAdmitted("off", URL_ID), false);
  assert.equal(metadataHostAdmitted("any", URL_ID), true);
  assert.equal(metadataHostAdmitted({ hosts: ["agent.example"] }, URL_ID), true);
  assert.equal(metadataHostAdmitted({ hosts: ["agent.example"] }, "https://agent.example:8443/c"), true);
  assert.equal(metadataHostAdmitted({ hosts: ["example"] }, URL_ID), false, "no parent domains");
  assert.equal(metadataHostAdmitted({ hosts: ["agent.example"] }, "https://evil.agent.example/c"), false);
});
