/**
 * Imported password hashes (domain/accounts/password_schemes.ts): vectors made by the real libraries (bcryptjs,
 * hash-wasm and @node-rs/argon2, Node's scrypt and PBKDF2) and published ones (Firebase's scrypt README, Django's
 * and passlib's test suites and docs), each imported, verified with the right and a wrong password, and classified
 * as the SQL column does; malformed strings and out-of-bounds parameters refused with a reason. No database.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash, pbkdf2Sync, randomBytes, scryptSync } from "node:crypto";
import bcrypt from "bcryptjs";
import { argon2i, argon2id } from "hash-wasm";
import { hash as nativeArgon2 } from "@node-rs/argon2";
import {
  bcryptBackendName,
  BOUNDS,
  decodeAnyBase64,
  type FirebaseParams,
  type ForeignHash,
  type HashIssue,
  IMPORT_ALGORITHMS,
  type ImportedHash,
  importHash,
  needsRehash,
  schemeOf,
  SCHEMES,
} from "../domain/accounts/password_schemes.ts";
import { ImportUserLine, User } from "../openapi/users.ts";
import { hashPassword, verifyPassword } from "../domain/accounts/passwords.ts";
import { createGate } from "../domain/accounts/hash_gate.ts";
import { AppError } from "../domain/shared/errors.ts";

const PASSWORD = "correct horse battery staple";
const WRONG = "correct horse battery stapler";

/** passlib's "adapted base64": standard without padding, `.` for `+`. */
const ab64 = (b: Uint8Array) => Buffer.from(b).toString("base64").replace(/=+$/, "").replace(/\+/g, ".");
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64").replace(/=+$/, "");

function imported(input: ForeignHash | string, firebase?: FirebaseParams): ImportedHash {
  const result = importHash(typeof input === "string" ? { password_hash: input } : input, firebase);
  assert.ok("stored" in result, `refused: ${JSON.stringify(result)}`);
  assert.equal(schemeOf(result.stored), result.scheme);
  return result;
}

function refused(input: ForeignHash | string, firebase?: FirebaseParams): HashIssue {
  const result = importHash(typeof input === "string" ? { password_hash: input } : input, firebase);
  assert.ok("issue" in result, `accepted: ${JSON.stringify(result)}`);
  return result;
}

async function verifies(stored: string, password = PASSWORD, wrong = WRONG) {
  assert.equal(await verifyPassword(stored, password), true, `${stored} with the right password`);
  assert.equal(await verifyPassword(stored, wrong), false, `${stored} with a wrong password`);
}

Deno.test("the service's own argon2id is kept as is, classified argon2id, and needs no rehash", async () => {
  const own = await hashPassword(PASSWORD);
  const { stored, scheme } = imported(own);
  assert.equal(stored, own);
  assert.equal(scheme, "argon2id");
  assert.equal(needsRehash(stored), false);
  await verifies(stored);
});

Deno.test("bcrypt $2a$, $2b$ and $2y$ from bcryptjs verify and need a rehash", async () => {
  const made = bcrypt.hashSync(PASSWORD, 8); // $2b$
  for (const variant of ["$2a$", "$2b$", "$2y$"]) {
    const { stored, scheme } = imported(variant + made.slice(4));
    assert.equal(scheme, "bcrypt");
    assert.equal(needsRehash(stored), true);
    await verifies(stored);
  }
  assert.equal(imported({ password_hash: made, password_hash_algorithm: "bcrypt" }).scheme, "bcrypt");
});

