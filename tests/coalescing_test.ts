/**
 * Requests asked at once share a statement, and the same gate, question or batch asked again in that moment is
 * read once for all who asked (db/batch.ts): each request still gets the answer it gets alone, never its
 * neighbour's, whether the neighbour differs by project, token, path, question or object.
 */
import assert from "node:assert/strict";
import {
  bob,
  EVALUATION,
  EVALUATIONS,
  type Fixture,
  fixture,
  ok,
  post,
  read,
  record1,
  write,
} from "./authzen_support.ts";
import { Api, http, test } from "./helpers.ts";

type Reasoned = { decision: boolean; context: { reason_admin: { code: string } } };
const pair = (e: Reasoned) => [e.decision, e.context.reason_admin.code];

/**
 * The scenario's fixture twice, told apart: in the second project bob edits records; in the first he edits
 * record-2 alone, through a grant (so questions and batches that differ only by object are answered apart).
 */
async function twoProjects(): Promise<[Fixture, Fixture]> {
  const [f, g] = await Promise.all([fixture(), fixture()]);
  await g.api.users.updateUser(g.project.id, g.bob.id, {
    display_name: "Bob",
    external_user_id: "bob",
    role_id: g.editor.id,
    is_active: true,
  });
  await f.api.grants.createGrant(f.project.id, {
    subject: { type: "user", id: f.bob.id } as Api.GrantSubject,
    role_id: f.editor.id,
    object: { type: "record", id: "record-2" },
  });
  return [f, g];
}

test("the same question asked many times at once is answered for each; the questions beside it get their own", async () => {
  const [f, g] = await twoProjects();
  const questions = [
    { subject: bob, action: write, resource: { type: "record", id: "record-2" } },
    { subject: { type: "user", id: "alice" }, action: write, resource: record1 },
    { subject: bob, action: write, resource: record1 },
    { subject: bob, action: read, resource: { type: "record", id: "record-2" } },
    { subject: { type: "user", id: "nobody" }, action: read, resource: record1 },
    { subject: bob, action: { name: "fly" }, resource: record1 },
  ];
  const tokens = [f.token, g.token];
  const ask = async (token: string, q: unknown) => pair(await ok(await post(EVALUATION, q, token)));
  const alone: unknown[][] = [];
  for (const token of tokens) for (const q of questions) alone.push(await ask(token, q));
  assert.deepEqual(alone.slice(0, 6), [
    [true, "object_grant"],
    [true, "role_permission"],
    [false, "no_permission"],
    [true, "role_permission"],
    [false, "unknown_subject"],
    [false, "unknown_action"],
  ]);
  assert.deepEqual(alone[6], [true, "role_permission"]);
  assert.deepEqual(alone[8], [true, "role_permission"]);
  // 120 at once: every question 10 times from each project's token, interleaved.
  const order = Array.from({ length: 120 }, (_, i) => ({ t: Math.floor(i / 6) % 2, q: i % 6 }));
  const together = await Promise.all(order.map(({ t, q }) => ask(tokens[t], questions[q])));
  assert.deepEqual(together, order.map(({ t, q }) => alone[t * 6 + q]));
});

test("the same gated read asked many times at once answers each its own project; another project's path is refused", async () => {
  const f = await fixture();
  const g = await fixture();
  const get = async (token: string, projectId: string) => {
    const res = await http(`/api/v1/projects/${projectId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = await res.json();
    return res.status === 200 ? [200, body.id] : [res.status, body.error];
  };
  const cases = [
    { token: f.token, path: f.project.id, want: [200, f.project.id] },
    { token: g.token, path: g.project.id, want: [200, g.project.id] },
    { token: f.token, path: g.project.id, want: [403, "insufficient_permission"] },
  ];
  const order = Array.from({ length: 90 }, (_, i) => cases[i % 3]);
  const got = await Promise.all(order.map((c) => get(c.token, c.path)));
  assert.deepEqual(got, order.map((c) => c.want));
});

test("the same batch asked many times at once is answered for each; a batch differing by one object gets its own", async () => {
  const [f, g] = await twoProjects();
  const items = [{ action: read }, { action: write }, { action: { name: "delete" } }];
  const batches = [
    { subject: bob, resource: record1, evaluations: items },
    { subject: bob, resource: { type: "record", id: "record-2" }, evaluations: items },
    {
      subject: bob,
      resource: record1,
      options: { evaluations_semantic: "deny_on_first_deny" },
      evaluations: items,
    },
  ];
  const tokens = [f.token, g.token];
  const ask = async (token: string, b: unknown) =>
    (await ok(await post(EVALUATIONS, b, token))).evaluations.map(pair);
  const alone: unknown[][] = [];
  for (const token of tokens) for (const b of batches) alone.push(await ask(token, b));
  assert.deepEqual(alone[0], [[true, "role_permission"], [false, "no_permission"], [false, "no_permission"]]);
  assert.deepEqual(alone[1], [[true, "role_permission"], [true, "object_grant"], [true, "object_grant"]]);
  assert.deepEqual(alone[2], [[true, "role_permission"], [false, "no_permission"]]);
  assert.deepEqual(alone[3], [[true, "role_permission"], [true, "role_permission"], [
    true,
    "role_permission",
  ]]);
  const order = Array.from({ length: 60 }, (_, i) => ({ t: Math.floor(i / 3) % 2, b: i % 3 }));
  const together = await Promise.all(order.map(({ t, b }) => ask(tokens[t], batches[b])));
  assert.deepEqual(together, order.map(({ t, b }) => alone[t * 3 + b]));
});
