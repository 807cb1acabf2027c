/**
 * `POST …/users/import`: hashes made by the real libraries sign in on the login page and are rehashed to argon2id
 * at the first success (and at fresh proof); every bad line is refused alone with its reason; request-level
 * refusals; the audit events; JSON lines with Firebase's parameters; and the time of 10,000 users.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash, pbkdf2Sync, randomBytes, scryptSync } from "node:crypto";
import bcrypt from "bcryptjs";
import { argon2i } from "hash-wasm";
import {
  authorizationCode,
  challengeOf,
  clientWith,
  expectError,
  http,
  newProject,
  newVerifier,
  openLoginPage,
  REDIRECT_URI,
  service,
  submitLogin,
  test,
  type TestProject,
  userTokens,
} from "./helpers.ts";
import { FOREIGN_HASH_GATE } from "../domain/accounts/hash_gate.ts";
import { IMPORT_GATE } from "../domain/provisioning/import_scan.ts";
import { decoyHash } from "../domain/accounts/password_decoy.ts";
import { rehashIfForeign } from "../domain/accounts/password_rehash.ts";
import { SYSTEM } from "../domain/audit/audit.ts";
import { OWN_PREFIX } from "../domain/accounts/password_schemes.ts";
import { hashPassword } from "../domain/accounts/passwords.ts";

const PASSWORD = "correct horse battery staple";
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64").replace(/=+$/, "");
const ab64 = (b: Uint8Array) => b64(b).replace(/\+/g, ".");

type LineResult = {
  line: number;
  status: "created" | "refused";
  user_id?: string;
  error?: { code: string; description: string; details?: { field: string; issue: string }[] };
};
type ImportAnswer = { results: LineResult[]; created: number; refused: number };

async function importRaw(p: TestProject, body: string, contentType = "application/json", token = p.token) {
  return await http(`/api/v1/projects/${p.project.id}/users/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": contentType },
    body,
  });
}

async function importUsers(
  p: TestProject,
  body: unknown,
  contentType = "application/json",
): Promise<ImportAnswer> {
  const res = await importRaw(p, typeof body === "string" ? body : JSON.stringify(body), contentType);
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json();
}

const mail = (tag: string) => `${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;

/** A hash of PASSWORD in every scheme, made by the real libraries (Firebase's: its README's published vector). */
async function hashesOfEveryScheme(): Promise<[string, Record<string, unknown>, string][]> {
  const salt = randomBytes(16);
  const django = "Xk3dV9mQz1pL0aRt7yBn2C";
  const digest = (alg: string, s: string) => createHash(alg).update(s).digest("hex");
  return [
    ["bcrypt", { password_hash: bcrypt.hashSync(PASSWORD, 8) }, PASSWORD],
    ["argon2", {
      password_hash: await argon2i({
        password: PASSWORD,
        salt,
        memorySize: 8192,
        iterations: 3,
        parallelism: 1,
        hashLength: 32,
        outputType: "encoded",
      }),
    }, PASSWORD],
    ["scrypt", {
      password_hash: `$scrypt$ln=14,r=8,p=1$${b64(salt)}$${
        b64(scryptSync(PASSWORD, salt, 32, { N: 16384 }))
      }`,
    }, PASSWORD],
    ["pbkdf2", {
      password_hash: `$pbkdf2-sha256$29000$${ab64(salt)}$${
        ab64(pbkdf2Sync(PASSWORD, salt, 29000, 32, "sha256"))
      }`,
    }, PASSWORD],
    ["django_pbkdf2", {
      password_hash: `pbkdf2_sha256$30000$${django}$${
        pbkdf2Sync(PASSWORD, django, 30000, 32, "sha256").toString("base64")
      }`,
    }, PASSWORD],
    ["firebase_scrypt", {
      password_hash:
        "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
      password_salt: "42xEC+ixf3L2lw==",
      password_hash_algorithm: "firebase_scrypt",
    }, "user1password"],
    ["sha256_salted", {
      password_hash: digest("sha256", "pepper" + PASSWORD),
      password_hash_algorithm: "sha256_salted",
      password_salt: "pepper",
      password_salt_position: "prefix",
    }, PASSWORD],
    ["sha512_salted", {
      password_hash: digest("sha512", PASSWORD + "pepper"),
      password_hash_algorithm: "sha512_salted",
      password_salt: "pepper",
      password_salt_position: "suffix",
    }, PASSWORD],
    ["md5_salted", {
      password_hash: digest("md5", PASSWORD + "pepper"),
      password_hash_algorithm: "md5_salted",
      password_salt: "pepper",
      password_salt_position: "suffix",
    }, PASSWORD],
  ];
}

