/**
 * SCIM filters and PATCH paths (RFC 7644 §3.4.2.2, §3.5.2): a recursive-descent parser of the ABNF into a small
 * tree, bounded in length and nesting. Attribute names stay as written; scim_query.ts resolves them against the
 * schema and turns the tree into SQL over a whitelist.
 */
import { ScimError } from "./scim_errors.ts";

export type CompareOp = "eq" | "ne" | "co" | "sw" | "ew" | "gt" | "ge" | "lt" | "le";
export type CompValue = string | number | boolean | null;

export type Filter =
  | { op: CompareOp; path: string; value: CompValue }
  | { op: "pr"; path: string }
  | { op: "and" | "or"; left: Filter; right: Filter }
  | { op: "not"; filter: Filter }
  /** `emails[type eq "work"]`: the inner filter's names are the attribute's sub-attributes. */
  | { op: "[]"; path: string; filter: Filter };

/** A PATCH path: an attribute (`name.givenName`), optionally narrowed by a filter and then a sub-attribute. */
export type PatchPath = { path: string; filter?: Filter; sub?: string };

/** A filter longer than this is refused (Entra ID and Okta send a few dozen characters). */
export const MAX_FILTER_LENGTH = 4096;
/** Parentheses, brackets and `not` nest at most this deep. */
export const MAX_FILTER_DEPTH = 32;

const COMPARE = new Set(["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"]);

type Token =
  | { kind: "word"; text: string; at: number }
  | { kind: "string"; value: string; at: number }
  | { kind: "number"; value: number; at: number }
  | { kind: "punct"; text: "(" | ")" | "[" | "]"; at: number }
  | { kind: "end"; at: number };

/** `[URI ":"] ATTRNAME *1subAttr`, with `$ref`; a URN prefix holds dots, colons and digits. */
const WORD = /[A-Za-z$][A-Za-z0-9_:.$\-]*/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// A JSON string (RFC 8259 §7): no raw control character.
// deno-lint-ignore no-control-regex
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;

function invalid(detail: string): ScimError {
  return new ScimError(400, "invalidFilter", detail);
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const match = (re: RegExp): string | null => {
    re.lastIndex = i;
    const m = re.exec(text);
    return m ? m[0] : null;
  };
  while (i < text.length) {
    const ch = text[i];
    if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") {
      i++;
      continue;
    }
    if (ch === "(" || ch === ")" || ch === "[" || ch === "]") {
      tokens.push({ kind: "punct", text: ch, at: i });
      i++;
      continue;
    }
    if (ch === '"') {
      const s = match(STRING);
      if (s === null) throw invalid(`an unterminated or malformed string at character ${i + 1}`);
      tokens.push({ kind: "string", value: JSON.parse(s), at: i });
      i += s.length;
      continue;
    }
    const n = /[-0-9]/.test(ch) ? match(NUMBER) : null;
    if (n !== null) {
      tokens.push({ kind: "number", value: Number(n), at: i });
      i += n.length;
      continue;
    }
    const w = match(WORD);
    if (w === null) throw invalid(`unexpected character ${JSON.stringify(ch)} at character ${i + 1}`);
    tokens.push({ kind: "word", text: w, at: i });
    i += w.length;
  }
  tokens.push({ kind: "end", at: text.length });
  return tokens;
}

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  peek(): Token {
    return this.tokens[this.i];
  }
  next(): Token {
    return this.tokens[this.i++];
  }
  keyword(t: Token, word: string): boolean {
    return t.kind === "word" && t.text.toLowerCase() === word;
  }
  expect(text: ")" | "]"): void {
    const t = this.next();
    if (t.kind !== "punct" || t.text !== text) throw invalid(`expected "${text}" ${where(t)}`);
  }
  nest<T>(fn: () => T): T {
    if (++this.depth > MAX_FILTER_DEPTH) throw invalid(`the filter nests deeper than ${MAX_FILTER_DEPTH}`);
    const result = fn();
    this.depth--;
    return result;
  }

  /** FILTER: or-expressions of and-expressions of terms (precedence: not, and, or). */
  filter(): Filter {
    let left = this.and();
    while (this.keyword(this.peek(), "or")) {
      this.next();
      left = { op: "or", left, right: this.and() };
    }
    return left;
  }

  and(): Filter {
    let left = this.term();
    while (this.keyword(this.peek(), "and")) {
      this.next();
      left = { op: "and", left, right: this.term() };
    }
    return left;
  }

  term(): Filter {
    const t = this.next();
    if (t.kind === "punct" && t.text === "(") {
      return this.nest(() => {
        const inner = this.filter();
        this.expect(")");
        return inner;
      });
    }
    if (this.keyword(t, "not")) {
      const open = this.next();
      if (open.kind !== "punct" || open.text !== "(") throw invalid(`"not" needs "(" ${where(open)}`);
      return this.nest(() => {
        const inner = this.filter();
        this.expect(")");
        return { op: "not", filter: inner } as Filter;
      });
    }
    if (t.kind !== "word") throw invalid(`expected an attribute ${where(t)}`);
    const after = this.peek();
    if (after.kind === "punct" && after.text === "[") {
      this.next();
      return this.nest(() => {
        const inner = this.filter();
        this.expect("]");
        return { op: "[]", path: t.text, filter: inner } as Filter;
      });
    }
    const op = this.next();
    if (op.kind !== "word") throw invalid(`expected an operator after ${t.text} ${where(op)}`);
    const code = op.text.toLowerCase();
    if (code === "pr") return { op: "pr", path: t.text };
    if (!COMPARE.has(code)) throw invalid(`unknown operator "${op.text}" ${where(op)}`);
    return { op: code as CompareOp, path: t.text, value: this.value() };
  }

  value(): CompValue {
    const t = this.next();
    if (t.kind === "string" || t.kind === "number") return t.value;
    if (t.kind === "word") {
      const w = t.text.toLowerCase();
      if (w === "true") return true;
      if (w === "false") return false;
      if (w === "null") return null;
    }
    throw invalid(`expected a value (a quoted string, number, true, false or null) ${where(t)}`);
  }
}

