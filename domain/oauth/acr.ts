/** What a login proved, as OpenID Connect names it: `amr` (RFC 8176) and `acr` values. */

/** RFC 8176 method references of a login with a password and a second factor. */
export const AMR_PASSWORD = ["pwd"];
export const AMR_TOTP = ["pwd", "otp", "mfa"];
/** `acr` values: one factor, or several (`acr_values=2` asks for the second, see docs/second-factors.md). */
export const ACR_SINGLE = "1";
export const ACR_MULTI = "2";
export const acrOf = (amr: string[] | null): string => amr?.includes("mfa") ? ACR_MULTI : ACR_SINGLE;
