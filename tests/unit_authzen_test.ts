/**
 * Unit tests of the AuthZEN planner (domain/authz/authzen.ts): how a batch request becomes its questions, with the
 * top level's entities as defaults, before any statement runs.
 */
import assert from "node:assert/strict";
import { organizationAsked, planEvaluations, usable } from "../domain/authz/authzen.ts";
import { AppError } from "../domain/shared/errors.ts";
import type { EvaluationsRequest } from "../openapi/authzen.ts";

const subject = { type: "user", id: "u1" };
const action = { name: "read" };
const resource = { type: "document", id: "d1" };

Deno.test("usable: a NUL byte or an unpaired surrogate can never name anything", () => {
  assert.equal(usable("document"), "document");
  assert.equal(usable("é ✓ 😀"), "é ✓ 😀");
  assert.equal(usable("a\0b"), null);
  assert.equal(usable("\ud800"), null);
  assert.equal(usable("x\udc00"), null);
});

Deno.test("planEvaluations without evaluations: one question, or 400 invalid_params naming every missing field", () => {
  const plan = planEvaluations({ subject, action, resource } as EvaluationsRequest);
  assert.deepEqual(plan, {
    items: [{ st: "user", si: "u1", rt: "document", an: "read", ri: "d1", org: null }],
    semantic: "execute_all",
    single: true,
  });
  assert.deepEqual(
    planEvaluations({ subject, action, resource, evaluations: [] } as EvaluationsRequest).single,
    true,
  );
  try {
    planEvaluations({ subject: { type: "user" }, resource } as EvaluationsRequest);
    assert.fail("a request without action and subject id was planned");
  } catch (err) {
    assert.ok(err instanceof AppError);
    assert.equal(err.code, "invalid_params");
    assert.deepEqual(err.details, [{ field: "/subject/id", issue: "required" }, {
      field: "/action",
      issue: "required",
    }]);
  }
});

Deno.test("planEvaluations with evaluations: defaults from the top level, an incomplete item marked, the semantic kept", () => {
  const plan = planEvaluations({
    subject,
    action,
    options: { evaluations_semantic: "deny_on_first_deny" },
    evaluations: [
      { resource },
      { resource: { type: "folder", id: "f\0" }, action: { name: "write" } },
      { subject: { type: "client", id: "c1" }, resource: { type: "document" } },
      {},
    ],
  } as EvaluationsRequest);
  assert.equal(plan.single, false);
  assert.equal(plan.semantic, "deny_on_first_deny");
  assert.deepEqual(plan.items, [
    { st: "user", si: "u1", rt: "document", an: "read", ri: "d1", org: null },
    { st: "user", si: "u1", rt: "folder", an: "write", ri: null, org: null },
    { missing: ["/evaluations/2/resource/id"] },
    { missing: ["/evaluations/3/resource"] },
  ]);
});

Deno.test("the organization a question is asked in: context.organization_id, else the token's; per item in a batch", () => {
  assert.equal(organizationAsked(undefined, null), null);
  assert.equal(organizationAsked(undefined, "o-token"), "o-token");
  assert.equal(organizationAsked({ organization_id: "o-1" }, "o-token"), "o-1");
  // Not a string (or unusable): no organization at all, never the token's.
  assert.equal(organizationAsked({ organization_id: 7 }, "o-token"), null);
  assert.equal(organizationAsked({ organization_id: null }, "o-token"), null);
  assert.equal(organizationAsked({ organization_id: "o\0" }, "o-token"), null);
  const plan = planEvaluations({
    subject,
    action,
    context: { organization_id: "o-top" },
    evaluations: [{ resource }, { resource, context: { organization_id: "o-own" } }, {
      resource,
      context: {},
    }],
  } as EvaluationsRequest, "o-token");
  assert.deepEqual(plan.items.map((i) => "org" in i ? i.org : undefined), ["o-top", "o-own", "o-token"]);
});
