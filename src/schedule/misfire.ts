/**
 * Misfire: what to do with occurrences that fell due while nobody was scheduling (an outage, a
 * leader handover, a forward clock jump). Pure: the scheduler passes the schedule, the last
 * occurrence it decided on and its notion of now; it gets back which fire times to enqueue,
 * which to record as missed, and where to resume.
 *
 * Listing is bounded by `cap`: after a week-long outage an every-second schedule has 604,800 due
 * occurrences, and neither running nor recording each is useful. The plan lists the most recent
 * `cap` due occurrences (found by widening a window back from now, so the work is O(cap), not
 * O(outage)) and reports where the unlisted, older ones end so the caller can record them as one
 * summary.
 */
import type { CompiledSchedule } from './types.ts';

export const MisfirePolicy = {
  /** Run every due occurrence (the most recent `cap`). */
  all: 'all',
  /** Run only the most recent due occurrence; record the rest as missed. */
  latest: 'latest',
  /** Run only occurrences late by no more than `graceMs`; record the rest as missed. */
  skip: 'skip',
} as const;
export type MisfirePolicy = (typeof MisfirePolicy)[keyof typeof MisfirePolicy];

export const DEFAULT_MISFIRE_CAP = 100;
/** A leader handover takes up to the 10 s lease TTL plus a tick; a minute keeps that from counting as a misfire. */
export const DEFAULT_GRACE_MS = 60_000;

export interface MisfireInput {
  schedule: CompiledSchedule;
  /** The last occurrence decided on (run, skipped or missed); for a new schedule, the instant it starts counting from. */
  lastFireAt: Date;
  now: Date;
  policy: MisfirePolicy;
  /** Most due occurrences listed (run or missed). Default 100. */
  cap?: number;
  /** An occurrence later than this (now − fire time > deadline) is recorded as missed whatever the policy. */
  startingDeadlineMs?: number;
  /** For `skip`: how late an occurrence may be and still run. Default 60 s. */
  graceMs?: number;
}

export interface MisfirePlan {
  /** Fire times to enqueue, ascending. */
  run: Date[];
  /** Fire times to record as missed, ascending. */
  missed: Date[];
  /**
   * When more than `cap` occurrences were due: the older ones, in (lastFireAt, unlistedThrough],
   * are missed but not listed. Null when every due occurrence is in `run` or `missed`.
   */
  unlistedThrough: Date | null;
  /** First fire time strictly after now (the schedule's new next_fire_at), or null when it is finished. */
  next: Date | null;
}

export function planMisfire(input: MisfireInput): MisfirePlan {
  const {
    schedule,
    policy,
    cap = DEFAULT_MISFIRE_CAP,
    startingDeadlineMs,
    graceMs = DEFAULT_GRACE_MS,
  } = input;
  const last = input.lastFireAt.getTime();
  const now = input.now.getTime();
  if (!Number.isSafeInteger(cap) || cap < 1)
    throw new RangeError(`planMisfire: cap must be a positive integer, got ${cap}`);
  if (startingDeadlineMs !== undefined && !(startingDeadlineMs >= 0)) {
    throw new RangeError(`planMisfire: startingDeadlineMs must be ≥ 0, got ${startingDeadlineMs}`);
  }
  if (!(graceMs >= 0)) throw new RangeError(`planMisfire: graceMs must be ≥ 0, got ${graceMs}`);

  const { due, unlistedThrough } = mostRecentDue(schedule, last, now, cap);
  const run: Date[] = [];
  const missed: Date[] = [];
  due.forEach((t, i) => {
    const lateness = now - t;
    const pastDeadline = startingDeadlineMs !== undefined && lateness > startingDeadlineMs;
    const wanted = policy === 'all' || (policy === 'latest' ? i === due.length - 1 : lateness <= graceMs);
    (wanted && !pastDeadline ? run : missed).push(new Date(t));
  });
  return {
    run,
    missed,
    unlistedThrough: unlistedThrough === null ? null : new Date(unlistedThrough),
    next: schedule.nextAfter(input.now),
  };
}

/** The last `cap` occurrences in (last, now], widening a window back from now until it holds that many. */
function mostRecentDue(
  schedule: CompiledSchedule,
  last: number,
  now: number,
  cap: number,
): { due: number[]; unlistedThrough: number | null } {
  for (let width = 1000; ; width *= 2) {
    const from = Math.max(last, now - width);
    const due: number[] = [];
    for (
      let t = schedule.nextAfter(new Date(from));
      t !== null && t.getTime() <= now;
      t = schedule.nextAfter(t)
    ) {
      due.push(t.getTime());
    }
    if (due.length >= cap || from === last) {
      const listed = due.slice(-cap);
      const first = listed[0];
      if (first === undefined) return { due: listed, unlistedThrough: null };
      // Older due occurrences exist if the one right after `last` is not the first listed.
      const older = schedule.nextAfter(new Date(last));
      const hasOlder = older !== null && older.getTime() < first;
      return { due: listed, unlistedThrough: hasOlder ? first - 1 : null };
    }
  }
}
