/** Where a request came from: the caller's address (after TRUST_PROXY_HOPS), its user agent and its id. */
import type { Context } from "hono";
import { getConnInfo } from "hono/deno";
import { isIP } from "node:net";
import type { RequestInfo } from "../domain/shared/principal.ts";
import type { AppEnv } from "./env.ts";

/**
 * The connection's peer, or behind TRUST_PROXY_HOPS proxies the entry of X-Forwarded-For that the nearest
 * trusted proxy saw.
 */
export function clientIp(c: Context, trustedHops: number): string | null {
  let address: string | undefined;
  if (trustedHops > 0) {
    const hops = (c.req.header("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    address = hops[hops.length - trustedHops];
  }
  if (!address) {
    try {
      address = getConnInfo(c).remote.address;
    } catch { /* no connection info (in-process requests) */ }
  }
  return address ? normalizeIp(address) : null;
}

/**
 * One spelling per address: without brackets, port or zone id, and an IPv4-mapped IPv6 address as the IPv4
 * address it is (Deno reports IPv4 peers that way when it listens on `::`). Anything that is not an IP
 * address is kept as it is (at most 100 characters).
 */
export function normalizeIp(raw: string): string {
  // Every request asks, and a service hears from few addresses (its proxies, or its callers): each one's spelling
  // is worked out once. Only what could be an address is kept (a forwarded header's entry may be anything).
  if (raw.length > 64) return spelling(raw);
  let known = spellings.get(raw);
  if (known === undefined) {
    if (spellings.size >= 1000) spellings.clear();
    known = spelling(raw);
    spellings.set(raw, known);
  }
  return known;
}

const spellings = new Map<string, string>();

function spelling(raw: string): string {
  let a = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1];
  else if (/^[\d.]+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(":"));
  a = a.replace(/%.*$/, "");
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) a = mapped[1];
  return isIP(a) ? a.toLowerCase() : raw.trim().slice(0, 100);
}

export function requestInfo(c: Context<AppEnv>): RequestInfo {
  return {
    id: c.get("requestId"),
    ip: clientIp(c, c.get("deps").config.trustProxyHops),
    user_agent: c.req.header("user-agent")?.slice(0, 500) ?? null,
  };
}
