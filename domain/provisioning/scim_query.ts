/**
 * A list request's parameters (RFC 7644 §3.4.2): the filter resolved against the schema into the condition tree
 * db/provisioning/scim_sql.ts turns into SQL (only attributes of the whitelist below; every value a parameter),
 * paging, sorting, and the `attributes` / `excludedAttributes` projection of each resource.
 */
import type { ColumnType, Cond } from "../../db/provisioning/scim_sql.ts";
import { ScimError } from "./scim_errors.ts";
import { type CompValue, type Filter, parseFilter } from "./scim_filter.ts";
import {
  type Attribute,
  attribute,
  DEFAULT_COUNT,
  MAX_RESULTS,
  type Resolved,
  type ResourceKind,
} from "./scim_schema.ts";

/** A filterable attribute: its column (scim_users.ts, scim_groups.ts) and type; `member` a group member's. */
type Target = { column: string; type: ColumnType; caseExact: boolean; member?: boolean };

/** The whitelist: `attribute` or `attribute.sub` (lower-cased) → column. */
const TARGETS: Record<ResourceKind, Record<string, Target>> = {
  User: {
    "id": { column: "id", type: "string", caseExact: true },
    "externalid": { column: "externalId", type: "string", caseExact: true },
    "username": { column: "userName", type: "string", caseExact: false },
    "displayname": { column: "displayName", type: "string", caseExact: false },
    "name.givenname": { column: "givenName", type: "string", caseExact: false },
    "name.familyname": { column: "familyName", type: "string", caseExact: false },
    "name.formatted": { column: "formatted", type: "string", caseExact: false },
    "emails": { column: "emailValue", type: "string", caseExact: false },
    "emails.value": { column: "emailValue", type: "string", caseExact: false },
    "emails.type": { column: "emailType", type: "string", caseExact: false },
    "emails.primary": { column: "emailPrimary", type: "boolean", caseExact: false },
    "active": { column: "active", type: "boolean", caseExact: false },
    "meta.created": { column: "created", type: "dateTime", caseExact: false },
    "meta.lastmodified": { column: "lastModified", type: "dateTime", caseExact: false },
  },
  Group: {
    "id": { column: "id", type: "string", caseExact: true },
    "externalid": { column: "externalId", type: "string", caseExact: true },
    "displayname": { column: "displayName", type: "string", caseExact: false },
    "meta.created": { column: "created", type: "dateTime", caseExact: false },
    "meta.lastmodified": { column: "lastModified", type: "dateTime", caseExact: false },
    "members": { column: "value", type: "string", caseExact: true, member: true },
    "members.value": { column: "value", type: "string", caseExact: true, member: true },
    "members.display": { column: "display", type: "string", caseExact: false, member: true },
    "members.type": { column: "type", type: "string", caseExact: false, member: true },
  },
};

const keyOf = (r: Resolved) =>
  r.sub ? `${r.attribute.name}.${r.sub.name}`.toLowerCase() : r.attribute.name.toLowerCase();

function targetOf(kind: ResourceKind, path: string, parent?: Attribute): Target {
  const resolved = attribute(kind, path, parent);
  if (!resolved) {
    throw new ScimError(400, "invalidPath", `${JSON.stringify(path)} is not an attribute of ${kind}`);
  }
  const target = TARGETS[kind][keyOf(resolved)];
  if (!target) throw new ScimError(400, "invalidFilter", `${JSON.stringify(path)} cannot be filtered on`);
  return target;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})?$/;

/**
 * An RFC 3339 date and time as milliseconds, NaN unless strictly one: years 0001 to 9999 (what the database
 * stores), and a date that exists (`2026-02-30` is no date, never 2 March).
 */
