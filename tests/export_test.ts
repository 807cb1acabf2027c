/**
 * `GET …/users/export`: JSON lines as the admin API shows users; hashes only with `users:export_secrets`, recorded
 * as an audit event; an export with hashes imports into another project where every user signs in; and 100,000
 * users stream out (bench/export_memory.ts measures the server's memory while they do).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { pbkdf2Sync, randomBytes } from "node:crypto";
import bcrypt from "bcryptjs";
import {
  authorizationCode,
  clientWith,
  expectError,
  http,
  newProject,
  REDIRECT_URI,
  test,
  type TestProject,
} from "./helpers.ts";

const PASSWORD = "correct horse battery staple";
const mail = (tag: string) => `${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;

async function exportRaw(p: TestProject, query = "", token = p.token): Promise<Response> {
  return await http(`/api/v1/projects/${p.project.id}/users/export${query}`, {
    headers: { authorization: `Bearer ${token}` },
  });
}

async function exportLines(p: TestProject, query = ""): Promise<Record<string, unknown>[]> {
  const res = await exportRaw(p, query);
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(res.headers.get("content-type") ?? "", /^application\/x-ndjson/);
  const text = await res.text();
  assert.ok(text === "" || text.endsWith("\n"));
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

async function importBody(p: TestProject, body: string, type: string) {
  const res = await http(`/api/v1/projects/${p.project.id}/users/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.token}`, "content-type": type },
    body,
  });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json() as { created: number; refused: number; results: { user_id?: string }[] };
}

test("GET …/users/export streams the users as the admin API shows them, oldest first, without hashes", async () => {
  const p = await newProject();
  const a = await p.api.users.createUser(p.project.id, {
    display_name: "Ada",
    given_name: "Ada",
    email: mail("ada"),
    password: PASSWORD,
    properties: { team: "core" },
  });
  const b = await p.api.users.createUser(p.project.id, { display_name: "Ext", external_user_id: "crm-1" });
  const lines = await exportLines(p);
  assert.deepEqual(lines.map((l) => l.id), [a.id, b.id]);
  const shown = await p.api.users.getUser(p.project.id, a.id, undefined);
  assert.deepEqual(lines[0], JSON.parse(JSON.stringify(shown)));
  assert.equal(lines[0].password_scheme, "argon2id");
  assert.equal(lines[1].password_scheme, null);
  for (const line of lines) assert.ok(!("password_hash" in line));
  // An empty project exports nothing.
  assert.deepEqual(await exportLines(await newProject()), []);
});

test("GET …/users/export?include_password_hashes=true needs users:export_secrets and is an audit event", async () => {
  const p = await newProject();
  await p.api.users.createUser(p.project.id, { display_name: "Ada", email: mail("ada"), password: PASSWORD });
  await p.api.users.createUser(p.project.id, { display_name: "Ext", external_user_id: "crm-1" });
  const reader = await clientWith(p, ["users:read"]);
  const refused = await expectError(
    await exportRaw(p, "?include_password_hashes=true", reader.token),
    403,
    "insufficient_permission",
  );
  assert.match(refused.error_description, /users:export_secrets/);
  assert.deepEqual(refused.details?.map((d) => d.field), ["include_password_hashes"]);
  // Without the flag the same client exports, without hashes; nothing is recorded.
  assert.equal((await exportRaw(p, "", reader.token)).status, 200);
  const secrets = await clientWith(p, ["users:read", "users:export_secrets"]);
  const res = await exportRaw(p, "?include_password_hashes=true", secrets.token);
  assert.equal(res.status, 200);
  const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.match(lines[0].password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  assert.ok(!("password_hash" in lines[1]), "a user without a password has no hash line");
  const events = await http(
    `/api/v1/projects/${p.project.id}/audit-events?type=users.exported_with_secrets`,
    { headers: { authorization: `Bearer ${p.token}` } },
  );
  const data = (await events.json()).data as {
    actor: { id: string };
    target: { type: string; id: string };
  }[];
  assert.equal(data.length, 1);
  assert.equal(data[0].actor.id, secrets.id);
  assert.deepEqual(data[0].target, { type: "project", id: p.project.id });
  await expectError(await exportRaw(p, "?include_password_hashes=maybe"), 400, "invalid_params");
});

test("an export with hashes imports into another project, where every user signs in with their password", async () => {
  const from = await newProject();
  const to = await newProject({ redirect_uris: [REDIRECT_URI] });
  const salt = randomBytes(16);
  const users = [
    { email: mail("own"), password: PASSWORD }, // the service's own argon2id, through createUser
    { email: mail("bcrypt"), password_hash: bcrypt.hashSync(PASSWORD, 6) },
    {
      email: mail("pbkdf2"),
      password_hash: `$pbkdf2-sha512$i=1000$${Buffer.from(salt).toString("base64").replace(/=+$/, "")}$${
        pbkdf2Sync(PASSWORD, salt, 1000, 64, "sha512").toString("base64").replace(/=+$/, "")
      }`,
    },
    {
      email: mail("firebase"),
      password_hash:
        "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
      password_salt: "42xEC+ixf3L2lw==",
      password_hash_algorithm: "firebase_scrypt",
      password: "user1password",
    },
    {
      email: mail("md5"),
      password_hash: "3f86d0d3d465b7b458c231bf3555c0e3", // Django's test vector: md5("seasalt" + "lètmein")
      password_hash_algorithm: "md5_salted",
      password_salt: "seasalt",
      password_salt_position: "prefix",
      password: "lètmein",
    },
    { external_user_id: "no-password", given_name: "No", family_name: "Password" },
  ];
  await from.api.users.createUser(from.project.id, {
    display_name: "Own",
    email: users[0].email!,
    password: PASSWORD,
  });
  const imported = await importBody(
    from,
    JSON.stringify({
      users: users.slice(1).map(({ password: _, ...u }) => u),
      firebase: {
        signer_key:
          "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
        salt_separator: "Bw==",
        rounds: 8,
        mem_cost: 14,
      },
    }),
    "application/json",
  );
  assert.equal(imported.created, users.length - 1);
  const res = await exportRaw(from, "?include_password_hashes=true");
  assert.equal(res.status, 200);
  const exported = await res.text();
  // The export's lines are the import's: sent back as they are, as JSON lines, into another project.
  const back = await importBody(to, exported, "application/x-ndjson");
  assert.equal(back.created, users.length, JSON.stringify(back));
  const sent = exported.trim().split("\n").map((l) => JSON.parse(l));
  // Users made in the same millisecond are in no particular order (ids are UUIDv7): compare them sorted.
  const fields = (u: Record<string, unknown>) =>
    JSON.stringify([u.email, u.external_user_id, u.given_name, u.password_scheme]);
  assert.deepEqual((await exportLines(to)).map(fields).sort(), sent.map(fields).sort());
  for (const u of users.filter((u) => u.email)) {
    await authorizationCode({ clientId: to.clientId, email: u.email!, password: u.password ?? PASSWORD });
  }
  const after = await exportLines(to);
  assert.deepEqual(
    after.map((u) => [u.external_user_id ?? "", u.password_scheme]).sort(),
    [...users.slice(0, -1).map(() => ["", "argon2id"]), ["no-password", null]].sort(),
  );
});

test("GET …/users/export streams 100,000 users (seeded by ten imports of 10,000)", async () => {
  const p = await newProject();
  for (let batch = 0; batch < 10; batch++) {
    const lines = Array.from(
      { length: 10_000 },
      (_, i) =>
        JSON.stringify({ email: `u${batch}-${i}@example.com`, given_name: "Many", family_name: `${i}` }),
    ).join("\n");
    const answer = await importBody(p, lines, "application/x-ndjson");
    assert.equal(answer.created, 10_000);
  }
  const res = await exportRaw(p);
  assert.equal(res.status, 200);
  // Read as it streams, counting lines, never holding the whole answer.
  const reader = res.body!.getReader();
  let lines = 0;
  let chunks = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks++;
    for (const byte of value) if (byte === 10) lines++;
  }
  assert.equal(lines, 100_000);
  assert.ok(chunks >= 100, `streamed in ${chunks} chunks: a page at a time`);
});
