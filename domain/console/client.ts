/** The admin console's built-in client: one per project, public, with a redirect URI under PUBLIC_URL. */
import { insertConsoleClient } from "../../db/console/sessions.ts";
import type { Sql } from "../../db/connection.ts";
import { newSecret } from "../shared/ids.ts";
import { hashSecret } from "../shared/secrets.ts";

/** The console client's id in a project: fixed, so that the console needs no lookup to sign in. */
export const consoleClientId = (projectId: string) => `console-${projectId}`;

/** Where the authorization server sends the console's codes. */
export const consoleRedirectUri = (publicUrl: string) => `${publicUrl}/console/callback`;

/** Creates the console client of a new project (its secret is random and never shown: it is a public client). */
export async function createConsoleClient(sql: Sql, projectId: string): Promise<void> {
  await insertConsoleClient(sql, {
    project_id: projectId,
    id: consoleClientId(projectId),
    secret_hash: hashSecret(newSecret()),
  });
}