function strictDate(text: string): number {
  const m = DATE_TIME.exec(text);
  if (!m) return NaN;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (year < 1 || month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return NaN;
  const calendar = new Date(Date.UTC(2000, month - 1, day));
  calendar.setUTCFullYear(year);
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return NaN;
  const time = Date.parse(m[8] ? text : `${text}Z`); // no offset: UTC, as the database's times are
  const iso = Number.isNaN(time) ? "" : new Date(time).toISOString();
  // An offset may move the instant out of the years 0001 to 9999 (`0001-01-01T00:00:00+01:00`).
  return /^\d{4}-/.test(iso) && iso >= "0001-01-01" ? time : NaN;
}

function comparison(path: string, target: Target, op: string, value: CompValue): Cond {
  const bad = (why: string) => new ScimError(400, "invalidFilter", `${path} ${op}: ${why}`);
  if (value === null) {
    if (op !== "eq" && op !== "ne") throw bad("null is compared with eq or ne only");
    return { kind: "cmp", column: target.column, type: target.type, op, value: null, caseExact: true };
  }
  let v: string | boolean;
  if (target.type === "boolean") {
    if (op !== "eq" && op !== "ne") throw bad("a boolean is compared with eq or ne only");
    if (typeof value === "boolean") v = value;
    else if (typeof value === "string" && /^(true|false)$/i.test(value)) v = value.toLowerCase() === "true";
    else throw bad("the value must be true or false");
  } else if (target.type === "dateTime") {
    if (["co", "sw", "ew"].includes(op)) throw bad("a date is compared with eq, ne, gt, ge, lt or le");
    const time = typeof value === "string" ? strictDate(value) : NaN;
    if (Number.isNaN(time)) {
      throw bad(
        'the value must be a date and time of the years 0001 to 9999, such as "2026-01-02T03:04:05Z"',
      );
    }
    v = new Date(time).toISOString();
  } else {
    if (typeof value === "boolean") throw bad("the value must be a string");
    v = String(value);
  }
  return {
    kind: "cmp",
    column: target.column,
    type: target.type,
    op: op as never,
    value: v,
    caseExact: target.caseExact,
  };
}

/** A parsed filter as a condition over the resource's columns; 400 for attributes not in the whitelist. */
export function conditionOf(kind: ResourceKind, filter: Filter, parent?: Attribute): Cond {
  switch (filter.op) {
    case "and":
    case "or":
      return {
        kind: filter.op,
        left: conditionOf(kind, filter.left, parent),
        right: conditionOf(kind, filter.right, parent),
      };
    case "not":
      return { kind: "not", cond: conditionOf(kind, filter.filter, parent) };
    case "[]": {
      if (parent) throw new ScimError(400, "invalidFilter", "a value filter cannot hold another");
      const resolved = attribute(kind, filter.path);
      if (!resolved) {
        throw new ScimError(
          400,
          "invalidPath",
          `${JSON.stringify(filter.path)} is not an attribute of ${kind}`,
        );
      }
      if (resolved.sub || !resolved.attribute.multiValued) {
        throw new ScimError(400, "invalidFilter", `${filter.path} is not a multi-valued attribute`);
      }
      const inner = conditionOf(kind, filter.filter, resolved.attribute);
      return kind === "Group" ? { kind: "member", cond: inner } : inner;
    }
    default: {
      const target = targetOf(kind, filter.path, parent);
      const cond: Cond = filter.op === "pr"
        ? { kind: "pr", column: target.column }
        : comparison(filter.path, target, filter.op, filter.value);
      // Inside `members[...]` the condition is already a member's; alone, it asks whether some member matches.
      return target.member && !parent ? { kind: "member", cond } : cond;
    }
  }
}

export type ListQuery = {
  cond: Cond;
  sort: { column: string; descending: boolean } | null;
  offset: number;
  count: number;
  startIndex: number;
  attributes: string[] | undefined;
  excludedAttributes: string[] | undefined;
};

/** The query parameters (or a POST /.search body's fields) of a list as given: strings, or numbers in a body. */
export type ListParams = {
  filter?: string;
  startIndex?: string | number;
  count?: string | number;
  sortBy?: string;
  sortOrder?: string;
  attributes?: string;
  excludedAttributes?: string;
};

function integer(name: string, raw: string | number | undefined): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = typeof raw === "number" ? raw : /^-?\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isInteger(n)) throw new ScimError(400, "invalidValue", `${name} must be an integer`);
  return n;
}

