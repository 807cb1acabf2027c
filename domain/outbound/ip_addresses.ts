/**
 * IP address literals parsed to numbers (IPv4 to 32 bits, IPv6 to eight 16-bit groups, with `::` and an
 * embedded dotted quad), and the one question the webhook guard asks of them: is this a global unicast
 * address? Anything that does not parse strictly is not.
 */

export type IpAddress = { family: 4; value: number } | { family: 6; groups: number[] };

/** A dotted quad: four decimal parts 0–255, no leading zeros (which some parsers read as octal). */
export function parseIPv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) return null;
    value = value * 256 + Number(part);
  }
  return value;
}

/** One to four hex digits. */
const hexGroup = (g: string): number | null => /^[0-9a-fA-F]{1,4}$/.test(g) ? parseInt(g, 16) : null;

/**
 * The eight groups of an IPv6 address (RFC 4291 §2.2): hex groups, at most one `::` standing for one or more
 * zero groups, and a dotted quad as the last two groups. No zone (`%eth0`), no brackets.
 */
export function parseIPv6(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const compressed = halves.length === 2;
  const side = (s: string, last: boolean): number[] | null => {
    if (s === "") return [];
    const pieces = s.split(":");
    const groups: number[] = [];
    for (const [i, piece] of pieces.entries()) {
      if (last && i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseIPv4(piece);
        if (v4 === null) return null;
        groups.push(Math.floor(v4 / 65536), v4 % 65536);
      } else {
        const g = hexGroup(piece);
        if (g === null) return null;
        groups.push(g);
      }
    }
    return groups;
  };
  const left = side(halves[0], !compressed);
  const right = compressed ? side(halves[1], true) : [];
  if (left === null || right === null) return null;
  const given = left.length + right.length;
  if (compressed ? given > 7 : given !== 8) return null;
  return [...left, ...Array(8 - given).fill(0), ...right];
}

/** An IPv4 or IPv6 literal (IPv6 possibly in brackets, as in a URL's host), or null. */
export function parseIp(text: string): IpAddress | null {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (bare.includes(":")) {
    const groups = parseIPv6(bare);
    return groups ? { family: 6, groups } : null;
  }
  const value = parseIPv4(bare);
  return value === null ? null : { family: 4, value };
}

const v4 = (text: string) => parseIPv4(text)!;

/**
 * IPv4 blocks that are not global unicast (IANA special-purpose registry, RFC 6890 and successors): this
 * network, private, shared (CGNAT), loopback, link-local, IETF protocol assignments, documentation, the 6to4
 * relay anycast, benchmarking, multicast, reserved and the limited broadcast.
 */
const V4_NOT_GLOBAL: [number, number][] = ([
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
] as [string, number][]).map(([base, bits]) => [v4(base), bits]);

const inV4Block = (value: number, base: number, bits: number) => {
  const size = 2 ** (32 - bits);
  return Math.floor(value / size) === Math.floor(base / size);
};

export const isGlobalIPv4 = (value: number): boolean =>
  !V4_NOT_GLOBAL.some(([base, bits]) => inV4Block(value, base, bits));

/**
 * An allow-list: global unicast 2000::/3, less its special ranges. Everything outside it is refused, which
 * takes in the unspecified and loopback addresses, every form that embeds an IPv4 address in ::/8 (mapped
 * ::ffff:a.b.c.d, compatible ::a.b.c.d, translated ::ffff:0:a.b.c.d), NAT64 64:ff9b::/96 and 64:ff9b:1::/48,
 * discard 100::/64, unique local fc00::/7, link-local fe80::/10, site-local fec0::/10 and multicast ff00::/8.
 */
export function isGlobalIPv6(g: number[]): boolean {
  if ((g[0] & 0xe000) !== 0x2000) return false;
  // 2001::/23, IETF protocol assignments: Teredo 2001::/32 (a tunnel to an IPv4 address not shown here),
  // benchmarking 2001:2::/48, ORCHID. Real allocations in 2001: start at 2001:200::.
  if (g[0] === 0x2001 && g[1] < 0x0200) return false;
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false; // documentation 2001:db8::/32
  if (g[0] === 0x3fff && g[1] < 0x1000) return false; // documentation 3fff::/20 (RFC 9637)
  if (g[0] === 0x2002) return isGlobalIPv4(g[1] * 65536 + g[2]); // 6to4: where its embedded IPv4 address is
  return true;
}

/** Whether `text` is an IP literal that is global unicast; a name, or anything malformed, is not. */
export function isGlobalUnicast(text: string): boolean {
  const ip = parseIp(text);
  if (ip === null) return false;
  return ip.family === 4 ? isGlobalIPv4(ip.value) : isGlobalIPv6(ip.groups);
}

/** Whether an IP literal is a loopback address: 127.0.0.0/8 or ::1. */
export function isLoopbackIp(text: string): boolean {
  const ip = parseIp(text);
  if (ip === null) return false;
  return ip.family === 4
    ? inV4Block(ip.value, v4("127.0.0.0"), 8)
    : ip.groups.slice(0, 7).every((x) => x === 0) && ip.groups[7] === 1;
}