Deno.test("argon2i and argon2id of other parameters (hash-wasm, @node-rs/argon2) verify as argon2", async () => {
  const salt = randomBytes(16);
  const i = await argon2i({
    password: PASSWORD,
    salt,
    memorySize: 8192,
    iterations: 3,
    parallelism: 2,
    hashLength: 24,
    outputType: "encoded",
  });
  assert.match(i, /^\$argon2i\$v=19\$m=8192,t=3,p=2\$/);
  const id = await argon2id({
    password: PASSWORD,
    salt,
    memorySize: 4096,
    iterations: 1,
    parallelism: 1,
    hashLength: 32,
    outputType: "encoded",
  });
  const native = await nativeArgon2(PASSWORD, {
    algorithm: 1,
    memoryCost: 16384,
    timeCost: 2,
    parallelism: 1,
  });
  assert.match(native, /^\$argon2i\$v=19\$m=16384,t=2,p=1\$/);
  for (const made of [i, id, native]) {
    const { stored, scheme } = imported(made);
    assert.equal(scheme, "argon2");
    assert.equal(needsRehash(stored), true);
    await verifies(stored);
  }
});

Deno.test("scrypt as passlib writes it ($scrypt$ln=…), from Node's crypto.scrypt and passlib's docs", async () => {
  const salt = randomBytes(16);
  const key = scryptSync(PASSWORD, salt, 32, { N: 2 ** 14, r: 8, p: 1 });
  for (const enc of [b64, ab64]) {
    const { stored, scheme } = imported(`$scrypt$ln=14,r=8,p=1$${enc(salt)}$${enc(key)}`);
    assert.equal(scheme, "scrypt");
    await verifies(stored);
  }
  // passlib's documentation (passlib.hash.scrypt) for "password".
  await verifies(
    imported("$scrypt$ln=16,r=8,p=1$aM15713r3Xsvxbi31lqr1Q$nFNh2CVHVjNldFVKDHDlm4CbdRSCdEBsjjJxD+iCs5E")
      .stored,
    "password",
    "passw0rd",
  );
});

Deno.test("PBKDF2 as passlib ($pbkdf2-sha256$29000$…, adapted base64) and @phc/pbkdf2 (i=…) write it", async () => {
  const salt = randomBytes(16);
  for (const [digest, length] of [["sha1", 20], ["sha256", 32], ["sha512", 64]] as const) {
    const key = pbkdf2Sync(PASSWORD, salt, 1000, length, digest);
    const passlib = imported(`$pbkdf2-${digest}$1000$${ab64(salt)}$${ab64(key)}`);
    assert.equal(passlib.scheme, "pbkdf2");
    await verifies(passlib.stored);
    await verifies(imported(`$pbkdf2-${digest}$i=1000,l=${length}$${b64(salt)}$${b64(key)}`).stored);
    await verifies(imported(`$pbkdf2-${digest}$i=1000$${b64(salt)}$${b64(key)}`).stored);
  }
  // passlib's SHA-1 handler writes `$pbkdf2$`: stored under the name that says its digest.
  const key = pbkdf2Sync(PASSWORD, salt, 1000, 20, "sha1");
  const sha1 = imported(`$pbkdf2$1000$${ab64(salt)}$${ab64(key)}`);
  assert.ok(sha1.stored.startsWith("$pbkdf2-sha1$1000$"));
  await verifies(sha1.stored);
  // passlib's documentation (its front page's pbkdf2_sha256 example): "toomanysecrets", not "joshua".
  await verifies(
    imported("$pbkdf2-sha256$29000$N2YMIWQsBWBMae09x1jrPQ$1t8iyB2A.WF/Z5JZv.lfCIhXXN33N23OSgQYThBYRfk")
      .stored,
    "toomanysecrets",
    "joshua",
  );
});

