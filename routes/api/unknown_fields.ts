/**
 * Unknown fields of a JSON body of the admin API: each is refused by its path, with the field that was probably
 * meant ("unknown field; did you mean `redirect_uris`?"); and the check, when a route is declared, that its body's
 * schema refuses them at every level (`z.strictObject`), so that no body can forget to.
 */
import type { z } from "@hono/zod-openapi";
import { Properties } from "../../openapi/fields.ts";

const UNKNOWN = "unknown field";

/** Unknown keys beyond this many in one object are counted, not listed (a body may hold thousands). */
export const MAX_LISTED_UNKNOWN = 20;

/** A name as a JavaScript client may write it: `redirectUris`, `Redirect-URIs` → `redirect_uris`. */
const snake = (name: string) =>
  name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/[-\s]+/g, "_").toLowerCase();

/** Drops a plural's `s` (`permissions` → `permission`), to compare a stem with another field's. */
const stem = (name: string) => name.endsWith("s") ? name.slice(0, -1) : name;

/**
 * The optimal string alignment distance (Damerau–Levenshtein with adjacent transpositions, each edit once),
 * or `limit + 1` as soon as it must exceed `limit`.
 */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, before[j - 2] + 1);
      }
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > limit) return limit + 1;
    [before, previous] = [previous, row];
  }
  return previous[b.length];
}

/**
 * The known field that `unknown` was probably meant to be, or null when none is close. In order: the same name
 * in another case or spelling (`redirectUris`); a field at most two edits away (one for names of up to five
 * characters, none for one or two: `redirect_uri` → `redirect_uris`, `nmae` → `name`); a field whose name
 * begins with the stem of the unknown one, or the other way round, at a `_` (`permissions` → `permission_ids`,
 * `redirect` → `redirect_uris`). Ties go to the field declared first.
 */
export function suggestField(unknown: string, known: readonly string[]): string | null {
  if (unknown.length > 100 || known.length === 0) return null;
  const name = snake(unknown);
  const same = known.find((k) => k === name);
  if (same !== undefined) return same;
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const limit = Math.min(2, Math.floor(Math.max(name.length, k.length) / 3));
    const d = editDistance(name, k, limit);
    if (d <= limit && d < bestDistance) [best, bestDistance] = [k, d];
  }
  if (best !== null) return best;
  const s = stem(name);
  if (s.length < 4) return null;
  return known.find((k) => k.startsWith(`${s}_`)) ??
    known.find((k) => stem(k).length >= 4 && name.startsWith(`${stem(k)}_`)) ?? null;
}

/** What `details[].issue` says of an unknown field. */
export function unknownFieldIssue(unknown: string, known: readonly string[]): string {
  const meant = suggestField(unknown, known);
  return meant === null ? UNKNOWN : `${UNKNOWN}; did you mean \`${meant}\`?`;
}

/**
 * The known fields beside each `unrecognized_keys` issue of a body's parse, by its `keys` array: zod finalises an
 * issue by copying its properties, so that array is the one `zodDetails` (routes/errors.ts) then reads.
 */
const knownBeside = new WeakMap<readonly string[], readonly string[]>();

/** The fields of the object where these unknown keys were found, when a body's parse noted them. */
export const knownFieldsBeside = (keys: readonly string[]): readonly string[] | undefined =>
  knownBeside.get(keys);

/**
 * zod's error map for a body's parse: an unknown key's issue says so (with the field meant, for one key) and notes
 * the object's fields for `zodDetails`, which gives each key its own suggestion. Other issues keep their messages.
 */
export const unknownFieldsError: z.core.$ZodErrorMap = (issue) => {
  if (issue.code !== "unrecognized_keys") return undefined;
  const shape = (issue.inst?._zod.def as { shape?: Record<string, unknown> } | undefined)?.shape;
  const known = Object.keys(shape ?? {});
  knownBeside.set(issue.keys, known);
  return issue.keys.length === 1 ? unknownFieldIssue(issue.keys[0], known) : `${UNKNOWN}s`;
};

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  items?: z.ZodType[];
  rest?: z.ZodType | null;
  valueType?: z.ZodType;
  getter?: () => z.ZodType;
};

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/**
 * Where `schema` takes fields it does not name, as paths into the body (`""` for the body itself, `*` for any
 * array item): each object that is not strict, and each record. None for a schema that refuses unknown fields at
 * every level.
 */
export function openPlaces(schema: z.ZodType): string[] {
  const open: string[] = [];
  const seen = new Set<z.ZodType>();
  const at = (path: string, key: string) => path === "" ? key : `${path}.${key}`;
  const visit = (s: z.ZodType | null | undefined, path: string) => {
    // A record's `properties` are open by design: any identifier is a key (openapi/fields.ts checks them).
    if (!s || seen.has(s) || s === Properties) return;
    seen.add(s);
    const def = defOf(s);
    switch (def.type) {
      case "object":
        if (def.catchall === undefined || defOf(def.catchall).type !== "never") open.push(path);
        for (const [key, value] of Object.entries(def.shape ?? {})) visit(value, at(path, key));
        return;
      case "record":
        open.push(path);
        return visit(def.valueType, at(path, "*"));
      case "array":
        return visit(def.element, at(path, "*"));
      case "tuple":
        for (const item of [...def.items ?? [], def.rest]) visit(item, at(path, "*"));
        return;
      case "union":
        for (const option of def.options ?? []) visit(option, path);
        return;
      case "intersection":
        visit(def.left, path);
        return visit(def.right, path);
      case "pipe":
        visit(def.in, path);
        return visit(def.out, path);
      case "lazy":
        return visit(def.getter?.(), path);
      default:
        // optional, nullable, default, prefault, readonly, nonoptional, catch…: the schema they wrap.
        return visit(def.innerType, path);
    }
  };
  visit(schema, "");
  return open;
}
