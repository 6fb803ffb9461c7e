/**
 * The pace of the role's work through a due slice (maintenance/slice-pace.ts): spread over half the time until the
 * next slice is due, never above the cap, at the cap when the ledger is behind or the slice summed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SLICE_PACE_BUDGET_SHARE, slicePaceDuty } from '../../src/maintenance/slice-pace.ts';

const DAY_S = 86_400;

test("a day's slice at 500 a second, with a day to go: a 20 ms step of 5 s of fire time every 2.5 s", () => {
  const duty = slicePaceDuty({ ms: 20, done: 5, left: DAY_S - 5 }, DAY_S, 0.1);
  assert.equal(SLICE_PACE_BUDGET_SHARE, 0.5);
  assert.ok(Math.abs(duty - 20 / 2_500) < 1e-9, `duty ${duty}`);
});

test('the pace follows the time left: half the day to go for the same fire time doubles it', () => {
  const full = slicePaceDuty({ ms: 20, done: 5, left: 40_000 }, DAY_S, 0.1);
  const half = slicePaceDuty({ ms: 20, done: 5, left: 40_000 }, DAY_S / 2, 0.1);
  assert.ok(Math.abs(half / full - 2) < 1e-9, `${half} against ${full}`);
});

test('behind, out of time, or done: the cap', () => {
  const step = { ms: 20, done: 5, left: 1_000 };
  // The next slice due already.
  assert.equal(slicePaceDuty(step, -10, 0.1), 0.1);
  assert.equal(slicePaceDuty(step, 0, 0.1), 0.1);
  // So little time that the plan would take more than the cap.
  assert.equal(slicePaceDuty(step, 1, 0.1), 0.1);
  // The slice's last step, or one that summed no fire time.
  assert.equal(slicePaceDuty({ ms: 20, done: 5, left: 0 }, DAY_S, 0.1), 0.1);
  assert.equal(slicePaceDuty({ ms: 20, done: 0, left: 1_000 }, DAY_S, 0.1), 0.1);
});

test('never more than the whole connection, whatever the cap', () => {
  assert.equal(slicePaceDuty({ ms: 5_000, done: 5, left: 5 }, 2, 1), 1);
});
