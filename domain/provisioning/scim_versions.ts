/** SCIM versions (RFC 7644 §3.14): weak ETags, `If-Match` before a change, `If-None-Match` on a read. */
import { ScimError } from "./scim_errors.ts";

/** A resource as answered, with its ETag. */
export type Versioned = { resource: Record<string, unknown>; etag: string };

/** The entity tags of a header (`*`, or a list), each without its weak prefix (weak comparison). */
function tags(header: string): string[] {
  return header.split(",").map((t) => t.trim().replace(/^W\//i, "")).filter(Boolean);
}

/** Whether an `If-None-Match` header names this version (then a GET answers 304). */
export function versionMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const list = tags(header);
  return list.includes("*") || list.includes(etag.replace(/^W\//, ""));
}

/** 412 when `If-Match` is sent and names another version than the current one. */
export function requireVersion(ifMatch: string | undefined, etag: string): void {
  if (ifMatch === undefined || ifMatch.trim() === "") return;
  if (!versionMatches(ifMatch, etag)) {
    throw new ScimError(412, undefined, `the resource's version is ${etag}, not ${ifMatch.trim()}`);
  }
}
