/**
 * Conditions as pure logic (domain/authz/conditions.ts, domain/authz/decide.ts): what CEL accepts when written,
 * the cost bound, positions, evaluation that never throws, and how a pending decision is settled.
 */
import assert from "node:assert/strict";
import {
  CONDITION_BUDGET_MS,
  type ConditionInput,
  conditionProblem,
  evaluateCondition,
  MAX_CONDITION_LENGTH,
  MAX_INPUT_BYTES,
  newBudget,
  oversized,
  problemText,
} from "../domain/authz/conditions.ts";
import { isPending, settle } from "../domain/authz/decide.ts";

const input = (over: Partial<ConditionInput> = {}): ConditionInput => ({
  subject: { type: "user", id: "alice", properties: { region: "eu", level: 3 } },
  resource: { type: "doc", id: "d-1", properties: { owner: "alice", amount: 120, tags: ["a", "b"] } },
  action: { name: "write", properties: {} },
  context: { channel: "web" },
  now: new Date("2026-11-30T10:00:00Z"),
  ...over,
});

Deno.test("accepted expressions: the five variables, CEL's standard functions and macros", () => {
  for (
    const e of [
      "resource.properties.owner == subject.id",
      'subject.properties.region in ["eu", "us"]',
      "resource.properties.amount < 500",
      "resource.properties.tags.exists(t, t == context.channel)",
      'has(resource.properties.owner) && resource.properties.owner.startsWith("a")',
      'now.getHours("Europe/Paris") >= 9 && now < timestamp("2100-01-01T00:00:00Z")',
      'action.name == "write" && size(resource.properties.tags) <= 10',
      'resource.id.matches("^d-[0-9]+$")',
      "context.flag", // dyn: checked to be a boolean when evaluated
      'subject.id.matches("^(https?|ftp)://[a-z.]+$")',
      'subject.id.matches("^a{2,4}(b|c)?$")',
      'subject.id.matches("^(?:ab|cd)(?<tail>[0-9]+?)$")',
      'resource.properties.tags.exists(t, t.matches("^a[0-9]*$"))',
      '["x", "y"].exists(t, t == resource.id)',
    ]
  ) assert.equal(conditionProblem(e), null, e);
});

Deno.test("refused expressions name what is wrong and where", () => {
  const cases: [string, RegExp, number][] = [
    ["subject.id ==", /Unexpected/, 13],
    ["user.id == 1", /Unknown variable: user/, 0],
    ["subject.email == 1", /email/, 8],
    ['env("HOME") == ""', /overload/, 0],
    ["1 + 2", /must be a boolean, is int/, 0],
    ["subject.id", /must be a boolean, is string/, 0],
    ["", /empty/, 0],
    ["[1].all(x, [2].exists(y, y == x))", /inside another/, 11],
    ['subject.id.matches("(a+)+$")', /nested|repeats/, 19],
    ['subject.id.matches("(a|b)\\\\1")', /back-reference/, 19],
    ["subject.id.matches(context.re)", /literal/, 0],
    ['subject.id.matches("^(a|a)*$")', /alternation/, 19],
    ['subject.id.matches("foo.*bar.*")', /more than one unbounded/, 19],
    ['subject.id.matches("a{2,}b+")', /more than one unbounded/, 19],
    ["cel.bind(x, context.xs, x + x) == []", /cel.bind/, 0],
    // What a review found could run for minutes or exhaust the heap from 4 KB of input.
    ["context.l.join(context.l.join(context.s)).size() > 0", /join is not allowed/, 0],
    ['size(context.s.split("")) > 0', /split is not allowed/, 5],
    ['(context.s + context.s).matches("a*b")', /computed text/, 1],
    ['context.l.map(x, context.s + context.s).exists(y, y.matches("a*b"))', /computed one/, 0],
    [
      'subject.id.matches("a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?aaaaaaaaaaaaaaaaaaaa")',
      /too many choices/,
      19,
    ],
    ['subject.id.matches("a{0,1000}a{0,1000}c")', /too many choices/, 19],
    ['subject.id.matches("^(a|b|c)?x?[a-z]+$")', /too many choices/, 19],
    ["x".repeat(MAX_CONDITION_LENGTH + 1), /1000 characters/, MAX_CONDITION_LENGTH],
    [Array(150).fill("true").join(" && "), /./, 0],
  ];
  for (const [e, issue, position] of cases) {
    const p = conditionProblem(e);
    assert.ok(p, e);
    assert.match(p.issue, issue, e);
    if (!(e.length > 500)) assert.equal(p.position, position, `${e}: ${p.issue}`);
  }
  assert.equal(
    problemText("subject.id &&\n  nope", conditionProblem("subject.id &&\n  nope")!),
    "Unknown variable: nope (at line 2, column 3)",
  );
});

Deno.test("a request's resource.id longer than conditions read is a condition_error, as an oversized context", () => {
  assert.deepEqual(evaluateCondition('resource.id.startsWith("d-")', input()), { value: true });
  assert.equal(oversized("d".repeat(MAX_INPUT_BYTES)), false);
  assert.equal(oversized("d".repeat(MAX_INPUT_BYTES + 1)), true);
});

