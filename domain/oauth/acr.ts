/** What a login proved, as OpenID Connect names it: `amr` (RFC 8176) and `acr` values. */

/** RFC 8176 method references of a login with a password and a second factor. */
export const AMR_PASSWORD = ["pwd"];
export const AMR_TOTP = ["pwd", "otp", "mfa"];
/** An upstream identity provider's sign-in (RFC 8176 `fed`). */
export const AMR_FEDERATED = ["fed"];
/** `acr` values: one factor, or several (`acr_values=2` asks for the second, see docs/second-factors.md). */
export const ACR_SINGLE = "1";
export const ACR_MULTI = "2";

/**
 * The level a login reached, from its methods: several factors at once (`mfa`), or a code (`otp`), which this
 * service takes only as a second step: after a first factor in the same login, or to step up or re-authenticate
 * a browser session whose first factor was given at its sign-in (then `amr` is `["otp"]` alone: RFC 8176 lists
 * the methods presented at that `auth_time`, and the level is the session's).
 */
export const acrOf = (amr: string[] | null): string =>
  amr?.includes("mfa") || amr?.includes("otp") ? ACR_MULTI : ACR_SINGLE;
