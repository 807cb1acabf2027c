/**
 * Conditions: CEL expressions (the Common Expression Language, through @marcbachmann/cel-js) a role attaches to
 * one of its permissions, or a grant carries, that a decision must find true (docs/authzen.md § Conditions).
 * An expression reads only `subject`, `resource`, `action`, `context` and `now`, calls only CEL's standard
 * functions, and is parsed and type-checked when written. Its cost is bounded when written, whatever it is
 * later given: at most 1,000 characters and 200 nodes, no `join` or `split`, a comprehension (`all`, `exists`,
 * `map`, …) only over a value as given and never inside another, and a regular expression only as a literal of
 * bounded backtracking, matched only against a value as given (`overBound`, `riskyPattern`). Compiled
 * once per expression text (never per request); at decision time nothing makes it throw past the decision.
 */
import { Environment, type ParseResult } from "@marcbachmann/cel-js";

/** The longest expression accepted. */
export const MAX_CONDITION_LENGTH = 1000;
const MAX_NODES = 200;

const entity = (id: string) => ({ type: "string", [id]: "string", properties: "map<string, dyn>" });

const ENV = new Environment({
  limits: { maxAstNodes: MAX_NODES, maxDepth: 32, maxListElements: 100, maxMapEntries: 100 },
})
  .registerVariable({ name: "subject", schema: entity("id") })
  .registerVariable({ name: "resource", schema: entity("id") })
  .registerVariable({ name: "action", schema: { name: "string", properties: "map<string, dyn>" } })
  .registerVariable("context", "map<string, dyn>")
  .registerVariable("now", "google.protobuf.Timestamp");

/** What a condition reads at decision time. */
export type ConditionInput = {
  subject: { type: string; id: string; properties: Record<string, unknown> };
  resource: { type: string; id: string; properties: Record<string, unknown> };
  action: { name: string; properties: Record<string, unknown> };
  context: Record<string, unknown>;
  now: Date;
};

/** Why an expression is refused: what is wrong, and where (0-based offset into it). */
export type ConditionProblem = { issue: string; position: number };

const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);

type Node = { op: string; args: unknown; range?: { start: number } };

function isNode(x: unknown): x is Node {
  return typeof x === "object" && x !== null && typeof (x as Node).op === "string";
}

/** The children of an AST node, whatever the shape of its arguments. */
function* children(args: unknown): Generator<Node> {
  if (isNode(args)) yield args;
  else if (Array.isArray(args)) { for (const a of args) yield* children(a); }
}

/**
 * Why a regular expression's matching time could grow faster than its input, or null. JavaScript's engine
 * backtracks (CEL specifies RE2, which does not), so only patterns whose backtracking stays bounded are taken:
 * no back-reference, no repeated group that holds a repetition or an alternation (`(a+)+`, `(a|a)*`: exponential),
 * at most one unbounded repetition (`*`, `+`, `{n,}`: with two, an unanchored search over a few kilobytes already
 * costs billions of steps), and few choices besides: each `?` doubles the ways to try, each `{n,m}` multiplies
 * them by m − n + 1 and each alternation by its branches, so their product is at most 16, or 4 beside an
 * unbounded repetition (`a?a?a?…` and `a{0,1000}a{0,1000}` are exponential or high-polynomial). With the inputs
 * conditions read capped (MAX_INPUT_BYTES), what is left stays within tens of milliseconds at worst.
 */
