/**
 * The pace of the role's work through a due slice (maintenance/slice-pace.ts): spread evenly up to
 * a deadline three quarters of the way to the next slice's due time, never above the cap, at the cap
 * when the role is behind or the slice done.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SLICE_PACE_BUDGET_SHARE, sliceDeadlineMs, slicePaceDuty } from '../../src/maintenance/slice-pace.ts';

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

test('behind, out of time, or done: the cap', () => {
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
