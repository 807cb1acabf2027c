/** Pure helpers whose edge cases black-box requests cannot reach: Basic decoding and configuration. */
import assert from "node:assert/strict";
import { RETRY_DELAYS, retryIn } from "../domain/events/webhook_delivery.ts";
import { loadConfig } from "../config.ts";
import { parseBasicCredentials } from "../routes/api/oauth/client_auth.ts";
import { urlencodedText } from "../routes/middleware.ts";
import { AppError } from "../domain/shared/errors.ts";
import { base32Decode, base32Encode, hotp, matchingStep, stepOf } from "../domain/factors/totp.ts";
import { test } from "./helpers.ts";

test("Basic credentials are base64, then form-urldecoded (RFC 6749 §2.3.1)", () => {
  assert.deepEqual(parseBasicCredentials(`Basic ${btoa("a%3Ab:c+d%25")}`), {
    clientId: "a:b",
    secret: "c d%",
  });
  assert.deepEqual(parseBasicCredentials(`basic ${btoa("id:se:cret")}`), {
    clientId: "id",
    secret: "se:cret",
  });
  // URL-safe alphabet and missing padding: "??>" encodes to "Pz8-" in base64url.
  assert.deepEqual(
    parseBasicCredentials(
      `Basic ${btoa("i:??>").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`,
    ),
    {
      clientId: "i",
      secret: "??>",
    },
  );
  for (
    const bad of [
      "Basic",
      "Basic !!!",
      `Basic ${btoa("nocolon")}`,
      `Basic ${btoa(":secret")}`,
      `Basic ${btoa("id:")}`,
      `Basic ${btoa("id:%zz")}`,
      `Basic ${btoa("id\u0000:x")}`,
      "Bearer abc",
    ]
  ) {
    assert.throws(
      () => parseBasicCredentials(bad),
      (e: AppError) => e.code === "invalid_client_credentials",
      bad,
    );
  }
});

test("configuration: defaults, and one readable error for every bad variable", () => {
  const c = loadConfig({});
  assert.equal(c.port, 8000);
  assert.equal(c.publicUrl, "http://localhost:8000");
  assert.equal(c.accessTokenTtl, 900);
  assert.equal(c.refreshTokenTtl, 604_800);
  assert.equal(c.authCodeTtl, 60);
  assert.equal(c.ssoIdleTtl, 86_400);
  assert.equal(c.ssoTtl, 1_209_600);
  assert.equal(loadConfig({ SSO_IDLE_TTL: "600", SSO_TTL: "3600" }).ssoIdleTtl, 600);
  assert.throws(() => loadConfig({ SSO_TTL: "0" }), /SSO_TTL/);
  assert.equal(loadConfig({ PUBLIC_URL: "https://auth.example.com/" }).publicUrl, "https://auth.example.com");
  assert.throws(
    () => loadConfig({ PORT: "x", BOOTSTRAP_ADMIN_SECRET: "short", DATABASE_URL: "mysql://x" }),
    (e: Error) =>
      /PORT/.test(e.message) && /BOOTSTRAP_ADMIN_SECRET/.test(e.message) && /DATABASE_URL/.test(e.message),
  );
  // A secret with + or % would not survive `curl -u`, which does not form-encode.
  assert.throws(() => loadConfig({ BOOTSTRAP_ADMIN_SECRET: "a".repeat(31) + "+" }), /BOOTSTRAP_ADMIN_SECRET/);
  // The webhook retry schedule keeps its production start unless a test shortens it.
  assert.equal(c.webhookRetryBaseSeconds, 5);
  assert.equal(loadConfig({ WEBHOOK_RETRY_BASE_SECONDS: "0.5" }).webhookRetryBaseSeconds, 0.5);
  for (const bad of ["0", "-1", "soon", "3601"]) {
    assert.throws(() => loadConfig({ WEBHOOK_RETRY_BASE_SECONDS: bad }), /WEBHOOK_RETRY_BASE_SECONDS/, bad);
  }
});