Deno.test("Django's pbkdf2_sha256 and pbkdf2_sha1: made with Django's algorithm, and Django's own vectors", async () => {
  // Django: base64(pbkdf2(password, salt as text, iterations, digest size, digest)), the salt kept as text.
  const salt = "Xk3dV9mQz1pL0aRt7yBn2C";
  const made = `pbkdf2_sha256$12000$${salt}$${
    pbkdf2Sync(PASSWORD, salt, 12000, 32, "sha256").toString("base64")
  }`;
  const { stored, scheme } = imported(made);
  assert.equal(stored, made);
  assert.equal(scheme, "django_pbkdf2");
  await verifies(stored);
  const sha1 = `pbkdf2_sha1$12000$${salt}$${
    pbkdf2Sync(PASSWORD, salt, 12000, 20, "sha1").toString("base64")
  }`;
  await verifies(imported(sha1).stored);
  // django/tests/auth_tests/test_hashers.py (Django 1.10): test_pbkdf2 and test_low_level_pbkdf2_sha1.
  await verifies(
    imported("pbkdf2_sha256$30000$seasalt$VrX+V8drCGo68wlvy6rfu8i1d1pfkdeXA4LJkRGJodY=").stored,
    "lètmein",
    "lètmeinz",
  );
  await verifies(
    imported("pbkdf2_sha1$30000$seasalt2$pMzU1zNPcydf6wjnJFbiVKwgULc=").stored,
    "lètmein",
    "lètmeinz",
  );
});

/** github.com/firebase/scrypt README: the sample project's parameters and user1's account. */
const FIREBASE: FirebaseParams = {
  signer_key: "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
  salt_separator: "Bw==",
  rounds: 8,
  mem_cost: 14,
};
const FIREBASE_USER = {
  password_hash: "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
  password_salt: "42xEC+ixf3L2lw==",
};

Deno.test("Firebase's scrypt: the published test vector verifies, and its stored string carries everything", async () => {
  const { stored, scheme } = imported(
    { ...FIREBASE_USER, password_hash_algorithm: "firebase_scrypt" },
    FIREBASE,
  );
  assert.equal(scheme, "firebase_scrypt");
  assert.match(stored, /^\$firebase-scrypt\$r=8,m=14\$/);
  await verifies(stored, "user1password", "user2password");
  // An export carries the stored string; importing it back needs no parameters.
  assert.equal(imported(stored).stored, stored);
  assert.equal(
    imported({ password_hash: stored, password_hash_algorithm: "firebase_scrypt" }).stored,
    stored,
  );
});

Deno.test("Firebase's scrypt needs the request's parameters and the user's salt", () => {
  const line = { ...FIREBASE_USER, password_hash_algorithm: "firebase_scrypt" as const };
  assert.equal(refused(line).field, "firebase");
  assert.equal(refused({ ...line, password_salt: null }, FIREBASE).field, "password_salt");
  assert.equal(refused({ ...line, password_salt: "not base64!" }, FIREBASE).field, "password_salt");
  assert.equal(refused({ ...line, password_hash: "c2hvcnQ=" }, FIREBASE).field, "password_hash");
  assert.equal(refused(line, { ...FIREBASE, mem_cost: 20 }).field, "firebase"); // 128 MiB·8
  assert.equal(refused(line, { ...FIREBASE, rounds: 0 }).field, "firebase");
  assert.equal(refused(line, { ...FIREBASE, signer_key: "%%%" }).field, "firebase");
});

Deno.test("salted SHA-256, SHA-512 and MD5: prefix or suffix, hex or base64; Django's md5 vector", async () => {
  const salt = "pepper-and-salt";
  for (
    const [algorithm, digest] of [["sha256_salted", "sha256"], ["sha512_salted", "sha512"], [
      "md5_salted",
      "md5",
    ]] as const
  ) {
    for (const position of ["prefix", "suffix"] as const) {
      const input = position === "prefix" ? salt + PASSWORD : PASSWORD + salt;
      const raw = createHash(digest).update(input).digest();
      for (const text of [raw.toString("hex"), raw.toString("hex").toUpperCase(), raw.toString("base64")]) {
        const { stored, scheme } = imported({
          password_hash: text,
          password_hash_algorithm: algorithm,
          password_salt: salt,
          password_salt_position: position,
        });
        assert.equal(scheme, algorithm);
        assert.ok(stored.startsWith(`$${digest}-salted$${position}$`));
        await verifies(stored);
        assert.equal(imported(stored).stored, stored); // as an export writes it
      }
    }
  }
  // Django's MD5PasswordHasher: md5(salt + password), hex (auth_tests/test_hashers.py, test_md5).
  const django = imported({
    password_hash: "3f86d0d3d465b7b458c231bf3555c0e3",
    password_hash_algorithm: "md5_salted",
    password_salt: "seasalt",
    password_salt_position: "prefix",
  });
  await verifies(django.stored, "lètmein", "lètmeinz");
});

