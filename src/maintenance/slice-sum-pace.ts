/**
 * How fast the maintenance role sums a due slice of the occurrence ledger: by the time it has, not
 * as fast as it may. A day's slice at the source document's 500 occurrences a second is ~17,000
 * steps of ~20 ms; summed at the 10 % cap they fill ~50 minutes, and the claim path meets a step in
 * one job of ten. Spread over half of the day before the next slice is due, the steps take ~0.8 %
 * of a connection, and about one job in a hundred meets one.
 */

/**
 * The share of the time before the next slice is due that the role plans to spend on the slice
 * before it: half, so a pass skipped or a slow step leaves room to finish.
 */
export const SLICE_SUM_BUDGET_SHARE = 0.5;

export interface SliceSumStepDone {
  /** Wall time the step took. */
  ms: number;
  /** Seconds of fire time it summed. */
  stepS: number;
  /** Seconds of the slice's fire time left after it. */
  leftS: number;
}

/**
 * The share of a connection a step of a due slice's sum takes, its rest included: the cycle of step
 * and rest is the step's part of the slice's fire time left, times SLICE_SUM_BUDGET_SHARE of
 * `budgetS` (seconds until the next slice is due). At most `cap`, which is the pace when the ledger
 * is behind (the next slice due already) and after the slice's last step.
 */
export function sliceSumDuty(step: SliceSumStepDone, budgetS: number, cap: number): number {
  if (step.leftS <= 0 || step.stepS <= 0 || budgetS <= 0) return cap;
  const cycleMs = budgetS * 1000 * SLICE_SUM_BUDGET_SHARE * (step.stepS / (step.stepS + step.leftS));
  return Math.min(cap, step.ms / Math.max(cycleMs, step.ms));
}