test("configuration of the database's path: pooler, direct URL, start timeout, and Deno Deploy's needs", () => {
  const c = loadConfig({});
  assert.equal(c.databasePooler, "none");
  assert.equal(c.databaseDirectUrl, undefined);
  assert.equal(c.databaseStartTimeout, 15);
  assert.equal(c.databasePipelineDepth, 16);
  assert.equal(loadConfig({ DATABASE_PIPELINE_DEPTH: "0" }).databasePipelineDepth, 0);
  assert.equal(c.databaseApplicationName, "access-control");
  assert.equal(loadConfig({ DATABASE_APPLICATION_NAME: "acs eu-1" }).databaseApplicationName, "acs eu-1");
  for (const bad of ["x".repeat(64), "caf\u00e9", "a\nb"]) {
    assert.throws(() => loadConfig({ DATABASE_APPLICATION_NAME: bad }), /DATABASE_APPLICATION_NAME/, bad);
  }
  for (const bad of ["-1", "deep", "101", "1.5"]) {
    assert.throws(() => loadConfig({ DATABASE_PIPELINE_DEPTH: bad }), /DATABASE_PIPELINE_DEPTH/, bad);
  }
  const pooled = loadConfig({
    DATABASE_URL: "postgres://app@pooler:6432/acs",
    DATABASE_POOLER: "transaction",
    DATABASE_DIRECT_URL: "postgresql://app@db:5432/acs",
    DATABASE_START_TIMEOUT: "3",
  });
  assert.deepEqual(
    [pooled.databasePooler, pooled.databaseDirectUrl, pooled.databaseStartTimeout],
    ["transaction", "postgresql://app@db:5432/acs", 3],
  );
  assert.throws(
    () => loadConfig({ DATABASE_POOLER: "statement" }),
    /DATABASE_POOLER: must be none, session or/,
  );
  assert.throws(
    () => loadConfig({ DATABASE_DIRECT_URL: "postgres://db/acs" }),
    /DATABASE_DIRECT_URL: needs DATABASE_URL/,
  );
  assert.throws(() => loadConfig({ DATABASE_START_TIMEOUT: "0" }), /DATABASE_START_TIMEOUT/);
  assert.throws(
    () => loadConfig({ DENO_DEPLOYMENT_ID: "abc" }),
    (e: Error) =>
      /DATABASE_URL: is required on Deno Deploy/.test(e.message) && /PUBLIC_URL: is required/.test(e.message),
  );
  assert.ok(
    loadConfig({
      DENO_DEPLOYMENT_ID: "abc",
      DATABASE_URL: "postgres://db/acs",
      PUBLIC_URL: "https://a.example",
    }),
  );
});

