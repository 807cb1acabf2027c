/**
 * A SCIM filter as SQL: a condition tree over named columns (each resource module's whitelist maps a name to
 * its SQL expression) becomes a `where` clause whose every value is a numbered parameter, never text of the
 * statement.
 */
import type { Sql } from "../connection.ts";

export type CompareOp = "eq" | "ne" | "co" | "sw" | "ew" | "gt" | "ge" | "lt" | "le";
export type ColumnType = "string" | "boolean" | "dateTime";

export type Cond =
  | {
    kind: "cmp";
    column: string;
    type: ColumnType;
    op: CompareOp;
    value: string | boolean | null;
    caseExact: boolean;
  }
  | { kind: "pr"; column: string }
  | { kind: "and" | "or"; left: Cond; right: Cond }
  | { kind: "not"; cond: Cond }
  | { kind: "const"; value: boolean }
  /** Some member of the group matches (columns of the member's row). */
  | { kind: "member"; cond: Cond };

export type Columns = Record<string, string>;

/** How each resource's rows are read: its columns by name, and (groups) how a member's condition is asked. */
export type Table = { columns: Columns; member?: { columns: Columns; exists: (inner: string) => string } };

/** `%`, `_` and `\` literal in a LIKE pattern. */
function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (ch) => `\\${ch}`);
}

const OPS: Record<"eq" | "gt" | "ge" | "lt" | "le", string> = {
  eq: "=",
  gt: ">",
  ge: ">=",
  lt: "<",
  le: "<=",
};

/** The clause of `cond`, pushing its values onto `params`. */
export function whereOf(cond: Cond, table: Table, params: unknown[], inMember = false): string {
  const columns = inMember ? table.member!.columns : table.columns;
  const column = (name: string) => {
    const expr = columns[name];
    if (expr === undefined) throw new Error(`no column ${name}`); // the domain resolved it: a bug, not input
    return expr;
  };
  switch (cond.kind) {
    case "const":
      return cond.value ? "true" : "false";
    case "and":
    case "or":
      return `(${whereOf(cond.left, table, params, inMember)} ${cond.kind} ${
        whereOf(cond.right, table, params, inMember)
      })`;
    case "not":
      return `(not coalesce(${whereOf(cond.cond, table, params, inMember)}, false))`;
    case "member":
      return table.member!.exists(whereOf(cond.cond, table, params, true));
    case "pr":
      return `(${column(cond.column)} is not null)`;
    case "cmp": {
      const expr = column(cond.column);
      if (cond.value === null) {
        // `eq null` asks for an absent value, `ne null` for a present one.
        return cond.op === "ne" ? `(${expr} is not null)` : `(${expr} is null)`;
      }
      const param = (v: unknown, cast: string) => `$${params.push(v)}::${cast}`;
      if (cond.type === "boolean") {
        const p = param(cond.value, "boolean");
        return cond.op === "ne" ? `(${expr} is distinct from ${p})` : `(${expr} = ${p})`;
      }
      if (cond.type === "dateTime") {
        const p = param(cond.value, "timestamptz");
        if (cond.op === "ne") return `(${expr} is distinct from ${p})`;
        return `(${expr} ${OPS[cond.op as keyof typeof OPS]} ${p})`;
      }
      // Strings: case-insensitive unless the attribute is caseExact; compared as code points, whatever the
      // database's collation.
      const left = cond.caseExact ? `${expr}` : `lower(${expr})`;
      const value = cond.caseExact ? String(cond.value) : String(cond.value).toLowerCase();
      switch (cond.op) {
        case "co":
          return `(${left} like ${param(`%${escapeLike(value)}%`, "text")})`;
        case "sw":
          return `(${left} like ${param(`${escapeLike(value)}%`, "text")})`;
        case "ew":
          return `(${left} like ${param(`%${escapeLike(value)}`, "text")})`;
        case "ne":
          return `(${left} is distinct from ${param(value, "text")})`;
        default:
          return `(${left} collate "C" ${OPS[cond.op]} ${param(value, "text")} collate "C")`;
      }
    }
  }
}

/** A page of rows as JSON objects, and the total of matches; `count` 0 reads the total alone. */
export async function scimPage<T>(
  sql: Sql,
  opts: {
    select: string;
    from: string;
    where: string;
    params: unknown[];
    orderBy: string;
    offset: number;
    count: number;
  },
): Promise<{ total: number; rows: T[] }> {
  const { select, from, where, params, orderBy, offset, count } = opts;
  if (count === 0) {
    const [row] = await sql.unsafe<{ total: number }[]>(
      `select count(*)::int as total from ${from} where ${where}`,
      params as never[],
    );
    return { total: row.total, rows: [] };
  }
  const paged = [...params, count, offset];
  const rows = await sql.unsafe<(T & { total_count: number })[]>(
    `select ${select}, count(*) over ()::int as total_count from ${from} where ${where}
     order by ${orderBy} limit $${paged.length - 1}::int offset $${paged.length}::int`,
    paged as never[],
  );
  if (rows.length > 0 || offset === 0) {
    return { total: rows[0]?.total_count ?? 0, rows: rows.map(({ total_count: _, ...r }) => r as T) };
  }
  // Past the end: no row carries the total.
  const [row] = await sql.unsafe<{ total: number }[]>(
    `select count(*)::int as total from ${from} where ${where}`,
    params as never[],
  );
  return { total: row.total, rows: [] };
}
