/** A resource (a domain of permissions in a project) and its permissions. */
import { z } from "@hono/zod-openapi";
import {
  booleanFilter,
  Code,
  Description,
  Id,
  listQuery,
  Name,
  ProjectIdParam,
  text,
  Timestamps,
} from "./fields.ts";

export const Permission = z.object({
  id: z.string().openapi({ description: "Referenced by roles and clients through `permission_ids`" }),
  name: z.string(),
  code: z.string(),
  description: z.string().nullable(),
  ...Timestamps,
}).openapi("Permission");
export type Permission = z.infer<typeof Permission>;

/** Loopback hosts, where an indicator may use plain http (a developer's API on their machine). */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Why `value` is not a resource indicator (RFC 8707 §2: an absolute URI without a fragment), or null. This
 * service also wants `https` (plain `http` only on loopback) and no user info: a token's audience is named by
 * it, and the same string must name it in the authorization request, the token request and the token.
 */
export function indicatorIssue(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute URI";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOOPBACK.test(url.hostname))) {
    return "must be an https URI (http only on localhost or a loopback address)";
  }
  if (value.includes("#")) return "must not have a fragment";
  if (url.username || url.password) return "must not carry user info";
  return null;
}

const INDICATOR =
  "The API's resource indicator (RFC 8707): an absolute `https` URI (`http` only on localhost " +
  "or loopback), without fragment, unique across the service. A token asked for it (`resource`) has it as " +
  "`aud` and the requested permission codes of this resource that its subject holds as `scope`.";

export const Indicator = z.string().max(2000, "at most 2000 characters").superRefine((v, ctx) => {
  const issue = indicatorIssue(v);
  if (issue) ctx.addIssue({ code: "custom", message: issue });
});

export const Resource = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  code: z.string(),
  description: z.string().nullable(),
  indicator: z.string().nullable().openapi({ description: `${INDICATOR} Null: not an API of its own.` }),
  is_default: z.boolean().openapi({ description: "A default system resource: read-only" }),
  permissions: z.array(Permission).openapi({ description: "Sorted by code" }),
  ...Timestamps,
}).openapi("Resource");
export type Resource = z.infer<typeof Resource>;

const PermissionInput = z.strictObject({
  name: Name,
  code: Code,
  description: text(200).nullable().optional(),
}).openapi("PermissionInput");

const PermissionInputs = z.array(PermissionInput).max(100, "at most 100 permissions per request")
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((p, i) => {
      const key = p.code.toLowerCase();
      if (seen.has(key)) {
        ctx.addIssue({ code: "custom", path: [i, "code"], message: "repeats another permission's code" });
      }
      seen.add(key);
    });
  });

export const CreateResourceRequest = z.strictObject({
  name: Name,
  code: Code.openapi({ description: "Unique in the project (case-insensitively)" }),
  description: Description,
  indicator: Indicator.nullable().optional().openapi({ description: `${INDICATOR} Default none.` }),
  permissions: PermissionInputs.optional().openapi({
    description: "Created with the resource; codes unique",
  }),
}).openapi("CreateResourceRequest");
export type CreateResourceRequest = z.infer<typeof CreateResourceRequest>;

export const UpdateResourceRequest = z.strictObject({
  name: Name,
  code: z.string().min(1, "must not be empty").max(50, "at most 50 characters")
    .refine((v) => v.trim() !== "", "must not be blank").openapi({
      description: "At most 50 characters; unique in the project (case-insensitively)",
    }),
  description: Description,
  indicator: Indicator.nullable().optional().openapi({
    description: `${INDICATOR} Omitted keeps it; null clears it (tokens issued for it stop being accepted).`,
  }),
  permissions: PermissionInputs.optional().openapi({
    description:
      "Omitted: unchanged. Given: matched by code — a kept code keeps its id and its grants, a new " +
      "code is created, a code left out is deleted together with its grants to roles and clients.",
  }),
}).openapi("UpdateResourceRequest");
export type UpdateResourceRequest = z.infer<typeof UpdateResourceRequest>;

export const ResourceIdParam = ProjectIdParam.extend({
  resource_id: Id.openapi({ param: { name: "resource_id", in: "path" } }),
});

export const ResourceListQuery = listQuery(["name", "code", "created_at", "updated_at"] as const).extend({
  is_default: booleanFilter("Only default system resources (true) or only the project's own (false)"),
});
export type ResourceListQuery = z.infer<typeof ResourceListQuery>;
