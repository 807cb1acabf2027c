/** Pure helpers whose edge cases black-box requests cannot reach: Basic decoding and configuration. */
import assert from "node:assert/strict";
import { loadConfig } from "../config.ts";
import { parseBasicCredentials } from "../domain/grants.ts";
import { AppError } from "../domain/errors.ts";
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
  assert.equal(loadConfig({ PUBLIC_URL: "https://auth.example.com/" }).publicUrl, "https://auth.example.com");
  assert.throws(
    () => loadConfig({ PORT: "x", BOOTSTRAP_ADMIN_SECRET: "short", DATABASE_URL: "mysql://x" }),
    (e: Error) =>
      /PORT/.test(e.message) && /BOOTSTRAP_ADMIN_SECRET/.test(e.message) && /DATABASE_URL/.test(e.message),
  );
  // A secret with + or % would not survive `curl -u`, which does not form-encode.
  assert.throws(() => loadConfig({ BOOTSTRAP_ADMIN_SECRET: "a".repeat(31) + "+" }), /BOOTSTRAP_ADMIN_SECRET/);
});

test("login throttling counts IPv6 addresses by their /64", async () => {
  const { ipv6Prefix } = await import("../routes/authorize.ts");
  assert.equal(ipv6Prefix("203.0.113.7"), "203.0.113.7");
  assert.equal(ipv6Prefix("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
  assert.equal(ipv6Prefix("2001:db8:1:2::9"), "2001:db8:1:2::/64");
  assert.equal(ipv6Prefix("[2001:DB8::1]"), "2001:db8:0:0::/64");
  assert.equal(ipv6Prefix("::1"), "0:0:0:0::/64");
});