/** Firebase's sample project's parameters (github.com/firebase/scrypt README). */
export const FIREBASE = {
  signer_key: "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
  salt_separator: "Bw==",
  rounds: 8,
  mem_cost: 14,
};

/** The login form's answer for an email and password: 303 to the client when right, 400 (the form again) when not. */
async function loginStatus(p: TestProject, email: string, password: string): Promise<number> {
  const verifier = newVerifier();
  const page = await openLoginPage({
    client_id: p.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
  });
  assert.equal(page.status, 200, page.html);
  const res = await submitLogin(page, email, password);
  await res.body?.cancel();
  return res.status;
}

const schemeOf = async (p: TestProject, userId: string) =>
  (await p.api.users.getUser(p.project.id, userId, undefined)).password_scheme;

test("POST …/users/import: a hash of every scheme signs in, and the first success rehashes it to argon2id", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const cases = await hashesOfEveryScheme();
  const emails = cases.map(([scheme]) => mail(scheme.replace(/_/g, "-")));
  const answer = await importUsers(p, {
    users: cases.map(([, fields], i) => ({ email: emails[i], email_verified: true, ...fields })),
    firebase: FIREBASE,
  });
  assert.equal(answer.created, cases.length, JSON.stringify(answer));
  assert.equal(answer.refused, 0);
  const { db } = await service();
  for (const [i, [scheme, , password]] of cases.entries()) {
    const { line, status, user_id } = answer.results[i];
    assert.deepEqual([line, status], [i + 1, "created"]);
    assert.equal(await schemeOf(p, user_id!), scheme);
    const [before] = await db.sql<
      { password_hash: string }[]
    >`select password_hash from users where id = ${user_id!}`;
    // A wrong password fails and changes nothing.
    assert.equal(await loginStatus(p, emails[i], password + "x"), 400, scheme);
    assert.equal(await schemeOf(p, user_id!), scheme);
    // The right one signs in, and the hash is the service's own from then on.
    await authorizationCode({ clientId: p.clientId, email: emails[i], password });
    assert.equal(await schemeOf(p, user_id!), "argon2id", scheme);
    const [after] = await db.sql<
      { password_hash: string }[]
    >`select password_hash from users where id = ${user_id!}`;
    assert.notEqual(after.password_hash, before.password_hash);
    assert.match(after.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    await authorizationCode({ clientId: p.clientId, email: emails[i], password }); // and still signs in
  }
  // Each rehash is an audit event, the imported scheme in its details (argon2id, already the service's: none).
  const res = await http(
    `/api/v1/projects/${p.project.id}/audit-events?type=user.password_rehashed&limit=100`,
    {
      headers: { authorization: `Bearer ${p.token}` },
    },
  );
  assert.equal(res.status, 200, await res.clone().text());
  const events: { target: { id: string }; details: { from: string } }[] = (await res.json()).data;
  const rehashed = cases.flatMap(([scheme], i) =>
    scheme === "argon2id" ? [] : [[answer.results[i].user_id, scheme]]
  );
  assert.deepEqual(
    events.map((e) => [e.target.id, e.details.from]).sort(),
    rehashed.sort(),
  );
});

