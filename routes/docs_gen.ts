/**
 * `deno task docs-gen`: rewrites the generated tables of the guides, each between a pair of markers
 *
 *     <!-- generated: NAME (deno task docs-gen) -->
 *     …
 *     <!-- end generated: NAME -->
 *
 * `operations` (docs/api.md) and `operations tag=Access` (docs/authzen.md): every operation of
 * openapi/openapi.json (of that tag), with what it needs from its `x-permission`, `x-permission-scope` and
 * `x-also-needs`; `default-resources` (docs/model-permissions.md): the default resources and their permissions,
 * from domain/authz/defaults.ts. tests/docs_generated_test.ts fails when a guide differs from what this writes.
 */
import { DEFAULTS } from "../domain/authz/defaults.ts";

const ROOT = new URL("../", import.meta.url);

/** The guides that hold generated tables. */
export const GENERATED_DOCS = [
  "docs/api.md",
  "docs/authzen.md",
  "docs/model-permissions.md",
  "docs/organizations.md",
];

type Operation = {
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  "x-permission"?: string | null;
  "x-permission-scope"?: string;
  "x-also-needs"?: string[];
};
type Document = { paths: Record<string, Record<string, Operation>> };

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];
const code = (s: string) => `\`${s}\``;

/** What an operation needs, from its extensions (and, outside the bearer gate, its security scheme). */
export function needs(op: Operation): string {
  if (!("x-permission" in op)) {
    return op.security?.some((s) => "basicAuth" in s)
      ? "the client: HTTP Basic, or a public client's `client_id`"
      : "— (outside the gate)";
  }
  const permission = op["x-permission"] ?? null;
  const scope = op["x-permission-scope"] ?? "own";
  let text: string;
  if (permission === null || scope === "token") text = "a live token of any project, no permission";
  else if (scope === "own") text = code(permission);
  else if (scope === "own-or-system") {
    text = `${code(permission)}, on this project's or the system project's token`;
  } else if (scope === "system") text = `${code(permission)}, on a system-project token`;
  else if (scope === "audience") text = `${code(permission)}, on a token of the project asked about`;
  else throw new Error(`unknown x-permission-scope ${scope}`);
  const also = op["x-also-needs"] ?? [];
  return also.length > 0 ? `${text}; also ${also.map(code).join(", ")}` : text;
}

/** A Markdown table, its columns padded as `deno fmt` pads them. */
export function table(head: string[], rows: string[][]): string {
  const escape = (cell: string) => cell.replaceAll("|", "\\|");
  const all = [head, ...rows].map((r) => r.map(escape));
  const widths = head.map((_, i) => Math.max(3, ...all.map((r) => [...r[i]].length)));
  const line = (r: string[]) =>
    `| ${r.map((c, i) => c + " ".repeat(widths[i] - [...c].length)).join(" | ")} |`;
  return [line(all[0]), `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`, ...all.slice(1).map(line)]
    .join("\n");
}

/** Every operation of the document (of `tag`, when given), in the document's order. */
export function operationsTable(doc: Document, tag?: string): string {
  const rows: string[][] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method) || (tag && !op.tags?.includes(tag))) continue;
      rows.push([op.summary ?? "", code(`${method.toUpperCase()} ${path}`), needs(op)]);
    }
  }
  return table(["Operation", "Method and path", "Needs"], rows);
}

type Default = {
  code: string;
  name: string;
  noun: string;
  actions: readonly string[];
  systemActions?: readonly string[];
  systemOnly?: boolean;
};

/** The default resources, their permissions and the projects that have them. */
export function defaultResourcesTable(defaults: readonly Default[] = DEFAULTS): string {
  return table(
    ["Resource", "Administers", "Permissions", "In"],
    defaults.map((d) => [
      code(d.code),
      d.noun,
      [
        d.actions.map((a) => code(`${d.code}:${a}`)).join(", "),
        d.systemActions?.length
          ? ` (the system project's also ${d.systemActions.map((a) => code(`${d.code}:${a}`)).join(", ")})`
          : "",
      ].join(""),
      d.systemOnly ? "the system project" : "every project",
    ]),
  );
}

/** The content of one marker, by its name and arguments (`operations tag=Access`). */
export function render(spec: string, doc: Document): string {
  const [name, ...args] = spec.trim().split(/\s+/);
  const options = Object.fromEntries(args.map((a) => a.split("=", 2)));
  if (name === "operations") return operationsTable(doc, options.tag);
  if (name === "default-resources") return defaultResourcesTable();
  throw new Error(`unknown generated table: ${spec}`);
}

const BLOCK =
  /(<!-- generated: ([^>]*?) \(deno task docs-gen\) -->)[\s\S]*?(<!-- end generated: ([^>]*?) -->)/g;

/** A guide with every generated table rewritten from the document (and domain/authz/defaults.ts). */
export function rewrite(markdown: string, doc: Document): string {
  return markdown.replace(BLOCK, (_all, open: string, spec: string, close: string, endSpec: string) => {
    if (endSpec.trim() !== spec.trim()) throw new Error(`generated: ${spec} ends with ${endSpec}`);
    return `${open}\n\n${render(spec, doc)}\n\n${close}`;
  });
}

/** The number of generated tables in a guide. */
export const blocks = (markdown: string) => [...markdown.matchAll(BLOCK)].length;

export async function readDocument(): Promise<Document> {
  return JSON.parse(await Deno.readTextFile(new URL("openapi/openapi.json", ROOT)));
}

if (import.meta.main) {
  const doc = await readDocument();
  for (const path of GENERATED_DOCS) {
    const url = new URL(path, ROOT);
    const before = await Deno.readTextFile(url);
    const after = rewrite(before, doc);
    if (after !== before) await Deno.writeTextFile(url, after);
    console.log(`${after === before ? "unchanged" : "wrote"} ${path} (${blocks(before)} tables)`);
  }
}
