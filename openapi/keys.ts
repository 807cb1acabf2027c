/** The signing keys, as the operator API shows them: never a private part. */
import { z } from "@hono/zod-openapi";
import { plain } from "./fields.ts";
import { Jwk } from "./service.ts";

const time = (description: string) => z.string().nullable().openapi({ format: "date-time", description });

export const SigningKeyState = z.enum(["next", "current", "previous", "retired", "revoked"]).openapi(
  "SigningKeyState",
  {
    description:
      "`next`: published in the JWKS, not signing yet. `current`: signs every new token. `previous`: " +
      "published until every token it signed has expired. `retired`: gone from the JWKS. `revoked`: gone at " +
      "once, every token it signed refused.",
  },
);

export const SigningKey = z.object({
  kid: z.string(),
  alg: z.enum(["EdDSA", "ES256", "RS256"]),
  state: SigningKeyState,
  created_at: z.string().openapi({ format: "date-time", description: "When it was made and published" }),
  activated_at: time("When it started signing"),
  promotable_at: time("For the next key: from when it may sign, once verifiers caching the JWKS know it"),
  retires_at: time("For a previous key: when it leaves the JWKS, after its last token has expired"),
  retired_at: time("When it left the JWKS"),
  revoked_at: time("When it was revoked"),
  public_jwk: Jwk,
}).openapi("SigningKey");
export type SigningKey = z.infer<typeof SigningKey>;

export const KeySet = z.object({
  keys: z.array(SigningKey).openapi({
    description: "Every key, current first, then next, previous, retired",
  }),
  notice: z.string().optional().openapi({
    description: "What verifiers and clients will see after this change",
  }),
}).openapi("KeySet");
export type KeySet = z.infer<typeof KeySet>;

export const KidParam = z.object({
  kid: plain(200).min(1).openapi({ param: { name: "kid", in: "path" } }),
});

export const ForceQuery = z.object({
  force: z.enum(["true", "false"]).optional().transform((v) => v === "true").openapi({
    type: "boolean",
    description:
      "Do it even when verifiers may not be ready (see the 409 answers); the answer says what they see",
  }),
});
