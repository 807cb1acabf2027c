/** Pieces of the column lists that make a row the API's shape in the query itself. */
import type { Sql } from "./connection.ts";

/** A timestamptz column as the API writes it: RFC 3339 in UTC with milliseconds, as `Date#toISOString`. */
export function iso(sql: Sql, column: string) {
  return sql`to_char(${sql(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** `created_at` and `updated_at` of the row aliased `alias`, named as the API names them. */
export function timestamps(sql: Sql, alias: string) {
  return sql`${iso(sql, `${alias}.created_at`)} as created_at, ${
    iso(sql, `${alias}.updated_at`)
  } as updated_at`;
}
