/** Pieces of the column lists that make a row the API's shape in the query itself. */
import type { Sql } from "./connection.ts";

/**
 * A piece of SQL text written in this code (a column list, an expression over columns: never input, never a
 * value), spliced into a statement as one fragment. postgres.js makes every nested `sql`…`` and `sql(name)` an
 * object that it creates and renders again for each statement, at about 1-2 µs a piece: a record's column list
 * of a dozen pieces cost a read about 25 µs of the service's CPU, as much as the rest of the read, and the
 * gate's query as much again. Written once as text, the statement costs what a flat one does (docs/performance.md, "Where
 * the time goes").
 */
export function fixed(sql: Sql, text: string) {
  return sql.unsafe(text);
}

/** `p.created_at` → `"p"."created_at"`, quoted as postgres.js quotes an identifier. For names in this code. */
export function quoted(path: string): string {
  return path.split(".").map((part) => `"${part.replaceAll('"', '""')}"`).join(".");
}

/** A timestamptz column as the API writes it: RFC 3339 in UTC with milliseconds, as `Date#toISOString`. */
export function isoText(column: string): string {
  return `to_char(${quoted(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** `created_at` and `updated_at` of the row aliased `alias`, named as the API names them. */
export function timestampsText(alias: string): string {
  return `${isoText(`${alias}.created_at`)} as created_at, ${isoText(`${alias}.updated_at`)} as updated_at`;
}

/** `isoText` as a fragment. */
export function iso(sql: Sql, column: string) {
  return fixed(sql, isoText(column));
}
