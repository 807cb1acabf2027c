/** A page of a list, from its statement, or from the gate's statement when the list's read rode in it. */
import { retryRead, type Sql } from "../../db/connection.ts";
import { type PageStatement, pageText } from "../../db/lists.ts";
import type { PageOf } from "../../openapi/fields.ts";
import { type Attached, attachedRecord } from "./gate.ts";

declare const of: unique symbol;

/**
 * An answer's JSON as text, written by the database in the shape of `T`: sent as it is, never parsed and
 * written again (routes/api/responses.ts, `jsonText`). A page of ten resources is about 7 kB of JSON.
 */
export type JsonText<T> = string & { readonly [of]: T };

/** The page of `s` as the answer's JSON: the gate's when it read this very page (`attached`), else read now. */
export async function listPage<T>(
  sql: Sql,
  s: PageStatement,
  attached?: Attached,
): Promise<JsonText<PageOf<T>>> {
  const page = attachedRecord<string>(attached, s) ?? await retryRead(() => pageText(sql, s));
  return page as JsonText<PageOf<T>>;
}
