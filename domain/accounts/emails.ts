/** An account's address as stored and counted: the one form every sign-in path and the users' rules share. */

/** Emails are stored trimmed and lower-cased, so uniqueness and login are case-insensitive. */
export function normalizeEmail(email: string | null | undefined): string | null | undefined {
  return typeof email === "string" ? email.trim().toLowerCase() : email;
}

/** The account key that login throttling counts failed passwords against. */
export function accountKey(projectId: string, email: string): string {
  return `account:${projectId}:${email}`;
}
