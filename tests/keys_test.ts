/**
 * Signing keys: the staged lifecycle (next → current → previous → retired), planned rotation, emergency
 * revocation, a choice of algorithm, private keys sealed at rest; tokens verified by standards-strict libraries
 * against the published JWKS across every change.
 */
import assert from "node:assert/strict";
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from "jose";
import { oauth } from "./deps.ts";
import { keySettings, type Service } from "../service.ts";
import { loadConfig } from "../config.ts";
import { maintainKeys } from "../domain/keys/keys.ts";
import {
  ADMIN_SECRET,
  basic,
  clientToken,
  DATABASE_URL,
  expectError,
  http,
  isolatedDatabase,
  newProject,
  projectPermissions,
  sdk,
  startWith,
  systemToken,
  systemTokenAt,
  test,
} from "./helpers.ts";

type Key = {
  kid: string;
  alg: string;
  state: string;
  public_jwk: Record<string, unknown>;
  retires_at: string | null;
};

/** Calls the service at `url` with the system admin's token. */
async function call(url: string, path: string, method = "GET"): Promise<Response> {
  const token = await systemTokenAt(url);
  return await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
}

async function keys(url: string): Promise<Key[]> {
  const res = await call(url, "/api/v1/keys");
  assert.equal(res.status, 200);
  return (await res.json()).keys;
}

/** Instances of one deployment, and one deployment across restarts, share the public URL: the tokens' issuer. */
const ISSUER = "http://acs.test";

/** The system project's key events, newest first, read through the audit trail. */
async function keyEvents(url: string): Promise<
  {
    type: string;
    target: { id: string };
    actor: { type: string; id: string };
    details: Record<string, unknown>;
  }[]
> {
  const res = await call(url, "/api/v1/projects/system/audit-events?type=key.*");
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

const byState = (ks: Key[], state: string) => ks.filter((k) => k.state === state);
const kidOf = (token: string) => decodeProtectedHeader(token).kid!;

/** Verifies an access token as a resource server would: jose and oauth4webapi against the JWKS. */
async function verifyBoth(url: string, token: string, issuer = url): Promise<void> {
  const jwks = await (await fetch(`${url}/.well-known/jwks.json`)).json() as JSONWebKeySet;
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
    issuer,
    typ: "at+jwt",
    audience: "system",
  });
  assert.equal(payload.aud, "system");
  const as: oauth.AuthorizationServer = { issuer, jwks_uri: `${url}/.well-known/jwks.json` };
  const request = new Request(`${url}/api/v1/projects/system`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const claims = await oauth.validateJwtAccessToken(as, request, "system", {
    [oauth.allowInsecureRequests]: true,
  });
  assert.equal(claims.aud, "system");
}

/** A service on a database of its own, closed and dropped after `fn`. */
async function withService(env: Record<string, string>, fn: (svc: Service) => Promise<void>): Promise<void> {
  const db = await isolatedDatabase();
  const svc = await startWith({ ...db.env, ...env });
  try {
    await fn(svc);
  } finally {
    await svc.close();
    await db.drop();
  }
}

const status = async (url: string, token: string) => {
  const res = await fetch(`${url}/api/v1/projects/system`, { headers: { authorization: `Bearer ${token}` } });
  await res.body?.cancel();
  return res.status;
};

test("GET /api/v1/keys: the current and the next key, public parts only, for keys:read on the system project", async () => {
  const res = await http("/api/v1/keys", { headers: { authorization: `Bearer ${await systemToken()}` } });
  assert.equal(res.status, 200);
  const body = await res.json() as { keys: Key[] };
  assert.equal(byState(body.keys, "current").length, 1);
  assert.ok(byState(body.keys, "next").length <= 1);
  assert.doesNotMatch(JSON.stringify(body), /"d"|private/);
  for (const k of body.keys) assert.equal(k.public_jwk.kid, k.kid);
  // The JWKS publishes next, current and previous keys, and nothing private.
  const jwks = await (await http("/.well-known/jwks.json")).json() as { keys: Record<string, unknown>[] };
  assert.deepEqual(
    jwks.keys.map((k) => k.kid).sort(),
    body.keys.filter((k) => ["next", "current", "previous"].includes(k.state)).map((k) => k.kid).sort(),
  );
  assert.ok(jwks.keys.every((k) => k.d === undefined));
  // Another project's admin, and a system client without keys:read, are refused.
  const p = await newProject();
  await expectError(
    await http("/api/v1/keys", { headers: { authorization: `Bearer ${p.token}` } }),
    403,
    "insufficient_permission",
  );
  const admin = await sdk(await systemToken());
  const { ids } = await projectPermissions(admin, "system");
  assert.ok(ids["keys:read"] && ids["keys:update"], "the system project has the keys resource");
  const reader = await admin.clients.createClient("system", {
    name: "key reader",
    permission_ids: [ids["keys:read"]],
  });
  const readerToken = await clientToken(reader.id, reader.client_secret);
  assert.equal(
    (await http("/api/v1/keys", { headers: { authorization: `Bearer ${readerToken}` } })).status,
    200,
  );
  await expectError(
    await http("/api/v1/keys/rotate", {
      method: "POST",
      headers: { authorization: `Bearer ${readerToken}` },
    }),
    403,
    "insufficient_permission",
  );
  await expectError(await http("/api/v1/keys"), 401, "invalid_authorization_token");
});

