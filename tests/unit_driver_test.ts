/** The vendored driver's patches that can be shown without a database (vendor/postgres/PATCHES.md). */
import assert from "node:assert/strict";
import Queue from "../vendor/postgres/src/queue.js";

Deno.test("driver patch 1: a queue that never empties keeps no slot of what it gave out", () => {
  const queue = Queue([{}, {}]);
  for (let i = 0; i < 100_000; i++) {
    queue.push({});
    queue.shift();
  }
  assert.equal(queue.length, 2);
  // 3.4.9 kept every taken slot until the queue emptied: 100,002 here.
  assert.ok(
    queue.capacity <= 2 * queue.length + 64,
    `the array holds ${queue.capacity} slots for 2 elements`,
  );
  const taken = queue.shift();
  assert.equal(queue.remove(taken), null, "a taken element is not found again");
});
