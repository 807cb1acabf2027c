/** The list answer shape shared by every list operation. */
import type { Page } from "../db/lists.ts";

export type PageOut<T> = { data: T[]; pagination: Page & { total: number } };

export function pageResult<R, T>(q: Page, res: { rows: R[]; total: number }, map: (row: R) => T): PageOut<T> {
  return {
    data: res.rows.map(map),
    pagination: { page_num: q.page_num, page_size: q.page_size, total: res.total },
  };
}

/** On update: an omitted field keeps the stored value; null or "" clears it. */
export function keepOrClear<T>(given: T | null | undefined, stored: T | null): T | null {
  if (given === undefined) return stored;
  return given === null || given === "" ? null : given;
}