function where(t: Token): string {
  return t.kind === "end" ? "at the end" : `at character ${t.at + 1}`;
}

/** Parses a `filter` parameter: 400 `invalidFilter` saying where it goes wrong. */
export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH) throw invalid(`a filter has at most ${MAX_FILTER_LENGTH} characters`);
  const parser = new Parser(tokenize(text));
  if (parser.peek().kind === "end") throw invalid("the filter is empty");
  const filter = parser.filter();
  const rest = parser.peek();
  if (rest.kind !== "end") throw invalid(`unexpected ${describe(rest)} ${where(rest)}`);
  return filter;
}

function describe(t: Token): string {
  if (t.kind === "word" || t.kind === "punct") return `"${t.text}"`;
  return t.kind === "string" ? "string" : t.kind === "number" ? "number" : "end";
}

/**
 * Parses a PATCH operation's `path` (RFC 7644 §3.5.2: `attrPath / valuePath [subAttr]`), e.g. `displayName`,
 * `name.givenName`, `emails[type eq "work"].value`, `members[value eq "2819c223"]`: 400 `invalidPath`.
 */
export function parsePatchPath(text: string): PatchPath {
  const bad = (why: string) => new ScimError(400, "invalidPath", `the path ${JSON.stringify(text)} ${why}`);
  if (text.length > MAX_FILTER_LENGTH) throw bad(`is longer than ${MAX_FILTER_LENGTH} characters`);
  const trimmed = text.trim();
  const open = trimmed.indexOf("[");
  if (open < 0) {
    if (!/^[A-Za-z$][A-Za-z0-9_:.$\-]*$/.test(trimmed)) throw bad("is not an attribute path");
    return { path: trimmed };
  }
  const path = trimmed.slice(0, open);
  const close = trimmed.lastIndexOf("]");
  if (!/^[A-Za-z$][A-Za-z0-9_:.$\-]*$/.test(path) || close < open) throw bad("is not an attribute path");
  const tail = trimmed.slice(close + 1);
  if (tail !== "" && !/^\.[A-Za-z$][A-Za-z0-9_$\-]*$/.test(tail)) throw bad("has a malformed sub-attribute");
  let filter: Filter;
  try {
    filter = parseFilter(trimmed.slice(open + 1, close));
  } catch (err) {
    if (err instanceof ScimError) throw bad(`has a malformed filter: ${err.detail}`);
    throw err;
  }
  return { path, filter, ...(tail ? { sub: tail.slice(1) } : {}) };
}
