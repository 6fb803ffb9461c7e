/**
 * How fast the maintenance role works through a due slice (a day of the occurrence ledger summed
 * into the rollups, the attempts, effects and keys of a slice of succeeded jobs deleted before the
 * slice is dropped): by the time it has, not as fast as it may. A day's slice of the ledger at the
 * source document's 500 occurrences a second is ~17,000 steps of ~20 ms; at the 10 % cap they fill
 * ~50 minutes, and the claim path meets a step in one job of ten. Spread over half of the day before
 * the next slice is due, the steps take ~0.8 % of a connection, and about one job in a hundred meets
 * one.
 */

/**
 * The share of the time before the next slice is due that the role plans to spend on the slice
 * before it: half, so a pass skipped or a slow step leaves room to finish.
 */
export const SLICE_PACE_BUDGET_SHARE = 0.5;

export interface SliceStepDone {
  /** Wall time the step took. */
  ms: number;
  /** How much of the slice it went through: seconds of fire time, or ids. */
  done: number;
  /** How much of the slice is left after it, in the same unit. */
  left: number;
}

/**
 * The share of a connection a step through a due slice takes, its rest included: the cycle of step
 * and rest is the step's part of what is left of the slice, times SLICE_PACE_BUDGET_SHARE of
 * `budgetS` (seconds until the next slice is due). At most `cap`, which is the pace when the role is
 * behind (the next slice due already) and after the slice's last step.
 */
export function slicePaceDuty(step: SliceStepDone, budgetS: number, cap: number): number {
  if (step.left <= 0 || step.done <= 0 || budgetS <= 0) return cap;
  const cycleMs = budgetS * 1000 * SLICE_PACE_BUDGET_SHARE * (step.done / (step.done + step.left));
  return Math.min(cap, step.ms / Math.max(cycleMs, step.ms));
}
