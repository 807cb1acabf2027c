/**
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a `client_id` that is an
 * `https` URL names a client described by the JSON document at that URL, as MCP clients identify themselves. Its
 * project is the one owning the authorization request's `resource` (RFC 8707); the project admits such clients
 * (`client_metadata_documents`: off, any, or some hosts). The document is fetched through the one address guard
 * (domain/outbound), at most 5 KiB within 5 s, kept as its HTTP caching headers allow (5 minutes to 24 hours),
 * and the client is recorded as a third-party client of the project on its first use: admins see it and can block
 * it (`is_active`). A refused document records nothing but an audit event saying why. Fetches are throttled per
 * client address (THROTTLE.metadataFetch), since anyone can send a browser to /authorize with any URL.
 */
import { retryRead, type Sql, transaction } from "../../db/connection.ts";
import {
  anyProjectAdmitsDocuments,
  findMetadataClient,
  findMetadataClients,
  findMetadataPolicy,
  touchMetadataClient,
  upsertMetadataClient,
} from "../../db/oauth/client_metadata.ts";
import { findIndicatorProject } from "../../db/oauth/resource_indicators.ts";
import type { ClientMetadataDocuments } from "../../openapi/projects.ts";
import { redirectUriIssue } from "../../openapi/projects.ts";
import { recentEvent, record, userSource } from "../audit/audit.ts";
import { outbound, OutboundError } from "../outbound/outbound.ts";
import { AppError } from "../shared/errors.ts";
import { newId, newSecret } from "../shared/ids.ts";
import type { RequestInfo } from "../shared/principal.ts";
import { hashSecret } from "../shared/secrets.ts";
import { addressKey, attempt, THROTTLE } from "../shared/throttle.ts";
import { oneIndicator } from "./resource_indicators.ts";

/** The draft's advice: a document is small, and an authorization request does not wait long for it. */
export const DOCUMENT_MAX_BYTES = 5 * 1024;
export const DOCUMENT_TIMEOUT_MS = 5_000;
/** How long a fetched document is kept: what its caching headers say, within these bounds (seconds). */
export const MIN_FRESH = 300;
export const MAX_FRESH = 86_400;

/** What a refusal answers: the authorization request's error page, or the token endpoint's OAuth error. */
export type RefusalCode = "invalid_request" | "invalid_target" | "unauthorized_client" | "invalid_client";

/** Why a URL client was refused, for the audit event's `details.reason`. */
export type RefusalReason =
  | "not_admitted"
  | "unreachable"
  | "private_address"
  | "too_large"
  | "timeout"
  | "bad_status"
  | "not_json"
  | "client_id_mismatch"
  | "invalid_document"
  | "redirect_uri_not_listed";

/** A URL client the authorization request cannot use; `message` is fit for the user's error page. */
export class ClientMetadataRefused extends Error {
  constructor(readonly code: RefusalCode, message: string, readonly reason: RefusalReason | null = null) {
    super(message);
  }
}

/** Whether a `client_id` names a metadata document rather than a registered client. */
export function isClientIdUrl(clientId: string): boolean {
  return clientId.startsWith("https://");
}

/**
 * What is wrong with a `client_id` URL (draft §3): `https`, a path, no dot segments, no fragment, no credentials;
 * and written as a URL parser writes it back, since the document's `client_id` is compared as a string.
 */
export function clientIdUrlIssue(clientId: string): string | null {
  if (clientId.length > 2000) return "is longer than 2000 characters";
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return "is not a URL";
  }
  if (url.protocol !== "https:") return "must use https";
  if (url.username || url.password) return "must not contain credentials";
  if (clientId.includes("#")) return "must not contain a fragment";
  if (url.href !== clientId) return `must be written in canonical form (no dot segments): ${url.href}`;
  if (url.pathname === "/") return "must have a path";
  return null;
}

/** Whether some project admits clients of metadata documents (the metadata's `client_id_metadata_document_supported`). */
export async function metadataDocumentsAdmitted(sql: Sql): Promise<boolean> {
  return await retryRead(() => anyProjectAdmitsDocuments(sql));
}

/** Whether the project's setting admits a document on this URL's host. */
export function metadataHostAdmitted(setting: ClientMetadataDocuments, url: string): boolean {
  if (setting === "off") return false;
  if (setting === "any") return true;
  const host = new URL(url).hostname.toLowerCase();
  return setting.hosts.includes(host);
}

/**
 * How long a document may be kept, from its answer's headers (RFC 9111): `no-store`/`no-cache` or nothing said
 * keeps it the minimum; `max-age` (or `s-maxage`), else `Expires` against `Date`, within MIN_FRESH..MAX_FRESH.
 */