function riskyPattern(p: string): string | null {
  if (/\\[1-9]|\\k</.test(p)) return "uses a back-reference";
  // For each open group: whether it holds a repetition or an alternation, and its branches.
  const groups: { held: boolean; branches: number }[] = [];
  let topBranches = 1;
  let last = false; // the previous item was a group holding one
  let atom = false; // the previous item can take a quantifier
  let unbounded = 0;
  let choices = 1;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    let closed = false;
    let quantifier = false;
    if (c === "\\") i++;
    else if (c === "[") {
      i++;
      while (i < p.length && p[i] !== "]") i += p[i] === "\\" ? 2 : 1;
    } else if (c === "(") {
      groups.push({ held: false, branches: 1 });
      // (?:…), (?=…), (?!…), (?<=…), (?<!…), (?<name>…): the ? is the group's kind, not a repetition.
      if (p[i + 1] === "?") {
        i += p[i + 2] === "<" && p[i + 3] !== "=" && p[i + 3] !== "!"
          ? Math.max(p.indexOf(">", i), i + 2)
          : 2;
        if (p[i] === "<") i++;
      }
      atom = false;
      last = false;
      continue;
    } else if (c === ")") {
      const g = groups.pop() ?? { held: false, branches: 1 };
      choices *= g.branches;
      if (g.held && groups.length > 0) groups[groups.length - 1].held = true;
      last = g.held;
      closed = true;
    } else if (c === "|") {
      if (groups.length > 0) {
        groups[groups.length - 1].held = true;
        groups[groups.length - 1].branches++;
      } else topBranches++;
    } else if ("*+?{".includes(c)) {
      // A ? right after a quantifier makes it lazy: no new choice.
      if (!atom && c === "?") continue;
      quantifier = true;
      if (last && c !== "?") return "repeats a group that holds a repetition or an alternation";
      const close = c === "{" ? p.indexOf("}", i) : -1;
      const range = close > 0 ? /^\{(\d*)(,(\d*))?\}$/.exec(p.slice(i, close + 1)) : null;
      if (c === "*" || c === "+" || (range && range[2] !== undefined && range[3] === "")) unbounded++;
      else if (c === "?") choices *= 2;
      else if (range && range[2] !== undefined) {
        choices *= Math.max(1, Number(range[3]) - Number(range[1] || 0) + 1);
      }
      if (unbounded > 1) return "has more than one unbounded repetition (*, +, {n,})";
      if (groups.length > 0) groups[groups.length - 1].held = true;
      if (close > 0) i = close;
    }
    if (!closed) last = false;
    atom = closed || (!quantifier && c !== "|" && c !== "^");
  }
  if (choices * topBranches > (unbounded > 0 ? 4 : 16)) {
    return "has too many choices: its ?, {n,m} and alternations (at most 16 ways, 4 beside * or +)";
  }
  return null;
}

/** The variables a condition reads (`now` is a timestamp). */
const INPUTS = new Set(["subject", "resource", "action", "context"]);

/** Functions whose result can be far larger than what they are given, or a list made from a string. */
const AMPLIFIERS = new Set(["join", "split"]);

/**
 * Whether a node reads a value the condition is given, as it is: a variable, a field or an element of one, or
 * an iteration variable over such a value (`plain`). Such a value is at most MAX_INPUT_BYTES (or a stored
 * property's 4 KB); a computed one (`a + b` repeated, a comprehension's result) could be hundreds of times that.
 */
function isInputPath(node: Node, plain: ReadonlySet<string>): boolean {
  if (node.op === "id") return INPUTS.has(node.args as string) || plain.has(node.args as string);
  if ((node.op === "." || node.op === "[]") && Array.isArray(node.args) && isNode(node.args[0])) {
    return isInputPath(node.args[0], plain);
  }
  return false;
}

/**
 * The first thing of the expression's AST that breaks the cost bound, or null. Beyond the pattern rules: no
 * `join` or `split` (`l.join(s)` is |l| × |s| long, and nested grows as a product), a comprehension ranges only
 * over a value given as it is or a literal (never over another's result, nor inside another), and `matches`
 * reads only a value given as it is (its cost grows with the square of the text's length).
 */
