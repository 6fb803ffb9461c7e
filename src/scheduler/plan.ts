/**
 * From a due schedule to its ledger rows: which occurrences run, which are missed (misfire policy,
 * starting deadline) and which are skipped (overlap policy), and where the schedule resumes. Pure:
 * the time core (src/schedule/) makes each decision; this file only turns them into rows.
 */
import {
  compileSchedule,
  decideOverlap,
  DEFAULT_GRACE_MS,
  jitterOffsetMs,
  planMisfire,
  type CompiledSchedule,
} from '../schedule/index.ts';
import type { OccurrenceInput, ScheduleAdvance } from '../store/occurrences.ts';
import type { ScheduleRow } from '../store/schedules.ts';
import type { ScheduledJobActivity } from '../store/scheduled-jobs.ts';

/** A schedule as the leader holds it: the row and its compiled time rule. */
export interface CachedSchedule {
  row: ScheduleRow;
  compiled: CompiledSchedule;
}

export function compileRow(row: ScheduleRow): CompiledSchedule {
  return compileSchedule({
    spec: row.spec,
    timeZone: row.timeZone,
    dstGap: row.dstGap,
    dstOverlap: row.dstOverlap ?? undefined,
    anchor: row.anchorAt,
  });
}

/** The job key of a scheduled occurrence: the same on every attempt by every leader. */
export function occurrenceKey(scheduleId: string, fireAt: Date): string {
  return `occurrence:${scheduleId}:${fireAt.toISOString()}`;
}

export interface SchedulePlan {
  items: OccurrenceInput[];
  advance: ScheduleAdvance;
  /** Lateness of each enqueued occurrence at decision time, for the lag metric. */
  lagsMs: number[];
}

/**
 * Plans one due schedule at `nowMs`. `activity` is its queued/running jobs (needed only when the
 * overlap policy is not `allow`).
 */
export function planSchedule(
  s: CachedSchedule,
  nowMs: number,
  activity: ScheduledJobActivity | undefined,
): SchedulePlan {
  const { row, compiled } = s;
  if (row.nextFireAt === null) throw new Error(`schedule ${row.id}: planned without a next fire time`);
  const now = new Date(nowMs);
  // next_fire_at is the first undecided occurrence (a resume moves it past the paused stretch, so
  // last_fire_at is not the place to count from).
  const plan = planMisfire({
    schedule: compiled,
    lastFireAt: new Date(row.nextFireAt.getTime() - 1),
    now,
    policy: row.misfirePolicy,
    cap: row.misfireCap,
    startingDeadlineMs: row.startingDeadlineMs ?? undefined,
  });
  const items: OccurrenceInput[] = [];
  const lagsMs: number[] = [];
  let lastFireAt = new Date(row.nextFireAt.getTime() - 1);
  const base = { scheduleId: row.id, version: row.version, source: 'schedule' as const };

  if (plan.unlistedThrough !== null) {
    items.push({
      ...base,
      fireAt: plan.unlistedThrough,
      state: 'missed',
      reason: `misfire cap ${row.misfireCap}: every occurrence from ${row.nextFireAt.toISOString()} through this instant was missed and is not listed`,
      runAt: null,
      idempotencyKey: null,
      cancelPrevious: false,
    });
    lastFireAt = plan.unlistedThrough;
  }
  for (const fireAt of plan.missed) {
    items.push({
      ...base,
      fireAt,
      state: 'missed',
      reason: missedReason(row, nowMs - fireAt.getTime()),
      runAt: null,
      idempotencyKey: null,
      cancelPrevious: false,
    });
  }
  // A run awaiting its retry has begun and not finished: it blocks like a running one.
  let running = (activity?.running ?? 0) + (activity?.retrying ?? 0) > 0;
  const busyAs = (activity?.running ?? 0) > 0 ? 'running' : 'awaiting a retry';
  let waiting = activity?.waiting ?? 0;
  for (const fireAt of plan.run) {
    const decision = decideOverlap(row.overlapPolicy, { previousRunning: running, waiting });
    if (decision === 'skip') {
      items.push({
        ...base,
        fireAt,
        state: 'skipped',
        reason: `overlap policy ${row.overlapPolicy}: the previous run is still ${running ? busyAs : 'queued'}`,
        runAt: null,
        idempotencyKey: null,
        cancelPrevious: false,
      });
      continue;
    }
    items.push({
      ...base,
      fireAt,
      state: 'enqueued',
      reason: decision === 'run' ? null : `overlap policy ${row.overlapPolicy}: ${decision}`,
      runAt: new Date(fireAt.getTime() + jitterOffsetMs(row.id, row.jitterMs)),
      idempotencyKey: occurrenceKey(row.id, fireAt),
      cancelPrevious: decision === 'cancel_previous_then_run',
    });
    lagsMs.push(nowMs - fireAt.getTime());
    if (decision === 'cancel_previous_then_run') running = false;
    waiting++;
  }
  for (const item of items) if (item.fireAt > lastFireAt) lastFireAt = item.fireAt;
  items.sort((a, b) => a.fireAt.getTime() - b.fireAt.getTime());
  return {
    items,
    advance: { scheduleId: row.id, version: row.version, nextFireAt: plan.next, lastFireAt },
    lagsMs,
  };
}

