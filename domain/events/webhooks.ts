/**
 * Webhook subscriptions: a URL, the event types it wants, and a Standard Webhooks signing secret (`whsec_` and
 * base64 of 32 random bytes) shown once. The secret must sign, so it is kept whole, sealed when
 * KEY_ENCRYPTION_KEY is set. Webhooks deliver the project's audit events, so managing them also needs
 * `audit:read`: a subscription is a way to read the trail.
 */
import { Buffer } from "node:buffer";
import { type Sql, transaction } from "../../db/connection.ts";
import {
  deleteWebhookRow,
  findDelivery,
  findWebhook,
  insertWebhook,
  listDeliveryRows,
  listWebhookRows,
  requeueDelivery,
  type StoredSecret,
  updateWebhookRow,
  updateWebhookSecret,
} from "../../db/events/webhooks.ts";
import type { PageOf } from "../../openapi/fields.ts";
import type {
  CreateWebhookRequest,
  DeliveryListQuery,
  UpdateWebhookRequest,
  Webhook,
  WebhookDelivery,
  WebhookListQuery,
  WebhookWithSecret,
} from "../../openapi/webhooks.ts";
import { diff, record, sourceOf } from "../audit/audit.ts";
import { requireCovered } from "../authz/coverage.ts";
import type { AdminPermission } from "../authz/defaults.ts";
import { AppError } from "../shared/errors.ts";
import { newId } from "../shared/ids.ts";
import type { KeyVault } from "../keys/key_vault.ts";
import type { Principal } from "../shared/principal.ts";
import { keepOrClear } from "../shared/updates.ts";
import { targetIssue } from "../outbound/webhook_targets.ts";

export type WebhookSettings = {
  vault: KeyVault | null;
  allowPrivateTargets: boolean;
  /** The first retry's delay in seconds; the rest of the schedule scales with it (default 5). */
  retryBaseSeconds?: number;
};

function newWebhookSecret(): string {
  return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;
}

function store(s: WebhookSettings, id: string, secret: string): StoredSecret {
  return s.vault
    ? { secret: null, secret_sealed: s.vault.sealText(id, secret) }
    : { secret, secret_sealed: null };
}

/** The secret a stored webhook signs with. */
export function secretOf(s: WebhookSettings, id: string, stored: StoredSecret): string {
  if (stored.secret_sealed) {
    if (!s.vault) throw new Error("the webhook's secret is sealed: KEY_ENCRYPTION_KEY is needed to open it");
    return s.vault.openText(id, stored.secret_sealed);
  }
  return stored.secret!;
}

/**
 * Subscribing reads the trail: creating, changing or re-keying a subscription also needs these, which the
 * caller must cover (checked after the request is valid and the webhook found). The routes publish them.
 */
export const SUBSCRIBING_NEEDS = ["audit:read"] as const satisfies readonly AdminPermission[];

/**
 * A webhook's deliveries name the trail's events (their ids and types) and resend them: listing or retrying
 * them needs these too (checked once the webhook, and the delivery, are found).
 */
export const DELIVERY_NEEDS = ["audit:read"] as const satisfies readonly AdminPermission[];

async function requireAuditRead(tx: Sql, caller: Principal, projectId: string): Promise<void> {
  await requireCovered(
    tx,
    caller,
    projectId,
    { codes: SUBSCRIBING_NEEDS },
    "event_types",
    "subscribing to events",
  );
}

async function requireDeliveryNeeds(
  tx: Sql,
  caller: Principal,
  projectId: string,
  what: string,
): Promise<void> {
  await requireCovered(tx, caller, projectId, { codes: DELIVERY_NEEDS }, "webhook_id", what);
}

/**
 * A URL as the trail records it: without its query and fragment, which may carry a receiver's token. The trail
 * (and every webhook that reads it) shows where events go, never such a secret.
 */
export function urlForTrail(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "changed"; // not a URL (a stored one always is): the trail says no more than that
  }
}

/** The changed fields of a webhook, its URL without query: `"changed"` when only the query changed. */
function webhookChanges(before: Webhook, after: Webhook) {
  const changes = diff({ ...before, url: urlForTrail(before.url) }, {
    ...after,
    url: urlForTrail(after.url),
  });
  if (before.url !== after.url && changes.url === undefined) changes.url = "changed";
  return changes;
}

/** The URL is checked now as far as it can be without a lookup; its address is checked at every delivery. */
function checkUrl(s: WebhookSettings, url: string): void {
  const issue = targetIssue(new URL(url), s.allowPrivateTargets);
  if (issue) throw new AppError("invalid_params", { details: [{ field: "url", issue }] });
}