test("a planned rotation: too soon is 409 unless forced; earlier tokens stay valid; the JWKS holds next, current, previous", async () => {
  await withService({}, async (svc) => {
    const before = await keys(svc.url);
    const [k1] = byState(before, "current");
    const early = await systemTokenAt(svc.url);
    assert.equal(kidOf(early), k1.kid);
    // The next key was published just now: rotating would hand verifiers a kid they may not know yet.
    const refused = await expectError(
      await call(svc.url, "/api/v1/keys/rotate", "POST"),
      409,
      "key_rotation_too_soon",
    );
    assert.match(refused.error_description, /force=true/);
    const res = await call(svc.url, "/api/v1/keys/rotate?force=true", "POST");
    assert.equal(res.status, 200);
    const after = await res.json() as { keys: Key[]; notice: string };
    assert.match(after.notice, /Forced/);
    const [k2] = byState(after.keys, "current");
    // One key.rotated event, by the system admin, naming the new key and the one it replaced.
    const rotated = await keyEvents(svc.url);
    assert.deepEqual(rotated.map((e) => [e.type, e.target.id, e.actor.id, e.details]), [
      ["key.rotated", k2.kid, "system-admin", { previous: k1.kid, forced: true }],
    ]);
    assert.notEqual(k2.kid, k1.kid);
    assert.equal(byState(after.keys, "previous")[0].kid, k1.kid);
    assert.ok(byState(after.keys, "previous")[0].retires_at);
    assert.equal(byState(after.keys, "next").length, 1, "a new next key is published at once");
    const jwks = await (await fetch(`${svc.url}/.well-known/jwks.json`)).json() as {
      keys: { kid: string }[];
    };
    assert.deepEqual(
      jwks.keys.map((k) => k.kid).sort(),
      [k1.kid, k2.kid, byState(after.keys, "next")[0].kid].sort(),
    );
    // A token from before the rotation stays valid; new tokens are signed by the new key; both verify.
    assert.equal(await status(svc.url, early), 200);
    const late = await systemTokenAt(svc.url);
    assert.equal(kidOf(late), k2.kid);
    await verifyBoth(svc.url, early);
    await verifyBoth(svc.url, late);
  });
});

test("the rotation job promotes a due key once published long enough, and retires a previous key after its tokens", async () => {
  await withService({ ACCESS_TOKEN_TTL: "60", SIGNING_KEY_ROTATION_DAYS: "1" }, async (svc) => {
    const settings = keySettings(loadConfig({ ACCESS_TOKEN_TTL: "60", SIGNING_KEY_ROTATION_DAYS: "1" }));
    const sql = svc.db.sql;
    const [k1] = byState(await keys(svc.url), "current");
    const [n1] = byState(await keys(svc.url), "next");
    // Not due yet: nothing changes.
    await maintainKeys(sql, settings);
    assert.equal(byState(await keys(svc.url), "current")[0].kid, k1.kid);
    // Due (a day old), but the next key is too new to sign.
    await sql`update signing_keys set activated_at = now() - interval '25 hours' where kid = ${k1.kid}`;
    await maintainKeys(sql, settings);
    assert.equal(byState(await keys(svc.url), "current")[0].kid, k1.kid);
    // Published for the pre-publish window (ACCESS_TOKEN_TTL): promoted, and a new next key published.
    await sql`update signing_keys set created_at = now() - interval '61 seconds' where kid = ${n1.kid}`;
    await maintainKeys(sql, settings);
    const after = await keys(svc.url);
    assert.equal(byState(after, "current")[0].kid, n1.kid);
    assert.equal(byState(after, "previous")[0].kid, k1.kid);
    assert.equal(byState(after, "next").length, 1);
    assert.equal(kidOf(await systemTokenAt(svc.url)), n1.kid, "the very next token uses the new key");
    // Once its tokens have expired, the previous key is retired: out of the JWKS, its private part gone.
    await sql`update signing_keys set retires_at = now() - interval '1 second' where kid = ${k1.kid}`;
    await maintainKeys(sql, settings);
    assert.equal((await keys(svc.url)).find((k) => k.kid === k1.kid)!.state, "retired");
    const [row] = await sql`select private_jwk, private_jwk_sealed from signing_keys where kid = ${k1.kid}`;
    assert.deepEqual([row.private_jwk, row.private_jwk_sealed], [null, null]);
  });
});

