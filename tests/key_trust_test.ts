/**
 * A key just made is trusted at once: after forced rotations in a row and an emergency revocation with `force`,
 * the new key's tokens are accepted by the instance that made it and by every other, with no 401 window; tokens
 * naming forged kids are refused and cost the database a bounded number of key reloads.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { TokenService } from "../domain/keys/tokens.ts";
import type { Service } from "../service.ts";
import {
  DATABASE_URL,
  expectError,
  isolatedDatabase,
  service,
  startWith,
  systemToken,
  systemTokenAt,
  test,
} from "./helpers.ts";

/** Instances of one deployment share the public URL: the tokens' issuer. */
const ISSUER = "http://acs.test";

/** Calls the service at `url` with a fresh system admin token of that instance. */
async function call(url: string, path: string, method = "GET"): Promise<Response> {
  const token = await systemTokenAt(url);
  return await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
}

/** The status of a gated read with `token`. */
async function status(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/projects/system`, { headers: { authorization: `Bearer ${token}` } });
  await res.body?.cancel();
  return res.status;
}

type Key = { kid: string; state: string };
const kidOf = (token: string) => decodeProtectedHeader(token).kid!;
const stateOf = (keys: Key[], state: string) => keys.find((k) => k.state === state)?.kid;

/** A token in our shape whose kid no key has, and whose signature is random bytes. */
function forged(issuer: string): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const kid = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    iss: issuer,
    sub: "x",
    aud: "system",
    client_id: "x",
    jti: crypto.randomUUID(),
    iat: now,
  };
  return `${part({ alg: "EdDSA", typ: "at+jwt", kid })}.${part({ ...payload, exp: now + 300 })}.${
    Buffer.from(crypto.getRandomValues(new Uint8Array(64))).toString("base64url")
  }`;
}

/**
 * Two instances on one database of their own (PostgreSQL); on the embedded database, which serves one process,
 * the same instance twice.
 */
async function withInstances(
  env: Record<string, string>,
  fn: (a: Service, b: Service) => Promise<void>,
): Promise<void> {
  const db = await isolatedDatabase();
  const a = await startWith({ ...db.env, PUBLIC_URL: ISSUER, ...env });
  const b = DATABASE_URL ? await startWith({ ...db.env, PUBLIC_URL: ISSUER, ...env }) : a;
  try {
    await fn(a, b);
  } finally {
    if (b !== a) await b.close();
    await a.close();
    await db.drop();
  }
}

test("forced rotations in a row: each new key's first token is accepted at once by the instance that rotated and by another", async () => {
  await withInstances({}, async (a, b) => {
    const early = await systemTokenAt(a.url);
    assert.equal(await status(b.url, early), 200);
    const seen = new Set([kidOf(early)]);
    // Rotated on one instance then the other, a few milliseconds apart: the reload of the published keys that a
    // first rotation caused must not leave the next new key unknown.
    for (let i = 0; i < 6; i++) {
      const [x, y] = i % 2 === 0 ? [a, b] : [b, a];
      const res = await call(x.url, "/api/v1/keys/rotate?force=true", "POST");
      assert.equal(res.status, 200);
      const current = stateOf((await res.json()).keys, "current")!;
      const token = await systemTokenAt(x.url);
      assert.equal(kidOf(token), current);
      assert.ok(!seen.has(current), "a new key each time");
      seen.add(current);
      assert.deepEqual(
        [await status(x.url, token), await status(y.url, token)],
        [200, 200],
        `rotation ${i + 1}`,
      );
    }
    // Tokens of the keys it replaced stay valid until they expire.
    assert.equal(await status(b.url, early), 200);
  });
});

test("an emergency revocation with force: the new key's tokens are accepted at once everywhere, the revoked key's refused", async () => {
  await withInstances({ SIGNING_KEY_ROTATION_DAYS: "0" }, async (a, b) => {
    for (let i = 0; i < 3; i++) {
      const [x, y] = i % 2 === 0 ? [a, b] : [b, a];
      const before = await systemTokenAt(x.url);
      const list = await call(x.url, "/api/v1/keys");
      const keys = (await list.json()).keys as Key[];
      // A forced rotation (made by an earlier turn) leaves a next key: revoked first, so that the current key is
      // the only one that can sign and its revocation makes a new key.
      const next = stateOf(keys, "next");
      if (next) assert.equal((await call(x.url, `/api/v1/keys/${next}/revoke`, "POST")).status, 200);
      const res = await call(x.url, `/api/v1/keys/${kidOf(before)}/revoke?force=true`, "POST");
      assert.equal(res.status, 200);
      const body = await res.json() as { keys: Key[]; notice: string };
      const successor = stateOf(body.keys, "current")!;
      assert.ok(successor !== kidOf(before) && successor !== next, "a key made by the revocation");
      const token = await systemTokenAt(x.url);
      assert.equal(kidOf(token), successor);
      assert.deepEqual(
        [await status(x.url, token), await status(y.url, token)],
        [200, 200],
        `revocation ${i + 1}`,
      );
      // Live: the revoked key's token is refused on the very next request, on both.
      assert.deepEqual([await status(x.url, before), await status(y.url, before)], [401, 401]);
      // The other instance signs with the new key as well, and the first accepts its token.
      const fromOther = await systemTokenAt(y.url);
      assert.equal(kidOf(fromOther), successor);
      assert.equal(await status(x.url, fromOther), 200);
      // And a forced rotation right after.
      assert.equal((await call(y.url, "/api/v1/keys/rotate?force=true", "POST")).status, 200);
      const rotated = await systemTokenAt(y.url);
      assert.deepEqual([await status(x.url, rotated), await status(y.url, rotated)], [200, 200]);
    }
  });
});

test("a burst of tokens with forged kids is refused 401, and a new key's token sent amid it is accepted", async () => {
  // No next key: the revocation below makes a key that no instance can have loaded before the burst began.
  await withInstances({ SIGNING_KEY_ROTATION_DAYS: "0" }, async (a, b) => {
    await expectError(
      await fetch(`${b.url}/api/v1/projects/system`, {
        headers: { authorization: `Bearer ${forged(ISSUER)}` },
      }),
      401,
      "invalid_authorization_token",
    );
    const burst = Array.from({ length: 200 }, () => status(b.url, forged(ISSUER)));
    // A key made on the other instance while the burst is under way; its token goes to the flooded one.
    const current = kidOf(await systemTokenAt(a.url));
    assert.equal((await call(a.url, `/api/v1/keys/${current}/revoke?force=true`, "POST")).status, 200);
    const genuine = status(b.url, await systemTokenAt(a.url));
    const more = Array.from({ length: 200 }, () => status(b.url, forged(ISSUER)));
    assert.deepEqual(await Promise.all([...burst, ...more]), Array(400).fill(401));
    assert.equal(await genuine, 200);
  });
});

test("forged kids cost the database at most one reload of the published keys per 200 ms, and a genuine new kid waits for the next", async () => {
  const { db } = await service();
  // A verifier of its own (nothing loaded yet) on the real database, whose statements are counted.
  let statements = 0;
  const counted = new Proxy(db.sql, {
    apply(target, self, args) {
      statements++;
      return Reflect.apply(target, self, args);
    },
  });
  const genuine = await systemToken();
  const issuer = decodeJwt(genuine).iss!;
  const tokens = new TokenService(counted, issuer, 300, null);
  const started = performance.now();
  const refused: Promise<unknown>[] = [];
  let accepted: Promise<unknown> | undefined;
  // About a second of forged kids, 20 every 10 ms; the genuine token (a kid this verifier has not seen) amid them.
  for (let round = 0; performance.now() - started < 1_000; round++) {
    for (let i = 0; i < 20; i++) refused.push(tokens.verifyAccessToken(forged(issuer)));
    if (round === 40) accepted = tokens.verifyAccessToken(genuine);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const results = await Promise.all(refused);
  const elapsed = performance.now() - started;
  assert.ok(results.length >= 500, `${results.length} forged tokens`);
  assert.ok(results.every((r) => r === null), "every forged token refused");
  assert.equal(
    ((await accepted) as { kid: string } | null)?.kid,
    kidOf(genuine),
    "the genuine token verifies",
  );
  // Reloads start at least 200 ms apart, one at a time.
  const bound = Math.floor(elapsed / 200) + 1;
  assert.ok(
    statements >= 1 && statements <= bound,
    `${statements} reloads in ${Math.round(elapsed)} ms (≤ ${bound})`,
  );
  // The known kid is verified from memory: no statement.
  const before = statements;
  assert.ok(await tokens.verifyAccessToken(await systemToken()));
  assert.equal(statements, before);
});
