/** A page of a list, from its statement, or from the gate's statement when the list's read rode in it. */
import { retryRead, type Sql } from "../db/connection.ts";
import { type Page, pageRead, pageRows, type PageStatement } from "../db/lists.ts";
import type { PageOf } from "../openapi/fields.ts";
import { type Attached, attachedRecord } from "./gate.ts";

/** The page of `s`: the gate's rows when it read this very page (`attached`), else read now. */
export async function listPage<T>(
  sql: Sql,
  s: PageStatement,
  page: Page,
  attached?: Attached,
): Promise<PageOf<T>> {
  const rows = attachedRecord<(T & { total_count: number })[]>(attached, pageRead(s));
  return await retryRead(() => pageRows<T>(sql, s, page, rows));
}
