/**
 * The Access-Control Service SDK: createAdminClient, createAccessClient, createProtectedResource, the device
 * grant's deviceAuthorization and pollDeviceToken, token exchange's exchangeToken, and ApiError, written by hand, and the client generated from
 * the service's OpenAPI document (every API class and model), in ./generated/. The Hono middleware is apart, in
 * ./hono.ts (`@access-control/sdk/hono`).
 */
export * from "./generated/index.ts";
export {
  ApiError,
  type ApiErrorBody,
  type ApiErrorCode,
  type ApiErrorDetail,
  type OAuthErrorCode,
} from "./errors.ts";
export { type AdminClient, type AdminClientOptions, createAdminClient } from "./admin.ts";
export * from "./access.ts";
export {
  createObjectsClient,
  type GrantQuery,
  type GrantsClient,
  type NewGrant,
  type NewObject,
  type ObjectChange,
  type ObjectQuery,
  type ObjectsClient,
  type ObjectsClientOptions,
} from "./objects.ts";
export {
  type AccessTokenClaims,
  type Authentication,
  createProtectedResource,
  type ProtectedResource,
  type ProtectedResourceMetadata,
  type ProtectedResourceOptions,
} from "./resource_server.ts";
export {
  type DeviceAuthorization,
  deviceAuthorization,
  type DeviceClientOptions,
  type DeviceTokens,
  pollDeviceToken,
} from "./device.ts";
export { type ExchangedToken, exchangeToken } from "./token_exchange.ts";
export type { TokenClientOptions } from "./token_forms.ts";
