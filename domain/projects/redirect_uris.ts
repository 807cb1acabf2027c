/**
 * Where a client may send the browser: the one place that decides which registered list applies. A client with
 * its own non-empty list uses that list and only it; a client without one uses its project's (the
 * specification's rule). Every check of a `redirect_uri` or `post_logout_redirect_uri` goes through here.
 */
import { consoleClientId, consoleRedirectUri } from "../console/client.ts";

/** The lists a client carries and those of its project (db/oauth/clients.ts reads both in one row). */
export type RegisteredLists = {
  id: string;
  project_id: string;
  client_redirect_uris: string[];
  project_redirect_uris: string[];
  client_post_logout_redirect_uris: string[];
  project_post_logout_redirect_uris: string[];
  /** A client allowed the device grant (RFC 8628) may also use the verification page's internal callback. */
  device_grant?: boolean;
};

/**
 * Where the verification page's login (domain/signin/device_flow.ts) comes back: a redirect URI of this service,
 * accepted for a client allowed the device grant, and at /authorize only for a request tied to a device code.
 */
export const deviceCallbackUri = (publicUrl: string) => `${publicUrl}/device/callback`;

export type UriKind = "redirect_uri" | "post_logout_redirect_uri";

/** The list that applies to the client, and whose it is (where a missing URI is to be registered). */
export function effectiveUris(
  client: RegisteredLists,
  kind: UriKind,
): { uris: string[]; owner: "client" | "project" } {
  const own = kind === "redirect_uri" ? client.client_redirect_uris : client.client_post_logout_redirect_uris;
  if (own.length > 0) return { uris: own, owner: "client" };
  return {
    uris: kind === "redirect_uri" ? client.project_redirect_uris : client.project_post_logout_redirect_uris,
    owner: "project",
  };
}

/**
 * Whether a redirect URI is allowed for a client: in the list that applies to it, byte for byte, or, for the
 * project's console client only, exactly the console's built-in callback, or, for a client allowed the device
 * grant, exactly the verification page's callback.
 */
export function redirectUriAllowed(
  client: RegisteredLists,
  redirectUri: string,
  publicUrl: string | undefined,
): boolean {
  if (effectiveUris(client, "redirect_uri").uris.includes(redirectUri)) return true;
  if (
    publicUrl !== undefined && client.device_grant === true && redirectUri === deviceCallbackUri(publicUrl)
  ) {
    return true;
  }
  return publicUrl !== undefined && client.id === consoleClientId(client.project_id) &&
    redirectUri === consoleRedirectUri(publicUrl);
}

/** Whether `/logout` may send the browser to this URI for the client: in the list that applies, byte for byte. */
export function postLogoutRedirectUriAllowed(client: RegisteredLists, redirectUri: string): boolean {
  return effectiveUris(client, "post_logout_redirect_uri").uris.includes(redirectUri);
}

/**
 * A URI refused because it is not in the list that applies: what the refusal page may tell (the URI received,
 * whose list it must join), never the registered URIs themselves.
 */
export type UnregisteredUri = {
  kind: UriKind;
  /** As received: attacker-controlled text, to be escaped and shortened wherever it is shown. */
  received: string;
  clientId: string;
  projectId: string;
  /** Whose list applies, and so where the URI is to be registered. */
  owner: "client" | "project";
  /** The project's built-in console client: it has no page of its own. */
  consoleClient: boolean;
};

export function unregisteredUri(client: RegisteredLists, kind: UriKind, received: string): UnregisteredUri {
  return {
    kind,
    received,
    clientId: client.id,
    projectId: client.project_id,
    owner: effectiveUris(client, kind).owner,
    consoleClient: client.id === consoleClientId(client.project_id),
  };
}