test("revoking a key refuses its tokens on the next request, on every instance; the next key signs at once", async () => {
  const db = await isolatedDatabase();
  const a = await startWith({ ...db.env, PUBLIC_URL: ISSUER });
  // A second instance on the same database (PostgreSQL only: the embedded database serves one process).
  const b = DATABASE_URL ? await startWith({ ...db.env, PUBLIC_URL: ISSUER }) : a;
  try {
    const early = await systemTokenAt(a.url);
    const [k1] = byState(await keys(a.url), "current");
    const [n1] = byState(await keys(a.url), "next");
    await expectError(
      await call(a.url, "/api/v1/keys/no-such-kid/revoke", "POST"),
      404,
      "signing_key_not_found",
    );
    const res = await call(a.url, `/api/v1/keys/${k1.kid}/revoke`, "POST");
    assert.equal(res.status, 200);
    const body = await res.json() as { keys: Key[]; notice: string };
    assert.match(body.notice, /refused/);
    assert.equal(byState(body.keys, "current")[0].kid, n1.kid);
    const revoked = await keyEvents(a.url);
    assert.deepEqual(revoked.map((e) => [e.type, e.target.id, e.actor.id, e.details]), [
      ["key.revoked", k1.kid, "system-admin", { state: "current", successor: n1.kid, forced: false }],
    ]);
    for (const svc of [a, b]) {
      await expectError(
        await fetch(`${svc.url}/api/v1/projects/system`, { headers: { authorization: `Bearer ${early}` } }),
        401,
        "invalid_authorization_token",
      );
      const jwks = await (await fetch(`${svc.url}/.well-known/jwks.json`)).json() as {
        keys: { kid: string }[];
      };
      assert.ok(!jwks.keys.some((k) => k.kid === k1.kid), "out of the JWKS");
    }
    // Introspection agrees.
    const introspected = await fetch(`${b.url}/api/v1/tokens/introspect`, {
      method: "POST",
      headers: {
        authorization: basic("system-admin", ADMIN_SECRET),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ token: early }).toString(),
    });
    assert.deepEqual(await introspected.json(), { active: false });
    // The instance that did not revoke signs with the new current key straight away.
    const fromB = await systemTokenAt(b.url);
    assert.equal(kidOf(fromB), n1.kid);
    assert.equal(await status(a.url, fromB), 200);
  } finally {
    if (b !== a) await b.close();
    await a.close();
    await db.drop();
  }
});

test("revoking the only key needs force=true: a new key signs at once and the answer says what clients see", async () => {
  await withService({ SIGNING_KEY_ROTATION_DAYS: "0" }, async (svc) => {
    const ks = await keys(svc.url);
    assert.deepEqual(ks.map((k) => k.state), ["current"], "no next key without automatic rotation");
    const early = await systemTokenAt(svc.url);
    const refused = await expectError(
      await call(svc.url, `/api/v1/keys/${ks[0].kid}/revoke`, "POST"),
      409,
      "only_signing_key",
    );
    assert.match(refused.error_description, /force=true/);
    assert.equal(await status(svc.url, early), 200, "nothing changed");
    const res = await call(svc.url, `/api/v1/keys/${ks[0].kid}/revoke?force=true`, "POST");
    assert.equal(res.status, 200);
    const body = await res.json() as { keys: Key[]; notice: string };
    assert.match(body.notice, /unknown kid/);
    assert.equal(await status(svc.url, early), 401);
    const late = await systemTokenAt(svc.url);
    assert.equal(kidOf(late), byState(body.keys, "current")[0].kid);
    await verifyBoth(svc.url, late);
  });
});

for (const alg of ["EdDSA", "ES256", "RS256"]) {
  test(`SIGNING_ALG=${alg}: tokens verify with jose and oauth4webapi across a rotation`, async () => {
    await withService({ SIGNING_ALG: alg }, async (svc) => {
      const early = await systemTokenAt(svc.url);
      assert.equal(decodeProtectedHeader(early).alg, alg);
      assert.equal((await call(svc.url, "/api/v1/keys/rotate?force=true", "POST")).status, 200);
      const late = await systemTokenAt(svc.url);
      assert.notEqual(kidOf(late), kidOf(early));
      await verifyBoth(svc.url, early);
      await verifyBoth(svc.url, late);
      const meta = await (await fetch(`${svc.url}/.well-known/oauth-authorization-server`)).json();
      assert.deepEqual(meta.id_token_signing_alg_values_supported, [alg]);
    });
  });
}

