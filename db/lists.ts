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
