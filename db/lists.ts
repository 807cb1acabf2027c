/** Shared pieces of list queries: literal substring patterns and page arithmetic. */

export type Page = { page_num: number; page_size: number };
export type Sort<F extends string> = { sort_by: F; sort_dir: "asc" | "desc" };

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
export async function pageOf<R extends { total_count: number }>(
  rows: Promise<R[]>,
  page: Page,
  count: () => Promise<{ total: number }[]>,
): Promise<{ rows: R[]; total: number }> {
  const r = await rows;
  if (r.length > 0) return { rows: r, total: r[0].total_count };
  if (page.page_num === 1) return { rows: [], total: 0 };
  const [{ total }] = await count();
  return { rows: [], total };
}
