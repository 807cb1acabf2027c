/** Throttling policies: how many attempts a key gets before it waits, shared by every instance. */
import { countAttempt, type ThrottlePolicy, waitFor } from "../../db/shared/throttle.ts";
import type { Sql } from "../../db/connection.ts";
import { AppError } from "./errors.ts";

export const THROTTLE = {
  /** Per account: 5 attempts in a row, then one more per delay, doubling from 1 s up to 15 minutes. */
  account: { kind: "delay", free: 5, maxDelay: 900, window: 86_400 },
  /** Per client address: 100 failed logins per 10 minutes, so that a shared address is not locked out. */
  address: { kind: "limit", free: 100, window: 600 },
  /** Per client id and address: failed client authentications, 10 free, then up to 5 minutes apart. */
  client: { kind: "delay", free: 10, maxDelay: 300, window: 3_600 },
  /** Per client address: login pages opened (each is a stored row), 600 per 10 minutes. */
  loginPage: { kind: "limit", free: 600, window: 600 },
  /** Per client address: client metadata documents fetched (each an outbound request), 60 per 10 minutes. */
  metadataFetch: { kind: "limit", free: 60, window: 600 },
  /** Per client address: sign-up forms posted (each may hash a password and send a mail), 30 per 10 minutes. */
  signupAddress: { kind: "limit", free: 30, window: 600 },
  /** Per project and email: sign-ups of one address (each may send it a mail), 3 per hour. */
  signupEmail: { kind: "limit", free: 3, window: 3_600 },
  /** Per client address: wrong user codes entered at /device (RFC 8628 §5.1), 20 per 10 minutes. */
  deviceCode: { kind: "limit", free: 20, window: 600 },
  /** Per client and address: device authorizations asked (each a stored row), 60 per 10 minutes. */
  deviceAuthorization: { kind: "limit", free: 60, window: 600 },
} as const satisfies Record<string, ThrottlePolicy>;

/** The address a throttle counts: IPv4 as it is, IPv6 by its /64 prefix (the block one subscriber holds). */
export function addressKey(ip: string | null): string {
  if (ip === null) return "unknown";
  if (!ip.includes(":")) return ip;
  const [head, tail = ""] = ip.replace(/^\[|\]$/g, "").split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups.slice(0, 4).map((g) => parseInt(g || "0", 16).toString(16)).join(":")}::/64`;
}

/** The throttle of a user's second-factor codes: the login's second step and an authenticator's confirmation. */
export function secondFactorKey(projectId: string, userId: string): string {
  return `mfa:${projectId}:${userId}`;
}

/** 429 `too_many_requests`, retryable after at least a second. */
export function throttled(retryAfter: number, description = "too many attempts; retry later"): AppError {
  return new AppError("too_many_requests", { description, retryAfter: Math.max(1, retryAfter) });
}

/** Counts an attempt against `key`, or throws `throttled` (without counting it) while the key must wait. */
export async function attempt(sql: Sql, key: string, policy: ThrottlePolicy): Promise<void> {
  const wait = await countAttempt(sql, key, policy);
  if (wait !== null) throw throttled(wait);
}

/** Throws `throttled` while `key` must wait; counts nothing. */
export async function notThrottled(sql: Sql, key: string, policy: ThrottlePolicy): Promise<void> {
  const wait = await waitFor(sql, key, policy);
  if (wait !== null) throw throttled(wait);
}
