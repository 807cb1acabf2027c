/**
 * Every answer the tests receive from a service under test is checked against the OpenAPI document: this module
 * wraps globalThis.fetch so that each JSON (or NDJSON) answer of a documented operation is validated, with ajv,
 * against the response schema of its status, strictly (no field the schema lacks, every required field there),
 * and an error's code must be one the operation lists for that status. A mismatch throws from fetch, so the test
 * that made the call fails with the operation, status, path and the validator's errors. The document is the one
 * the routes build, which tests/contract_test.ts holds equal to openapi/openapi.json.
 */
import { buildOpenApiDocument } from "../routes/document.ts";
import { Ajv2020, ajvFormats, type ValidateFunction } from "./deps.ts";

const addFormats = ajvFormats.default ?? (ajvFormats as unknown as typeof ajvFormats.default);

type Schema = boolean | { [keyword: string]: unknown };
type MediaType = { schema?: Schema };
type ResponseDoc = { description?: string; content?: Record<string, MediaType> };
type Operation = { operationId?: string; responses: Record<string, ResponseDoc> };
type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

/** A response that does not match its operation's documented answer. */
export class SchemaMismatch extends Error {
  override name = "SchemaMismatch";
}

const COMPONENTS = "#/components/schemas/";
const BASE = "components";
/** Where a component is, in its strict form (for a value of its own) or open (a part of an allOf/anyOf/$ref). */
const refTo = (name: string, open: boolean) => `${BASE}#/$defs/${name}${open ? "__open" : ""}`;

const APPLICATORS = ["allOf", "anyOf", "oneOf"] as const;

/**
 * A schema that refuses what it does not name. The document's object schemas leave `additionalProperties`
 * open, so each value's outermost schema gets `unevaluatedProperties: false`; the schemas it is made of at the
 * same place (allOf, anyOf, oneOf and $ref) stay open, because `unevaluatedProperties` sees the properties that
 * any of them evaluated (a CreatedProject is a Project and its `admin_client`). A schema that says what to do
 * with other properties (a record's `additionalProperties`) is left as it is, and so is one without
 * `properties` or those applicators (`{}` is any value, and `{ type: "string" }` has no properties to refuse).
 */
export function strictSchema(schema: Schema, open = false): Schema {
  if (typeof schema === "boolean") return schema;
  const unknown = Object.keys(schema).find((k) => UNHANDLED.has(k));
  if (unknown) throw new Error(`strictSchema does not know how to close a schema with \`${unknown}\``);
  // A lone $ref is the component itself: strict where it stands alone, open where something else adds to it.
  const lone = "$ref" in schema && Object.keys(schema).every((k) => k === "$ref" || ANNOTATIONS.has(k));
  const out: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === "$ref" && typeof value === "string" && value.startsWith(COMPONENTS)) {
      out.$ref = refTo(value.slice(COMPONENTS.length), open || !lone);
    } else if (keyword === "properties" || keyword === "$defs" || keyword === "patternProperties") {
      out[keyword] = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, strictSchema(v)]),
      );
    } else if ((APPLICATORS as readonly string[]).includes(keyword)) {
      out[keyword] = (value as Schema[]).map((v) => strictSchema(v, true));
    } else if (keyword === "prefixItems") {
      out[keyword] = (value as Schema[]).map((v) => strictSchema(v));
    } else if (ELEMENTS.has(keyword) && value !== null && typeof value === "object") {
      out[keyword] = strictSchema(value as Schema);
    } else out[keyword] = value;
  }
  const composed = APPLICATORS.some((k) => k in schema) || "$ref" in schema;
  const closes = ("properties" in schema || composed) && !lone &&
    !("additionalProperties" in schema) && !("unevaluatedProperties" in schema);
  if (!open && closes) out.unevaluatedProperties = false;
  return out;
}

/** Keywords whose subschema is about other values (an element, a property's value): each is closed on its own. */
const ELEMENTS = new Set(["items", "additionalProperties", "contains"]);
/**
 * Keywords the document does not use and that closing would get wrong (inside `not` it would invert the test;
 * `then`, `else` and `dependentSchemas` add properties at the same place): met, they stop the check loudly.
 */