export function freshFor(headers: Record<string, string>, now = Date.now()): number {
  const clamp = (s: number) => Math.min(MAX_FRESH, Math.max(MIN_FRESH, Math.floor(s)));
  const control = (headers["cache-control"] ?? "").toLowerCase();
  if (/(?:^|,)\s*(?:no-store|no-cache)\b/.test(control)) return MIN_FRESH;
  const maxAge = /(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*"?(\d+)"?/.exec(control);
  if (maxAge) return clamp(Number(maxAge[1]));
  const expires = Date.parse(headers["expires"] ?? "");
  if (!Number.isNaN(expires)) {
    const date = Date.parse(headers["date"] ?? "");
    return clamp((expires - (Number.isNaN(date) ? now : date)) / 1000);
  }
  return MIN_FRESH;
}

/** What the service keeps of a document: the client's name and its redirect URIs. */
export type MetadataDocument = { name: string; redirectUris: string[] };

/**
 * The document of `clientId`, checked (draft §4): a JSON object whose `client_id` is the URL exactly, with
 * `redirect_uris`, `token_endpoint_auth_method` `none` (this service keeps no secret of such a client) and no
 * secret; other fields are tolerated. Redirect URIs this service would not register (not `https` nor loopback
 * `http`, a fragment) are left out, so that a request naming one is refused.
 */
export function parseMetadataDocument(clientId: string, body: string): MetadataDocument {
  const refuse = (reason: RefusalReason, why: string) =>
    new ClientMetadataRefused("invalid_request", `The application's metadata document ${why}.`, reason);
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    throw refuse("not_json", "is not JSON");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw refuse("not_json", "is not a JSON object");
  }
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId) throw refuse("client_id_mismatch", "names another client_id than its URL");
  if (!Array.isArray(d.redirect_uris) || d.redirect_uris.length === 0) {
    throw refuse("invalid_document", "has no redirect_uris");
  }
  if (d.redirect_uris.some((u) => typeof u !== "string")) {
    throw refuse("invalid_document", "has a redirect_uris entry that is not a string");
  }
  if (d.token_endpoint_auth_method !== "none") {
    throw refuse("invalid_document", 'must say "token_endpoint_auth_method": "none"');
  }
  if (d.client_secret !== undefined || d.client_secret_expires_at !== undefined) {
    throw refuse("invalid_document", "must not carry a client_secret");
  }
  const name = typeof d.client_name === "string" && d.client_name.trim() !== ""
    ? d.client_name.trim().slice(0, 100)
    : new URL(clientId).host;
  const redirectUris = [...new Set((d.redirect_uris as string[]).filter((u) => redirectUriIssue(u) === null))]
    .slice(0, 50);
  return { name, redirectUris };
}

/** An outbound failure as a refusal: the address guard's, the size's or the time's own reason. */
function fetchRefusal(err: OutboundError): ClientMetadataRefused {
  const text = err.message;
  const reason: RefusalReason = /global unicast|must use https/.test(text)
    ? "private_address"
    : /larger than/.test(text)
    ? "too_large"
    : /did not answer within/.test(text)
    ? "timeout"
    : "unreachable";
  const why: Record<string, string> = {
    private_address: "is on an address this service does not fetch from",
    too_large: `is larger than ${DOCUMENT_MAX_BYTES / 1024} KiB`,
    timeout: `did not arrive within ${DOCUMENT_TIMEOUT_MS / 1000} s`,
    unreachable: "could not be fetched",
  };
  return new ClientMetadataRefused(
    "invalid_request",
    `The application's metadata document ${why[reason]}.`,
    reason,
  );
}

/** Fetches and checks the document; the answer's headers say how long to keep it. */
async function fetchDocument(
  clientId: string,
  allowPrivate: boolean,
): Promise<MetadataDocument & { freshFor: number }> {
  let answer;
  try {
    answer = await outbound(clientId, {
      allowPrivate,
      maxBytes: DOCUMENT_MAX_BYTES,
      timeoutMs: DOCUMENT_TIMEOUT_MS,
    });
  } catch (err) {
    if (err instanceof OutboundError) throw fetchRefusal(err);
    throw err;
  }
  if (answer.status !== 200) {
    throw new ClientMetadataRefused(
      "invalid_request",
      `The application's metadata document answered HTTP ${answer.status}.`,
      "bad_status",
    );
  }
  return { ...parseMetadataDocument(clientId, answer.body), freshFor: freshFor(answer.headers) };
}

/**
 * A refusal's audit event in the project asked for (anyone can send a browser to /authorize with any URL, so at
 * most one per URL, reason and minute).
 */
async function refusedEvent(
  sql: Sql,
  projectId: string,
  clientId: string,
  refusal: ClientMetadataRefused,
  request: RequestInfo | null,
): Promise<void> {
  const details = { metadata_url: clientId, reason: refusal.reason ?? "invalid_request" };
  if (await recentEvent(sql, projectId, "client_metadata.refused", details, 60)) return;
  await record(sql, {
    projectId,
    type: "client_metadata.refused",
    source: userSource(null, request),
    target: { type: "client", id: null },
    details: { ...details, description: refusal.message },
  });
}

