/** The shapes of second factors: a user's authenticator (TOTP) and recovery codes. */
import { z } from "@hono/zod-openapi";

const CurrentPassword = z.string().max(1024, "at most 1024 characters").optional().openapi({
  description: "The user's password, required when the user has one: a token alone cannot change factors",
});

export const CurrentPasswordRequest = z.object({ current_password: CurrentPassword })
  .openapi("CurrentPasswordRequest");

export const TotpEnrolment = z.object({
  secret: z.string().openapi({ description: "The key, base32 (RFC 4648), for typing into an app by hand" }),
  otpauth_uri: z.string().openapi({
    description: "`otpauth://totp/…` (SHA-1, 6 digits, 30 s): what the QR code carries",
  }),
}).openapi("TotpEnrolment");

export const ConfirmTotpRequest = z.object({
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
