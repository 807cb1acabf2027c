/** Webhooks: `/api/v1/projects/{project_id}/webhooks`, their secrets and their deliveries. */
import {
  createWebhook,
  deleteWebhook,
  DELIVERY_NEEDS,
  getWebhook,
  listDeliveries,
  listWebhooks,
  retryDelivery,
  rotateWebhookSecret,
  SUBSCRIBING_NEEDS,
  updateWebhook,
  type WebhookSettings,
} from "../../../domain/events/webhooks.ts";
import { listOf, ProjectIdParam } from "../../../openapi/fields.ts";
import {
  CreateWebhookRequest,
  DeliveryIdParam,
  DeliveryListQuery,
  UpdateWebhookRequest,
  Webhook,
  WebhookDelivery,
  WebhookIdParam,
  WebhookListQuery,
  WebhookWithSecret,
} from "../../../openapi/webhooks.ts";
import type { App, Deps } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonBody, jsonResponse } from "../responses.ts";

export const createWebhookRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/webhooks",
  operationId: "createWebhook",
  tags: ["Webhooks"],
  summary: "Subscribe to events",
  permission: "webhooks:create",
  alsoNeeds: SUBSCRIBING_NEEDS,
  description:
    "Events of the types given are POSTed to `url` as JSON (the audit event), signed per Standard " +
    "Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`). The answer carries the signing secret " +
    "(`whsec_…`) once.",
  request: { params: ProjectIdParam, body: jsonBody(CreateWebhookRequest) },
  responses: { 201: jsonResponse(WebhookWithSecret, "The webhook with its signing secret") },
});

export const listWebhooksRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/webhooks",
  operationId: "listWebhooks",
  tags: ["Webhooks"],
  summary: "List webhooks",
  permission: "webhooks:read",
  description: "`search` matches the URL and description. Secrets are never listed.",
  request: { params: ProjectIdParam, query: WebhookListQuery },
  responses: { 200: jsonResponse(listOf(Webhook, "WebhookList"), "A page of webhooks") },
});

export const getWebhookRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/webhooks/{webhook_id}",
  operationId: "getWebhook",
  tags: ["Webhooks"],
  summary: "Get a webhook",
  permission: "webhooks:read",
  request: { params: WebhookIdParam },
  responses: { 200: jsonResponse(Webhook, "The webhook") },
  errors: ["webhook_not_found"],
});

export const updateWebhookRoute = guardedRoute({
  method: "put",
  path: "/api/v1/projects/{project_id}/webhooks/{webhook_id}",
  operationId: "updateWebhook",
  tags: ["Webhooks"],
  summary: "Update a webhook",
  permission: "webhooks:update",
  alsoNeeds: SUBSCRIBING_NEEDS,
  description: "Events committed from now on follow the new settings; pending deliveries keep their target.",
  request: { params: WebhookIdParam, body: jsonBody(UpdateWebhookRequest) },
  responses: { 200: jsonResponse(Webhook, "The updated webhook") },
  errors: ["webhook_not_found"],
});

export const deleteWebhookRoute = guardedRoute({
  method: "delete",
  path: "/api/v1/projects/{project_id}/webhooks/{webhook_id}",
  operationId: "deleteWebhook",
  tags: ["Webhooks"],
  summary: "Delete a webhook",
  permission: "webhooks:delete",
  description: "Its pending deliveries are dropped with it.",
  request: { params: WebhookIdParam },
  responses: { 204: { description: "Deleted" } },
  errors: ["webhook_not_found"],
});

export const rotateWebhookSecretRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/webhooks/{webhook_id}/secret",
  operationId: "rotateWebhookSecret",
  tags: ["Webhooks"],
  summary: "Replace a webhook's signing secret",
  permission: "webhooks:update",
  alsoNeeds: SUBSCRIBING_NEEDS,
  description: "Every delivery from now on is signed with the new secret, shown only here.",
  request: { params: WebhookIdParam },
  responses: { 200: jsonResponse(WebhookWithSecret, "The webhook with its new secret") },
  errors: ["webhook_not_found"],
});

