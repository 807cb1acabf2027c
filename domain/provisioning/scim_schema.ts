/**
 * The SCIM schemas this service provider speaks (RFC 7643 §4, §7, §8.7): the attributes of its User and Group,
 * each with its characteristics, and the discovery documents (ServiceProviderConfig, ResourceTypes, Schemas).
 * Attribute names are case-insensitive (RFC 7643 §2.1): `attribute` resolves any spelling, with or without its
 * schema's URN, to the one definition.
 */
import { ScimError } from "./scim_errors.ts";

export const USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User";
export const GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group";
export const LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
export const PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const CONFIG_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";
const RESOURCE_TYPE_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
const SCHEMA_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema";

/** The most resources a list answers at once (`count` above it is capped). */
export const MAX_RESULTS = 200;
/** A list's page size when the request names none. */
export const DEFAULT_COUNT = 100;

export type AttributeType = "string" | "boolean" | "dateTime" | "reference" | "complex";

export type Attribute = {
  name: string;
  type: AttributeType;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: "readOnly" | "readWrite" | "immutable" | "writeOnly";
  returned: "always" | "never" | "default" | "request";
  uniqueness: "none" | "server" | "global";
  subAttributes?: Attribute[];
  canonicalValues?: string[];
  referenceTypes?: string[];
};

type Opts = Partial<Omit<Attribute, "name" | "type" | "description">>;

function attr(name: string, type: AttributeType, description: string, opts: Opts = {}): Attribute {
  return {
    name,
    type,
    multiValued: false,
    description,
    required: false,
    caseExact: false,
    mutability: "readWrite",
    returned: "default",
    uniqueness: "none",
    ...opts,
  };
}

const READ_ONLY = { mutability: "readOnly" } as const;

/** The common attributes of every resource (RFC 7643 §3.1). */
const common = (resource: string): Attribute[] => [
  attr("id", "string", `The ${resource}'s id in this service, assigned by it`, {
    ...READ_ONLY,
    caseExact: true,
    returned: "always",
    uniqueness: "server",
  }),
  attr("externalId", "string", `The ${resource}'s id in the provisioning client (at most 100 characters)`, {
    caseExact: true,
  }),
  attr("meta", "complex", "The resource's metadata", {
    ...READ_ONLY,
    subAttributes: [
      attr("resourceType", "string", "User or Group", { ...READ_ONLY, caseExact: true }),
      attr("created", "dateTime", "When the resource was created", READ_ONLY),
      attr("lastModified", "dateTime", "When the resource last changed", READ_ONLY),
      attr("location", "reference", "The resource's URI", {
        ...READ_ONLY,
        caseExact: true,
        referenceTypes: ["uri"],
      }),
      attr("version", "string", "The resource's weak ETag", { ...READ_ONLY, caseExact: true }),
    ],
  }),
];

export const USER_ATTRIBUTES: Attribute[] = [
  ...common("user"),
  attr("userName", "string", "The user's email address, unique in the project (stored lower-cased)", {
    required: true,
    uniqueness: "server",
  }),
  attr("name", "complex", "The user's name", {
    subAttributes: [
      attr(
        "formatted",
        "string",
        "The full name: given and family name joined by a space (computed, not stored)",
      ),
      attr("givenName", "string", "The given (first) name, at most 100 characters"),
      attr("familyName", "string", "The family (last) name, at most 100 characters"),
    ],
  }),
  attr("displayName", "string", "The name shown for the user, 1 to 50 characters"),
  attr("emails", "complex", "The user's one address, the same as userName; type work, primary", {
    multiValued: true,
    subAttributes: [
      attr("value", "string", "The address"),
      attr("type", "string", "Always work", { canonicalValues: ["work"] }),
      attr("primary", "boolean", "Always true"),
      attr("display", "string", "The address", READ_ONLY),
    ],
  }),
  attr("active", "boolean", "false deactivates the user: their sessions and tokens end at once"),
  attr("password", "string", "A new password (at least 8 characters); never returned", {
    mutability: "writeOnly",
    returned: "never",
  }),
  attr("groups", "complex", "The organizations the user is a member of (change them through /Groups)", {
    ...READ_ONLY,
    multiValued: true,
    returned: "request",
    subAttributes: [
      attr("value", "string", "The group's id", { ...READ_ONLY, caseExact: true }),
      attr("display", "string", "The group's displayName", READ_ONLY),
      attr("$ref", "reference", "The group's URI", {
        ...READ_ONLY,
        caseExact: true,
        referenceTypes: ["Group"],
      }),
    ],
  }),
];