/**
 * The project's client for the URL `clientId` of an authorization request: checked, admitted by the project that
 * owns the request's `resource`, its document fetched when not fresh, and recorded (first use) or refreshed. The
 * `redirect_uri` must be one the document lists. Refusals: ClientMetadataRefused, with an audit event when the
 * project is known.
 */
export async function metadataClientOf(
  sql: Sql,
  opts: { allowPrivate: boolean; request: RequestInfo | null },
  p: { clientId: string; resource: string[] | undefined; redirectUri: string | undefined },
): Promise<string> {
  const issue = clientIdUrlIssue(p.clientId);
  if (issue) throw new ClientMetadataRefused("invalid_request", `The client_id URL ${issue}.`);
  if (p.resource === undefined) {
    throw new ClientMetadataRefused(
      "invalid_request",
      "An application identified by a URL must name the API it asks for (the resource parameter).",
    );
  }
  let indicator: string;
  try {
    indicator = oneIndicator(p.resource);
  } catch (err) {
    if (err instanceof AppError) throw new ClientMetadataRefused("invalid_target", `${err.message}.`);
    throw err;
  }
  const projectId = await retryRead(() => findIndicatorProject(sql, indicator));
  if (!projectId) {
    throw new ClientMetadataRefused("invalid_target", "No API of this service has the resource asked for.");
  }
  const policy = await retryRead(() => findMetadataPolicy(sql, projectId));
  if (!policy?.is_active) throw new ClientMetadataRefused("invalid_request", "The application is disabled.");
  const refused = async (refusal: ClientMetadataRefused) => {
    await refusedEvent(sql, projectId, p.clientId, refusal, opts.request);
    return refusal;
  };
  if (!metadataHostAdmitted(policy.client_metadata_documents, p.clientId)) {
    throw await refused(
      new ClientMetadataRefused(
        "unauthorized_client",
        "This service does not admit applications from this address for the API asked for.",
        "not_admitted",
      ),
    );
  }
  const known = await retryRead(() => findMetadataClient(sql, projectId, p.clientId));
  if (known && !known.is_active) {
    throw new ClientMetadataRefused("invalid_request", "The application is disabled.");
  }
  if (known?.fresh) {
    await touchMetadataClient(sql, known.id);
    return known.id;
  }
  // Each fetch is a request this service makes on the word of whoever sent the browser: counted per address.
  await attempt(sql, `metadata:${addressKey(opts.request?.ip ?? null)}`, THROTTLE.metadataFetch);
  let doc;
  try {
    doc = await fetchDocument(p.clientId, opts.allowPrivate);
    if (p.redirectUri === undefined || !doc.redirectUris.includes(p.redirectUri)) {
      throw new ClientMetadataRefused(
        "invalid_request",
        "The redirect_uri is not one the application's metadata document lists.",
        "redirect_uri_not_listed",
      );
    }
  } catch (err) {
    if (err instanceof ClientMetadataRefused) throw await refused(err);
    throw err;
  }
  return await transaction(sql, async (tx) => {
    const row = await upsertMetadataClient(tx, {
      project_id: projectId,
      id: newId(),
      url: p.clientId,
      name: doc.name,
      redirect_uris: doc.redirectUris,
      // Never used: such a client has no secret (its document says `none`); the column wants a hash.
      secret_hash: hashSecret(newSecret()),
      fresh_for_seconds: doc.freshFor,
    });
    if (row.inserted) {
      await record(tx, {
        projectId,
        type: "client.recorded",
        source: userSource(null, opts.request),
        target: { type: "client", id: row.id },
        details: { metadata_url: p.clientId, name: doc.name },
      });
    }
    return row.id;
  });
}

/**
 * The client a URL `client_id` names at the token and revocation endpoints: its only row, or, when several
 * projects recorded it, the row of the project the presented code or token belongs to (`projectOf`). Undefined
 * when none fits (`invalid_client`).
 */
export async function presentedMetadataClient(
  sql: Sql,
  clientId: string,
  projectOf: (() => Promise<string | undefined>) | undefined,
): Promise<string | undefined> {
  const rows = await retryRead(() => findMetadataClients(sql, clientId));
  if (rows.length <= 1) return rows[0]?.id;
  const projectId = projectOf ? await projectOf() : undefined;
  return rows.find((r) => r.project_id === projectId)?.id;
}

/** The token endpoint's live check of a URL client: its project must still admit its host. */
export function requireAdmitted(setting: ClientMetadataDocuments, metadataUrl: string): void {
  if (!metadataHostAdmitted(setting, metadataUrl)) {
    throw new AppError("unauthorized_client", {
      description: "the project no longer admits clients identified by this URL",
    });
  }
}