test("login throttling counts IPv6 addresses by their /64", async () => {
  const { addressKey: ipv6Prefix } = await import("../domain/shared/throttle.ts");
  assert.equal(ipv6Prefix("203.0.113.7"), "203.0.113.7");
  assert.equal(ipv6Prefix("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
  assert.equal(ipv6Prefix("2001:db8:1:2::9"), "2001:db8:1:2::/64");
  assert.equal(ipv6Prefix("[2001:DB8::1]"), "2001:db8:0:0::/64");
  assert.equal(ipv6Prefix("::1"), "0:0:0:0::/64");
});

test("BOOTSTRAP_ADMIN_SECRET: short or low-entropy secrets stop the start, naming the variable", () => {
  for (const weak of ["a".repeat(32), "ab".repeat(20), "0123456789".repeat(4), "short-but-random-Xy7"]) {
    assert.throws(() => loadConfig({ BOOTSTRAP_ADMIN_SECRET: weak }), /BOOTSTRAP_ADMIN_SECRET/, weak);
  }
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0"));
  assert.equal(loadConfig({ BOOTSTRAP_ADMIN_SECRET: hex.join("") }).bootstrapAdminSecret, hex.join(""));
  assert.ok(loadConfig({ BOOTSTRAP_ADMIN_SECRET: "test-bootstrap-secret-that-is-long-enough-0001" }));
});

test("BOOTSTRAP_ADMIN_SECRET: sequences, keyboard walks and repeats are refused however long; random ones pass", () => {
  const refused: [string, string][] = [
    ["abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "the alphabets in order"],
    ["zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA9876543210", "the alphabets backwards"],
    ["0123456789abcdefghijklmnopqrstuvwxyz9876543210ZYXWVUTSRQPONMLK", "digits and letters, up and down"],
    ["acegikmoqsuwyBDFHJLNPRTVXZ0246813579bdfhjlnprtvxz", "every other letter"],
    ["qwertyuiopasdfghjklzxcvbnm1234567890QWERTYUIOPASDFGHJKLZXCVBNM", "the keyboard's rows"],
    ["poiuytrewqlkjhgfdsamnbvcxz0987654321POIUYTREWQLKJHGFDSAMNBVCXZ", "the rows backwards"],
    ["1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0pQAZWSXEDCRFVTGBYHNUJMIKOLP", "columns"],
    ["qazwsxedcrfvtgbyhnujmikolpQAZWSXEDCRFVTGBYHNUJMIKOLP", "columns without digits"],
    ["zaq1xsw2cde3vfr4bgt5nhy6mju7-ki8.lo9_p0", "columns upwards"],
    ["qwertyQWERTYasdfghASDFGHzxcvbnZXCVBN123456", "short rows, both cases"],
    ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "one character"],
    ["abcabcabcabcabcabcabcabcabcabcabcabc", "a repeated triple"],
    ["aaaabbbbccccddddeeeeffffgggghhhhiiiijjjjkkkk", "repeats in sequence"],
    ["Qwerty123Qwerty456Qwerty789Asdf0000zxcv", "a walk with counters"],
  ];
  for (const [weak, why] of refused) {
    assert.throws(
      () => loadConfig({ BOOTSTRAP_ADMIN_SECRET: weak }),
      /BOOTSTRAP_ADMIN_SECRET.*too weak/,
      why,
    );
  }
  // The secrets the tests, CI and the benchmarks start with, and random ones of the recommended kinds.
  const accepted = [
    "test-bootstrap-secret-that-is-long-enough-0001",
    "bench-bootstrap-secret-that-is-long-enough-000001",
  ];
  for (let i = 0; i < 200; i++) {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    accepted.push(Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""));
    accepted.push(
      btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""),
    );
  }
  for (const secret of accepted) {
    assert.equal(loadConfig({ BOOTSTRAP_ADMIN_SECRET: secret }).bootstrapAdminSecret, secret, secret);
  }
});

test("a malformed KEY_ENCRYPTION_KEY or SIGNING_ALG stops the start, naming the variable", () => {
  assert.throws(() => loadConfig({ KEY_ENCRYPTION_KEY: "too-short" }), /KEY_ENCRYPTION_KEY/);
  assert.throws(() => loadConfig({ KEY_ENCRYPTION_KEY: "!".repeat(43) }), /KEY_ENCRYPTION_KEY/);
  assert.throws(() => loadConfig({ SIGNING_ALG: "HS256" }), /SIGNING_ALG/);
  assert.throws(() => loadConfig({ SIGNING_KEY_ROTATION_DAYS: "-1" }), /SIGNING_KEY_ROTATION_DAYS/);
  const key = loadConfig({ KEY_ENCRYPTION_KEY: "A".repeat(43) }).keyEncryptionKey!;
  assert.equal(key.length, 32);
});

test("client addresses have one spelling: no brackets, port or zone; IPv4-mapped IPv6 is IPv4", async () => {
  const { normalizeIp } = await import("../routes/request_info.ts");
  const { addressKey } = await import("../domain/shared/throttle.ts");
  assert.equal(normalizeIp("::ffff:203.0.113.5"), "203.0.113.5");
  assert.equal(normalizeIp("203.0.113.5:4711"), "203.0.113.5");
  assert.equal(normalizeIp("[2001:DB8::1]:443"), "2001:db8::1");
  assert.equal(normalizeIp("fe80::1%eth0"), "fe80::1");
  assert.equal(normalizeIp("not an address"), "not an address");
  // Every IPv4 client is its own key, not one shared "0:0:0:0::/64".
  assert.notEqual(
    addressKey(normalizeIp("::ffff:203.0.113.5")),
    addressKey(normalizeIp("::ffff:198.51.100.7")),
  );
});