export async function createWebhook(
  sql: Sql,
  s: WebhookSettings,
  caller: Principal,
  projectId: string,
  input: CreateWebhookRequest,
): Promise<WebhookWithSecret> {
  checkUrl(s, input.url);
  const id = newId();
  const secret = newWebhookSecret();
  return await transaction(sql, async (tx) => {
    await requireAuditRead(tx, caller, projectId);
    await insertWebhook(tx, {
      project_id: projectId,
      id,
      url: input.url,
      description: input.description || null,
      event_types: [...new Set(input.event_types)],
      is_active: input.is_active ?? true,
      ...store(s, id, secret),
    });
    await record(tx, {
      projectId,
      type: "webhook.created",
      source: sourceOf(caller),
      target: { type: "webhook", id },
    });
    return { ...(await findWebhook(tx, projectId, id))!, secret };
  });
}

export async function getWebhook(sql: Sql, projectId: string, id: string): Promise<Webhook> {
  const webhook = await findWebhook(sql, projectId, id);
  if (!webhook) throw new AppError("webhook_not_found");
  return webhook;
}

export async function listWebhooks(
  sql: Sql,
  projectId: string,
  q: WebhookListQuery,
): Promise<PageOf<Webhook>> {
  return await listWebhookRows(sql, projectId, q);
}

export async function updateWebhook(
  sql: Sql,
  s: WebhookSettings,
  caller: Principal,
  projectId: string,
  id: string,
  input: UpdateWebhookRequest,
): Promise<Webhook> {
  checkUrl(s, input.url);
  return await transaction(sql, async (tx) => {
    const current = await findWebhook(tx, projectId, id, { lock: true });
    if (!current) throw new AppError("webhook_not_found");
    await requireAuditRead(tx, caller, projectId);
    const updated = await updateWebhookRow(tx, projectId, id, {
      url: input.url,
      description: keepOrClear(input.description, current.description),
      event_types: [...new Set(input.event_types)],
      is_active: input.is_active ?? current.is_active,
    });
    await record(tx, {
      projectId,
      type: "webhook.updated",
      source: sourceOf(caller),
      target: { type: "webhook", id },
      changes: webhookChanges(current, updated),
    });
    return updated;
  });
}

export async function deleteWebhook(
  sql: Sql,
  caller: Principal,
  projectId: string,
  id: string,
): Promise<void> {
  await transaction(sql, async (tx) => {
    const current = await findWebhook(tx, projectId, id, { lock: true });
    if (!current) throw new AppError("webhook_not_found");
    await deleteWebhookRow(tx, projectId, id);
    await record(tx, {
      projectId,
      type: "webhook.deleted",
      source: sourceOf(caller),
      target: { type: "webhook", id },
      details: { url: urlForTrail(current.url) },
    });
  });
}

export async function rotateWebhookSecret(
  sql: Sql,
  s: WebhookSettings,
  caller: Principal,
  projectId: string,
  id: string,
): Promise<WebhookWithSecret> {
  const secret = newWebhookSecret();
  return await transaction(sql, async (tx) => {
    const current = await findWebhook(tx, projectId, id, { lock: true });
    if (!current) throw new AppError("webhook_not_found");
    await requireAuditRead(tx, caller, projectId);
    await updateWebhookSecret(tx, projectId, id, store(s, id, secret));
    await record(tx, {
      projectId,
      type: "webhook.secret_rotated",
      source: sourceOf(caller),
      target: { type: "webhook", id },
      changes: { secret: "changed" },
    });
    return { ...(await findWebhook(tx, projectId, id))!, secret };
  });
}

export async function listDeliveries(
  sql: Sql,
  caller: Principal,
  projectId: string,
  webhookId: string,
  q: DeliveryListQuery,
): Promise<PageOf<WebhookDelivery>> {
  await getWebhook(sql, projectId, webhookId);
  await requireDeliveryNeeds(sql, caller, projectId, "reading a webhook's deliveries");
  return await listDeliveryRows(sql, projectId, webhookId, q);
}

/**
 * Sends a delivery again now (after the receiver was fixed, or a failed one); the request is an event of its
 * own. A delivery being sent at this moment is left to its worker (and records nothing).
 */
export async function retryDelivery(
  sql: Sql,
  caller: Principal,
  projectId: string,
  webhookId: string,
  deliveryId: string,
): Promise<WebhookDelivery> {
  return await transaction(sql, async (tx) => {
    await getWebhook(tx, projectId, webhookId);
    const requeued = await requeueDelivery(tx, projectId, webhookId, deliveryId);
    const delivery = await findDelivery(tx, projectId, webhookId, deliveryId);
    if (!delivery) throw new AppError("webhook_delivery_not_found");
    // Refused here, the requeue above is rolled back with the transaction.
    await requireDeliveryNeeds(tx, caller, projectId, "retrying a webhook's delivery");
    if (requeued) {
      await record(tx, {
        projectId,
        type: "webhook.delivery_retried",
        source: sourceOf(caller),
        target: { type: "webhook_delivery", id: deliveryId },
        details: { webhook_id: webhookId, event_id: delivery.event_id, attempts: delivery.attempts },
      });
    }
    return delivery;
  });
}
