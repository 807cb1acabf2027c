/** Shared pieces of list queries: literal substring patterns, the page's statement and the page answer. */
import type { PageOf } from "../openapi/fields.ts";
import { quoted } from "./columns.ts";
import type { Sql } from "./connection.ts";
import type { AttachedRead } from "./principals.ts";

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

export type Params = AttachedRead["params"];

/** A page's statement as text with its parameters (limit and offset last), and its count's. */
export type PageStatement = { text: string; params: Params; count: { text: string; params: Params } };

/**
 * The statement of a page of `from` (a table and its alias) with the row's `columns`, `where` conditions over
 * `params` (its `$n` placeholders numbered in that array), sorted by the query's `sort_by` (a column name the
 * query's schema allows, never free input), ties by id. Written as text: one source for the list and for the
 * read the gate attaches (`pageRead`), and as cheap to build as a flat statement (db/columns.ts).
 */
export function pageStatement(
  from: { table: string; alias: string },
  columns: string,
  where: string,
  params: Params,
  q: Page & { sort_by: string; sort_dir: "asc" | "desc" },
): PageStatement {
  const source = `from ${from.table} ${from.alias} ${where}`;
  const count = { text: `select count(*)::int as total ${source}`, params: [...params] };
  const dir = q.sort_dir === "asc" ? "asc" : "desc";
  const n = params.length;
  const text = `select ${columns}, count(*) over ()::int as total_count ${source}
    order by ${quoted(`${from.alias}.${q.sort_by}`)} ${dir}, ${from.alias}.id ${dir}
    limit $${n + 1} offset $${n + 2}`;
  return { text, params: [...params, q.page_size, offsetOf(q)], count };
}

/** The page of `s`, or the one the gate read with its statement (`attached`: the rows of `pageRead(s)`). */
export async function pageRows<T>(
  sql: Sql,
  s: PageStatement,
  page: Page,
  attached?: (T & { total_count: number })[] | null,
): Promise<PageOf<T>> {
  return await pageOf<T>(
    attached !== undefined
      ? Promise.resolve(attached ?? [])
      : sql.unsafe<(T & { total_count: number })[]>(s.text, s.params, { prepare: true }),
    page,
    () => sql.unsafe<{ total: number }[]>(s.count.text, s.count.params, { prepare: true }),
  );
}

/**
 * The page as one JSON array (null when empty) for the gate's statement: each row as `pageRows` reads it,
 * in the page's order (the aggregate reads the sorted, limited subquery in its order).
 */
export function pageRead(s: PageStatement): AttachedRead {
  return { text: `select json_agg(x) from (${s.text}) x`, params: s.params };
}
