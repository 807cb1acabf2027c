/** The operator API of the signing keys, on the system project: list, planned rotation, emergency revocation. */
import { sourceOf } from "../../../domain/audit/audit.ts";
import { getKeys, revokeKey, rotateKeys } from "../../../domain/keys/keys.ts";
import { ForceQuery, KeySet, KidParam } from "../../../openapi/keys.ts";
import type { App } from "../../env.ts";
import { guardedRoute } from "../operation.ts";
import { jsonResponse } from "../responses.ts";

export const listKeysRoute = guardedRoute({
  method: "get",
  path: "/api/v1/keys",
  operationId: "listKeys",
  tags: ["Keys"],
  summary: "List the signing keys",
  permission: "keys:read",
  scope: "system",
  description:
    "Every key with its `kid`, algorithm, state and times, and its public JWK; never a private part.",
  responses: { 200: jsonResponse(KeySet, "The keys") },
});

export const rotateKeysRoute = guardedRoute({
  method: "post",
  path: "/api/v1/keys/rotate",
  operationId: "rotateKeys",
  tags: ["Keys"],
  summary: "Rotate the signing key now (planned)",
  permission: "keys:update",
  scope: "system",
  description:
    "Promotes the next key: it signs every new token from now on; the current key becomes previous " +
    "and stays in the JWKS until its last token has expired; a new next key is published. A next key is " +
    "published at least max(`ACCESS_TOKEN_TTL`, the JWKS max-age) before it may sign: a rotation before that " +
    "(or with no next key, which is then made and published) answers 409 `key_rotation_too_soon` unless " +
    "`force=true`. Every instance of the service accepts the new key's tokens from the first one, forced or " +
    "not: an instance that has not seen the key yet reloads the published keys before it answers (one reload " +
    "at a time, at least 200 ms apart, so forged kids cannot flood the database). `force` concerns other " +
    "verifiers, which may have cached the JWKS before the key was published.",
  request: { query: ForceQuery },
  responses: { 200: jsonResponse(KeySet, "The keys after the rotation, and what verifiers will see") },
  errors: ["key_rotation_too_soon"],
});

export const revokeKeyRoute = guardedRoute({
  method: "post",
  path: "/api/v1/keys/{kid}/revoke",
  operationId: "revokeKey",
  tags: ["Keys"],
  summary: "Revoke a signing key (emergency)",
  permission: "keys:update",
  scope: "system",
  description: "The key leaves the JWKS at once and every token it signed is refused on its next request " +
    "(401 `invalid_authorization_token`; introspection `active: false`), on every instance. If it was the " +
    "current key, the next key signs from the same moment; with no next key, revoking it answers 409 " +
    "`only_signing_key` unless `force=true`, which makes a new key that signs at once: every instance of " +
    "the service accepts its tokens from the first one (other verifiers refetch the JWKS on its unknown " +
    "`kid`).",
  request: { params: KidParam, query: ForceQuery },
  responses: { 200: jsonResponse(KeySet, "The keys after the revocation, and what clients will see") },
  errors: ["signing_key_not_found", "only_signing_key"],
});

export function registerKeyRoutes(app: App) {
  app.openapi(listKeysRoute, async (c) => c.json(await getKeys(c.get("deps").sql, c.get("deps").keys), 200));
  app.openapi(rotateKeysRoute, async (c) => {
    const { sql, keys } = c.get("deps");
    return c.json(await rotateKeys(sql, keys, c.req.valid("query").force, sourceOf(c.get("principal"))), 200);
  });
  app.openapi(revokeKeyRoute, async (c) => {
    const { sql, keys } = c.get("deps");
    const { kid } = c.req.valid("param");
    return c.json(
      await revokeKey(sql, keys, kid, c.req.valid("query").force, sourceOf(c.get("principal"))),
      200,
    );
  });
}