const UNHANDLED = new Set(["not", "if", "then", "else", "dependentSchemas", "unevaluatedItems"]);
const ANNOTATIONS = new Set([
  "description",
  "example",
  "examples",
  "title",
  "deprecated",
  "readOnly",
  "default",
]);

/** The document, its components in strict and open forms, and one compiled validator per response schema. */
class Checker {
  readonly #ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
  readonly #validators = new Map<Schema, ValidateFunction>();
  readonly #routes: { method: string; template: string; pattern: RegExp; operation: Operation }[] = [];

  constructor(doc: Document) {
    addFormats(this.#ajv);
    this.#ajv.addVocabulary(["example"]);
    const defs: Record<string, Schema> = {};
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      defs[name] = strictSchema(schema);
      defs[`${name}__open`] = strictSchema(schema, true);
    }
    this.#ajv.addSchema({ $id: BASE, $defs: defs });
    for (const [template, operations] of Object.entries(doc.paths)) {
      const source = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{[^}]+\\?\}/g, "[^/]+");
      for (const [method, operation] of Object.entries(operations)) {
        this.#routes.push({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${source}$`),
          operation,
        });
      }
    }
    // A literal segment wins over a parameter, as in the router: /users/external/{id} before /users/{id}.
    const params = (t: string) => t.split("{").length;
    this.#routes.sort((a, b) => params(a.template) - params(b.template));
  }

  route(method: string, path: string) {
    return this.#routes.find((r) => r.method === method && r.pattern.test(path));
  }

  validator(schema: Schema): ValidateFunction {
    let v = this.#validators.get(schema);
    if (!v) {
      v = this.#ajv.compile(strictSchema(schema) as object);
      this.#validators.set(schema, v);
    }
    return v;
  }

  /** The validator's errors, each with where in the body and, for a field too many, its name. */
  errorsText(v: ValidateFunction): string {
    return (v.errors ?? []).map((e) => {
      const extra = e.params.unevaluatedProperty ?? e.params.additionalProperty;
      return `body${e.instancePath} ${e.message}${extra === undefined ? "" : ` (${JSON.stringify(extra)})`}`;
    }).join("; ");
  }
}

let checker: Checker | undefined;
const theChecker = () => checker ??= new Checker(buildOpenApiDocument() as Document);

const isJson = (type: string) => /^application\/(?:[\w.+-]+\+)?json\b/i.test(type);
const isNdjson = (type: string) => /^application\/x-ndjson\b/i.test(type);

/**
 * Checks one answer of the service: `method` and `url` of the request, and the response. Resolves to the response
 * the caller gets: the same one, its JSON body read from a clone, or for NDJSON one whose body is checked line by
 * line as it streams (a bad line errors the stream before the caller reads it). An answer of no documented
 * operation passes, and so does one that is neither JSON nor NDJSON where the operation documents no JSON.
 * Throws SchemaMismatch when the answer differs from the document.
 */
export async function checkAnswer(method: string, url: string, res: Response): Promise<Response> {
  const path = new URL(url).pathname;
  const route = theChecker().route(method === "HEAD" ? "GET" : method, path);
  if (!route) return res;
  const where = `${method} ${path} (${route.operation.operationId ?? route.template})`;
  const key = `${route.operation.operationId ?? route.template} ${res.status}`;
  checked.set(key, (checked.get(key) ?? 0) + 1);
  const fail = (why: string, body?: string): never => {
    throw new SchemaMismatch(
      `${where} answered ${res.status}: ${why}${body === undefined ? "" : `\nbody: ${body.slice(0, 2000)}`}`,
    );
  };
  const documented = route.operation.responses[String(res.status)] ??
    route.operation.responses[`${String(res.status)[0]}XX`] ?? route.operation.responses.default ??
    fail("a status the operation does not document");
  const type = (res.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  const content = documented.content ?? {};
  const json = isJson(type) ? "application/json" : isNdjson(type) ? "application/x-ndjson" : undefined;
  if (method === "HEAD" || res.status === 204 || res.status === 304) {
    if (json) fail(`Content-Type ${type} on an answer without a body`);
    return res;
  }
  if (!json) {
    if (content["application/json"] && Object.keys(content).every((t) => isJson(t) || isNdjson(t))) {
      fail(`Content-Type ${type || "(none)"} where the operation documents JSON`);
    }
    return res;
  }
  const media = content[json] ??
    Object.entries(content).find(([t]) => json === "application/json" && isJson(t))?.[1];
  const schema = media?.schema ??
    fail(`${type} where the operation documents ${Object.keys(content).join(", ") || "no body"}`);
  const validate = theChecker().validator(schema);
  const check = (text: string) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      fail(`a body that is not ${json}`, text);
    }
    if (!validate(value)) {
      fail(`the body does not match its schema: ${theChecker().errorsText(validate)}`, text);
    }
    if ((schema as { $ref?: string }).$ref === ERROR_SCHEMA) documentedCode(value, documented, fail);
  };
  if (json === "application/x-ndjson") return checkedLines(res, check);
  check(await res.clone().text());
  return res;
}

