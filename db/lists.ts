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

/** A page of rows and the total: two statements sent together, whatever the page size. */
export async function pageOf<R>(
  rows: Promise<R[]>,
  total: Promise<{ total: number }[]>,
): Promise<{ rows: R[]; total: number }> {
  const [r, [t]] = await Promise.all([rows, total]);
  return { rows: r, total: t.total };
}