function overBound(
  node: Node,
  inComprehension: boolean,
  plain: ReadonlySet<string> = new Set(),
): ConditionProblem | null {
  const at = node.range?.start ?? 0;
  if (node.op === "rcall" && Array.isArray(node.args)) {
    const [name, target, rest] = node.args as [string, unknown, unknown];
    // cel.bind names a value it may use twice: nested, it doubles what it holds at each level.
    if (name === "bind") return { issue: "cel.bind is not allowed (cost bound)", position: at };
    if (AMPLIFIERS.has(name)) return { issue: `${name} is not allowed (cost bound)`, position: at };
    if (COMPREHENSIONS.has(name)) {
      if (inComprehension) {
        return {
          issue: `a comprehension (${name}) inside another is not allowed (cost bound)`,
          position: at,
        };
      }
      const given = isNode(target) && isInputPath(target, plain);
      if (!isNode(target) || (!given && target.op !== "list" && target.op !== "map")) {
        return {
          issue:
            `a comprehension (${name}) ranges over a value as given or a literal, not a computed one (cost bound)`,
          position: isNode(target) ? target.range?.start ?? at : at,
        };
      }
      const inTarget = overBound(target, inComprehension, plain);
      if (inTarget) return inTarget;
      const parts = [...children(rest)];
      // Its iteration variables (the leading identifiers but the body): values of the target as given.
      const vars = new Set(plain);
      if (given) {
        for (const v of parts.slice(0, -1)) if (v.op === "id") vars.add(v.args as string);
      }
      for (const c of parts) {
        const p = overBound(c, true, vars);
        if (p) return p;
      }
      return null;
    }
    if (name === "matches") {
      if (!isNode(target) || !isInputPath(target, plain)) {
        return {
          issue:
            "matches reads only a value as given (a variable or a field of one), not a computed text (cost bound)",
          position: at,
        };
      }
      const [pattern] = [...children(rest)];
      if (pattern?.op !== "value" || typeof pattern.args !== "string") {
        return { issue: "matches takes a string literal as its pattern", position: at };
      }
      const risk = riskyPattern(pattern.args);
      if (risk) return { issue: `the pattern ${risk} (cost bound)`, position: pattern.range?.start ?? at };
    }
  }
  if (node.op === "call" && Array.isArray(node.args) && node.args[0] === "matches") {
    return { issue: 'call matches as a method: text.matches("pattern")', position: at };
  }
  if (node.op === "call" && Array.isArray(node.args) && AMPLIFIERS.has(node.args[0] as string)) {
    return { issue: `${node.args[0]} is not allowed (cost bound)`, position: at };
  }
  for (const c of children(node.args)) {
    const p = overBound(c, inComprehension, plain);
    if (p) return p;
  }
  return null;
}

/** The first line of a library error's message (the rest draws the source with a caret). */
function summary(e: unknown): string {
  const err = e as { summary?: string; message?: string };
  return (err.summary ?? err.message ?? String(e)).split("\n")[0];
}

/**
 * Why `expression` cannot be a condition, or null when it can: a syntax or type error, an unknown variable or
 * function, a result that is not a boolean, or more than the cost bound allows.
 */
export function conditionProblem(expression: string): ConditionProblem | null {
  if (expression.length > MAX_CONDITION_LENGTH) {
    return { issue: `at most ${MAX_CONDITION_LENGTH} characters`, position: MAX_CONDITION_LENGTH };
  }
  if (expression.trim() === "") return { issue: "must not be empty", position: 0 };
  let parsed: ParseResult;
  try {
    parsed = ENV.parse(expression);
  } catch (e) {
    return { issue: summary(e), position: (e as { range?: { start: number } }).range?.start ?? 0 };
  }
  const checked = ENV.check(expression);
  if (!checked.valid) {
    return { issue: summary(checked.error), position: checked.error?.range?.start ?? 0 };
  }
  if (checked.type !== "bool" && checked.type !== "dyn") {
    return { issue: `must be a boolean, is ${checked.type}`, position: 0 };
  }
  return overBound(parsed.ast as unknown as Node, false);
}

/** A problem as an error's `issue`: what, and at which line and column. */
export function problemText(expression: string, p: ConditionProblem): string {
  const before = expression.slice(0, p.position).split("\n");
  return `${p.issue} (at line ${before.length}, column ${before[before.length - 1].length + 1})`;
}

/** Compiled expressions by text: a compiled one never changes, so it is kept (at most this many). */
const COMPILED_AT_MOST = 10_000;
const compiled = new Map<string, ParseResult | ConditionProblem>();

