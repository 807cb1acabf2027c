/**
 * Reading SCIM bodies case-insensitively (RFC 7643 §2.1) and applying PATCH operations (RFC 7644 §3.5.2) to a
 * resource's representation, as Entra ID and Okta send them: `op` in any case (`Replace`), with or without
 * `path`, paths with value filters (`emails[type eq "work"].value`, `members[value eq "…"]`), and a value
 * object without path whose keys may be paths themselves (`{"name.givenName": "Ann"}`).
 */
import { invalidSyntax, ScimError } from "./scim_errors.ts";
import { type Filter, parsePatchPath } from "./scim_filter.ts";
import { type Attribute, attribute, PATCH_SCHEMA, type ResourceKind } from "./scim_schema.ts";

export type Json = Record<string, unknown>;

/** At most this many operations in one PATCH. */
export const MAX_OPERATIONS = 1000;
/** At most this many members added or removed in one request (a PATCH's `members` values, all told). */
export const MAX_MEMBER_CHANGES = 10_000;
/** At most this many items in the value of any other multi-valued attribute (`emails`: the user keeps one). */
export const MAX_LIST_VALUES = 10;
/**
 * At most this many list elements visited by one PATCH: each operation on a multi-valued attribute visits the
 * list once (its elements and the values given), so 1,000 operations on a group of 1,000 members fit.
 */
export const MAX_PATCH_WORK = 1_000_000;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/** A complex value with its sub-attributes' names as the schema spells them; unknown ones are dropped. */
function canonicalComplex(def: Attribute, value: unknown): unknown {
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    const sub = def.subAttributes?.find((s) => s.name.toLowerCase() === k.toLowerCase());
    if (sub) out[sub.name] = v;
  }
  return out;
}

function canonicalValue(def: Attribute, value: unknown): unknown {
  if (def.type !== "complex") return value;
  if (def.multiValued) {
    const list = Array.isArray(value) ? value : value === null || value === undefined ? value : [value];
    return Array.isArray(list) ? list.map((v) => canonicalComplex(def, v)) : list;
  }
  return canonicalComplex(def, value);
}

/**
 * A POST or PUT body with the schema's spelling of every attribute it knows: names in any case, with or without
 * the schema's URN. Attributes of other schemas (an extension, `roles`) are ignored, as a body may carry what a
 * client maps for other providers.
 */
export function canonicalBody(kind: ResourceKind, body: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(body)) {
    if (key.toLowerCase() === "schemas") {
      out.schemas = value;
      continue;
    }
    const resolved = attribute(kind, key);
    if (!resolved || resolved.sub) continue;
    out[resolved.attribute.name] = canonicalValue(resolved.attribute, value);
  }
  return out;
}

/** Whether `schemas` lists `urn` (case-insensitively): 400 `invalidSyntax` otherwise. */
export function requireSchema(body: Json, urn: string): void {
  const schemas = body.schemas;
  if (
    !Array.isArray(schemas) ||
    !schemas.some((s) => typeof s === "string" && s.toLowerCase() === urn.toLowerCase())
  ) {
    throw invalidSyntax(`schemas must list ${urn}`);
  }
}

/** The body as a JSON object: 400 `invalidSyntax` otherwise. */
export function requireObject(body: unknown): Json {
  if (!isObject(body)) throw invalidSyntax("the body must be a JSON object");
  return body;
}

/** Whether a multi-valued attribute's element matches a value filter (`type eq "work"`). */
function matches(def: Attribute, element: unknown, filter: Filter): boolean {
  if (!isObject(element)) return false;
  switch (filter.op) {
    case "and":
      return matches(def, element, filter.left) && matches(def, element, filter.right);
    case "or":
      return matches(def, element, filter.left) || matches(def, element, filter.right);
    case "not":
      return !matches(def, element, filter.filter);
    case "[]":
      throw new ScimError(400, "invalidPath", "a value filter cannot hold another");
  }
  const sub = def.subAttributes?.find((s) => s.name.toLowerCase() === filter.path.toLowerCase());
  if (!sub) throw new ScimError(400, "invalidPath", `${filter.path} is not a sub-attribute of ${def.name}`);
  const actual = element[sub.name];
  if (filter.op === "pr") return actual !== undefined && actual !== null && actual !== "";
  const fold = (v: unknown) => typeof v === "string" && !sub.caseExact ? v.toLowerCase() : v;
  const a = fold(actual);
  const b = fold(filter.value);
  switch (filter.op) {
    case "eq":
      return a === b;
    case "ne":
      return a !== b;
    case "co":
      return typeof a === "string" && typeof b === "string" && a.includes(b);
    case "sw":
      return typeof a === "string" && typeof b === "string" && a.startsWith(b);
    case "ew":
      return typeof a === "string" && typeof b === "string" && a.endsWith(b);
    default: {
      if (typeof a !== typeof b || (typeof a !== "string" && typeof a !== "number")) return false;
      const x = a as string | number;
      const y = b as string | number;
      return filter.op === "gt" ? x > y : filter.op === "ge" ? x >= y : filter.op === "lt" ? x < y : x <= y;
    }
  }
}

