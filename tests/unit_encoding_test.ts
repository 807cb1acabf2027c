/**
 * Unit tests of small pure pieces: strict base64, UUIDv7 ids, PUT's keep-or-clear, SMTP_URL, the
 * throttles' keys and table, the mail retry schedule, and the secret strength estimate. No database.
 */
import assert from "node:assert/strict";
import { decodeBase64Strict, encodeBase64Url } from "../domain/shared/base64.ts";
import { newId, newSecret, uuidV7Time } from "../domain/shared/ids.ts";
import { keepOrClear } from "../domain/shared/updates.ts";
import { parseSmtpUrl } from "../domain/events/smtp.ts";
import { addressKey, secondFactorKey, THROTTLE, throttled } from "../domain/shared/throttle.ts";
import { MAIL_RETRY_DELAYS, mailRetryIn } from "../domain/events/mail.ts";
import { estimatedEntropyBits, MIN_SECRET_BITS } from "../domain/shared/secret_strength.ts";

const bytes = (...b: number[]) => new Uint8Array(b);

Deno.test("base64: base64url out; standard or URL-safe in, strictly", () => {
  assert.equal(encodeBase64Url(bytes(0xfb, 0xff, 0xfe)), "-__-");
  assert.equal(encodeBase64Url(bytes()), "");
  assert.deepEqual(decodeBase64Strict("-__-"), bytes(0xfb, 0xff, 0xfe));
  assert.deepEqual(decodeBase64Strict("+//+"), bytes(0xfb, 0xff, 0xfe));
  assert.deepEqual(decodeBase64Strict("YQ=="), bytes(0x61));
  assert.deepEqual(decodeBase64Strict("YQ"), bytes(0x61));
  assert.deepEqual(decodeBase64Strict(""), bytes());
  for (const bad of ["Y", "YQ=", "YQ===", "Y Q", "YQ==\n", "Y*Q=", "=YQ"]) {
    assert.equal(decodeBase64Strict(bad), null, JSON.stringify(bad));
  }
});

Deno.test("ids: UUIDv7 carries its millisecond, in order; secrets are 43 base64url characters", () => {
  const ms = Date.UTC(2025, 0, 2, 3, 4, 5, 6);
  const id = newId(ms);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(uuidV7Time(id), ms);
  assert.ok(newId(ms) < newId(ms + 1));
  assert.equal(uuidV7Time("not-an-id"), null);
  assert.equal(uuidV7Time(crypto.randomUUID()), null, "a UUIDv4 has no time");
  const ids = new Set(Array.from({ length: 1000 }, () => newId(ms)));
  assert.equal(ids.size, 1000);
  assert.match(newSecret(), /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(newSecret(), newSecret());
});

Deno.test("PUT semantics: an omitted field keeps, null or an empty string clears, a value replaces", () => {
  assert.equal(keepOrClear(undefined, "stored"), "stored");
  assert.equal(keepOrClear(undefined, null), null);
  assert.equal(keepOrClear(null, "stored"), null);
  assert.equal(keepOrClear("", "stored"), null);
  assert.equal(keepOrClear("new", "stored"), "new");
  assert.equal(keepOrClear(0, 5), 0, "0 is a value, not a clear");
});

Deno.test("SMTP_URL: scheme, default ports, credentials decoded, the display without the password", () => {
  assert.deepEqual(parseSmtpUrl("smtp://mail.example.com"), {
    implicitTls: false,
    host: "mail.example.com",
    port: 587,
    user: undefined,
    password: undefined,
    display: "smtp://mail.example.com",
  });
  const full = parseSmtpUrl("smtps://a%40b.c:p%3Ass@[::1]:2465/");
  assert.deepEqual(
    { ...full },
    {
      implicitTls: true,
      host: "::1",
      port: 2465,
      user: "a@b.c",
      password: "p:ss",
      display: "smtps://a%40b.c@[::1]:2465",
    },
  );
  assert.equal(parseSmtpUrl("smtps://h").port, 465);
  assert.throws(() => parseSmtpUrl("mail.example.com"), /not a URL/);
  assert.throws(() => parseSmtpUrl("http://h"), /smtp:\/\/ or smtps:\/\//);
  assert.throws(() => parseSmtpUrl("smtp://h/path"), /nothing after the port/);
  assert.throws(() => parseSmtpUrl("smtp://h?x=1"), /nothing after the port/);
  assert.throws(() => parseSmtpUrl("smtp://:pw@h"), /password without a user/);
});

Deno.test("throttles: IPv6 counted by its /64 in one spelling, IPv4 as it is; the table's policies; 429 after at least 1 s", () => {
  assert.equal(addressKey(null), "unknown");
  assert.equal(addressKey("203.0.113.9"), "203.0.113.9");
  assert.equal(addressKey("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
  assert.equal(addressKey("2001:0DB8:0001:0002::9"), "2001:db8:1:2::/64");
  assert.equal(addressKey("[2001:db8::1]"), "2001:db8:0:0::/64");
  assert.equal(addressKey("::1"), "0:0:0:0::/64");
  assert.equal(secondFactorKey("p", "u"), "mfa:p:u");
  for (const [name, policy] of Object.entries(THROTTLE)) {
    assert.ok(policy.free > 0 && policy.window > 0, name);
    if (policy.kind === "delay") assert.ok(policy.maxDelay <= policy.window, name);
  }
  assert.ok(
    THROTTLE.address.free > THROTTLE.account.free,
    "a shared address is not locked out before an account",
  );
  const err = throttled(0);
  assert.equal(err.code, "too_many_requests");
  assert.equal(err.retryAfter, 1);
  assert.equal(throttled(42, "wait").retryAfter, 42);
  assert.equal(throttled(42, "wait").message, "wait");
});

Deno.test("the mail retry schedule: each wait within a fifth of its step, scaled by the base, then none", () => {
  for (let attempts = 1; attempts <= MAIL_RETRY_DELAYS.length; attempts++) {
    const step = MAIL_RETRY_DELAYS[attempts - 1];
    for (let i = 0; i < 20; i++) {
      const wait = mailRetryIn(attempts)!;
      assert.ok(wait >= step * 0.8 && wait <= step * 1.2, `${attempts}: ${wait}`);
      const scaled = mailRetryIn(attempts, MAIL_RETRY_DELAYS[0] / 100)!;
      assert.ok(
        scaled >= step * 0.008 - 0.001 && scaled <= step * 0.012 + 0.001,
        `${attempts} scaled: ${scaled}`,
      );
    }
  }
  assert.equal(mailRetryIn(MAIL_RETRY_DELAYS.length + 1), null);
});

Deno.test("secret strength: runs, walks and repeats score low however long; random secrets clear the bar", () => {
  assert.equal(estimatedEntropyBits(""), 0);
  assert.equal(estimatedEntropyBits("ab"), 0);
  assert.equal(estimatedEntropyBits("a".repeat(64)), 0);
  for (
    const weak of [
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
      "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,",
    ]
  ) {
    assert.ok(estimatedEntropyBits(weak) < MIN_SECRET_BITS, weak);
  }
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0"))
    .join("");
  assert.ok(estimatedEntropyBits(hex) >= MIN_SECRET_BITS, hex);
  assert.ok(estimatedEntropyBits(newSecret()) >= MIN_SECRET_BITS);
  // More of the same kind of randomness never scores less.
  assert.ok(estimatedEntropyBits(hex + hex.slice(0, 8)) >= estimatedEntropyBits(hex.slice(0, 32)));
});