test("the webhook retry schedule: about a day in all, each wait within a fifth of its step, scaled for tests", () => {
  for (let attempt = 1; attempt <= RETRY_DELAYS.length; attempt++) {
    const step = RETRY_DELAYS[attempt - 1];
    const wait = retryIn(attempt)!;
    assert.ok(wait >= step * 0.8 && wait <= step * 1.2, `attempt ${attempt}: ${wait}`);
    const short = retryIn(attempt, 0.5)!;
    assert.ok(short >= step * 0.08 && short <= step * 0.12, `attempt ${attempt} scaled: ${short}`);
  }
  assert.equal(retryIn(RETRY_DELAYS.length + 1), null, "then the delivery has failed");
  const total = RETRY_DELAYS.reduce((a, b) => a + b, 0) / 3600;
  assert.ok(total > 20 && total < 28, `${total} h`);
});

test("form bodies parse as the Fetch standard parses them (Response.formData), byte for byte", async () => {
  const hex = (h: string): Uint8Array<ArrayBuffer> =>
    Uint8Array.from(h.match(/../g)!.map((b) => parseInt(b, 16)));
  const enc = (t: string) => new TextEncoder().encode(t) as Uint8Array<ArrayBuffer>;
  const bodies: Uint8Array<ArrayBuffer>[] = [
    enc("grant_type=client_credentials"),
    enc("a=1&b=2&a=3&&=x&y=&z"),
    enc("?grant_type=x&c=%3F"),
    enc("name=J%C3%BCrgen+M%C3%BCller&x=%ZZ%&p=100%25"),
    enc("\ufeffbom=1"),
    enc("%EF%BB%BFbom=2"),
    enc("k=%FF%FE&l=%C3"),
    new Uint8Array([...enc("raw="), 0xc3, ...enc("%A9"), ...enc("&bad="), 0xff, 0x41]),
    new Uint8Array([...enc("caf"), 0xc3, 0xa9, ...enc("=1")]),
    hex("613d2b2b262b3d2b"),
  ];
  for (const bytes of bodies) {
    const expected = [
      ...(await new Response(bytes, { headers: { "content-type": "application/x-www-form-urlencoded" } })
        .formData()).entries(),
    ];
    const actual = [...new URLSearchParams(urlencodedText(bytes))];
    assert.deepEqual(actual, expected, new TextDecoder().decode(bytes));
  }
});

test("TOTP matches RFC 6238's SHA-1 test vectors, within one step either side, and base32 round-trips", () => {
  const secret = base32Encode(new TextEncoder().encode("12345678901234567890"));
  assert.equal(secret, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
  assert.deepEqual(base32Decode(secret), new TextEncoder().encode("12345678901234567890"));
  // Appendix B, truncated to 6 digits (the last six of the 8-digit values).
  const vectors: [number, string][] = [[59, "287082"], [1111111109, "081804"], [1234567890, "005924"], [
    2000000000,
    "279037",
  ], [20000000000, "353130"]];
  for (const [t, code] of vectors) {
    assert.equal(hotp(base32Decode(secret), stepOf(t * 1000)), code, `T=${t}`);
    assert.equal(matchingStep(secret, code, t * 1000), stepOf(t * 1000));
    assert.equal(matchingStep(secret, code, (t + 30) * 1000), stepOf(t * 1000), "one step later");
    assert.equal(matchingStep(secret, code, (t - 30) * 1000), stepOf(t * 1000), "one step earlier");
    assert.equal(matchingStep(secret, code, (t + 90) * 1000), null, "three steps later");
  }
  assert.equal(matchingStep(secret, "28708", 59_000), null);
  assert.equal(matchingStep(secret, "2870820", 59_000), null);
});
