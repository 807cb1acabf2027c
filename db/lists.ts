/** Shared pieces of list queries: literal substring patterns, the page's statement and the page answer. */
import type { PageOf } from "../openapi/fields.ts";
import { quoted } from "./columns.ts";
import type { Sql } from "./connection.ts";

export type Page = { page_num: number; page_size: number };

/** A case-insensitive substring pattern for ILIKE in which %, _ and \ are literal. */
export function containsPattern(search: string): string {
  return `%${search.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

export function offsetOf(page: Page): number {
  return (page.page_num - 1) * page.page_size;
}

/**
 * A page and its total from one statement (`count(*) over () as total_count` in the page query), so both
 * come from one snapshot. Only a page past the end, which has no row to carry the total, counts apart.
 */
export async function pageOf<T>(
  rows: Promise<(T & { total_count: number })[]>,
  page: Page,
  count: () => Promise<{ total: number }[]>,
): Promise<PageOf<T>> {
  const r = await rows;
  const pagination = { page_num: page.page_num, page_size: page.page_size, total: 0 };
  if (r.length > 0) pagination.total = r[0].total_count;
  else if (page.page_num > 1) pagination.total = (await count())[0].total;
  return { data: r.map(({ total_count: _, ...row }) => row as T), pagination };
}

/**
 * A read sent in the gate's statement, so that a gated read costs one round trip: SQL text written in this code
 * (never input; no `$` but its parameters, no string literals that hold one) whose one row and column is a JSON
 * value or JSON text, with parameters $1, $2, … of its own, and their values. It runs in the gate's snapshot,
 * and only when the token is live, holds the permission and the path's project exists.
 */
export type AttachedRead = { text: string; params: (string | number | boolean | null)[] };
export type Params = AttachedRead["params"];

/**
 * A page's statement as text with its parameters: its one row's one column, `page`, is the whole answer as JSON
 * text (`{"data":[…],"pagination":{…}}`), which the service sends as it is (domain/authz/lists.ts). The same statement
 * is the read the gate attaches.
 */
export type PageStatement = AttachedRead;

/**
 * The statement of a page of `from` (a table and its alias), `where` conditions over `params` (its `$n`
 * placeholders numbered in that array), sorted by the query's `sort_by` (a column name the query's schema
 * allows, never free input), ties by id. Each row is the JSON object of `row.columns` (in their order), or
 * the JSON text that the expression `row.json` gives (resources keep theirs, migration 0011). The total counts
 * every matching row in the same statement, so both come from one snapshot, also for a page past the end.
 * Written as text: one source for the list and for the read the gate attaches, and as cheap to build as a flat
 * statement (db/columns.ts).
 */
export function pageStatement(
  from: { table: string; alias: string },
  row: { columns: string } | { json: string },
  where: string,
  params: Params,
  q: Page & { sort_by: string; sort_dir: "asc" | "desc" },
): PageStatement {
  const source = `from ${from.table} ${from.alias} ${where}`;
  const dir = q.sort_dir === "asc" ? "asc" : "desc";
  const n = params.length;
  const [size, num] = [`$${n + 1}::int8`, `$${n + 2}::int8`];
  const [columns, json] = "json" in row
    ? [`${row.json} as json`, "x.json"]
    : [row.columns, "row_to_json(x)::text"];
  // An aggregate over a sorted subquery, in a query with nothing else (no join, no grouping), takes its rows in
  // that order (PostgreSQL's documentation on aggregate functions says as much).
  const text = `select '{"data":[' || coalesce((
      select string_agg(${json}, ',') from (
        select ${columns} ${source}
        order by ${quoted(`${from.alias}.${q.sort_by}`)} ${dir}, ${from.alias}.id ${dir}
        limit ${size} offset (${num} - 1) * ${size}) x), '')
    || '],"pagination":{"page_num":' || ${num} || ',"page_size":' || ${size}
    || ',"total":' || (select count(*) ${source}) || '}}' as page`;
  return { text, params: [...params, q.page_size, q.page_num] };
}

/** The page of `s`, as the JSON text of the answer. */
export async function pageText(sql: Sql, s: PageStatement): Promise<string> {
  const [row] = await sql.unsafe<{ page: string }[]>(s.text, s.params, { prepare: true });
  return row.page;
}
