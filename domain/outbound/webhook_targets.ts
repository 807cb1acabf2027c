/**
 * Where webhooks may be sent: no server-side request forgery. Only global unicast addresses are allowed
 * (domain/outbound/ip_addresses.ts): loopback, private, link-local, carrier-grade NAT, multicast, reserved and
 * documentation addresses (cloud metadata among them), and the IPv6 forms embedding an IPv4 address, are
 * refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true; `https` is required except to loopback with that setting.
 * An address literal is checked at registration and at every delivery; a name's addresses are checked inside
 * the connection's own lookup, every one of them, so the address checked is the address connected to (no DNS
 * rebinding between a check and the request).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isGlobalUnicast, isLoopbackIp, parseIp } from "./ip_addresses.ts";

/**
 * Whether an address is one a webhook may not reach: anything but a global unicast address (domain/
 * ip_addresses.ts), so loopback, private, link-local, metadata, reserved and the IPv6 forms that embed them.
 */
export function privateAddress(address: string): boolean {
  return !isGlobalUnicast(address);
}

/** `localhost` and its subdomains (RFC 6761 §6.3), with or without the root's trailing dot. */
const isLoopbackName = (host: string) => {
  const name = host.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
};

const isLoopback = (host: string) => isLoopbackName(host) || isLoopbackIp(host);

/** A host that is an IP literal (a URL's IPv6 host without its brackets). */
const isLiteral = (host: string) => host.includes(":") || /^[0-9.]+$/.test(host);

/** What is wrong with a target before any lookup: its scheme, or an address literal that is private. */
export function targetIssue(url: URL, allowPrivate: boolean): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (url.protocol === "http:" && !(allowPrivate && isLoopback(host))) {
    return "must use https (http only to loopback, with WEBHOOK_ALLOW_PRIVATE_TARGETS=true)";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must use https";
  if (!allowPrivate && (isLiteral(host) ? privateAddress(host) : isLoopbackName(host))) {
    return "must be a global unicast address: loopback, private, link-local, multicast, reserved and " +
      "documentation addresses, and IPv6 forms embedding an IPv4 address, are refused";
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
  const literal = parseIp(bare);
  const found: Address[] = literal
    ? [{ address: bare, family: literal.family }]
    : isLoopbackName(bare)
    ? [{ address: "127.0.0.1", family: 4 }]
    : (await dnsLookup(bare, { all: true, verbatim: true })).map((a) => ({
      address: a.address,
      family: a.family as 4 | 6,
    }));
  // A failed attempt like any network error (the callers record or wrap it), not a TargetRefused: DNS may
  // answer next time.
  if (found.length === 0) throw new Error(`${host} does not resolve`);
  if (!allowPrivate && found.some((a) => privateAddress(a.address))) {
    throw new TargetRefused(
      `${host} resolves to an address that is not global unicast (private, loopback, link-local, metadata ` +
        "or reserved)",
    );
  }
  return found;
}

export class TargetRefused extends Error {}
