/**
 * SCIM discovery at /scim/v2/{project_id}/ (RFC 7644 §4): ServiceProviderConfig, ResourceTypes and Schemas, each
 * also by id; 501 for `/Me` and `/Bulk`; and a SCIM 404 for any other path under the base.
 */
import type { App } from "../../env.ts";
import { resourceTypes, schemas, serviceProviderConfig } from "../../../domain/provisioning/scim_schema.ts";
import { LIST_SCHEMA } from "../../../domain/provisioning/scim_schema.ts";
import { ScimError } from "../../../domain/provisioning/scim_errors.ts";
import { scimError, scimJson, scimOperation } from "./scim_edge.ts";

/** A list answer of every item (discovery lists are not paged). */
const listOf = (items: unknown[]) => ({
  schemas: [LIST_SCHEMA],
  totalResults: items.length,
  startIndex: 1,
  itemsPerPage: items.length,
  Resources: items,
});

export function registerScimDiscoveryRoutes(app: App): void {
  app.get(
    "/scim/v2/:project_id/ServiceProviderConfig",
    scimOperation("scim:read", ({ c, base }) => Promise.resolve(scimJson(c, serviceProviderConfig(base)))),
  );
  app.get(
    "/scim/v2/:project_id/ResourceTypes",
    scimOperation("scim:read", ({ c, base }) => Promise.resolve(scimJson(c, listOf(resourceTypes(base))))),
  );
  app.get(
    "/scim/v2/:project_id/ResourceTypes/:id",
    scimOperation("scim:read", ({ c, base, id }) => {
      const found = resourceTypes(base).find((t) => t.id.toLowerCase() === id.toLowerCase());
      if (!found) throw new ScimError(404, undefined, `no resource type ${id}`);
      return Promise.resolve(scimJson(c, found));
    }),
  );
  app.get(
    "/scim/v2/:project_id/Schemas",
    scimOperation("scim:read", ({ c, base }) => Promise.resolve(scimJson(c, listOf(schemas(base))))),
  );
  app.get(
    "/scim/v2/:project_id/Schemas/:id",
    scimOperation("scim:read", ({ c, base, id }) => {
      const found = schemas(base).find((s) => s.id.toLowerCase() === id.toLowerCase());
      if (!found) throw new ScimError(404, undefined, `no schema ${id}`);
      return Promise.resolve(scimJson(c, found));
    }),
  );
  registerScimUnsupported(app);
}

/**
 * `/Me` and `/Bulk`, which this service provider does not support: 501 in SCIM's shape (RFC 7644 §3.11 for
 * `/Me`; ServiceProviderConfig says `bulk.supported: false`), after the gate.
 */
function registerScimUnsupported(app: App): void {
  for (const path of ["/scim/v2/:project_id/Me", "/scim/v2/:project_id/Me/*", "/scim/v2/:project_id/Bulk"]) {
    app.all(
      path,
      scimOperation("scim:read", ({ c }) => {
        const name = c.req.path.includes("/Bulk") ? "/Bulk" : "/Me";
        throw new ScimError(501, undefined, `${name} is not supported by this service provider`);
      }),
    );
  }
}

/** Any other path under /scim/v2/: 404 in SCIM's shape (registered after every SCIM route). */
export function registerScimNotFound(app: App): void {
  app.all(
    "/scim/v2/*",
    (c) => scimError(c, new ScimError(404, undefined, `no endpoint ${c.req.method} ${c.req.path}`)),
  );
}
