/** The webhook guard's address classifier: the IPv4 and IPv6 parsers, and which addresses are global unicast. */
import assert from "node:assert/strict";
import {
  isGlobalUnicast,
  isLoopbackIp,
  parseIp,
  parseIPv4,
  parseIPv6,
} from "../domain/outbound/ip_addresses.ts";

Deno.test("parseIPv6 reads :: and embedded dotted quads to eight groups, and refuses what RFC 4291 does not allow", () => {
  const table: [string, number[] | null][] = [
    ["::", [0, 0, 0, 0, 0, 0, 0, 0]],
    ["::1", [0, 0, 0, 0, 0, 0, 0, 1]],
    ["1::", [1, 0, 0, 0, 0, 0, 0, 0]],
    ["2001:db8::8:800:200c:417a", [0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a]],
    ["2001:DB8:0:0:8:800:200C:417A", [0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a]],
    ["0001:0002:0003:0004:0005:0006:0007:0008", [1, 2, 3, 4, 5, 6, 7, 8]],
    ["1:2:3:4:5:6:7::", [1, 2, 3, 4, 5, 6, 7, 0]],
    ["::2:3:4:5:6:7:8", [0, 2, 3, 4, 5, 6, 7, 8]],
    ["::127.0.0.1", [0, 0, 0, 0, 0, 0, 0x7f00, 1]],
    ["::ffff:10.0.0.1", [0, 0, 0, 0, 0, 0xffff, 0x0a00, 1]],
    ["::ffff:0:192.168.1.1", [0, 0, 0, 0, 0xffff, 0, 0xc0a8, 0x101]],
    ["1:2:3:4:5:6:1.2.3.4", [1, 2, 3, 4, 5, 6, 0x102, 0x304]],
    ["64:ff9b::8.8.8.8", [0x64, 0xff9b, 0, 0, 0, 0, 0x808, 0x808]],
    ["", null],
    [":", null],
    [":::", null],
    ["1:2:3:4:5:6:7", null],
    ["1:2:3:4:5:6:7:8:9", null],
    ["1:2:3:4:5:6:7:8::", null],
    ["::1:2:3:4:5:6:7:8", null],
    ["1::2::3", null],
    [":1::2", null],
    ["1::2:", null],
    ["12345::", null],
    ["g::1", null],
    ["::1%eth0", null],
    ["fe80::1%1", null],
    ["[::1]", null],
    ["::1.2.3", null],
    ["::1.2.3.256", null],
    ["::01.2.3.4", null],
    ["1.2.3.4::", null],
    ["::1.2.3.4:5", null],
    ["1:2:3:4:5:6:7:1.2.3.4", null],
    [" ::1", null],
  ];
  for (const [text, groups] of table) assert.deepEqual(parseIPv6(text), groups, text);
});

Deno.test("parseIPv4 takes four decimal parts 0-255 without leading zeros", () => {
  const table: [string, number | null][] = [
    ["0.0.0.0", 0],
    ["127.0.0.1", 0x7f000001],
    ["255.255.255.255", 0xffffffff],
    ["8.8.8.8", 0x08080808],
    ["1.2.3", null],
    ["1.2.3.4.5", null],
    ["256.1.1.1", null],
    ["01.2.3.4", null],
    ["0x7f.0.0.1", null],
    ["2130706433", null],
    ["1.2.3.-4", null],
    ["1..3.4", null],
    ["", null],
  ];
  for (const [text, value] of table) assert.equal(parseIPv4(text), value, text);
  assert.deepEqual(parseIp("[::1]"), { family: 6, groups: [0, 0, 0, 0, 0, 0, 0, 1] });
  assert.equal(parseIp("example.com"), null);
});