test("changing SIGNING_ALG rotates to a key of the new algorithm through the same stages", async () => {
  const db = await isolatedDatabase();
  const env = { ...db.env, PUBLIC_URL: ISSUER };
  let svc = await startWith(env);
  try {
    const early = await systemTokenAt(svc.url);
    await svc.close();
    svc = await startWith({ ...env, SIGNING_ALG: "ES256" });
    const ks = await keys(svc.url);
    assert.equal(
      byState(ks, "current")[0].alg,
      "EdDSA",
      "the current key signs on until the new one is ready",
    );
    assert.equal(byState(ks, "next")[0].alg, "ES256");
    const meta = await (await fetch(`${svc.url}/.well-known/oauth-authorization-server`)).json();
    assert.deepEqual(meta.id_token_signing_alg_values_supported, ["EdDSA", "ES256"]);
    assert.equal((await call(svc.url, "/api/v1/keys/rotate?force=true", "POST")).status, 200);
    const late = await systemTokenAt(svc.url);
    assert.equal(decodeProtectedHeader(late).alg, "ES256");
    await verifyBoth(svc.url, early, ISSUER);
    await verifyBoth(svc.url, late, ISSUER);
  } finally {
    await svc.close();
    await db.drop();
  }
});

test("KEY_ENCRYPTION_KEY seals private keys at rest; a wrong or missing key stops the start, never a new key", async () => {
  const kek = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const other = kek.startsWith("A") ? `B${kek.slice(1)}` : `A${kek.slice(1)}`;
  const db = await isolatedDatabase();
  const env = { ...db.env, PUBLIC_URL: ISSUER };
  let svc = await startWith(env);
  try {
    const early = await systemTokenAt(svc.url);
    const dump = async (s: Service) =>
      JSON.stringify(
        await s.db.sql`select * from signing_keys where state in ('next', 'current', 'previous')`,
      );
    assert.match(await dump(svc), /"d":/, "without the key, the private JWK is stored as it is");
    await svc.close();
    // Set on an existing deployment: the stored keys are sealed at start.
    svc = await startWith({ ...env, KEY_ENCRYPTION_KEY: kek });
    const sealed = await dump(svc);
    assert.doesNotMatch(sealed, /"d":/);
    assert.equal(
      (await svc.db.sql`select count(*)::int as n from signing_keys where private_jwk is not null`)[0].n,
      0,
    );
    assert.equal(await status(svc.url, early), 200);
    await verifyBoth(svc.url, await systemTokenAt(svc.url), ISSUER);
    const kids = (await keys(svc.url)).map((k) => k.kid).sort();
    await svc.close();
    await assert.rejects(
      startWith({ ...env, KEY_ENCRYPTION_KEY: other }),
      /KEY_ENCRYPTION_KEY does not decrypt/,
    );
    await assert.rejects(startWith(env), /encrypted: set KEY_ENCRYPTION_KEY/);
    svc = await startWith({ ...env, KEY_ENCRYPTION_KEY: kek });
    assert.deepEqual((await keys(svc.url)).map((k) => k.kid).sort(), kids, "no key was made or lost");
    assert.equal(await status(svc.url, early), 200);
  } finally {
    await svc.close().catch(() => {});
    await db.drop();
  }
});

test("a fresh instance accepts the tokens of a key it has not loaded yet, sent together", async () => {
  // The first token of an unknown kid reloads the published keys; the others sent meanwhile wait for that
  // reload instead of being refused (a restart under load answered all but the first 401). Each request has
  // a token of its own, as each client holds its own after a restart; 16 requests with one token passed
  // without the fix too (checked), so they prove nothing here. The tokens are issued before a restart: the
  // instance that signs with a key knows it from the start, so tokens it issued itself would prove nothing.
  const db = await isolatedDatabase();
  const env = { ...db.env, PUBLIC_URL: ISSUER };
  let svc = await startWith(env);
  try {
    const tokens = await Promise.all(Array.from({ length: 16 }, () => systemTokenAt(svc.url)));
    await svc.close();
    svc = await startWith(env);
    const statuses = await Promise.all(tokens.map((t) => status(svc.url, t)));
    assert.deepEqual(statuses, Array(16).fill(200));
  } finally {
    await svc.close();
    await db.drop();
  }
});
