/**
 * Overlap: what an occurrence does when the previous run of the same schedule is still running
 * (Kubernetes' concurrencyPolicy, Temporal's overlap policy). Every outcome is recorded: a skipped
 * occurrence still gets its ledger row, in state skipped.
 */
export const OverlapPolicy = {
  /** Run alongside the previous run. */
  allow: 'allow',
  /** Do not run; record as skipped. */
  forbid: 'forbid',
  /** Cancel the running one, then run. */
  replace: 'replace',
  /** Run after the previous run finishes; at most one waits, later ones are skipped. */
  buffer_one: 'buffer_one',
} as const;
export type OverlapPolicy = (typeof OverlapPolicy)[keyof typeof OverlapPolicy];

export const OverlapDecision = {
  run: 'run',
  skip: 'skip',
  cancel_previous_then_run: 'cancel_previous_then_run',
  buffer: 'buffer',
} as const;
export type OverlapDecision = (typeof OverlapDecision)[keyof typeof OverlapDecision];

export interface OverlapState {
  /** A run of this schedule is in progress. */
  previousRunning: boolean;
  /** Occurrences of this schedule already buffered, waiting for the running one. */
  waiting: number;
}

export function decideOverlap(policy: OverlapPolicy, state: OverlapState): OverlapDecision {
  // A buffered occurrence that has not started yet still blocks, so a new one cannot overtake it.
  const busy = state.previousRunning || state.waiting > 0;
  if (!busy) return 'run';
  switch (policy) {
    case 'allow':
      return 'run';
    case 'forbid':
      return 'skip';
    case 'replace':
      return 'cancel_previous_then_run';
    case 'buffer_one':
      return state.waiting === 0 ? 'buffer' : 'skip';
  }
}