/** A list's parameters: `startIndex` below 1 is 1, `count` below 0 is 0 and above MAX_RESULTS is MAX_RESULTS. */
export function listQuery(kind: ResourceKind, p: ListParams): ListQuery {
  const cond: Cond = p.filter !== undefined && p.filter.trim() !== ""
    ? conditionOf(kind, parseFilter(p.filter))
    : { kind: "const", value: true };
  const startIndex = Math.max(1, integer("startIndex", p.startIndex) ?? 1);
  const count = Math.min(MAX_RESULTS, Math.max(0, integer("count", p.count) ?? DEFAULT_COUNT));
  let sort: ListQuery["sort"] = null;
  if (p.sortBy !== undefined && p.sortBy !== "") {
    const target = targetOf(kind, p.sortBy);
    if (target.member) throw new ScimError(400, "invalidValue", `cannot sort by ${p.sortBy}`);
    const order = (p.sortOrder ?? "ascending").toLowerCase();
    if (order !== "ascending" && order !== "descending") {
      throw new ScimError(400, "invalidValue", "sortOrder is ascending or descending");
    }
    sort = { column: target.column, descending: order === "descending" };
  }
  return {
    cond,
    sort,
    // The database's offset is a 32-bit integer: past it, no project has rows (an empty page, RFC 7644 §3.4.2.4).
    offset: Math.min(startIndex - 1, 2 ** 31 - 1),
    count,
    startIndex,
    attributes: names(p.attributes),
    excludedAttributes: names(p.excludedAttributes),
  };
}

function names(list: string | undefined): string[] | undefined {
  if (list === undefined || list.trim() === "") return undefined;
  return list.split(",").map((s) => s.trim()).filter(Boolean);
}

type Json = Record<string, unknown>;

/**
 * The resource as `attributes` or `excludedAttributes` asks (RFC 7644 §3.9): attributes returned `always`
 * stay, `never` ones never appear, `request` ones only when named. Unknown names are ignored.
 */
export function project(
  kind: ResourceKind,
  resource: Json,
  q: Pick<ListQuery, "attributes" | "excludedAttributes">,
): Json {
  const out: Json = {};
  const wanted = q.attributes?.map((n) => attribute(kind, n)).filter((r): r is Resolved => r !== undefined);
  const excluded = q.excludedAttributes?.map((n) => attribute(kind, n)).filter((r): r is Resolved =>
    r !== undefined
  );
  for (const [key, value] of Object.entries(resource)) {
    if (key === "schemas") {
      out[key] = value;
      continue;
    }
    const def = attribute(kind, key)?.attribute;
    if (!def || def.returned === "never") continue;
    if (def.returned === "always") {
      out[key] = value;
      continue;
    }
    if (wanted) {
      const named = wanted.filter((r) => r.attribute === def);
      if (named.length === 0) continue;
      if (named.some((r) => !r.sub) || value === null || typeof value !== "object") {
        out[key] = value;
        continue;
      }
      const subs = new Set(named.map((r) => r.sub!.name));
      const pick = (v: Json) => Object.fromEntries(Object.entries(v).filter(([k]) => subs.has(k)));
      out[key] = Array.isArray(value) ? value.map((v) => pick(v as Json)) : pick(value as Json);
      continue;
    }
    if (def.returned === "request") continue;
    const dropped = excluded?.filter((r) => r.attribute === def) ?? [];
    if (dropped.some((r) => !r.sub)) continue;
    if (dropped.length > 0 && value !== null && typeof value === "object") {
      const subs = new Set(dropped.map((r) => r.sub!.name));
      const drop = (v: Json) => Object.fromEntries(Object.entries(v).filter(([k]) => !subs.has(k)));
      out[key] = Array.isArray(value) ? value.map((v) => drop(v as Json)) : drop(value as Json);
      continue;
    }
    out[key] = value;
  }
  return out;
}

/** Whether the request names `name` in `attributes` (a `request` attribute, worth reading only then). */
export function asks(kind: ResourceKind, q: Pick<ListQuery, "attributes">, name: string): boolean {
  return q.attributes?.some((n) => attribute(kind, n)?.attribute.name === name) ?? false;
}