test("POST …/users/import: fresh proof with an imported password rehashes it too", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const email = mail("proof");
  const bcryptHash = bcrypt.hashSync(PASSWORD, 6);
  const [result] = (await importUsers(p, [{ email, password_hash: bcryptHash }])).results;
  const userId = result.user_id!;
  const { access_token } = await userTokens({ clientId: p.clientId, email, password: PASSWORD });
  // Back to the imported hash, as if the user had signed in some other way (a passkey, a provider).
  const { db } = await service();
  await db.sql`update users set password_hash = ${bcryptHash} where id = ${userId}`;
  assert.equal(await schemeOf(p, userId), "bcrypt");
  const res = await http("/api/v1/users/current", {
    method: "PUT",
    headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
    body: JSON.stringify({ display_name: "Proof", email: mail("moved"), current_password: PASSWORD }),
  });
  assert.equal(res.status, 200, await res.text());
  assert.equal(await schemeOf(p, userId), "argon2id");
});

test("imported hashes are verified a few at a time: beyond the gate's queue a sign-in is 429, never a 500", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const email = mail("gate");
  await importUsers(p, [{ email, email_verified: true, password_hash: bcrypt.hashSync(PASSWORD, 4) }]);
  // Every slot and the whole queue taken, as by as many slow verifications at once.
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const busy = Array.from(
    { length: FOREIGN_HASH_GATE.limit + FOREIGN_HASH_GATE.queue },
    () => FOREIGN_HASH_GATE.run(() => held),
  );
  try {
    assert.equal(await loginStatus(p, email, PASSWORD), 429);
    // An unknown address of this project verifies against its imported hash (password_decoy.ts): gated alike.
    assert.equal(await loginStatus(p, mail("unknown"), PASSWORD), 429);
    // A project without imported hashes: the service's own argon2id decoy, not gated.
    const other = await newProject({ redirect_uris: [REDIRECT_URI] });
    assert.equal(await loginStatus(other, mail("unknown"), PASSWORD), 400);
  } finally {
    release();
    await Promise.all(busy);
  }
  // Not counted against the account: the right password signs in at once.
  assert.equal(await loginStatus(p, email, PASSWORD), 303);
});

test("POST …/users/import: an Argon2 string in padded base64 is stored re-encoded and signs in", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const email = mail("padded");
  const made = await argon2i({
    password: PASSWORD,
    salt: new Uint8Array(17), // 17 bytes: base64 of 23 characters, "=" padded to 24
    memorySize: 4096,
    iterations: 1,
    parallelism: 1,
    hashLength: 32,
    outputType: "encoded",
  });
  const [, , v, params, salt, hash] = made.split("$");
  const pad = (t: string) => t + "=".repeat((4 - (t.length % 4)) % 4);
  const padded = `$argon2i$${v}$${params}$${pad(salt)}$${pad(hash)}`;
  assert.notEqual(padded, made);
  const [result] = (await importUsers(p, [{ email, email_verified: true, password_hash: padded }])).results;
  assert.equal(result.status, "created", JSON.stringify(result));
  const { db } = await service();
  const [row] = await db.sql<{ password_hash: string }[]>`select password_hash from users where id = ${result
    .user_id!}`;
  assert.equal(row.password_hash, made);
  assert.equal(await loginStatus(p, email, PASSWORD), 303);
  assert.equal(await schemeOf(p, result.user_id!), "argon2id");
});

test("a rehash that finds the hash rehashed by a concurrent sign-in answers that hash, not the imported one", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const { db } = await service();
  const email = mail("race");
  const bcryptHash = bcrypt.hashSync(PASSWORD, 4);
  const [{ user_id }] = (await importUsers(p, [{ email, password_hash: bcryptHash }])).results;
  const who = { projectId: p.project.id, userId: user_id!, stored: bcryptHash };
  // A concurrent sign-in rehashed it first: the compare-and-set fails, and the hash as it is now is answered.
  const theirs = await hashPassword(PASSWORD);
  await db.sql`update users set password_hash = ${theirs} where id = ${user_id!}`;
  assert.equal(await rehashIfForeign(db.sql, who, PASSWORD, SYSTEM), theirs);
  // A new password meanwhile (a reset): the imported hash is answered, so a later "changed meanwhile" refuses.
  await db.sql`update users set password_hash = ${await hashPassword(
    "a new password",
  )} where id = ${user_id!}`;
  assert.equal(await rehashIfForeign(db.sql, who, PASSWORD, SYSTEM), bcryptHash);
});

