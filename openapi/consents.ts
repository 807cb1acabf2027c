/** Consents: what a user allowed a third-party client (`third_party` clients), per API or the project. */
import { z } from "@hono/zod-openapi";
import { Id } from "./fields.ts";
import { UserIdParam } from "./users.ts";

const time = (description: string) => z.string().openapi({ format: "date-time", description });

export const Consent = z.object({
  id: z.string(),
  project_id: z.string(),
  user_id: z.string(),
  client_id: z.string().openapi({ description: "The third-party client allowed" }),
  client_name: z.string(),
  resource_id: z.string().nullable().openapi({
    description:
      "The API (a resource with an `indicator`) the consent is for; null: the project (a request " +
      "without `resource`)",
  }),
  resource_name: z.string().nullable(),
  permissions: z.array(z.string()).openapi({
    description: "What was granted: the API's permission codes, or for the project the OpenID scopes " +
      "(`openid`, `profile`, `email`). A request asking for one not here shows the consent page again.",
  }),
  created_at: time("The first decision (RFC 3339, UTC)"),
  updated_at: time("The last decision (RFC 3339, UTC)"),
}).openapi("Consent");
export type Consent = z.infer<typeof Consent>;

export const ConsentList = z.object({ data: z.array(Consent) }).openapi("ConsentList");

export const UserConsentParams = UserIdParam.extend({
  consent_id: Id.openapi({ param: { name: "consent_id", in: "path" } }),
});