export const GROUP_ATTRIBUTES: Attribute[] = [
  ...common("group"),
  attr("displayName", "string", "The organization's name, unique in the project (1 to 50 characters)", {
    required: true,
    uniqueness: "server",
  }),
  attr("members", "complex", "The organization's members (users)", {
    multiValued: true,
    subAttributes: [
      attr("value", "string", "The member's user id", { mutability: "immutable", caseExact: true }),
      attr("display", "string", "The member's displayName", READ_ONLY),
      attr("type", "string", "Always User", { ...READ_ONLY, canonicalValues: ["User"] }),
      attr("$ref", "reference", "The member's URI", {
        ...READ_ONLY,
        caseExact: true,
        referenceTypes: ["User"],
      }),
    ],
  }),
];

export type ResourceKind = "User" | "Group";

export const ATTRIBUTES: Record<ResourceKind, Attribute[]> = {
  User: USER_ATTRIBUTES,
  Group: GROUP_ATTRIBUTES,
};
const URNS: Record<ResourceKind, string> = { User: USER_SCHEMA, Group: GROUP_SCHEMA };

/** A resolved attribute path: the attribute, and the sub-attribute when the path names one. */
export type Resolved = { attribute: Attribute; sub?: Attribute };

/**
 * The definition a path names (`userName`, `NAME.givenname`, `urn:…:User:emails.value`), or undefined when the
 * schema has none. `parent` resolves the names inside a value filter (`emails[type eq "work"]`).
 */
export function attribute(kind: ResourceKind, path: string, parent?: Attribute): Resolved | undefined {
  let rest = path;
  const urn = URNS[kind] + ":";
  if (!parent && rest.toLowerCase().startsWith(urn.toLowerCase())) rest = rest.slice(urn.length);
  if (rest.includes(":")) return undefined; // another schema's attribute (an extension we do not serve)
  const [name, sub, ...more] = rest.split(".");
  if (more.length > 0) return undefined;
  const find = (list: Attribute[] | undefined, n: string) =>
    list?.find((a) => a.name.toLowerCase() === n.toLowerCase());
  if (parent) {
    if (sub !== undefined) return undefined;
    const found = find(parent.subAttributes, name);
    return found ? { attribute: parent, sub: found } : undefined;
  }
  const top = find(ATTRIBUTES[kind], name);
  if (!top) return undefined;
  if (sub === undefined) return { attribute: top };
  const child = find(top.subAttributes, sub);
  return child ? { attribute: top, sub: child } : undefined;
}

/** `attribute`, or 400 with `scimType` naming the path that names nothing here. */
export function requireAttribute(
  kind: ResourceKind,
  path: string,
  scimType: "invalidFilter" | "invalidPath" | "noTarget",
  parent?: Attribute,
): Resolved {
  const found = attribute(kind, path, parent);
  if (!found) {
    throw new ScimError(400, scimType, `${JSON.stringify(path)} is not an attribute of ${kind}`);
  }
  return found;
}

/** The ServiceProviderConfig (RFC 7643 §5). */
export function serviceProviderConfig(base: string) {
  return {
    schemas: [CONFIG_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: true },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [{
      type: "oauthbearertoken",
      name: "OAuth Bearer Token",
      description: "An access token of a client of this project (client_credentials) holding scim:read " +
        "(reads) and scim:write (changes)",
      specUri: "https://www.rfc-editor.org/info/rfc6750",
      primary: true,
    }],
    meta: {
      resourceType: "ServiceProviderConfig",
      location: `${base}/ServiceProviderConfig`,
    },
  };
}

/** The resource types (RFC 7643 §6): users, and groups (the project's organizations). */
export function resourceTypes(base: string) {
  const type = (id: ResourceKind, endpoint: string, description: string) => ({
    schemas: [RESOURCE_TYPE_SCHEMA],
    id,
    name: id,
    endpoint,
    description,
    schema: URNS[id],
    schemaExtensions: [],
    meta: { resourceType: "ResourceType", location: `${base}/ResourceTypes/${id}` },
  });
  return [
    type("User", "/Users", "A user of the project"),
    type("Group", "/Groups", "An organization of the project; its members are users"),
  ];
}

/** The schemas (RFC 7643 §7), each with its attributes' characteristics. */
export function schemas(base: string) {
  const schema = (kind: ResourceKind, description: string) => ({
    schemas: [SCHEMA_SCHEMA],
    id: URNS[kind],
    name: kind,
    description,
    attributes: ATTRIBUTES[kind].filter((a) => !["id", "meta"].includes(a.name)),
    meta: { resourceType: "Schema", location: `${base}/Schemas/${URNS[kind]}` },
  });
  return [schema("User", "User Account"), schema("Group", "Group (an organization of the project)")];
}