Deno.test("salted digests need their salt, its position and a digest of the right length", () => {
  const digest = createHash("sha256").update("x").digest("hex");
  const line = {
    password_hash: digest,
    password_hash_algorithm: "sha256_salted" as const,
    password_salt: "s",
    password_salt_position: "suffix" as const,
  };
  assert.equal(refused({ ...line, password_salt: null }).field, "password_salt");
  assert.equal(refused({ ...line, password_salt: "" }).field, "password_salt");
  assert.equal(refused({ ...line, password_salt_position: null }).field, "password_salt_position");
  assert.equal(refused({ ...line, password_hash: digest.slice(2) }).field, "password_hash");
  assert.equal(refused({ ...line, password_hash_algorithm: "sha512_salted" }).field, "password_hash");
  assert.equal(refused({ password_hash: digest }).field, "password_hash"); // names no scheme
});

Deno.test("parameters that would make a sign-in a denial of service are refused, with a reason", () => {
  const salt = b64(randomBytes(16));
  const hash = b64(randomBytes(32));
  const cases: [string, RegExp][] = [
    ["$2b$14$" + "a".repeat(53), /cost must be 4 to 13/],
    ["$2b$03$" + "a".repeat(53), /cost must be 4 to 13/],
    [`$argon2id$v=19$m=262145,t=2,p=1$${salt}$${hash}`, /m \(memory, KiB\)/],
    [`$argon2id$v=19$m=65536,t=11,p=1$${salt}$${hash}`, /t \(passes\)/],
    [`$argon2id$v=19$m=65536,t=2,p=17$${salt}$${hash}`, /p \(lanes\)/],
    [`$scrypt$ln=17,r=8,p=1$${salt}$${hash}`, /64 MiB/],
    [`$scrypt$ln=15,r=8,p=16$${salt}$${hash}`, /N·r·p/],
    [`$scrypt$ln=21,r=1,p=1$${salt}$${hash}`, /ln must be/],
    [`$pbkdf2-sha256$2000001$${salt}$${hash}`, /iterations/],
    [`pbkdf2_sha256$2000001$abc$${hash}`, /iterations/],
  ];
  for (const [text, issue] of cases) {
    const r = refused(text);
    assert.equal(r.field, "password_hash");
    assert.match(r.issue, issue, text);
  }
});