/** The response with its NDJSON body checked line by line as it passes, still streaming. */
function checkedLines(res: Response, check: (line: string) => void): Response {
  if (!res.body) return res;
  const decoder = new TextDecoder();
  let rest = "";
  const lines = (text: string) => {
    for (const line of text.split("\n")) if (line.trim() !== "") check(line);
  };
  const body = res.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        rest += decoder.decode(chunk, { stream: true });
        const end = rest.lastIndexOf("\n");
        if (end >= 0) {
          lines(rest.slice(0, end));
          rest = rest.slice(end + 1);
        }
        controller.enqueue(chunk);
      },
      flush() {
        lines(rest + decoder.decode());
      },
    }),
  );
  const out = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  Object.defineProperties(out, { url: { value: res.url }, redirected: { value: res.redirected } });
  return out;
}

const ERROR_SCHEMA = `${COMPONENTS}Error`;

/**
 * An API error's code must be one of those the operation lists for its status: errorResponses (routes/api/responses.ts)
 * writes each as "`code`: message" in the status's description.
 */
function documentedCode(value: unknown, documented: ResponseDoc, fail: (why: string) => never) {
  if (value === null || typeof value !== "object" || typeof documented.description !== "string") return;
  const body = value as { error?: unknown; error_code?: unknown; error_description?: unknown };
  if (typeof body.error !== "string" || typeof body.error_description !== "string") return;
  const listed = [...documented.description.matchAll(/`([a-z_]+)`:/g)].map((m) => m[1]);
  if (listed.length === 0) return;
  const codes = [body.error, body.error_code].filter((c) => typeof c === "string");
  if (!codes.some((c) => listed.includes(c as string))) {
    fail(
      `error ${codes.join("/")} is not one the operation documents for this status (${listed.join(", ")})`,
    );
  }
}

/** How many answers were checked, by operation and status; printed at exit with SCHEMA_CHECK_SUMMARY=1. */
const checked = new Map<string, number>();
if (Deno.env.get("SCHEMA_CHECK_SUMMARY") === "1") {
  globalThis.addEventListener("unload", () => {
    const lines = [...checked].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `  ${k}: ${n}`);
    console.error(`schema check: answers checked by operation and status\n${lines.join("\n")}`);
  });
}

/** The services whose answers are checked: every one the tests start, or TEST_SERVICE_URL. */
const origins = new Set<string>();

/** Checks the answers of the service at this address from now on. */
export function checkAnswersOf(url: string): void {
  origins.add(new URL(url).origin);
}

const platformFetch = globalThis.fetch;

/** fetch, with each answer of a service under test checked against the document before the caller sees it. */
export const checkedFetch: typeof fetch = async (input, init) => {
  const res = await platformFetch(input, init);
  const request = input instanceof Request ? input : undefined;
  const url = res.url || (request ? request.url : String(input));
  if (!origins.has(new URL(url).origin)) return res;
  const method = (init?.method ?? request?.method ?? "GET").toUpperCase();
  // After a followed redirect the final request is a GET (303, and 301/302 from a POST): what it answered is
  // another operation's, checked only when the method is known to be the same.
  if (res.redirected && method !== "GET") return res;
  return await checkAnswer(method, url, res);
};

globalThis.fetch = checkedFetch;
