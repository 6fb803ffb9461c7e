/**
 * The pace of the role's work through a due slice (maintenance/slice-pace.ts): spread evenly up to
 * a deadline three quarters of the way to the next slice's due time (behind on the ledger, three
 * quarters of a slice's span, less when more are due), never above the cap, at the cap when out
 * of time or done.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  SLICE_PACE_BUDGET_SHARE,
  sliceCatchUpDeadlineMs,
  sliceDeadlineMs,
  slicePaceDuty,
} from '../../src/maintenance/slice-pace.ts';

const DAY_S = 86_400;

test("a day's slice at 500 a second, the next due in a day: a 20 ms step of 5 s of fire time every 3.75 s", () => {
  assert.equal(SLICE_PACE_BUDGET_SHARE, 0.75);
  const deadline = sliceDeadlineMs(1_000, DAY_S);
  assert.equal(deadline, 1_000 + 0.75 * DAY_S * 1000);
  const duty = slicePaceDuty({ ms: 20, done: 5, left: DAY_S - 5 }, (deadline - 1_000) / 1000, 0.1);
  assert.ok(Math.abs(duty - 20 / 3_750) < 1e-9, `duty ${duty}`);
});

test('step by step, the slice goes evenly and is done by its deadline', () => {
  let nowMs = 0;
  const deadline = sliceDeadlineMs(nowMs, DAY_S);
  let left = DAY_S;
  let halfDoneAtMs: number | null = null;
  while (left > 0) {
    const done = Math.min(5, left);
    left -= done;
    nowMs += 20 / slicePaceDuty({ ms: 20, done, left }, (deadline - nowMs) / 1000, 0.1);
    if (left <= DAY_S / 2) halfDoneAtMs ??= nowMs;
  }
  // Half the slice in half the planned time, the whole of it by the deadline, not long before.
  assert.ok(
    Math.abs((halfDoneAtMs ?? 0) / deadline - 0.5) < 0.01,
    `half done at ${halfDoneAtMs} of ${deadline}`,
  );
  assert.ok(nowMs <= deadline + 1 && nowMs > 0.99 * deadline, `done at ${nowMs} of ${deadline}`);
});

test('the next slice due already: the deadline is now', () => {
  assert.equal(sliceDeadlineMs(5_000, -60), 5_000);
});

test("behind on the ledger with two slices due: a day's slice as on plan, over 18 hours", () => {
  assert.equal(sliceCatchUpDeadlineMs(1_000, DAY_S, 2), 1_000 + 18 * 3_600_000);
  // A plan that ran out with only its own slice due: planned anew alike.
  assert.equal(sliceCatchUpDeadlineMs(1_000, DAY_S, 1), 1_000 + 18 * 3_600_000);
});

test('further behind, each slice due past the second shortens the plan; the cap still bounds a step', () => {
  assert.equal(sliceCatchUpDeadlineMs(0, DAY_S, 3), 9 * 3_600_000);
  assert.equal(sliceCatchUpDeadlineMs(0, DAY_S, 8), (18 * 3_600_000) / 7);
  // A day's slice at 500 a second, 20 ms steps of 5 s, eight slices due: 3.7 % of a connection.
  const budgetS = sliceCatchUpDeadlineMs(0, DAY_S, 8) / 1000;
  const duty = slicePaceDuty({ ms: 20, done: 5, left: DAY_S - 5 }, budgetS, 0.1);
  assert.ok(Math.abs(duty - (7 * 20) / 3_750) < 1e-9, `duty ${duty}`);
  // Thirty due: the plan would take 15 %; the cap holds it to 10 %.
  assert.equal(
    slicePaceDuty({ ms: 20, done: 5, left: DAY_S - 5 }, sliceCatchUpDeadlineMs(0, DAY_S, 30) / 1000, 0.1),
    0.1,
  );
});

test('out of time, or done: the cap', () => {
  const step = { ms: 20, done: 5, left: 1_000 };
  // The deadline passed.
  assert.equal(slicePaceDuty(step, -10, 0.1), 0.1);
  assert.equal(slicePaceDuty(step, 0, 0.1), 0.1);
  // So little time that the plan would take more than the cap.
  assert.equal(slicePaceDuty(step, 1, 0.1), 0.1);
  // The slice's last step, or one that went through none of it.
  assert.equal(slicePaceDuty({ ms: 20, done: 5, left: 0 }, DAY_S, 0.1), 0.1);
  assert.equal(slicePaceDuty({ ms: 20, done: 0, left: 1_000 }, DAY_S, 0.1), 0.1);
});

test('never more than the whole connection, whatever the cap', () => {
  assert.equal(slicePaceDuty({ ms: 5_000, done: 5, left: 5 }, 2, 1), 1);
});
