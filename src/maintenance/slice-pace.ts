/**
 * How fast the maintenance role works through a due slice (a day of the occurrence ledger summed
 * into the rollups, the attempts, effects and keys of a slice of succeeded jobs deleted before the
 * slice is dropped): by the time it has, not as fast as it may. A day's slice of the ledger at the
 * source document's 500 occurrences a second is ~17,000 steps of ~20 ms; at the 3 % cap they fill
 * ~3 hours, and the claim path meets a step in one job of thirty. Spread evenly over three quarters
 * of the day before the next slice is due, the steps take ~0.5 % of a connection.
 */

/**
 * The share of the time before the next slice is due that the role plans to spend on the slice
 * before it: three quarters, so a role that was down or slow for a quarter of it still finishes
 * before the next slice is due.
 */
export const SLICE_PACE_BUDGET_SHARE = 0.75;

/**
 * When the role plans to be done with a slice it starts on at `nowMs`, the next slice due in
 * `nextDueS`: a fixed deadline, so the steps spread evenly up to it. Planning each step by a share
 * of the time then left never reaches its own deadline: at a half, a quarter of a day's slice would
 * be left for the last half of the day.
 */
export function sliceDeadlineMs(nowMs: number, nextDueS: number): number {
  return nowMs + Math.max(0, nextDueS) * 1000 * SLICE_PACE_BUDGET_SHARE;
}

/**
 * When the role plans to be done with a slice of the ledger spanning `spanS` that it is behind on
 * (the next slice due already, or this one's plan run out), `due` slices due from it on. While up to
 * two are due, as a slice on plan with a whole span to go: a day's backlog is gone in three quarters
 * of a day and costs the claim path what a day on plan does. Summed at 10 % of a connection instead,
 * the steps (20-35 ms each) raised its p99 1.3-2.0× on 2 cores. Each slice due past the second
 * shortens the plan (a week's backlog is gone in about four days), never past the cap.
 */
export function sliceCatchUpDeadlineMs(nowMs: number, spanS: number, due: number): number {
  return nowMs + Math.max(0, spanS) * 1000 * sliceCatchUpShare(due);
}

/** The share of a slice's span sliceCatchUpDeadlineMs plans for a slice with `due` slices due. */
export function sliceCatchUpShare(due: number): number {
  return SLICE_PACE_BUDGET_SHARE / Math.max(1, due - 1);
}

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
 * and rest is the step's part of what is left of the slice, times `budgetS` (seconds until the
 * deadline, sliceDeadlineMs). At most `cap`, which is the pace when the role is behind (the deadline
 * passed) and after the slice's last step.
 */
export function slicePaceDuty(step: SliceStepDone, budgetS: number, cap: number): number {
  if (step.left <= 0 || step.done <= 0 || budgetS <= 0) return cap;
  const cycleMs = budgetS * 1000 * (step.done / (step.done + step.left));
  return Math.min(cap, step.ms / Math.max(cycleMs, step.ms));
}