test("POST …/users/import: a chunk failing after others were written answers their results, the rest system_error", async () => {
  const p = await newProject();
  const { db } = await service();
  const boom = mail("boom");
  const fn = `import_boom_${crypto.randomUUID().slice(0, 8)}`;
  // The database refuses one user of the second chunk (lines 1,001 to 1,500), as a failure partway would.
  await db.sql.unsafe(`create function ${fn}() returns trigger language plpgsql as $f$
    begin if new.email = '${boom}' then raise exception 'boom'; end if; return new; end $f$`);
  await db.sql.unsafe(`create trigger ${fn} before insert on users for each row execute function ${fn}()`);
  try {
    const users = Array.from({ length: 1_500 }, (_, i) => ({ external_user_id: `${fn}-${i}` }));
    users[1_200] = { external_user_id: `${fn}-boom`, email: boom } as (typeof users)[number];
    const answer = await importUsers(p, [...users, { nickname: "refused before any write" }]);
    assert.equal(answer.created, 1_000);
    assert.equal(answer.refused, 501);
    assert.ok(answer.results.slice(0, 1_000).every((r) => r.status === "created"));
    for (const r of answer.results.slice(1_000, 1_500)) {
      assert.equal(r.status, "refused");
      assert.equal(r.error?.code, "system_error");
      assert.match(r.error!.description, /not written: the import failed at its line 1001/);
    }
    assert.equal(answer.results[1_500].error?.code, "invalid_params"); // its own refusal stays
    const [{ count }] = await db.sql<{ count: number }[]>`
      select count(*)::int as count from users where project_id = ${p.project.id}`;
    assert.equal(count, 1_000); // the first chunk, written; nothing of the second
  } finally {
    await db.sql.unsafe(`drop trigger ${fn} on users`);
    await db.sql.unsafe(`drop function ${fn}()`);
  }
});

test("the sign-in decoy is an imported hash of the same project while it holds one, never another's", async () => {
  const { db } = await service();
  const a = await newProject({ redirect_uris: [REDIRECT_URI] });
  const b = await newProject({ redirect_uris: [REDIRECT_URI] });
  // No imported hash: the service's own argon2id (of a random secret).
  assert.ok((await decoyHash(db.sql, a.project.id)).startsWith(OWN_PREFIX));
  const email = mail("decoy");
  const bcryptHash = bcrypt.hashSync(PASSWORD, 5);
  await importUsers(a, [
    { email, email_verified: true, password_hash: bcryptHash },
    { email: mail("own"), password_hash: await hashPassword("another password") }, // argon2id: not a decoy
  ]);
  assert.equal(await decoyHash(db.sql, a.project.id), bcryptHash);
  assert.ok((await decoyHash(db.sql, b.project.id)).startsWith(OWN_PREFIX), "not project a's hash");
  // Unknown addresses still fail (the guessed password is no user's), even with the imported user's password.
  assert.equal(await loginStatus(a, mail("unknown"), PASSWORD), 400);
  // Once the imported user has signed in (rehashed), the project has none left.
  assert.equal(await loginStatus(a, email, PASSWORD), 303);
  assert.ok((await decoyHash(db.sql, a.project.id)).startsWith(OWN_PREFIX));
});