export const listDeliveriesRoute = guardedRoute({
  method: "get",
  path: "/api/v1/projects/{project_id}/webhooks/{webhook_id}/deliveries",
  operationId: "listWebhookDeliveries",
  tags: ["Webhooks"],
  summary: "A webhook's deliveries",
  permission: "webhooks:read",
  alsoNeeds: DELIVERY_NEEDS,
  description: "Newest first: status, attempts, the receiver's last answer and when it came. Each names an " +
    "event of the audit trail (its id and type), hence `audit:read`.",
  request: { params: WebhookIdParam, query: DeliveryListQuery },
  responses: { 200: jsonResponse(listOf(WebhookDelivery, "WebhookDeliveryList"), "A page of deliveries") },
  errors: ["webhook_not_found"],
});

export const retryDeliveryRoute = guardedRoute({
  method: "post",
  path: "/api/v1/projects/{project_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
  operationId: "retryWebhookDelivery",
  tags: ["Webhooks"],
  summary: "Send a delivery again now",
  permission: "webhooks:update",
  alsoNeeds: DELIVERY_NEEDS,
  description:
    "Puts a delivery (failed, delivered or waiting) back in line for an attempt now: its audit event " +
    "is sent again, hence `audit:read`.",
  request: { params: DeliveryIdParam },
  responses: { 200: jsonResponse(WebhookDelivery, "The delivery, queued") },
  errors: ["webhook_not_found", "webhook_delivery_not_found"],
});

const settingsOf = (deps: Deps): WebhookSettings => ({
  vault: deps.keys.vault,
  allowPrivateTargets: deps.config.webhookAllowPrivateTargets,
});

export function registerWebhookRoutes(app: App) {
  app.openapi(createWebhookRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const { sql } = c.get("deps");
    return c.json(
      await createWebhook(
        sql,
        settingsOf(c.get("deps")),
        c.get("principal"),
        project_id,
        c.req.valid("json"),
      ),
      201,
    );
  });
  app.openapi(listWebhooksRoute, async (c) => {
    return c.json(
      await listWebhooks(c.get("deps").sql, c.req.valid("param").project_id, c.req.valid("query")),
      200,
    );
  });
  app.openapi(getWebhookRoute, async (c) => {
    const { project_id, webhook_id } = c.req.valid("param");
    return c.json(await getWebhook(c.get("deps").sql, project_id, webhook_id), 200);
  });
  app.openapi(updateWebhookRoute, async (c) => {
    const { project_id, webhook_id } = c.req.valid("param");
    const { sql } = c.get("deps");
    const body = c.req.valid("json");
    return c.json(
      await updateWebhook(sql, settingsOf(c.get("deps")), c.get("principal"), project_id, webhook_id, body),
      200,
    );
  });
  app.openapi(deleteWebhookRoute, async (c) => {
    const { project_id, webhook_id } = c.req.valid("param");
    await deleteWebhook(c.get("deps").sql, c.get("principal"), project_id, webhook_id);
    return c.body(null, 204) as never;
  });
  app.openapi(rotateWebhookSecretRoute, async (c) => {
    const { project_id, webhook_id } = c.req.valid("param");
    const { sql } = c.get("deps");
    return c.json(
      await rotateWebhookSecret(sql, settingsOf(c.get("deps")), c.get("principal"), project_id, webhook_id),
      200,
    );
  });
  app.openapi(listDeliveriesRoute, async (c) => {
    const { project_id, webhook_id } = c.req.valid("param");
    const q = c.req.valid("query");
    return c.json(
      await listDeliveries(c.get("deps").sql, c.get("principal"), project_id, webhook_id, q),
      200,
    );
  });
  app.openapi(retryDeliveryRoute, async (c) => {
    const { project_id, webhook_id, delivery_id } = c.req.valid("param");
    return c.json(
      await retryDelivery(c.get("deps").sql, c.get("principal"), project_id, webhook_id, delivery_id),
      200,
    );
  });
}
