/**
 * Where webhooks may be sent: no server-side request forgery. Targets on loopback, private, link-local,
 * carrier-grade NAT, multicast or reserved addresses (cloud metadata among them) are refused unless
 * WEBHOOK_ALLOW_PRIVATE_TARGETS=true; `https` is required except to loopback with that setting. The check of
 * addresses runs inside the connection's own lookup, so the address checked is the address connected to
 * (no DNS rebinding between a check and the request).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";

/** IPv4 blocks no webhook may reach: [first address, prefix length]. */
const V4_BLOCKED: [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

const v4Number = (a: string) => a.split(".").reduce((n, part) => n * 256 + Number(part), 0);

function v4Blocked(address: string): boolean {
  const n = v4Number(address);
  return V4_BLOCKED.some(([base, bits]) => {
    const size = 2 ** (32 - bits);
    return Math.floor(n / size) === Math.floor(v4Number(base) / size);
  });
}

/** The eight 16-bit groups of an IPv6 address. */
function v6Groups(address: string): number[] {
  let a = address.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (v4) {
    const n = v4Number(v4[1]);
    a = a.slice(0, -v4[1].length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail = ""] = a.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return groups.map((g) => parseInt(g || "0", 16));
}

function v6Blocked(address: string): boolean {
  const g = v6Groups(address);
  const embeddedV4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (g.slice(0, 7).every((x) => x === 0)) return true; // :: and ::1 (and IPv4-compatible)
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return v4Blocked(embeddedV4(g[6], g[7])); // mapped
  // NAT64, the well-known 64:ff9b::/96 (RFC 6052) and local-use 64:ff9b:1::/48 (RFC 8215), refused as all of
  // 64:ff9b::/32: a gateway may translate to any IPv4 address behind it, private ones included.
  if (g[0] === 0x64 && g[1] === 0xff9b) return true;
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo 2001::/32: a tunnel to an address not shown here
  if (g[0] === 0x2002) return v4Blocked(embeddedV4(g[1], g[2])); // 6to4
  if ((g[0] & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g[0] & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true; // documentation
  return false;
}

/** Whether an address is one a webhook may not reach (loopback, private, link-local, metadata, reserved). */
export function privateAddress(address: string): boolean {
  const kind = isIP(address);
  if (kind === 4) return v4Blocked(address);
  if (kind === 6) return v6Blocked(address);
  return true;
}

const isLoopbackName = (host: string) => host === "localhost" || host.endsWith(".localhost");

function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  if (isLoopbackName(bare)) return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return v6Groups(bare).slice(0, 7).every((x) => x === 0) && v6Groups(bare)[7] === 1;
  return false;
}

/** What is wrong with a target before any lookup: its scheme, or an address literal that is private. */
export function targetIssue(url: URL, allowPrivate: boolean): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (url.protocol === "http:" && !(allowPrivate && isLoopback(host))) {
    return "must use https (http only to loopback, with WEBHOOK_ALLOW_PRIVATE_TARGETS=true)";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must use https";
  if (!allowPrivate && (isIP(host) ? privateAddress(host) : isLoopbackName(host))) {
    return "resolves to a private, loopback or link-local address";
  }
  return null;
}

export type Address = { address: string; family: 4 | 6 };

/**
 * Resolves `host` and refuses it when any of its addresses is private (unless allowed): the addresses returned
 * are the ones to connect to.
 */
export async function resolveTarget(host: string, allowPrivate: boolean): Promise<Address[]> {
  const bare = host.replace(/^\[|\]$/g, "");
  const found: Address[] = isIP(bare)
    ? [{ address: bare, family: isIP(bare) as 4 | 6 }]
    : isLoopbackName(bare)
    ? [{ address: "127.0.0.1", family: 4 }]
    : (await dnsLookup(bare, { all: true, verbatim: true })).map((a) => ({
      address: a.address,
      family: a.family as 4 | 6,
    }));
  if (found.length === 0) throw new Error(`${host} does not resolve`);
  if (!allowPrivate && found.some((a) => privateAddress(a.address))) {
    throw new TargetRefused(`${host} resolves to a private, loopback, link-local or metadata address`);
  }
  return found;
}

export class TargetRefused extends Error {}