test("POST …/users/import refuses each bad line alone, with its reason, and creates the others", async () => {
  const p = await newProject();
  const existing = mail("existing");
  await p.api.users.createUser(p.project.id, { display_name: "Old", email: existing, password: PASSWORD });
  await p.api.users.createUser(p.project.id, { display_name: "Ext", external_user_id: "crm-old" });
  const orgRole = await p.api.roles.createRole(p.project.id, {
    code: "org",
    name: "Org",
    scope: "organization",
  } as never);
  const good = mail("good");
  const twice = mail("twice");
  const lines: unknown[] = [
    { email: good, given_name: "Ada", family_name: "Lovelace" }, // 1
    "a string", // 2
    { email: mail("x"), nickname: "x" }, // 3 unknown field
    { email: mail("x"), password: PASSWORD }, // 4 plain password
    { email: mail("x"), password_hash: "plaintext" }, // 5 names no scheme
    { email: mail("x"), password_hash: "$2b$15$" + "a".repeat(53) }, // 6 bcrypt cost 15
    { email: mail("x"), password_hash: "00".repeat(32), password_hash_algorithm: "sha256_salted" }, // 7 no salt
    { email: twice }, // 8
    { email: twice.toUpperCase() }, // 9 same email as line 8
    { email: existing }, // 10 an existing user's
    { external_user_id: "crm-old" }, // 11 an existing user's external id
    { external_user_id: "crm-new" }, // 12
    { external_user_id: "crm-new", email: mail("y") }, // 13 same external id as line 12
    { email: mail("x"), role_id: "no-such-role" }, // 14
    {}, // 15 neither email nor external id
    { email: mail("x"), password_hash: bcrypt.hashSync(PASSWORD, 4), firebase: {} }, // 16 unknown field
    { email: mail("x"), password_hash: "x".repeat(60), password_hash_algorithm: "firebase_scrypt" }, // 17
    { email: mail("x"), display_name: "\u0000" }, // 18
  ];
  lines.push({ email: mail("x"), role_id: orgRole.id }); // 19 an organization role
  const answer = await importUsers(p, lines);
  const byLine = new Map(answer.results.map((r) => [r.line, r]));
  const code = (line: number) => byLine.get(line)!.error?.code ?? byLine.get(line)!.status;
  const fields = (line: number) => byLine.get(line)!.error?.details?.map((d) => d.field);
  assert.equal(code(1), "created");
  assert.equal(code(8), "created");
  assert.equal(code(12), "created");
  assert.deepEqual([code(2), fields(2)], ["invalid_params", ["line"]]);
  assert.deepEqual([code(3), fields(3)], ["invalid_params", ["nickname"]]);
  assert.deepEqual([code(4), fields(4)], ["invalid_params", ["password"]]);
  assert.deepEqual([code(5), fields(5)], ["invalid_params", ["password_hash"]]);
  assert.deepEqual([code(6), fields(6)], ["invalid_params", ["password_hash"]]);
  assert.match(byLine.get(6)!.error!.description, /cost must be 4 to 13/);
  assert.deepEqual([code(7), fields(7)], ["invalid_params", ["password_salt"]]);
  assert.equal(code(9), "user_email_already_used");
  assert.match(byLine.get(9)!.error!.description, /line 8/);
  assert.equal(code(10), "user_email_already_used");
  assert.equal(code(11), "user_external_id_already_used");
  assert.equal(code(13), "user_external_id_already_used");
  assert.equal(code(14), "role_not_found");
  assert.deepEqual([code(15), fields(15)], ["invalid_params", ["external_user_id"]]);
  assert.deepEqual([code(16), fields(16)], ["invalid_params", ["firebase"]]);
  assert.deepEqual([code(17), fields(17)], ["invalid_params", ["firebase"]]);
  assert.deepEqual([code(18), fields(18)], ["invalid_params", ["line"]]);
  assert.equal(code(19), "invalid_params");
  assert.equal(answer.created, 3);
  assert.equal(answer.refused, lines.length - 3);
  assert.deepEqual(answer.results.map((r) => r.line), lines.map((_, i) => i + 1));
  // Nothing of a refused line was written; the created ones are as sent, named from their parts.
  const list = await p.api.users.listUsers(
    p.project.id,
    1,
    100,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  assert.equal(list.pagination.total, 2 + 3);
  const ada = await p.api.users.getUser(p.project.id, byLine.get(1)!.user_id!, undefined);
  assert.deepEqual(
    [
      ada.display_name,
      ada.given_name,
      ada.family_name,
      ada.password_scheme,
      ada.is_active,
      ada.email_verified,
    ],
    ["Ada Lovelace", "Ada", "Lovelace", null, true, false],
  );
});

test("POST …/users/import: a role is given only by a caller holding its permissions (403 on the line)", async () => {
  const p = await newProject();
  const ids =
    (await p.api.resources.listResources(p.project.id, 1, 100, undefined, undefined, undefined, undefined))
      .data.flatMap((r) => r.permissions.map((x) => [`${r.code}:${x.code}`, x.id]));
  const perms = Object.fromEntries(ids);
  const role = await p.api.roles.createRole(p.project.id, {
    code: "auditor",
    name: "Auditor",
    permission_ids: [perms["audit:read"]],
  });
  const limited = await clientWith(p, ["users:create"]);
  const answer = await importUsers({ ...p, token: limited.token }, [
    { email: mail("a"), role_id: role.id },
    { email: mail("b") },
  ]);
  assert.equal(answer.results[0].error?.code, "insufficient_permission");
  assert.equal(answer.results[1].status, "created");
  // Without users:create, nothing at all.
  const reader = await clientWith(p, ["users:read"]);
  await expectError(
    await importRaw(p, "[]", "application/json", reader.token),
    403,
    "insufficient_permission",
  );
});

test("POST …/users/import takes JSON lines, with the Firebase parameters on the first line", async () => {
  const p = await newProject({ redirect_uris: [REDIRECT_URI] });
  const email = mail("firebase");
  const body = [
    JSON.stringify({ firebase: FIREBASE }),
    JSON.stringify({
      email,
      password_hash:
        "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
      password_salt: "42xEC+ixf3L2lw==",
      password_hash_algorithm: "firebase_scrypt",
    }),
    "",
    "{not json",
    JSON.stringify({ external_user_id: "fb-2" }) + "\r",
  ].join("\n");
  for (const type of ["application/x-ndjson", "application/jsonl"]) {
    const q = type === "application/jsonl" ? await newProject({ redirect_uris: [REDIRECT_URI] }) : p;
    const answer = await importUsers(q, body, type);
    assert.deepEqual(
      answer.results.map((r) => [r.line, r.status, r.error?.code]),
      [[2, "created", undefined], [4, "refused", "invalid_params"], [5, "created", undefined]],
    );
    await authorizationCode({ clientId: q.clientId, email, password: "user1password" });
    assert.equal(await schemeOf(q, answer.results[0].user_id!), "argon2id");
  }
  // Firebase hashes without the parameters are refused on their line.
  const without = await importUsers(p, body.split("\n").slice(1).join("\n"), "application/x-ndjson");
  assert.equal(without.results[0].error?.details?.[0].field, "firebase");
});

test("POST …/users/import refuses a whole request that is not one: not JSON, wrong type, too many, bad firebase", async () => {
  const p = await newProject();
  await expectError(await importRaw(p, "{"), 400, "invalid_params");
  await expectError(await importRaw(p, '"x"'), 400, "invalid_params");
  await expectError(await importRaw(p, '{"users": [], "extra": 1}'), 400, "invalid_params");
  await expectError(await importRaw(p, '{"users": {}}'), 400, "invalid_params");
  await expectError(await importRaw(p, "[]", "text/csv"), 400, "invalid_params");
  const bad = await expectError(
    await importRaw(p, JSON.stringify({ users: [], firebase: { ...FIREBASE, rounds: "8" } })),
    400,
    "invalid_params",
  );
  assert.deepEqual(bad.details?.map((d) => d.field), ["firebase.rounds"]);
  const tooMany = await expectError(
    await importRaw(
      p,
      JSON.stringify(Array.from({ length: 10_001 }, (_, i) => ({ external_user_id: `u${i}` }))),
    ),
    400,
    "invalid_params",
  );
  assert.deepEqual(tooMany.details, [{ field: "body", issue: "at most 10000 users" }]);
  const lines = Array.from({ length: 10_001 }, (_, i) => JSON.stringify({ external_user_id: `u${i}` })).join(
    "\n",
  );
  await expectError(await importRaw(p, lines, "application/x-ndjson"), 400, "invalid_params");
  const huge = await importRaw(p, "[" + " ".repeat(17 * 1024 * 1024) + "]");
  assert.equal(huge.status, 413);
  await huge.body?.cancel();
  const list = await p.api.users.listUsers(
    p.project.id,
    1,
    10,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  );
  assert.equal(list.pagination.total, 0);
});

test("POST …/users/import records one user.created event per created user, how: import", async () => {
  const p = await newProject();
  const answer = await importUsers(p, [{ email: mail("a") }, { email: "bad" }, { external_user_id: "e-1" }]);
  const res = await http(`/api/v1/projects/${p.project.id}/audit-events?type=user.created&limit=100`, {
    headers: { authorization: `Bearer ${p.token}` },
  });
  const events = (await res.json()).data as {
    target: { id: string };
    details: unknown;
    actor: { id: string };
  }[];
  assert.deepEqual(
    events.map((e) => e.target.id).sort(),
    answer.results.flatMap((r) => r.user_id ?? []).sort(),
  );
  for (const e of events) {
    assert.deepEqual(e.details, { how: "import" });
    assert.equal(e.actor.id, p.clientId);
  }
});

test("POST …/users/import refuses a pathological body before parsing it: 400 on body, never a 500", async () => {
  const p = await newProject();
  // 16 MiB less a little of `[[],[],…]`: millions of arrays, a few hundred MiB of heap were it parsed.
  const arrays = "[" + "[],".repeat(5_000_000) + "[]]";
  const many = await expectError(await importRaw(p, arrays), 400, "invalid_params");
  assert.equal(many.details?.[0].field, "body");
  // A hundred users of 40,000 values each: few users, too many values.
  const one = '{"external_user_id": "x", "properties": {"a": [' + "[],".repeat(20_000) + "[]]}}";
  const values = await expectError(
    await importRaw(p, `[${Array(100).fill(one).join(",")}]`),
    400,
    "invalid_params",
  );
  assert.match(values.details![0].issue, /JSON values/);
  // A user larger than 64 KiB.
  const big = JSON.stringify([{ external_user_id: "big", display_name: "x".repeat(70_000) }]);
  const large = await expectError(await importRaw(p, big), 400, "invalid_params");
  assert.match(large.details![0].issue, /a user is larger than 64 KiB/);
  // JSON lines: a line over 64 KiB; more lines than users.
  const longLine = await expectError(
    await importRaw(p, '{"external_user_id": "a"}\n' + big, "application/x-ndjson"),
    400,
    "invalid_params",
  );
  assert.match(longLine.details![0].issue, /line 2 is larger than 64 KiB/);
  const lines = Array(10_002).fill("{}").join("\n");
  await expectError(await importRaw(p, lines, "application/x-ndjson"), 400, "invalid_params");
  // 16 MiB of blank lines hold no user: an empty answer, and no sixteen million strings.
  const blank = await importRaw(p, "\n".repeat(16 * 1024 * 1024 - 16), "application/x-ndjson");
  assert.equal(blank.status, 200);
  assert.deepEqual(await blank.json(), { results: [], created: 0, refused: 0 });
});

test("POST …/users/import: one import at a time per process, another meanwhile is 429", async () => {
  const p = await newProject();
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const running = IMPORT_GATE.run(() => held);
  try {
    const res = await importRaw(p, JSON.stringify([{ external_user_id: "later" }]));
    await expectError(res, 429, "too_many_requests");
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
  } finally {
    release();
    await running;
  }
  const answer = await importUsers(p, [{ external_user_id: "later" }]);
  assert.equal(answer.created, 1);
});

test("POST …/users/import: 10,000 users in one request (the time is printed)", async () => {
  const p = await newProject();
  const hash = bcrypt.hashSync(PASSWORD, 4);
  const users = Array.from({ length: 10_000 }, (_, i) => ({
    email: `bulk-${i}@example.com`,
    given_name: "Bulk",
    family_name: `User ${i}`,
    ...(i % 2 === 0 ? { password_hash: hash } : {}),
  }));
  const started = performance.now();
  const answer = await importUsers(p, { users });
  const ms = performance.now() - started;
  console.log(`imported 10,000 users in ${ms.toFixed(0)} ms`);
  assert.equal(answer.created, 10_000);
  const again = await importUsers(p, { users: users.slice(0, 10) });
  assert.equal(again.refused, 10);
});
