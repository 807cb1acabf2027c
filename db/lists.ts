/** Shared pieces of list queries: literal substring patterns and the page answer. */
import type { PageOf } from "../openapi/fields.ts";

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