/** What planBackfill decides: the occurrences to write, or that the range holds too many. */
export type BackfillPlan =
  | { items: OccurrenceInput[]; fireTimes: Date[] }
  /** More than `cap` fire times fall in the range; the most recent `cap` start at `lastCapFrom`. */
  | { overflow: true; lastCapFrom: Date };

/**
 * The occurrences a backfill of [from, to) writes: every fire time of the schedule in the range (its
 * cron, interval and DST rules, in its zone), enqueued. It is the misfire plan of a scheduler that
 * was away for exactly that range, with policy `all`: the operator asked for each of them, so neither
 * the schedule's own misfire policy nor its starting deadline (every one is late by design) nor its
 * overlap policy (which would skip all but the first of a range and so spend the rest) applies.
 */
export function planBackfill(s: CachedSchedule, from: Date, to: Date, cap: number): BackfillPlan {
  const { row, compiled } = s;
  // planMisfire lists fire times in (lastFireAt, now]: (from − 1 ms, to − 1 ms] is [from, to) for
  // fire times on whole milliseconds, which every kind of schedule has.
  const plan = planMisfire({
    schedule: compiled,
    lastFireAt: new Date(from.getTime() - 1),
    now: new Date(to.getTime() - 1),
    policy: 'all',
    cap,
  });
  const first = plan.run[0];
  if (plan.unlistedThrough !== null && first !== undefined) return { overflow: true, lastCapFrom: first };
  const items = plan.run.map((fireAt): OccurrenceInput => ({
    scheduleId: row.id,
    version: row.version,
    fireAt,
    state: 'enqueued',
    reason: 'backfill',
    runAt: new Date(fireAt.getTime() + jitterOffsetMs(row.id, row.jitterMs)),
    idempotencyKey: occurrenceKey(row.id, fireAt),
    source: 'backfill',
    cancelPrevious: false,
  }));
  return { items, fireTimes: plan.run };
}

/** A schedule planned before its fire time, as of that fire time (planAhead). */
export interface AheadPlan {
  version: number;
  dueMs: number;
  plan: SchedulePlan;
}

/**
 * Plans a schedule that is not yet due as of its next fire time, so that at the fire time only the
 * write is left to do. Only overlap policy `allow`: the others decide on the jobs still running at
 * the fire time, which are not known before it. Null when it cannot be planned ahead.
 */
export function planAhead(s: CachedSchedule): AheadPlan | null {
  const { row } = s;
  if (row.overlapPolicy !== 'allow' || row.nextFireAt === null) return null;
  const dueMs = row.nextFireAt.getTime();
  return { version: row.version, dueMs, plan: planSchedule(s, dueMs, undefined) };
}

/**
 * The plan made ahead for `row`, if planning it at `nowMs` would give the same rows; else null. As of
 * its fire time the plan runs that one occurrence and resumes at the next. At `nowMs`, up to that
 * next fire time, the same occurrence is the only one due, and it still runs unless it is now past
 * its starting deadline or (misfire policy skip) the grace. Only the lag differs: measured at `nowMs`.
 */
export function aheadPlanAt(ahead: AheadPlan, row: ScheduleRow, nowMs: number): SchedulePlan | null {
  if (ahead.version !== row.version || ahead.dueMs !== row.nextFireAt?.getTime()) return null;
  const late = nowMs - ahead.dueMs;
  const next = ahead.plan.advance.nextFireAt;
  if (late < 0 || (next !== null && nowMs >= next.getTime())) return null;
  if (row.startingDeadlineMs !== null && late > row.startingDeadlineMs) return null;
  if (row.misfirePolicy === 'skip' && late > DEFAULT_GRACE_MS) return null;
  const lagsMs = ahead.plan.items
    .filter((i) => i.state === 'enqueued')
    .map((i) => nowMs - i.fireAt.getTime());
  return { ...ahead.plan, lagsMs };
}

function missedReason(row: ScheduleRow, latenessMs: number): string {
  const late = `${(latenessMs / 1000).toFixed(1)} s late`;
  if (row.startingDeadlineMs !== null && latenessMs > row.startingDeadlineMs) {
    return `starting deadline ${row.startingDeadlineMs} ms passed (${late})`;
  }
  return `misfire policy ${row.misfirePolicy} (${late})`;
}
