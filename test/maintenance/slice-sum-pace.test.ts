/**
 * The pace of a due slice's sum (maintenance/slice-sum-pace.ts): spread over half the time until the
 * next slice is due, never above the cap, at the cap when the ledger is behind or the slice summed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SLICE_SUM_BUDGET_SHARE, sliceSumDuty } from '../../src/maintenance/slice-sum-pace.ts';

const DAY_S = 86_400;

test("a day's slice at 500 a second, with a day to go: a 20 ms step of 5 s of fire time every 2.5 s", () => {
  const duty = sliceSumDuty({ ms: 20, stepS: 5, leftS: DAY_S - 5 }, DAY_S, 0.1);
  assert.equal(SLICE_SUM_BUDGET_SHARE, 0.5);
  assert.ok(Math.abs(duty - 20 / 2_500) < 1e-9, `duty ${duty}`);
});

test('the pace follows the time left: half the day to go for the same fire time doubles it', () => {
  const full = sliceSumDuty({ ms: 20, stepS: 5, leftS: 40_000 }, DAY_S, 0.1);
  const half = sliceSumDuty({ ms: 20, stepS: 5, leftS: 40_000 }, DAY_S / 2, 0.1);
  assert.ok(Math.abs(half / full - 2) < 1e-9, `${half} against ${full}`);
});

test('behind, out of time, or done: the cap', () => {
  const step = { ms: 20, stepS: 5, leftS: 1_000 };
  // The next slice due already.
  assert.equal(sliceSumDuty(step, -10, 0.1), 0.1);
  assert.equal(sliceSumDuty(step, 0, 0.1), 0.1);
  // So little time that the plan would take more than the cap.
  assert.equal(sliceSumDuty(step, 1, 0.1), 0.1);
  // The slice's last step, or one that summed no fire time.
  assert.equal(sliceSumDuty({ ms: 20, stepS: 5, leftS: 0 }, DAY_S, 0.1), 0.1);
  assert.equal(sliceSumDuty({ ms: 20, stepS: 0, leftS: 1_000 }, DAY_S, 0.1), 0.1);
});

test('never more than the whole connection, whatever the cap', () => {
  assert.equal(sliceSumDuty({ ms: 5_000, stepS: 5, leftS: 5 }, 2, 1), 1);
});