Deno.test("only global unicast addresses pass: every special IPv4 block and every IPv6 form embedding one is refused", () => {
  const refused: [string, string][] = [
    // IPv4
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "this network 0/8"],
    ["10.0.0.1", "private 10/8"],
    ["10.255.255.255", "private 10/8"],
    ["100.64.0.1", "CGNAT 100.64/10"],
    ["100.127.255.255", "CGNAT 100.64/10"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "link-local, cloud metadata"],
    ["172.16.0.1", "private 172.16/12"],
    ["172.31.255.255", "private 172.16/12"],
    ["192.0.0.1", "IETF protocol assignments 192.0.0/24"],
    ["192.0.2.1", "documentation TEST-NET-1"],
    ["192.88.99.1", "6to4 relay anycast"],
    ["192.168.1.1", "private 192.168/16"],
    ["198.18.0.1", "benchmarking 198.18/15"],
    ["198.19.255.255", "benchmarking 198.18/15"],
    ["198.51.100.7", "documentation TEST-NET-2"],
    ["203.0.113.9", "documentation TEST-NET-3"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved 240/4"],
    ["255.255.255.255", "broadcast"],
    // IPv6 outside 2000::/3
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["::7f00:1", "IPv4-compatible loopback ([::127.0.0.1] as a URL writes it)"],
    ["::127.0.0.1", "IPv4-compatible loopback"],
    ["::8.8.8.8", "IPv4-compatible, even of a public address"],
    ["::a9fe:a9fe", "IPv4-compatible metadata"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
    ["::ffff:10.0.0.1", "IPv4-mapped private"],
    ["::ffff:8.8.8.8", "IPv4-mapped, even of a public address"],
    ["::ffff:0:127.0.0.1", "IPv4-translated loopback"],
    ["::ffff:0:a9fe:a9fe", "IPv4-translated metadata"],
    ["::ffff:0:8.8.8.8", "IPv4-translated, even of a public address"],
    ["0:0:0:0:0:ffff:7f00:1", "IPv4-mapped, written out"],
    ["64:ff9b::a9fe:a9fe", "NAT64 of metadata"],
    ["64:ff9b::8.8.8.8", "NAT64 of a public address: the gateway decides where it goes"],
    ["64:ff9b:1::a00:1", "local-use NAT64"],
    ["100::1", "discard 100::/64"],
    ["fc00::1", "unique local fc00::/7"],
    ["fd12:3456:789a::1", "unique local fc00::/7"],
    ["fe80::1", "link-local"],
    ["febf:ffff::1", "link-local fe80::/10"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["ff0e::101", "multicast"],
    ["1::1", "reserved, outside 2000::/3"],
    ["4000::1", "reserved, outside 2000::/3"],
    ["5f00::1", "SRv6 SIDs, outside 2000::/3"],
    ["e000::1", "reserved, outside 2000::/3"],
    // IPv6 special ranges inside 2000::/3
    ["2001::1", "Teredo 2001::/32"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
    ["2001:2::1", "benchmarking 2001:2::/48"],
    ["2001:10::1", "ORCHID"],
    ["2001:1ff:ffff::1", "IETF protocol assignments 2001::/23"],
    ["2001:db8::1", "documentation"],
    ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"],
    ["3fff::1", "documentation 3fff::/20"],
    ["3fff:fff:ffff::1", "documentation 3fff::/20"],
    ["2002:7f00:1::", "6to4 of loopback"],
    ["2002:a00:1::", "6to4 of a private address"],
    ["2002:a9fe:a9fe::1", "6to4 of metadata"],
    ["2002:c0a8:101::1", "6to4 of a private address"],
    // Not an address at all
    ["", "empty"],
    ["example.com", "a name"],
    ["localhost", "a name"],
    ["::1%lo", "a zone"],
    ["fe80::1%eth0", "a zone"],
    ["1.2.3", "short IPv4"],
    ["0177.0.0.1", "octal-looking IPv4"],
    ["2130706433", "IPv4 as one number"],
  ];
  for (const [address, why] of refused) assert.equal(isGlobalUnicast(address), false, `${address}: ${why}`);
  const allowed = [
    "1.1.1.1",
    "8.8.8.8",
    "93.184.216.34",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.255",
    "192.0.3.0",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "2001:200::1",
    "2001:db9::1",
    "2a00:1450:4001:82b::200e",
    "2002:808:808::1", // 6to4 of a public address
    "3ffe::1",
    "3fff:1000::1",
    "[2606:4700::1111]",
  ];
  for (const address of allowed) assert.equal(isGlobalUnicast(address), true, address);
});

Deno.test("isLoopbackIp knows 127/8 and ::1 only", () => {
  for (const a of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1"]) {
    assert.ok(isLoopbackIp(a), a);
  }
  for (const a of ["128.0.0.1", "::", "::2", "::ffff:127.0.0.1", "localhost", "1::1"]) {
    assert.ok(!isLoopbackIp(a), a);
  }
});