Deno.test("malformed and too-weak strings are refused: no salt, short hashes, bad base64, unknown schemes", () => {
  const salt = b64(randomBytes(16));
  const hash = b64(randomBytes(32));
  for (
    const text of [
      "",
      "plaintext",
      "$2b$10$tooShort",
      "$argon2id$v=19$m=65536,t=2,p=1$$" + hash, // no salt
      `$argon2id$v=19$m=65536,t=2,p=1$${b64(randomBytes(4))}$${hash}`, // salt under 8 bytes
      `$argon2id$v=19$m=65536,t=2,p=1$${salt}$${b64(randomBytes(8))}`, // hash under 16 bytes
      `$argon2id$m=65536,t=2,p=1$${salt}$${hash}`, // version 16
      `$argon2d$v=19$m=65536,t=2,p=1$${salt}$${hash}`,
      `$scrypt$ln=14,r=8,p=1$$${hash}`,
      `$scrypt$ln=14,r=8,p=1$${salt}$not*base64`,
      `$pbkdf2-sha256$1000$$${hash}`,
      `$pbkdf2-md5$1000$${salt}$${hash}`,
      `$pbkdf2-sha256$i=1000,l=64$${salt}$${hash}`, // l disagrees with the hash
      `pbkdf2_sha256$1000$$${hash}`,
      `pbkdf2_sha512$1000$abc$${hash}`,
      "$firebase-scrypt$r=8,m=14$$$$",
      "$md5-salted$middle$c2FsdA$" + b64(randomBytes(16)),
      "$1$saltsalt$hash", // md5-crypt: not read
    ]
  ) {
    const r = refused(text);
    assert.ok(r.issue.length > 0, text);
  }
  // The algorithm named must agree with the string; a string that names its scheme takes no salt.
  const made = bcrypt.hashSync(PASSWORD, 4);
  assert.equal(
    refused({ password_hash: made, password_hash_algorithm: "scrypt" }).field,
    "password_hash_algorithm",
  );
  assert.equal(refused({ password_hash: made, password_salt: "x" }).field, "password_salt");
});

Deno.test("a stored string that does not parse, or is out of bounds, matches nothing", async () => {
  for (const stored of ["", "plaintext", "$2b$15$" + "a".repeat(53), "$scrypt$ln=30,r=8,p=1$YWJj$YWJj"]) {
    assert.equal(await verifyPassword(stored, PASSWORD), false);
  }
});

Deno.test("base64 in every flavour hash strings use, exactly", () => {
  const bytes = new Uint8Array([0xfb, 0xff, 0xfe, 0x01]);
  for (const text of ["+//+AQ==", "+//+AQ", "-__-AQ", ".//.AQ"]) {
    assert.deepEqual(decodeAnyBase64(text), bytes);
  }
  for (const bad of ["+//+AR", "A", "YQ=", "Y Q"]) assert.equal(decodeAnyBase64(bad), null, bad);
});

Deno.test("the API's lists of schemes are the domain's: password_hash_algorithm and password_scheme", () => {
  const algorithms = (ImportUserLine.shape.password_hash_algorithm.unwrap().unwrap() as { options: string[] })
    .options;
  assert.deepEqual([...algorithms].sort(), [...IMPORT_ALGORITHMS].sort());
  const shown = (User.shape.password_scheme.unwrap() as { options: string[] }).options;
  assert.deepEqual([...shown].sort(), [...SCHEMES, "unknown"].sort());
});

Deno.test("the bounds keep one verification near a second of CPU and 64 MiB: Argon2 m·t, scrypt N·r·p, bcrypt 13", () => {
  const salt = b64(randomBytes(16));
  const hash = b64(randomBytes(32));
  const cases: [string, RegExp][] = [
    [`$argon2id$v=19$m=65537,t=1,p=1$${salt}$${hash}`, /m \(memory, KiB\) must be 8·p to 65536/],
    [`$argon2id$v=19$m=262144,t=10,p=1$${salt}$${hash}`, /m \(memory, KiB\)/],
    [`$argon2id$v=19$m=65536,t=5,p=1$${salt}$${hash}`, /m·t/], // 320 MiB of work
    [`$argon2id$v=19$m=32768,t=10,p=1$${salt}$${hash}`, /m·t/],
    [`$scrypt$ln=16,r=8,p=4$${salt}$${hash}`, /N·r·p/], // 2^21
    [`$scrypt$ln=14,r=8,p=16$${salt}$${hash}`, /N·r·p/], // 2^21
    ["$2b$14$" + "a".repeat(53), /cost must be 4 to 13/],
  ];
  for (const [text, issue] of cases) assert.match(refused(text).issue, issue, text);
  // PHP's default Argon2 (64 MiB, 4 passes) and scrypt's usual 2^14·8·1 are within them.
  imported(`$argon2id$v=19$m=65536,t=4,p=1$${salt}$${hash}`);
  imported(`$scrypt$ln=16,r=8,p=1$${salt}$${hash}`);
  imported("$2b$13$" + "a".repeat(53));
  assert.equal(BOUNDS.bcrypt.maxCost, 13);
});

