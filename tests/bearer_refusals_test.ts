/**
 * A refused bearer token says why (RFC 6750 §3 `error_description`, in the body and in the challenge): expired,
 * not an access token (an ID token), invalid (bad signature or format), or no longer valid (revoked).
 */
import assert from "node:assert/strict";
import {
  baseUrl,
  eventually,
  http,
  isolatedDatabase,
  loginProject,
  startWith,
  systemTokenAt,
  test,
} from "./helpers.ts";
import { Browser, signIn } from "./oidc_support.ts";

type Refusal = { status: number; description: string; challenge: string };

async function refusal(res: Response): Promise<Refusal> {
  const body = await res.json();
  if (res.status === 401) assert.equal(body.error, "invalid_authorization_token");
  return {
    status: res.status,
    description: body.error_description,
    challenge: res.headers.get("www-authenticate")!,
  };
}

const asBearer = async (token: string) =>
  await refusal(await http("/api/v1/users/current", { headers: { authorization: `Bearer ${token}` } }));

test("a refused bearer token says why: invalid, not an access token, or revoked, in the body and the challenge", async () => {
  const p = await loginProject();
  const tokens = await signIn(new Browser(), p);
  let r = await asBearer("not-a-token");
  assert.equal(r.status, 401);
  assert.match(r.description, /invalid: its format, signature or issuer is wrong/);
  assert.match(r.challenge, /error="invalid_token", error_description="the bearer token is invalid/);
  // An access token with its signature changed.
  r = await asBearer(`${tokens.access_token.slice(0, -4)}AAAA`);
  assert.match(r.description, /invalid/);
  // The ID token is ours and signed, but not an access token.
  r = await asBearer(tokens.id_token);
  assert.match(r.description, /not an access token/);
  // A revoked access token.
  const res = await http("/api/v1/tokens/revoke", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: tokens.access_token, client_id: p.clientId }).toString(),
  });
  await res.body?.cancel();
  r = await asBearer(tokens.access_token);
  assert.equal(r.status, 401);
  assert.match(r.description, /no longer valid: it was revoked/);
  // Without a token: the challenge names the scheme, and where to learn how to get one (RFC 9728 §5.1).
  const none = await http("/api/v1/users/current");
  assert.equal(
    (await refusal(none)).challenge,
    `Bearer realm="access-control", resource_metadata="${await baseUrl()}/.well-known/oauth-protected-resource"`,
  );
});

test("an expired access token says it expired (apart from a bad signature or a token of the wrong kind)", async () => {
  const db = await isolatedDatabase();
  const svc = await startWith({ ...db.env, ACCESS_TOKEN_TTL: "1" });
  try {
    const token = await systemTokenAt(svc.url);
    const call = async () =>
      await refusal(
        await fetch(`${svc.url}/api/v1/projects`, { headers: { authorization: `Bearer ${token}` } }),
      );
    const expired = await eventually("the token to expire", async () => {
      const r = await call();
      return r.status === 401 ? r : undefined;
    });
    assert.match(expired.description, /the access token expired/);
    assert.match(expired.challenge, /error_description="the access token expired/);
  } finally {
    await svc.close();
    await db.drop();
  }
});