/** The sub-attribute equalities of a filter (`type eq "work"`), for the element an `add` creates. */
function equalities(def: Attribute, filter: Filter): Json {
  if (filter.op === "and") return { ...equalities(def, filter.left), ...equalities(def, filter.right) };
  if (filter.op !== "eq") return {};
  const sub = def.subAttributes?.find((s) => s.name.toLowerCase() === filter.path.toLowerCase());
  return sub ? { [sub.name]: filter.value } : {};
}

function refuseReadOnly(def: Attribute, sub: Attribute | undefined, path: string, op: string): void {
  const target = sub ?? def;
  if (target.mutability === "readOnly" || (op !== "add" && target.mutability === "immutable")) {
    throw new ScimError(400, "mutability", `${path} is read-only`);
  }
}

function sameAsNow(doc: Json, def: Attribute, sub: Attribute | undefined, value: unknown): boolean {
  const now = sub ? (isObject(doc[def.name]) ? (doc[def.name] as Json)[sub.name] : undefined) : doc[def.name];
  return now !== undefined && JSON.stringify(now) === JSON.stringify(value);
}

/** The `value` that identifies a multi-valued element (members, emails), if it has one. */
const keyOf = (e: unknown): unknown => isObject(e) ? e.value : undefined;

/** The elements visited so far by one PATCH, against MAX_PATCH_WORK (400 `tooMany` past it). */
type Budget = { used: number };

function spend(budget: Budget, n: number): void {
  budget.used += n;
  if (budget.used > MAX_PATCH_WORK) {
    throw new ScimError(
      400,
      "tooMany",
      `this PATCH visits more than ${MAX_PATCH_WORK} list elements: send fewer operations`,
    );
  }
}

/** 400 `mutability` when `given` changes an immutable or read-only sub-attribute of an existing element. */
function refuseImmutableChange(def: Attribute, element: unknown, given: unknown, path: string): void {
  if (!isObject(element) || !isObject(given)) return;
  for (const sub of def.subAttributes ?? []) {
    if (sub.mutability !== "immutable") continue;
    if (sub.name in given && JSON.stringify(given[sub.name]) !== JSON.stringify(element[sub.name])) {
      throw new ScimError(
        400,
        "mutability",
        `${def.name}.${sub.name} of an existing value is immutable (${path})`,
      );
    }
  }
}