Deno.test("evaluation never throws: missing keys, type mismatches and non-boolean results are errors", () => {
  assert.deepEqual(evaluateCondition("resource.properties.owner == subject.id", input()), { value: true });
  assert.deepEqual(evaluateCondition('subject.properties.region == "us"', input()), { value: false });
  const missing = evaluateCondition("resource.properties.nope == 1", input());
  assert.ok("error" in missing && /nope/.test(missing.error));
  const mismatch = evaluateCondition("resource.properties.owner + 1 == 2", input());
  assert.ok("error" in mismatch);
  const notBool = evaluateCondition("context.channel", input());
  assert.ok("error" in notBool && /boolean/.test(notBool.error));
  // JSON numbers are doubles: compared with ints across types, but not added to them.
  assert.deepEqual(evaluateCondition("resource.properties.amount < 500", input()), { value: true });
  assert.deepEqual(evaluateCondition("resource.properties.amount + 1.0 > 120.5", input()), { value: true });
  // An expression that would be refused today (stored before a stricter rule) is an error, never a crash.
  const refused = evaluateCondition("[1].all(x, [2].exists(y, y == x))", input());
  assert.ok("error" in refused && /inside another/.test(refused.error));
  // Hostile values from a request: deep, odd, prototype-looking keys.
  const odd = input({
    context: JSON.parse('{"__proto__": {"polluted": true}, "channel": {"a": [1, {"b": null}]}}'),
  });
  assert.deepEqual(evaluateCondition("has(context.channel) && size(context.channel.a) == 2", odd), {
    value: true,
  });
  assert.deepEqual(evaluateCondition('context.channel == "web"', odd), { value: false });
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(evaluateCondition('now.getHours("UTC") == 10', input()), { value: true });
});

Deno.test("a request's time for conditions is bounded: past its budget, conditions are errors (they deny)", () => {
  const budget = newBudget();
  assert.equal(budget.leftMs, CONDITION_BUDGET_MS);
  const long = input({ context: { list: Array.from({ length: 50_000 }, (_, i) => `item-${i}`) } });
  assert.deepEqual(evaluateCondition('context.list.exists(x, x == "none")', long, budget), { value: false });
  assert.ok(budget.leftMs < CONDITION_BUDGET_MS, "the evaluation's time was counted");
  budget.leftMs = 0;
  const refused = evaluateCondition("true", input(), budget);
  assert.ok("error" in refused && /spent/.test(refused.error));
});

const pending = (p: Record<string, unknown>) =>
  JSON.stringify({
    pending: {
      role_id: "r",
      permission_id: "pe",
      role_condition: null,
      subject: { region: "eu" },
      object: null,
      grants: null,
      now: "2026-11-30T10:00:00.000Z",
      ...p,
    },
  });

const asked = {
  subject: { type: "user", id: "alice", properties: { region: "us" } },
  action: { name: "write" },
  resource: { type: "doc", id: "n-1", properties: { owner: "alice", region: "eu" } },
};

Deno.test("settling: the role's condition, then each grant (its own and its role's), errors before falsehoods", () => {
  assert.ok(isPending(pending({})));
  assert.ok(!isPending('{"decision":true}'));
  // The role's condition, on the request's properties of an unregistered object.
  assert.deepEqual(
    JSON.parse(settle(pending({ role_condition: "resource.properties.owner == subject.id" }), asked).obj),
    {
      decision: true,
      context: {
        reason_admin: { code: "role_permission", role_id: "r", permission_id: "pe", conditional: true },
      },
    },
  );
  // A registered object's stored properties win; the subject's stored ones are read, never the request's.
  const stored = settle(
    pending({ role_condition: "resource.properties.owner == subject.id", object: { owner: "bob" } }),
    asked,
  );
  assert.equal(stored.allowed, false);
  assert.equal(JSON.parse(stored.obj).context.reason_admin.code, "condition_false");
  assert.equal(
    settle(pending({ role_condition: "subject.properties.region == resource.properties.region" }), asked)
      .allowed,
    true,
  );
  // Grants: the first whose conditions all hold allows; a grant needs its role's condition too.
  const grants = [
    { grant_id: "g1", object_id: "o1", role_id: "r1", condition: "true", role_condition: "false" },
    { grant_id: "g2", object_id: "o2", role_id: "r2", condition: "context.x == 1", role_condition: null },
    {
      grant_id: "g3",
      object_id: "o3",
      role_id: "r3",
      condition: "subject.id == 'alice'",
      role_condition: null,
    },
  ];
  assert.deepEqual(JSON.parse(settle(pending({ grants }), asked).obj).context.reason_admin, {
    code: "object_grant",
    grant_id: "g3",
    object_id: "o3",
    permission_id: "pe",
    conditional: true,
  });
  // Denied: an error is named before a false condition, whichever came first.
  const denied = JSON.parse(
    settle(pending({ role_condition: "false", grants: grants.slice(0, 2) }), asked).obj,
  );
  assert.equal(denied.context.reason_admin.code, "condition_error");
  assert.equal(denied.context.reason_admin.grant_id, "g2");
  assert.match(denied.context.reason_admin.message, /x/);
  const falsehood = JSON.parse(settle(pending({ role_condition: "false" }), asked).obj);
  assert.deepEqual(falsehood.context.reason_admin, {
    code: "condition_false",
    role_id: "r",
    permission_id: "pe",
  });
});
