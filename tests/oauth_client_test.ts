/** A standards-strict OAuth client (oauth4webapi) gets a client-credentials token and validates it as RFC 9068. */
import assert from "node:assert/strict";
import { oauth } from "./deps.ts";
import { baseUrl, newProject, test } from "./helpers.ts";

test("oauth4webapi: client credentials grant, then validateJwtAccessToken against the JWKS", async () => {
  const p = await newProject();
  const url = await baseUrl();
  const as: oauth.AuthorizationServer = {
    issuer: url,
    token_endpoint: `${url}/api/v1/tokens`,
    jwks_uri: `${url}/.well-known/jwks.json`,
  };
  const client: oauth.Client = { client_id: p.clientId };
  const options = { [oauth.allowInsecureRequests]: true };
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic(p.secret),
    new URLSearchParams(),
    options,
  );
  const result = await oauth.processClientCredentialsResponse(as, client, response);
  assert.equal(result.token_type, "bearer");
  assert.equal(result.expires_in, 900);
  assert.equal(result.refresh_token, undefined);

  const request = new Request(`${url}/api/v1/projects/${p.project.id}`, {
    headers: { authorization: `Bearer ${result.access_token}` },
  });
  const claims = await oauth.validateJwtAccessToken(as, request, p.project.id, options);
  assert.equal(claims.sub, p.clientId);
  assert.equal(claims.client_id, p.clientId);
  assert.equal(claims.aud, p.project.id);
  // The same request is accepted by the service.
  assert.equal((await fetch(request)).status, 200);

  // A wrong secret: a 401 with a Basic challenge (RFC 6749 §5.2), whose body is the OAuth error shape.
  const bad = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic("wrong"),
    new URLSearchParams(),
    options,
  );
  const err = await oauth.processClientCredentialsResponse(as, client, bad).then(
    () => assert.fail("a wrong secret was accepted"),
    (e: unknown) => e as oauth.WWWAuthenticateChallengeError,
  );
  assert.ok(err instanceof oauth.WWWAuthenticateChallengeError);
  assert.equal(err.status, 401);
  assert.equal(err.cause[0].scheme, "basic");
  assert.deepEqual(await err.response.json(), {
    error: "invalid_client",
    error_code: "invalid_client_credentials",
    error_description: "the client secret is wrong",
  });
});