/** Applies one operation at a resolved path to `doc` (changed in place). */
function applyAt(
  kind: ResourceKind,
  doc: Json,
  op: string,
  rawPath: string,
  value: unknown,
  budget: Budget,
): void {
  const parsed = parsePatchPath(rawPath);
  const resolved = attribute(kind, parsed.path);
  if (!resolved) {
    throw new ScimError(400, "invalidPath", `${JSON.stringify(parsed.path)} is not an attribute of ${kind}`);
  }
  const def = resolved.attribute;
  let sub = resolved.sub;
  if (parsed.filter || parsed.sub) {
    if (sub || !def.multiValued) {
      throw new ScimError(400, "invalidPath", `${parsed.path} is not a multi-valued attribute`);
    }
    if (parsed.sub) {
      sub = def.subAttributes?.find((s) => s.name.toLowerCase() === parsed.sub!.toLowerCase());
      if (!sub) {
        throw new ScimError(400, "invalidPath", `${parsed.sub} is not a sub-attribute of ${def.name}`);
      }
    }
  }
  const target = sub ?? def;
  if (
    target.mutability === "readOnly" && op !== "remove" && !parsed.filter && sameAsNow(doc, def, sub, value)
  ) {
    return; // a read-only attribute sent with the value it has (an `id` echoed back) changes nothing
  }
  refuseReadOnly(def, sub, rawPath, op);
  if (op !== "remove" && value === undefined) throw invalidSyntax(`${op} of ${rawPath} needs a value`);
  const name = def.name;

  if (def.multiValued && parsed.filter) {
    const list = Array.isArray(doc[name]) ? [...(doc[name] as unknown[])] : [];
    spend(budget, list.length);
    const hit = list.map((e) => matches(def, e, parsed.filter!));
    const hits = hit.filter(Boolean).length;
    if (op === "remove") {
      doc[name] = sub
        ? list.map((e, i) => {
          if (!hit[i] || !isObject(e)) return e;
          const { [sub!.name]: _, ...rest } = e;
          return rest;
        })
        : list.filter((_, i) => !hit[i]);
      return;
    }
    if (hits === 0) {
      if (op === "replace") {
        throw new ScimError(400, "noTarget", `no value of ${name} matches ${rawPath}`);
      }
      const created = {
        ...equalities(def, parsed.filter),
        ...(sub ? { [sub.name]: value } : canonicalComplex(def, value) as Json),
      };
      doc[name] = [...list, created];
      return;
    }
    // An existing element's immutable sub-attribute (a member's `value`) is never rewritten, by add or replace.
    if (sub?.mutability === "immutable") {
      throw new ScimError(
        400,
        "mutability",
        `${name}.${sub.name} of an existing value is immutable (${rawPath})`,
      );
    }
    const given = sub ? undefined : canonicalComplex(def, value);
    doc[name] = list.map((e, i) => {
      if (!hit[i] || !isObject(e)) return e;
      if (sub) return { ...e, [sub.name]: value };
      refuseImmutableChange(def, e, given, rawPath);
      return op === "replace" ? given : { ...e, ...(isObject(given) ? given : {}) };
    });
    return;
  }

  if (sub) {
    // `name.givenName`: a sub-attribute of a single complex attribute.
    const current = isObject(doc[name]) ? doc[name] as Json : {};
    if (op === "remove") {
      const { [sub.name]: _, ...rest } = current;
      doc[name] = rest;
    } else {
      doc[name] = { ...current, [sub.name]: value };
    }
    return;
  }

  if (op === "remove") {
    if (def.multiValued && value !== undefined && value !== null) {
      // Entra ID's removal of members listed in `value`: [{"value": "<id>"}].
      const given = canonicalValue(def, value);
      const drop = new Set(
        (Array.isArray(given) ? given : [given]).map(keyOf).filter((k) => k !== undefined),
      );
      const list = Array.isArray(doc[name]) ? doc[name] as unknown[] : [];
      spend(budget, list.length + drop.size);
      doc[name] = list.filter((e) => {
        const k = keyOf(e);
        return k === undefined || !drop.has(k);
      });
    } else {
      delete doc[name];
    }
    return;
  }
  const given = canonicalValue(def, value);
  if (def.multiValued) {
    if (!Array.isArray(given)) throw new ScimError(400, "invalidValue", `${name} takes a list`);
    if (op === "replace") {
      spend(budget, given.length);
      doc[name] = given;
    } else {
      // Two elements are one when their `value` is the same (members, emails): a value already there is skipped.
      const list = Array.isArray(doc[name]) ? [...(doc[name] as unknown[])] : [];
      spend(budget, list.length + given.length);
      const seen = new Set(list.map(keyOf).filter((k) => k !== undefined));
      for (const g of given) {
        const k = keyOf(g);
        if (k !== undefined && seen.has(k)) continue;
        if (k !== undefined) seen.add(k);
        list.push(g);
      }
      doc[name] = list;
    }
    return;
  }
  if (def.type === "complex") {
    // RFC 7644 §3.5.2.1 and §3.5.2.3: the sub-attributes given replace theirs; the others stay.
    if (!isObject(given)) throw new ScimError(400, "invalidValue", `${name} takes an object`);
    doc[name] = { ...(isObject(doc[name]) ? doc[name] as Json : {}), ...given };
    return;
  }
  doc[name] = given;
}

