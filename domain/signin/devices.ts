/**
 * Device cookies (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"): a browser that signed in to
 * an account gets a cookie naming it; its later failed logins to that account count against a counter of its
 * own. Guesses from anywhere else slow down only the account's shared counter, so they cannot keep the owner
 * out of a browser they used before, however patiently they are spread.
 */
import { encodeBase64Url } from "../shared/base64.ts";
import { isKnownDevice, rememberDevice } from "../../db/signin/devices.ts";
import type { Sql } from "../../db/connection.ts";
import { newSecret } from "../shared/ids.ts";
import { hashSecret } from "../shared/secrets.ts";

/** How long a browser stays known to an account after its last sign-in. */
export const DEVICE_TTL = 180 * 86_400;

/** The browser's device token as presented, and whether it signed in to this account before. */
export type Device = { token: string; known: boolean };

/** Reads the cookie's value (a new token when absent or malformed) and looks it up for the account. */
export async function deviceFor(
  sql: Sql,
  presented: string | undefined,
  account: { projectId: string; email: string },
): Promise<Device> {
  if (!presented || !/^[A-Za-z0-9_-]{43}$/.test(presented)) return { token: newSecret(), known: false };
  return {
    token: presented,
    known: await isKnownDevice(sql, { tokenHash: hashSecret(presented), ...account }),
  };
}

/** The throttle key a login attempt counts against: the account's own, or the known browser's. */
export function deviceThrottleKey(accountKey: string, device: Device): string {
  return device.known
    ? `${accountKey}:device:${encodeBase64Url(hashSecret(device.token)).slice(0, 22)}`
    : accountKey;
}

/**
 * After a successful sign-in: the browser is known to the account for DEVICE_TTL more. A browser that was not
 * known gets a new token, never the value it presented, which somebody else may have planted; returns the
 * token to set.
 */
export async function trustDevice(
  sql: Sql,
  device: Device,
  account: { projectId: string; email: string },
): Promise<string> {
  const token = device.known ? device.token : newSecret();
  await rememberDevice(sql, { tokenHash: hashSecret(token), ...account }, DEVICE_TTL);
  return token;
}
