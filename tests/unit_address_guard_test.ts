/**
 * Unit tests of the address guard that webhooks and outbound requests share (domain/outbound/webhook_targets.ts over
 * domain/outbound/ip_addresses.ts, and domain/outbound/outbound.ts): which targets are refused before any connection, and which
 * addresses a host stands for. No database, no network (literals and `localhost` need no lookup).
 */
import assert from "node:assert/strict";
import {
  privateAddress,
  resolveTarget,
  targetIssue,
  TargetRefused,
} from "../domain/outbound/webhook_targets.ts";
import { outbound, OutboundError, outboundJson } from "../domain/outbound/outbound.ts";

const issue = (url: string, allowPrivate = false) => targetIssue(new URL(url), allowPrivate);

Deno.test("targetIssue: https to a name or a global address passes; http only to loopback, when private targets are allowed", () => {
  for (const ok of ["https://hooks.example.com/x", "https://8.8.8.8/", "https://[2606:4700::1111]/"]) {
    assert.equal(issue(ok), null, ok);
  }
  assert.match(issue("http://hooks.example.com/")!, /must use https/);
  assert.match(issue("http://8.8.8.8/")!, /must use https/);
  assert.match(issue("http://127.0.0.1:9/", false)!, /must use https/);
  for (
    const loopback of ["http://127.0.0.1:9/", "http://localhost/", "http://a.localhost./", "http://[::1]/"]
  ) {
    assert.equal(issue(loopback, true), null, loopback);
  }
  // Allowing private targets still allows http to loopback only.
  assert.match(issue("http://10.0.0.1/", true)!, /must use https/);
  assert.match(issue("http://example.com/", true)!, /must use https/);
  assert.match(issue("ftp://example.com/")!, /must use https/);
  assert.match(issue("ftp://example.com/", true)!, /must use https/);
});

Deno.test("targetIssue: private, loopback, metadata and embedding literals are refused unless allowed; names wait for their lookup", () => {
  const refused = [
    "https://127.0.0.1/",
    "https://10.1.2.3/",
    "https://172.16.0.1/",
    "https://192.168.1.1/",
    "https://169.254.169.254/latest/meta-data",
    "https://100.64.0.1/",
    "https://0.0.0.0/",
    "https://224.0.0.1/",
    "https://192.0.2.1/",
    "https://[::1]/",
    "https://[fe80::1]/",
    "https://[fc00::1]/",
    "https://[::ffff:10.0.0.1]/",
    "https://[64:ff9b::a00:1]/",
    "https://[2001:db8::1]/",
    "https://localhost/",
    "https://api.localhost/",
    "https://LOCALHOST./",
  ];
  for (const url of refused) {
    assert.match(issue(url) ?? "passed", /global unicast/, url);
    assert.equal(issue(url, true), null, `${url} with private targets allowed`);
  }
  // A name is judged by what it resolves to, at connection time: nothing to say before the lookup.
  assert.equal(issue("https://internal.example/"), null);
});

Deno.test("privateAddress is the complement of global unicast, in both families", () => {
  for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "2a00:1450:4001::200e"]) {
    assert.equal(privateAddress(a), false, a);
  }
  for (const a of ["127.0.0.1", "10.0.0.1", "::1", "fe80::1", "::ffff:127.0.0.1", "not an address", ""]) {
    assert.equal(privateAddress(a), true, a);
  }
});

Deno.test("resolveTarget: literals and localhost resolve without a lookup, and a private one is refused unless allowed", async () => {
  assert.deepEqual(await resolveTarget("8.8.8.8", false), [{ address: "8.8.8.8", family: 4 }]);
  assert.deepEqual(await resolveTarget("[2606:4700::1111]", false), [{
    address: "2606:4700::1111",
    family: 6,
  }]);
  assert.deepEqual(await resolveTarget("localhost", true), [{ address: "127.0.0.1", family: 4 }]);
  assert.deepEqual(await resolveTarget("[::1]", true), [{ address: "::1", family: 6 }]);
  for (
    const host of [
      "127.0.0.1",
      "localhost",
      "x.localhost",
      "[::1]",
      "169.254.169.254",
      "[::ffff:192.168.0.1]",
    ]
  ) {
    await assert.rejects(resolveTarget(host, false), TargetRefused, host);
  }
});

Deno.test("outbound requests are refused before any connection: a scheme other than https, a private literal, no URL at all", async () => {
  const cases: [string, RegExp][] = [
    ["http://example.com/.well-known/openid-configuration", /must use https/],
    ["https://127.0.0.1/jwks", /global unicast/],
    ["https://169.254.169.254/latest", /global unicast/],
    ["https://[::1]:8443/token", /global unicast/],
    ["not a url", /is not a URL/],
    ["https://exa mple.com/", /is not a URL/],
  ];
  for (const [url, message] of cases) {
    await assert.rejects(outbound(url, { allowPrivate: false }), (err: unknown) => {
      assert.ok(err instanceof OutboundError, String(err));
      assert.match(err.message, message);
      return true;
    }, url);
    await assert.rejects(outboundJson(url, { allowPrivate: false }), OutboundError, url);
  }
});