/** One operation of a PatchOp, its path resolved (a path-less `value` object gives one per key). */
export type PatchStep = { op: "add" | "replace" | "remove"; path: string; value: unknown };

/** The most items a value list of this attribute may hold in one PATCH. */
function listCap(kind: ResourceKind, path: string): number {
  const resolved = attribute(kind, parsePatchPath(path).path);
  return resolved?.attribute.name === "members" && !resolved.sub ? MAX_MEMBER_CHANGES : MAX_LIST_VALUES;
}

/**
 * A PatchOp body read and checked whole, before any resource is read or locked: 400 `invalidSyntax` for a
 * malformed body or operation, `invalidPath` for a path that does not parse, `tooMany` past MAX_OPERATIONS, a
 * value list longer than its attribute takes (MAX_MEMBER_CHANGES members, MAX_LIST_VALUES of any other), or
 * more than MAX_MEMBER_CHANGES values in all.
 */
export function parsePatch(kind: ResourceKind, body: unknown): PatchStep[] {
  const patch = requireObject(body);
  requireSchema(patch, PATCH_SCHEMA);
  const key = Object.keys(patch).find((k) => k.toLowerCase() === "operations");
  const operations = key ? patch[key] : undefined;
  if (!Array.isArray(operations) || operations.length === 0) {
    throw invalidSyntax("Operations must be a non-empty list");
  }
  if (operations.length > MAX_OPERATIONS) {
    throw new ScimError(400, "tooMany", `at most ${MAX_OPERATIONS} operations in one PATCH`);
  }
  const steps: PatchStep[] = [];
  let values = 0;
  const push = (op: PatchStep["op"], path: string, value: unknown) => {
    if (Array.isArray(value)) {
      const cap = listCap(kind, path);
      if (value.length > cap) {
        throw new ScimError(400, "tooMany", `at most ${cap} values of ${path} in one operation`);
      }
      values += value.length;
      if (values > MAX_MEMBER_CHANGES) {
        throw new ScimError(400, "tooMany", `at most ${MAX_MEMBER_CHANGES} values in one PATCH`);
      }
    }
    steps.push({ op, path, value });
  };
  operations.forEach((raw, i) => {
    if (!isObject(raw)) throw invalidSyntax(`Operations[${i}] must be an object`);
    const field = (name: string) => raw[Object.keys(raw).find((k) => k.toLowerCase() === name) ?? name];
    const op = field("op");
    const path = field("path");
    const value = field("value");
    if (typeof op !== "string" || !["add", "replace", "remove"].includes(op.toLowerCase())) {
      throw invalidSyntax(`Operations[${i}].op must be add, replace or remove`);
    }
    const code = op.toLowerCase() as PatchStep["op"];
    if (path !== undefined && path !== null && typeof path !== "string") {
      throw invalidSyntax(`Operations[${i}].path must be a string`);
    }
    if (typeof path === "string" && path.trim() !== "") {
      push(code, path, value);
      return;
    }
    if (code === "remove") throw new ScimError(400, "noTarget", `Operations[${i}]: remove needs a path`);
    if (!isObject(value)) {
      throw invalidSyntax(`Operations[${i}]: ${code} without a path needs an object value`);
    }
    for (const [k, v] of Object.entries(value)) {
      if (k.toLowerCase() === "schemas") continue;
      push(code, k, v);
    }
  });
  return steps;
}

/**
 * The representation after a PatchOp body's operations, applied in order to a copy
 * of `current`. 400 as parsePatch answers, and `invalidPath` for a path naming nothing, `mutability` for a
 * read-only attribute or an existing member's `value`, `noTarget` for a `replace` whose filter matched nothing,
 * `tooMany` past MAX_PATCH_WORK. Each operation is linear in the list it changes.
 */
export function applyPatch(kind: ResourceKind, current: Json, body: unknown): Json {
  return applySteps(kind, current, parsePatch(kind, body));
}

/** applyPatch of steps parsePatch read. */
export function applySteps(kind: ResourceKind, current: Json, steps: PatchStep[]): Json {
  const doc: Json = structuredClone(current);
  const budget: Budget = { used: 0 };
  for (const step of steps) applyAt(kind, doc, step.op, step.path, step.value, budget);
  return doc;
}