function compile(expression: string): ParseResult | ConditionProblem {
  let c = compiled.get(expression);
  if (c === undefined) {
    const problem = conditionProblem(expression);
    c = problem ?? ENV.parse(expression);
    if (compiled.size >= COMPILED_AT_MOST) compiled.delete(compiled.keys().next().value!);
    compiled.set(expression, c);
  }
  return c;
}

/**
 * The most a condition reads of what a request sends (`context`, `action.properties`, an unregistered object's
 * `resource.properties`, in bytes of JSON; `resource.id`, in characters): as much as a stored `properties` may
 * hold. A request sending more
 * gets `condition_error` for its conditions (a search: 400): the write-time bound limits what an expression
 * does per element, this limits the elements.
 */
export const MAX_INPUT_BYTES = 4096;

/** Whether a sent value is more than conditions read (MAX_INPUT_BYTES of JSON); each object measured once. */
export function oversized(value: unknown): boolean {
  if (typeof value === "string") return value.length > MAX_INPUT_BYTES;
  if (value === undefined || value === null || typeof value !== "object") return false;
  let size = sizes.get(value);
  if (size === undefined) {
    size = new TextEncoder().encode(JSON.stringify(value)).length;
    sizes.set(value, size);
  }
  return size > MAX_INPUT_BYTES;
}
const sizes = new WeakMap<object, number>();

/** A condition's outcome: true or false, or the evaluation error that makes it deny. */
export type Outcome = { value: boolean } | { error: string };

/**
 * The time one request may spend evaluating conditions, in milliseconds. An expression's size is bounded when
 * written, but what it iterates comes from the request (a list in `context` as long as the body allows): one
 * evaluation stays in the tens of milliseconds, a batch of a thousand of them would not. Past the budget, the
 * request's remaining conditions are errors (they deny).
 */
export const CONDITION_BUDGET_MS = 1000;

/** What is left of a request's time for conditions (CONDITION_BUDGET_MS to start with). */
export type Budget = { leftMs: number };

export const newBudget = (): Budget => ({ leftMs: CONDITION_BUDGET_MS });

/**
 * Evaluates a stored condition. Never throws: an evaluation error (a missing key, a type mismatch, a result
 * that is not a boolean, an expression a later version would refuse, the request's budget spent) is the
 * outcome `error`.
 */
export function evaluateCondition(expression: string, input: ConditionInput, budget = newBudget()): Outcome {
  if (budget.leftMs <= 0) {
    return {
      error: `the request spent its ${CONDITION_BUDGET_MS} ms for conditions; this one is not evaluated`,
    };
  }
  const c = compile(expression);
  if (typeof c !== "function") return { error: c.issue };
  const start = performance.now();
  try {
    const v = c(input);
    return typeof v === "boolean" ? { value: v } : { error: `the condition gave ${typeof v}, not a boolean` };
  } catch (e) {
    return { error: summary(e) };
  } finally {
    budget.leftMs -= performance.now() - start;
  }
}

/** A JSON object as conditions read it: anything else sent where an object belongs reads as `{}`. */
export const mapOf = (x: unknown): Record<string, unknown> =>
  x !== null && typeof x === "object" && !Array.isArray(x) ? x as Record<string, unknown> : {};

/** The label of the first of `sent` (a value and its label) that is more than conditions read, or null. */
export function firstOversized(sent: [unknown, string][]): string | null {
  for (const [value, label] of sent) if (oversized(value)) return label;
  return null;
}

/**
 * Conditions that must all hold (a grant's own and its role's; null: none): the first outcome that is not true,
 * else `{ value: true }`. `evaluate` evaluates one.
 */
export function allHold(conditions: (string | null)[], evaluate: (c: string) => Outcome): Outcome {
  for (const c of conditions) {
    if (c === null) continue;
    const outcome = evaluate(c);
    if (!("value" in outcome && outcome.value)) return outcome;
  }
  return { value: true };
}
