/** The admin console's built-in client: one per project, public, with a redirect URI under PUBLIC_URL. */
import { insertConsoleClient } from "../../db/console/sessions.ts";
import type { Sql } from "../../db/connection.ts";
import { newSecret } from "../shared/ids.ts";
import { hashSecret } from "../shared/secrets.ts";

/** The console client's id in a project: fixed, so that the console needs no lookup to sign in. */
export const consoleClientId = (projectId: string) => `console-${projectId}`;

/** Where the authorization server sends the console's codes. */
export const consoleRedirectUri = (publicUrl: string) => `${publicUrl}/console/callback`;

/**
 * Whether a redirect URI is allowed for a client: registered in its project byte for byte, or, for that
 * project's console client only, exactly the console's built-in callback.
 */
export function redirectUriAllowed(
  client: { id: string; project_id: string; redirect_uris: string[] },
  redirectUri: string,
  publicUrl: string | undefined,
): boolean {
  if (client.redirect_uris.includes(redirectUri)) return true;
  return publicUrl !== undefined && client.id === consoleClientId(client.project_id) &&
    redirectUri === consoleRedirectUri(publicUrl);
}

/** Creates the console client of a new project (its secret is random and never shown: it is a public client). */
export async function createConsoleClient(sql: Sql, projectId: string): Promise<void> {
  await insertConsoleClient(sql, {
    project_id: projectId,
    id: consoleClientId(projectId),
    secret_hash: hashSecret(newSecret()),
  });
}
