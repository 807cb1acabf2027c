/** The shapes of second factors: a user's authenticator (TOTP) and recovery codes. */
import { z } from "@hono/zod-openapi";

/**
 * Fresh proof (domain/factors/proof.ts), for a change of how the user signs in: the current password when the
 * user has one, else a code of an existing factor. One copy, for the factors' operations and the profile's.
 */
export const FreshProofFields = {
  current_password: z.string().max(1024, "at most 1024 characters").nullable().optional().openapi({
    description: "The user's password, required when the user has one: a token alone cannot change how the " +
      "user signs in. Missing or wrong: 400 `invalid_params` on it (wrong ones are throttled like logins, 429).",
  }),
  code: z.string().max(64, "at most 64 characters").nullable().optional().openapi({
    description: "For a user without a password (made through an identity provider): the current code of " +
      "their authenticator app, or one of their recovery codes (spent then). Without it, and without a fresh " +
      "sign-in at their provider on the account page: 403 `reauthentication_required`. Wrong: 400 " +
      "`invalid_params` on it (throttled like second steps, 429).",
    example: "123456",
  }),
};

export const CurrentPasswordRequest = z.strictObject(FreshProofFields).openapi("CurrentPasswordRequest", {
  description:
    "Fresh proof that the token's user is at the keyboard: `current_password`, or `code` for a user " +
    "without a password",
});

export const TotpEnrolment = z.object({
  secret: z.string().openapi({ description: "The key, base32 (RFC 4648), for typing into an app by hand" }),
  otpauth_uri: z.string().openapi({
    description: "`otpauth://totp/…` (SHA-1, 6 digits, 30 s): what the QR code carries",
  }),
}).openapi("TotpEnrolment");

export const ConfirmTotpRequest = z.strictObject({
  code: z.string().trim().regex(/^\d{6}$/, "six digits").openapi({ description: "The app's current code" }),
}).openapi("ConfirmTotpRequest");

export const RecoveryCodes = z.object({
  recovery_codes: z.array(z.string()).openapi({
    description: "Ten codes, each good once in place of the app's code; shown only now",
  }),
}).openapi("RecoveryCodes");

export const Passkey = z.object({
  id: z.string().openapi({ description: "The credential id (base64url)" }),
  name: z.string(),
  synced: z.boolean().openapi({
    description: "Backup eligible: a passkey synced between devices (`amr` `swk`)",
  }),
  created_at: z.string().openapi({ format: "date-time" }),
  last_used_at: z.string().nullable().openapi({ format: "date-time" }),
}).openapi("Passkey");

export const SecondFactors = z.object({
  totp: z.boolean().openapi({ description: "An authenticator app is enrolled (and confirmed)" }),
  totp_enrolled_at: z.string().nullable().openapi({ description: "When it was confirmed (RFC 3339)" }),
  recovery_codes_left: z.number().int().openapi({ description: "Unspent recovery codes" }),
  passkeys: z.array(Passkey).openapi({ description: "The user's passkeys, oldest first" }),
}).openapi("SecondFactors");
export type SecondFactors = z.infer<typeof SecondFactors>;
