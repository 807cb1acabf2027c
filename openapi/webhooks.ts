/** Webhook subscriptions of a project and their deliveries (Standard Webhooks). */
import { z } from "@hono/zod-openapi";
import { EVENT_TYPES } from "./audit.ts";
import { booleanFilter, Description, Id, listQuery, ProjectIdParam, Timestamps } from "./fields.ts";

const TYPES = Object.keys(EVENT_TYPES);

/** `*` (everything), an event type, or a prefix of one followed by `.*`. */
export const EventTypePattern = z.string().max(100).refine(
  (p) =>
    p === "*" || TYPES.includes(p) || (p.endsWith(".*") && TYPES.some((t) => t.startsWith(p.slice(0, -1)))),
  "must be *, an event type, or a prefix of one followed by .* (e.g. role.*)",
).openapi({ example: "user.*" });

const EventTypes = z.array(EventTypePattern).min(1, "at least one").max(50, "at most 50").openapi({
  description: "Which events to deliver: `*`, exact types (`role.created`) or prefixes (`user.*`)",
});

const Url = z.string().max(2000).refine((u) => {
  try {
    const url = new URL(u);
    return (url.protocol === "https:" || url.protocol === "http:") && !url.username && !url.password &&
      !u.includes("#");
  } catch {
    return false;
  }
}, "must be an absolute https URL without credentials or fragment").openapi({
  description:
    "Where events are POSTed. `https`; `http` only to loopback with WEBHOOK_ALLOW_PRIVATE_TARGETS. " +
    "Only global unicast addresses are reached: a host that is an address literal other than global unicast " +
    "(loopback, private, CGNAT, link-local, multicast, broadcast, reserved, documentation, IPv6 unique or site " +
    "local, and every IPv6 form embedding an IPv4 address) is refused here with `invalid_params`, and a name " +
    "any of whose addresses is not global unicast is refused at delivery time, unless " +
    "WEBHOOK_ALLOW_PRIVATE_TARGETS=true; redirects are not followed.",
  example: "https://app.example.com/hooks/access",
});

export const Webhook = z.object({
  id: z.string(),
  project_id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  event_types: z.array(z.string()),
  is_active: z.boolean(),
  ...Timestamps,
}).openapi("Webhook");
export type Webhook = z.infer<typeof Webhook>;

export const WebhookWithSecret = Webhook.extend({
  secret: z.string().openapi({
    description: "The Standard Webhooks signing secret (`whsec_` + base64), shown only in this answer",
    example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  }),
}).openapi("WebhookWithSecret");
export type WebhookWithSecret = z.infer<typeof WebhookWithSecret>;

export const CreateWebhookRequest = z.strictObject({
  url: Url,
  event_types: EventTypes,
  description: Description,
  is_active: z.boolean().optional().openapi({ description: "Default true" }),
}).openapi("CreateWebhookRequest");
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

export const UpdateWebhookRequest = z.strictObject({
  url: Url,
  event_types: EventTypes,
  description: Description,
  is_active: z.boolean().optional().openapi({ description: "Omitted: unchanged" }),
}).openapi("UpdateWebhookRequest");
export type UpdateWebhookRequest = z.infer<typeof UpdateWebhookRequest>;

export const WebhookIdParam = ProjectIdParam.extend({
  webhook_id: Id.openapi({ param: { name: "webhook_id", in: "path" } }),
});

export const DeliveryIdParam = WebhookIdParam.extend({
  delivery_id: Id.openapi({ param: { name: "delivery_id", in: "path" } }),
});

export const WebhookListQuery = listQuery(["created_at", "updated_at", "url"] as const).extend({
  is_active: booleanFilter("Only active (true) or inactive (false) webhooks"),
});
export type WebhookListQuery = z.infer<typeof WebhookListQuery>;

export const DeliveryStatus = z.enum(["pending", "sending", "delivered", "failed"]).openapi(
  "WebhookDeliveryStatus",
  {
    description:
      "`pending`: waiting for its next attempt. `sending`: being sent now. `delivered`: the receiver " +
      "answered 2xx. `failed`: refused target, or no 2xx after about a day of retries.",
  },
);

export const WebhookDelivery = z.object({
  id: z.string(),
  webhook_id: z.string(),
  event_id: z.string().openapi({ description: "The event; also the `webhook-id` header of every attempt" }),
  event_type: z.string(),
  status: DeliveryStatus,
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable().openapi({ format: "date-time" }),
  last_attempt_at: z.string().nullable().openapi({ format: "date-time" }),
  last_status: z.number().int().nullable().openapi({ description: "The receiver's last HTTP status" }),
  last_error: z.string().nullable().openapi({ description: "Why the last attempt failed, when it did" }),
  delivered_at: z.string().nullable().openapi({ format: "date-time" }),
  created_at: z.string().openapi({ format: "date-time" }),
}).openapi("WebhookDelivery");
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const DeliveryListQuery = listQuery(["created_at"] as const).extend({
  status: DeliveryStatus.optional(),
});
export type DeliveryListQuery = z.infer<typeof DeliveryListQuery>;