Deno.test("PBKDF2 derives only the first block: a 128-byte hash verifies by its first digest-sized prefix", async () => {
  const salt = randomBytes(16);
  for (const [digest, block] of [["sha1", 20], ["sha256", 32], ["sha512", 64]] as const) {
    const key = pbkdf2Sync(PASSWORD, salt, 1000, 128, digest);
    const stored = imported(`$pbkdf2-${digest}$1000$${b64(salt)}$${b64(key)}`).stored;
    await verifies(stored);
    // Blocks after the first are never derived (their cost would multiply the sign-in's): a string whose tail
    // differs matches on its first block, one whose first block differs does not.
    const tail = Buffer.from(key);
    tail[block] ^= 1;
    assert.equal(await verifyPassword(`$pbkdf2-${digest}$1000$${b64(salt)}$${b64(tail)}`, PASSWORD), true);
    const head = Buffer.from(key);
    head[block - 1] ^= 1;
    assert.equal(await verifyPassword(`$pbkdf2-${digest}$1000$${b64(salt)}$${b64(head)}`, PASSWORD), false);
  }
  const django = pbkdf2Sync(PASSWORD, "abc", 1000, 128, "sha256");
  await verifies(`pbkdf2_sha256$1000$abc$${b64(django)}`);
});

Deno.test("bcrypt runs in the native addon where it loads (here: tests run with --allow-all)", async () => {
  assert.equal(await bcryptBackendName(), "native");
});

Deno.test("the foreign-hash gate: `limit` at once, `queue` waiting, beyond that 429 too_many_requests", async () => {
  const gate = createGate(1, 1);
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const first = gate.run(() => held.then(() => "first"));
  const second = gate.run(() => Promise.resolve("second"));
  assert.equal(gate.running, 1);
  assert.equal(gate.waiting, 1);
  await assert.rejects(
    gate.run(() => Promise.resolve("third")),
    (err: unknown) => err instanceof AppError && err.code === "too_many_requests",
  );
  release();
  assert.deepEqual(await Promise.all([first, second]), ["first", "second"]);
  assert.equal(gate.running, 0);
  assert.equal(await gate.run(() => Promise.resolve("again")), "again");
  // A failure releases its slot too.
  await assert.rejects(gate.run(() => Promise.reject(new Error("boom"))));
  assert.equal(gate.running, 0);
});

Deno.test("Argon2 in padded or URL-safe base64 is stored re-encoded (unpadded standard) and verifies", async () => {
  const salt = new Uint8Array(Buffer.from("fb+/salt-of-16-b")); // base64 with + and / in it
  const made = await nativeArgon2(PASSWORD, {
    algorithm: 2,
    memoryCost: 8192,
    timeCost: 1,
    parallelism: 1,
    salt,
  });
  const [, , , params, saltText, hashText] = made.split("$");
  const padded = (t: string) => t + "=".repeat((4 - (t.length % 4)) % 4);
  const urlSafe = (t: string) => t.replace(/\+/g, "-").replace(/\//g, "_");
  assert.match(saltText + hashText, /[+/]/, "the vector has characters URL-safe base64 writes otherwise");
  for (
    const variant of [
      `$argon2id$v=19$${params}$${padded(saltText)}$${padded(hashText)}`,
      `$argon2id$v=19$${params}$${urlSafe(saltText)}$${urlSafe(hashText)}`,
    ]
  ) {
    assert.notEqual(variant, made);
    const { stored, scheme } = imported(variant);
    assert.equal(stored, made, "stored as PHC writes it");
    assert.equal(scheme, "argon2");
    await verifies(stored);
    await verifies(variant); // and a stored string written otherwise still verifies
  }
});
