/** The sign-in's errors that become pages of the service's own (routes/pages/kit/errors.ts `pageErrors`). */

/**
 * An error shown on our own page: the redirect URI cannot be trusted, so the browser is not sent there. `reason`,
 * when given, goes to the request log's line.
 */
export class AuthorizePageError extends Error {
  constructor(message: string, readonly reason: string | null = null) {
    super(message);
  }
}

/** A sign-in to an organization (`organization` at /authorize) by a user who is not a member of it: a page. */
export class NotAMember extends AuthorizePageError {
  constructor(organizationName: string) {
    super(
      `You are not a member of ${organizationName}. Ask one of its administrators to add you, or sign in ` +
        "with another account.",
      "not_a_member",
    );
  }
}
