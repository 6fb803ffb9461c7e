/**
 * The maintenance role: deletes finished history after its retention period (retention-config.ts),
 * on one replica at a time. Start it beside each scheduler (the CLI's scheduler and dev roles do);
 * the replica holding the `maintenance` lease prunes, the others wait for it to expire.
 *
 * The lease is a term like the scheduler's (store/leases.ts): renewed while held, trusted only until
 * `sent + ttl − margin` on the monotonic clock, and every deleting statement is fenced by its epoch
 * in the database (store/retention.ts), so a replica that lost the lease without noticing deletes
 * nothing, and a new holder's first batch waits for the old holder's batch in flight to commit.
 *
 * A pass walks each table once (the jobs in three walks, #pruneJobs), in batches of `batchSize` rows
 * read, and rests between batches so that pruning takes at most `dutyCycle` of one connection's
 * time: the claim path then shares the database with one paced statement, not a stream of them. The
 * work through a due slice (a day of the ledger, a slice of succeeded jobs) rests longer: it is
 * spread evenly over three quarters of the time until the next slice is due (slice-pace.ts); a day
 * of the ledger the role is behind on, over three quarters of a day, less when more than two are due.
 */
import { ConfigError } from '../errors.ts';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { jobSliceChildrenPrune, jobSliceDropDue, jobSliceDue } from '../store/job-slice-drop.ts';
import { partitionsDetachedDrop } from '../store/partition-change.ts';
import {
  JOB_SLICE_IDS,
  jobSliceAt,
  jobSliceDropEmpty,
  jobSliceEndAfter,
  jobSliceEnsure,
  jobSlicesPastTrack,
  type BoundedSlice,
} from '../store/job-slices.ts';
import { historyRollJobs, historyRollLag, historyRollupPrune } from '../store/history-rollup.ts';
import { leaseAcquire, leaseRelease, leaseRenew } from '../store/leases.ts';
import {
  occurrenceSliceDropDue,
  occurrenceSliceDueIn,
  occurrenceSliceEnsure,
  occurrenceSliceList,
  occurrenceSliceSumStep,
  OCCURRENCE_SUM_STEP_ROWS,
  OCCURRENCE_SUM_STEP_ROWS_SPARED,
  type OccurrenceSlice,
} from '../store/occurrence-slices.ts';
import type { Fence } from '../store/occurrences.ts';
import { withMovedRowRetry, type Pool } from '../store/pool.ts';
import {
  agedPruneBatch,
  jobPruneBatch,
  occurrencePruneBatch,
  retentionCountAdd,
  workflowNodePruneBatch,
  workflowPrunedDelete,
  workflowPrunedList,
  workflowPruneMark,
  workerPruneBatch,
  type JobPruneWalk,
  type NodePruneResult,
  type WorkflowCursor,
  type WorkflowMarkResult,
} from '../store/retention.ts';
import { MaintenanceMetrics, type PrunedTable } from './metrics.ts';
import { sliceCatchUpDeadlineMs, sliceDeadlineMs, slicePaceDuty } from './slice-pace.ts';
import {
  occurrenceSliceSpanS,
  retentionPlan,
  type RetentionConfig,
  type RetentionPlan,
} from './retention-config.ts';

export interface MaintenanceOptions {
  pool: Pool;
  log: Logger;
  /** Checked at construction; a bad value throws RetentionConfigError naming the field. */
  retention?: RetentionConfig;
  /**
   * "Now" for retention cutoffs, when given (tests move it days ahead). Without it the database's
   * clock decides, as it does for leases: no host clock can make rows look older than they are.
   * The time until the next slice is due (`spreadSlices`) is read from it as real time.
   */
  clock?: Clock;
  holder?: string;
  leaseName?: string;
  leaseTtlMs?: number;
  renewEveryMs?: number;
  /** Time between the end of one pass and the next (and between a standby's lease attempts). */
  intervalMs?: number;
  /** Rows read per statement (jobs, occurrences) or deleted per statement (workflow nodes). */
  batchSize?: number;
  /** Largest share of one connection's time pruning takes; the rest of each cycle it rests. */
  dutyCycle?: number;
  /** Ids per slice of succeeded jobs (store/job-slices.ts); tests make it small. */
  sliceIds?: number;
  /**
   * Seconds of fire time per slice of the occurrence ledger (store/occurrence-slices.ts); default a
   * day, longer with a longer occurrence retention or none (occurrenceSliceSpanS).
   */
  occurrenceSliceS?: number;
  /**
   * Most wall time one pass spends summing the ledger's due slices, and as long on the attempts,
   * effects and keys of a due slice of succeeded jobs; the next pass goes on where it stopped.
   * Default 5 minutes.
   */
  sliceSumPassMs?: number;
  /**
   * Largest share of one connection's time the ledger's slice sums take; default `dutyCycle`. A due
   * slice's sum is spread evenly over three quarters of the time until the next one is due; when
   * behind (past that, or the next slice due already), over three quarters of a slice's span, less
   * when more than two are due (slice-pace.ts; docs/production.md: the claim path meets every step
   * as a burst of CPU).
   */
  sliceSumDutyCycle?: number;
  /**
   * Spread the work through a due slice (a day of the ledger summed, the attempts, effects and keys
   * of a slice of succeeded jobs deleted) evenly over three quarters of the time until the next
   * slice is due (default true; slice-pace.ts). False: at the duty cycle (`sliceSumDutyCycle` for the
   * sums), which frees the slice's disk sooner while the claim path meets a paced statement in about
   * one job of thirty.
   */
  spreadSlices?: boolean;
  /** Called after every statement that deleted rows (tests and benches observe progress). */
  onBatch?: (batch: PruneBatch) => void;
}

/** A statement that deleted rows, as onBatch sees it. */
export interface PruneBatch extends SliceProgress {
  table: PrunedTable;
  deleted: number;
  startedMs: number;
  endedMs: number;
}

/** How a statement stands to a slice of succeeded jobs dropped whole. */
interface SliceProgress {
  /**
   * Jobs of a slice to be dropped whole whose attempts, effects and keys the statement deleted: the
   * jobs go with the slice (reported even when the statement deleted no row).
   */
  sliceJobs?: number;
  /**
   * For jobs, the statement dropped a slice: `deleted` is its jobs, reported before by `sliceJobs`.
   * For occurrences, a step of a slice's sum: `deleted` is the rows it took out of the ledger's
   * readings into the rollups, reported only here (the slice itself is dropped after its last step).
   */
  wholeSlice?: boolean;
}

/** Counts what a statement deleted: metrics, retention_counts and onBatch. */
type Count = (table: PrunedTable, n: number, startedMs: number, slice?: SliceProgress) => void;

export const MAINTENANCE_DEFAULTS = {
  leaseName: 'maintenance',
  // Pruning is not urgent: a lapse of one TTL only delays it, so a longer term than the scheduler's
  // means fewer renewals and no contention for a role nobody waits on.
  leaseTtlMs: 30_000,
  renewEveryMs: 10_000,
  intervalMs: 60_000,
  // 1,000 rows per statement: a batch of succeeded jobs with their attempts took p50 17 ms, p99 86
  // ms beside a million jobs of history while a drain ran on the same 2 cores (npm run bench
  // history), no longer than the claim path's own 1,000-job batches hold their locks.
  batchSize: 1_000,
  // Rest ~32 times as long as each statement took: with a backlog pruned at this cap and switched
  // on and off every 2 s beside jobs sent at 200 a second, their p99 read 1.02× of the windows
  // without it (median of four trials; 1.16× at 10 %) on 2 cores, while a slice's children still
  // went at ~11,000 jobs a second, over 20 times the source's 500.
  dutyCycle: 0.03,
  // A day's slice at 30,000 every-minute schedules is ~17,000 steps of ~18 ms, ~50 min at 10 % of a
  // connection: summed in one pass, the rest of it (workflows, workers, aged rollups) waited as long.
  sliceSumPassMs: 300_000,
} as const;

/** Margin kept off a term's trust window for the renewal's own flight time. */
const TRUST_MARGIN_MS = 2_000;
/** How often a pass walks the jobs by id from the first one (see #pruneJobs). */
const FULL_WALK_EVERY_MS = 86_400_000;

/**
 * The succeeded jobs of a slice the ids have passed wait for the whole slice to come due when its
 * newest job will within this many seconds, and go with it: at 500 jobs a second a slice spans 5.5
 * hours, so they stay at most that long past their retention instead of going one by one at ~168 KB
 * of WAL per 1,000. A slice that spans longer (under ~115 jobs a second) is pruned row by row. The
 * occurrences of a slice of the ledger wait the same way, a day or the slice's span at most.
 */
const SLICE_WAIT_S = 86_400;

/**
 * How long before a slice of the ledger comes due its due rows wait for it: SLICE_WAIT_S, or its
 * span when longer (occurrenceSliceSpanS), else most of a long slice's rows would go one by one.
 */
function occurrenceSliceWaitS(slice: OccurrenceSlice): number {
  return slice.from === null
    ? SLICE_WAIT_S
    : Math.max(SLICE_WAIT_S, (slice.to.getTime() - slice.from.getTime()) / 1000);
}
/**
 * How long the per-minute rollups of GET /v1/history are kept: its window is a day at most, so two
 * days serve any window ending in the last one; an older window is read from the rows.
 */
const HISTORY_ROLLUP_KEEP_MS = 2 * 86_400_000;

/** Finished workflows read per marking statement; each can hold up to 100,000 nodes. */
const WORKFLOW_PAGE = 100;

export interface PassResult {
  /** False when this replica did not hold the lease, or lost it during the pass. */
  held: boolean;
  deleted: Record<PrunedTable, number>;
  durationMs: number;
}

export class Maintenance {
  readonly metrics = new MaintenanceMetrics();
  readonly holder: string;
  readonly #pool: Pool;
  readonly #log: Logger;
  readonly #plan: RetentionPlan | null;
  readonly #clock: Clock | undefined;
  readonly #leaseName: string;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #intervalMs: number;
  readonly #batchSize: number;
  readonly #dutyCycle: number;
  readonly #sliceIds: number;
  readonly #occurrenceSliceS: number;
  readonly #sliceSumPassMs: number;
  readonly #sliceSumDutyCycle: number;
  readonly #spreadSlices: boolean;
  readonly #onBatch: MaintenanceOptions['onBatch'];

  #running = false;
  /** Where the next walk of the jobs by id starts (an id it reads after), and when one last began at 0. */
  #jobCursor = 0;
  #fullWalkAtMs: number | null = null;
  /**
   * The children of a due slice of succeeded jobs deleted so far: the id the next batch starts after,
   * the jobs read (by this role and any before it: job_slice_walks), and whether they are all gone
   * (the slice's drop is next).
   */
  #children: { name: string; after: number; jobs: number; done: boolean } | null = null;
  /** The slices the ledger's sums and a job slice's children work through, and when each plans to be done. */
  #deadlines: Record<'sum' | 'children', { name: string; ms: number } | null> = { sum: null, children: null };
  #term: { epoch: number; trustedUntilMs: number } | null = null;
  #loop: Promise<void> | null = null;
  #renewTimer: NodeJS.Timeout | null = null;
  #stop = new AbortController();

  constructor(options: MaintenanceOptions) {
    this.#plan = retentionPlan(options.retention ?? {});
    this.#pool = withMovedRowRetry(options.pool);
    this.#log = options.log;
    this.#clock = options.clock;
    this.holder = options.holder ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#leaseName = options.leaseName ?? MAINTENANCE_DEFAULTS.leaseName;
    this.#ttlMs = options.leaseTtlMs ?? MAINTENANCE_DEFAULTS.leaseTtlMs;
    this.#renewMs = options.renewEveryMs ?? MAINTENANCE_DEFAULTS.renewEveryMs;
    this.#intervalMs = options.intervalMs ?? MAINTENANCE_DEFAULTS.intervalMs;
    this.#batchSize = options.batchSize ?? MAINTENANCE_DEFAULTS.batchSize;
    this.#dutyCycle = options.dutyCycle ?? MAINTENANCE_DEFAULTS.dutyCycle;
    this.#sliceIds = options.sliceIds ?? JOB_SLICE_IDS;
    this.#occurrenceSliceS = options.occurrenceSliceS ?? occurrenceSliceSpanS(this.#plan);
    this.#sliceSumPassMs = options.sliceSumPassMs ?? MAINTENANCE_DEFAULTS.sliceSumPassMs;
    this.#sliceSumDutyCycle = options.sliceSumDutyCycle ?? this.#dutyCycle;
    this.#spreadSlices = options.spreadSlices ?? true;
    this.#onBatch = options.onBatch;
    if (!(this.#renewMs < this.#ttlMs - TRUST_MARGIN_MS)) {
      throw new ConfigError(
        `renewEveryMs: ${this.#renewMs} must be shorter than leaseTtlMs (${this.#ttlMs}) minus ${TRUST_MARGIN_MS} ms`,
      );
    }
    if (!(Number.isInteger(this.#batchSize) && this.#batchSize >= 1)) {
      throw new ConfigError(`batchSize: ${this.#batchSize} is not a positive integer`);
    }
    if (!(Number.isInteger(this.#sliceIds) && this.#sliceIds >= 2)) {
      throw new ConfigError(`sliceIds: ${this.#sliceIds} is not an integer of at least 2`);
    }
    if (!(Number.isInteger(this.#occurrenceSliceS) && this.#occurrenceSliceS >= 1)) {
      throw new ConfigError(`occurrenceSliceS: ${this.#occurrenceSliceS} is not a positive integer`);
    }
    for (const [name, v] of [
      ['dutyCycle', this.#dutyCycle],
      ['sliceSumDutyCycle', this.#sliceSumDutyCycle],
    ] as const) {
      if (!(v > 0 && v <= 1)) throw new ConfigError(`${name}: ${v} must be in (0, 1]`);
    }
    if (typeof this.#spreadSlices !== 'boolean') {
      throw new ConfigError(`spreadSlices: ${JSON.stringify(this.#spreadSlices)} must be true or false`);
    }
  }

  /** Whether retention is on (false: `retention.enabled` is false, and passes do nothing). */
  get enabled(): boolean {
    return this.#plan !== null;
  }

  get isLeader(): boolean {
    return this.#term !== null;
  }

  /** Runs passes every intervalMs while this replica holds the lease; contends for it otherwise. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#stop = new AbortController();
    this.metrics.role = 'standby';
    this.#loop = this.#run();
  }

  /** Finishes the batch in flight and releases the lease, so another replica takes over at once. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#stop.abort();
    await this.#loop;
    this.#loop = null;
    await this.#release();
    this.metrics.role = 'stopped';
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * One pass now: takes the lease if it is free, prunes every table, and keeps the lease. Returns
   * what was deleted; `held` false when another replica holds the lease. What start() runs.
   */
  async runPass(): Promise<PassResult> {
    const started = performance.now();
    const deleted: Record<PrunedTable, number> = {
      jobs: 0,
      job_attempts: 0,
      job_effects: 0,
      occurrences: 0,
      workflows: 0,
      workflow_nodes: 0,
      workers: 0,
      occurrence_minutes: 0,
      occurrence_days: 0,
      queue_changes: 0,
    };
    const result = (held: boolean): PassResult => ({
      held,
      deleted,
      durationMs: performance.now() - started,
    });
    if (!(await this.#ensureTerm())) return result(false);
    if (!(await this.#ensureSlice())) return result(false);
    if (!(await this.#rollHistory())) return result(false);
    if (this.#plan === null) return result(true);
    const plan = this.#plan;
    const counts: Promise<void>[] = [];
    const count: Count = (table, n, startedMs, slice = {}) => {
      deleted[table] += n;
      this.metrics.add(table, n);
      if (n > 0 || slice.sliceJobs !== undefined) {
        this.#onBatch?.({ table, deleted: n, startedMs, endedMs: performance.now(), ...slice });
      }
      if (n > 0) counts.push(retentionCountAdd(this.#pool, table, n));
    };
    const held =
      (await this.#pruneJobs(plan, count)) &&
      (await this.#pruneOccurrences(plan, count)) &&
      (await this.#pruneWorkflows(plan, count)) &&
      (await this.#pruneWorkers(plan, count)) &&
      (await this.#pruneAged(plan, count)) &&
      (await this.#dropEmptySlices());
    await Promise.all(counts);
    this.metrics.passes++;
    this.metrics.lastPassMs = performance.now() - started;
    return result(held);
  }

  // ——— the pass ———

  /**
   * Drops the slices an earlier pass detached and stopped before dropping (partitionsDetachedDrop).
   * Attaches the next slice of succeeded jobs when the ids drawn near the last one's end, and slices
   * of the occurrence ledger ahead of the clock, and has the slices behind the newest two note when
   * a job finishes into them; false when the term was lost.
   */
  async #ensureSlice(): Promise<boolean> {
    const fence = this.#fence();
    if (fence === null) return false;
    for (const name of await partitionsDetachedDrop(this.#pool)) {
      this.#log.info({ slice: name }, 'slice left detached by an earlier pass dropped');
    }
    const o = await occurrenceSliceEnsure(this.#pool, fence, this.#now(), this.#occurrenceSliceS);
    for (const s of o.attached) {
      this.#log.info({ slice: s.name, from: s.from, to: s.to }, 'occurrence slice attached');
    }
    if (o.reason === 'fenced') {
      this.#lose(`occurrence slice attach fenced out: epoch ${fence.epoch} no longer holds the lease`);
      return false;
    }
    const r = await jobSliceEnsure(this.#pool, fence, this.#sliceIds);
    if (r.attached !== null) {
      this.#log.info(
        { slice: r.attached.name, from: r.attached.from, to: r.attached.to },
        'succeeded-jobs slice attached',
      );
    } else if (r.reason === 'fenced') {
      this.#lose(`slice attach fenced out: epoch ${fence.epoch} no longer holds the lease`);
      return false;
    }
    const past = await jobSlicesPastTrack(this.#pool, fence);
    for (const s of past.tracked) {
      this.#log.info({ slice: s.name, from: s.from, to: s.to }, 'succeeded-jobs slice now past');
    }
    if (past.reason === 'fenced') {
      this.#lose(`past slice tracking fenced out: epoch ${fence.epoch} no longer holds the lease`);
      return false;
    }
    return true;
  }

  /**
   * Rolls the settled minutes up for GET /v1/history (store/history-rollup.ts), then deletes those
   * older than HISTORY_ROLLUP_KEEP_MS, each statement followed by the duty cycle's rest; false when
   * the term was lost. Rollups are kept whether retention is on or not: they are what the charts read.
   */
  async #rollHistory(): Promise<boolean> {
    for (const roll of [historyRollJobs, historyRollLag]) {
      for (const direction of ['forward', 'back'] as const) {
        for (;;) {
          if (this.#fence() === null) return false;
          const started = performance.now();
          const r = await roll(this.#pool, direction);
          await this.#rest(started, this.#dutyCycle);
          if (r.to <= r.from) break;
        }
      }
    }
    for (;;) {
      if (this.#fence() === null) return false;
      const started = performance.now();
      const more = await historyRollupPrune(this.#pool, HISTORY_ROLLUP_KEEP_MS);
      await this.#rest(started, this.#dutyCycle);
      if (!more) break;
    }
    return true;
  }

  /** Drops the slices of succeeded jobs that retention has emptied; false when the term was lost. */
  async #dropEmptySlices(): Promise<boolean> {
    const fence = this.#fence();
    if (fence === null) return false;
    const r = await jobSliceDropEmpty(this.#pool, fence);
    if (r.reason === 'fenced') {
      this.#lose(`slice drop fenced out: epoch ${fence.epoch} no longer holds the lease`);
      return false;
    }
    for (const s of r.dropped) {
      this.#log.info({ slice: s.name, from: s.from, to: s.to }, 'emptied succeeded-jobs slice dropped');
    }
    return true;
  }

  /** The fence for the next statement, or null when the term is gone or past its trust window. */
  #fence(): Fence | null {
    const term = this.#term;
    if (term === null || this.#stop.signal.aborted) return null;
    if (performance.now() >= term.trustedUntilMs) {
      this.#lose(`term ${term.epoch} outlived its trust window without a renewal`);
      return null;
    }
    return { lease: this.#leaseName, holder: this.holder, epoch: term.epoch };
  }

  #now(): Date | null {
    return this.#clock?.now() ?? null;
  }

  /**
   * Runs one fenced statement, then rests so pruning stays within the duty cycle (a number, or one
   * read from the statement's result and wall time).
   */
  async #batch<T extends { fenced: boolean }>(
    table: PrunedTable,
    statement: (fence: Fence) => Promise<T>,
    deleted: (r: T) => number,
    count: Count,
    slice?: (r: T) => SliceProgress,
    dutyCycle: number | ((r: T, ms: number) => number) = this.#dutyCycle,
  ): Promise<T | null> {
    const fence = this.#fence();
    if (fence === null) return null;
    const started = performance.now();
    const r = await statement(fence);
    if (!r.fenced) {
      this.#lose(`${table} batch fenced out: epoch ${fence.epoch} no longer holds the lease`);
      return null;
    }
    count(table, deleted(r), started, slice?.(r));
    await this.#rest(
      started,
      typeof dutyCycle === 'number' ? dutyCycle : dutyCycle(r, performance.now() - started),
    );
    return r;
  }

  /**
   * The duty cycle of a step through a due slice that took `ms` and went through `step` of it (null:
   * unknown, or the slice's end): spread over the time until `deadlineMs` (slice-pace.ts) unless
   * spreadSlices is off, at most `cap`, and never resting past `untilMs`, the pass's time for the
   * slice: the pass goes on with the rest of its pruning, and the next one with this slice.
   * `spared`: the plan's pace is below the cap.
   */
  #slicePace(
    ms: number,
    step: { done: number; left: number } | null,
    deadlineMs: number,
    untilMs: number,
    cap: number,
  ): { duty: number; spared: boolean } {
    const planned =
      step === null || !this.#spreadSlices
        ? cap
        : slicePaceDuty({ ms, ...step }, (deadlineMs - performance.now()) / 1000, cap);
    return {
      duty: Math.max(planned, ms / (ms + Math.max(0, untilMs - performance.now()))),
      spared: planned < cap,
    };
  }

  /** Rests after a statement that began at `started`, so this role takes `dutyCycle` of a connection. */
  async #rest(started: number, dutyCycle: number): Promise<void> {
    const rest = (performance.now() - started) * (1 / dutyCycle - 1);
    if (rest >= 1) await sleep(rest, undefined, { signal: this.#stop.signal }).catch(() => undefined);
  }

  /**
   * Three walks: the dead and the cancelled jobs through their own indexes, then every job by id
   * from where the last pass found the first job it had to keep. The walks of dead and cancelled
   * jobs delete what is due of the thin layer those leave behind the walk by id (kept 30 days against
   * 7 by default: at 500 jobs a second, 10 million rows a pass by id would read again and again).
   * Once a day the walk by id starts from the first job again, for a job that was dead or cancelled
   * when it was passed and has since been re-run and succeeded.
   */
  async #pruneJobs(plan: RetentionPlan, count: Count): Promise<boolean> {
    const h = plan.jobHorizonS;
    for (const walk of ['dead', 'cancelled'] as const) {
      const horizon = h[walk];
      if (horizon !== null && (await this.#walkJobs(plan, walk, 0, horizon, count)) === null) return false;
    }
    if (h.succeeded === null) return true;
    const full = this.#fullWalkAtMs === null || performance.now() - this.#fullWalkAtMs >= FULL_WALK_EVERY_MS;
    const walked = await this.#walkJobs(plan, 'id', full ? 0 : this.#jobCursor, h.succeeded, count);
    if (walked === null) return false;
    this.#jobCursor = walked;
    if (full) this.#fullWalkAtMs = performance.now();
    return true;
  }

  /**
   * One walk from `afterId`; returns where the next walk by id may start (just before the first job
   * it kept that is neither dead nor cancelled, else after the last one read), or null when the term
   * was lost.
   */
  async #walkJobs(
    plan: RetentionPlan,
    walk: JobPruneWalk,
    from: number,
    horizon: number,
    count: Count,
  ): Promise<number | null> {
    let afterId = from;
    let firstKept: number | null = null;
    let checked: string | null = null;
    for (;;) {
      // The walk by id drops a slice whole where every job in it is due, else deletes row by row.
      const dueS = walk === 'id' ? plan.sliceDueS : null;
      const slice = dueS === null ? null : await jobSliceAt(this.#pool, afterId);
      if (dueS !== null && slice !== null && slice.name !== checked) {
        checked = slice.name;
        const whole = await this.#dropSliceDue(dueS, slice, count);
        if (whole === 'lost') return null;
        if (whole === 'later') return firstKept === null ? afterId : firstKept - 1;
        if (whole === 'wait') firstKept ??= slice.from ?? 1;
        if (whole !== 'rows') {
          afterId = whole === 'wait' ? slice.to - 1 : whole;
          continue;
        }
      }
      const cursor = afterId;
      // The walk by id goes a slice of succeeded jobs at a time (jobPruneBatch's `below`); the dead
      // and cancelled walks read jobs_ended alone.
      const below = walk === 'id' ? await jobSliceEndAfter(this.#pool, cursor) : null;
      const r = await this.#batch(
        'jobs',
        (fence) =>
          jobPruneBatch(
            this.#pool,
            fence,
            this.#now(),
            plan.policy,
            walk,
            cursor,
            this.#batchSize,
            horizon,
            below,
          ),
        (r) => r.deleted,
        count,
      );
      if (r === null) return null;
      count('job_attempts', r.attempts, performance.now());
      count('job_effects', r.effects, performance.now());
      if (firstKept === null && r.firstKept !== null) firstKept = r.firstKept;
      afterId = r.lastId;
      if (!r.more || r.young) return firstKept === null ? afterId : firstKept - 1;
    }
  }

  /**
   * Drops `slice` whole if every job in it is due (store/job-slice-drop.ts): its jobs' attempts,
   * effects and keys first, paced as batches, then the slice. Returns the last id it covered; `wait`
   * when it will be due within SLICE_WAIT_S (its rows wait for it), `rows` when it will not (the
   * walk deletes its rows), `later` when jobs_done was busy (the next pass tries again), `lost` when
   * the term was.
   */
  async #dropSliceDue(
    retentionS: number,
    slice: BoundedSlice,
    count: Count,
  ): Promise<number | 'rows' | 'wait' | 'later' | 'lost'> {
    const due = await jobSliceDue(this.#pool, slice, this.#now(), retentionS);
    if (!due.closed || due.dueInS > SLICE_WAIT_S) return 'rows';
    if (due.dueInS > 0) return 'wait';
    const jobs = await this.#pruneSliceChildren(retentionS, slice, count);
    if (jobs === 'lost' || jobs === 'later') return jobs;
    const fence = this.#fence();
    if (fence === null) return 'lost';
    const started = performance.now();
    const dropped = await jobSliceDropDue(this.#pool, fence, slice, this.#now(), retentionS);
    if (dropped === 'fenced') {
      this.#lose(`slice drop fenced out: epoch ${fence.epoch} no longer holds the lease`);
      return 'lost';
    }
    if (dropped === 'busy') return 'later';
    this.#children = null;
    if (dropped === 'kept') return 'rows';
    count('jobs', jobs, started, { wholeSlice: true });
    this.#log.info({ slice: slice.name, jobs }, 'succeeded-jobs slice dropped whole, every job in it due');
    return slice.to - 1;
  }

  /**
   * Deletes the attempts, effects and keys of the jobs of `slice`, due whole, going on from where an
   * earlier pass, or an earlier role, stopped: paced by the time until the next slice is due
   * (slice-pace.ts), for at most sliceSumPassMs of the pass. Returns how many jobs the slice holds
   * once they are all gone; `later` when the pass's time for them is up; `lost` when the term was.
   */
  async #pruneSliceChildren(
    retentionS: number,
    slice: BoundedSlice,
    count: Count,
  ): Promise<number | 'later' | 'lost'> {
    if (this.#children?.name !== slice.name) {
      this.#children = {
        name: slice.name,
        after: slice.from === null ? 0 : slice.from - 1,
        jobs: 0,
        done: false,
      };
    }
    const progress = this.#children;
    // A drop that found jobs_done busy left the children deleted: no job in the slice gains one since.
    if (progress.done) return progress.jobs;
    const until = performance.now() + this.#sliceSumPassMs;
    const deadlineMs = await this.#deadline('children', slice.name, () =>
      this.#nextSliceDueS(slice, retentionS),
    );
    for (;;) {
      const cursor = progress.after;
      const r = await this.#batch(
        'job_attempts',
        (fence) => jobSliceChildrenPrune(this.#pool, fence, slice, cursor, this.#batchSize),
        (r) => r.attempts,
        count,
        (r) => ({ sliceJobs: r.jobs }),
        (r, ms) =>
          this.#slicePace(
            ms,
            r.jobs < this.#batchSize ? null : { done: r.lastId - r.startId, left: slice.to - 1 - r.lastId },
            deadlineMs,
            until,
            this.#dutyCycle,
          ).duty,
      );
      if (r === null) return 'lost';
      count('job_effects', r.effects, performance.now());
      progress.jobs = r.walked;
      progress.after = r.lastId;
      if (r.jobs < this.#batchSize) {
        progress.done = true;
        return progress.jobs;
      }
      if (performance.now() >= until) return 'later';
    }
  }

  /**
   * When the work of `kind` through slice `name` plans to be done (sliceDeadlineMs): planned once, at
   * its first step in this role with time to spare, so the steps go evenly up to it. Behind (no time
   * to spare: `nextDueS` none, the next slice not closed or due already), the ledger's sums plan a
   * catch-up for `due` slices due (sliceCatchUpDeadlineMs), planned again whenever one passes; a
   * slice of jobs' children goes at the cap (0), as everything does with spreadSlices off.
   */
  async #deadline(
    kind: 'sum' | 'children',
    name: string,
    nextDueS: () => Promise<number>,
    due = 1,
  ): Promise<number> {
    const planned = this.#deadlines[kind];
    const now = performance.now();
    const passed = planned?.name === name && planned.ms <= now;
    if (planned?.name === name && (kind === 'children' || !passed)) return planned.ms;
    if (!this.#spreadSlices) return 0;
    const s = passed ? 0 : await nextDueS();
    if (s <= 0 && kind === 'children') return 0;
    const ms = s > 0 ? sliceDeadlineMs(now, s) : sliceCatchUpDeadlineMs(now, this.#occurrenceSliceS, due);
    this.#deadlines[kind] = { name, ms };
    return ms;
  }

  /**
   * Seconds until the slice after `slice` is due whole: the time the role has for `slice`'s children.
   * 0 (none to spare) when that slice is not closed yet, or there is none.
   */
  async #nextSliceDueS(slice: BoundedSlice, retentionS: number): Promise<number> {
    const next = await jobSliceAt(this.#pool, slice.to - 1);
    if (next === null) return 0;
    const due = await jobSliceDue(this.#pool, next, this.#now(), retentionS);
    return due.closed ? due.dueInS : 0;
  }

  /**
   * Drops the slices of the ledger that are due whole, oldest first, then walks the rows no slice
   * drop will take soon: those of the default partition, and of the slices from the first that is
   * not due within its wait (occurrenceSliceWaitS) on (all of them when an override keeps occurrences
   * longer).
   */
  async #pruneOccurrences(plan: RetentionPlan, count: Count): Promise<boolean> {
    const horizon = plan.occurrenceHorizonS;
    if (horizon === null) return true;
    const wholeS = plan.occurrenceSliceDueS;
    const from = wholeS === null ? null : await this.#dropOccurrenceSlices(wholeS, count);
    if (from === 'lost') return false;
    let afterId = 0;
    for (;;) {
      const r = await this.#batch(
        'occurrences',
        (fence) =>
          occurrencePruneBatch(
            this.#pool,
            fence,
            this.#now(),
            plan.policy,
            afterId,
            this.#batchSize,
            horizon,
            from,
          ),
        (r) => r.deleted,
        count,
      );
      if (r === null) return false;
      if (r.scanned < this.#batchSize || r.young) return true;
      afterId = r.lastId;
    }
  }

  /**
   * Sums into the rollups, step by paced step, and then drops each due slice of the ledger, oldest
   * first, for at most sliceSumPassMs of the pass. Returns the fire time from which the rows are the
   * walk's: the end of the last slice that is due or comes due within its wait (its rows wait
   * for it), null when there is none; `lost` when the term was.
   */
  async #dropOccurrenceSlices(retentionS: number, count: Count): Promise<Date | null | 'lost'> {
    const until = performance.now() + this.#sliceSumPassMs;
    const slices = await occurrenceSliceList(this.#pool);
    const dueIn = await occurrenceSliceDueIn(this.#pool, slices, this.#now(), retentionS);
    let from: Date | null = null;
    // Slices are summed oldest first: one that is not dropped holds back those after it.
    let held = false;
    for (const [i, slice] of slices.entries()) {
      const s = dueIn[i] ?? Infinity;
      if (s > occurrenceSliceWaitS(slice)) break;
      from = slice.to;
      if (s > 0 || held) continue;
      // None attached after it yet: no time to spare.
      const nextDueS = dueIn[i + 1] ?? 0;
      const due = dueIn.slice(i).filter((d) => d <= 0).length;
      const deadlineMs = await this.#deadline('sum', slice.name, () => Promise.resolve(nextDueS), due);
      let rows = 0;
      let summed = false;
      // Short steps while the plan's pace is below the cap, long ones (a third less a row) at it.
      let spared = this.#spreadSlices;
      for (;;) {
        const stepRows = spared ? OCCURRENCE_SUM_STEP_ROWS_SPARED : OCCURRENCE_SUM_STEP_ROWS;
        const step = await this.#batch(
          'occurrences',
          (fence) => occurrenceSliceSumStep(this.#pool, fence, slice, this.#now(), retentionS, stepRows),
          (r) => r.rows ?? 0,
          count,
          () => ({ wholeSlice: true }),
          (r, ms) => {
            const pace = this.#slicePace(
              ms,
              r.span === undefined ? null : { done: r.span.stepS, left: r.span.leftS },
              deadlineMs,
              until,
              this.#sliceSumDutyCycle,
            );
            spared = pace.spared;
            return pace.duty;
          },
        );
        if (step === null) return 'lost';
        rows += step.rows ?? 0;
        summed = step.summed;
        if (summed || step.rows === null || performance.now() >= until) break;
      }
      // Busy, or the pass's time for summing is up: the slice waits for the next pass, its rows
      // summed so far out of reach.
      if (!summed) {
        held = true;
        continue;
      }
      const r = await this.#batch(
        'occurrences',
        (fence) => occurrenceSliceDropDue(this.#pool, fence, slice, this.#now(), retentionS),
        () => 0,
        count,
      );
      if (r === null) return 'lost';
      // The ledger was busy: the same, summed whole.
      if (!r.dropped) {
        held = true;
        continue;
      }
      this.#log.info({ slice: slice.name, rows }, 'occurrence slice summed and dropped, every row in it due');
    }
    return from;
  }

  async #pruneWorkflows(plan: RetentionPlan, count: Count): Promise<boolean> {
    const horizon = plan.workflowHorizonS;
    if (horizon !== null) {
      let after: WorkflowCursor | null = null;
      for (;;) {
        const cursor: WorkflowCursor | null = after;
        const r: WorkflowMarkResult | null = await this.#batch(
          'workflows',
          (fence) =>
            workflowPruneMark(this.#pool, fence, this.#now(), plan.policy, cursor, WORKFLOW_PAGE, horizon),
          () => 0,
          count,
        );
        if (r === null) return false;
        if (r.scanned < WORKFLOW_PAGE || r.last === null) break;
        after = r.last;
      }
    }
    // Marked workflows, this pass's and any a previous holder left half-deleted.
    for (;;) {
      const ids = await workflowPrunedList(this.#pool, WORKFLOW_PAGE);
      for (const id of ids) {
        let afterKey: string | null = null;
        for (;;) {
          const key: string | null = afterKey;
          const r: NodePruneResult | null = await this.#batch(
            'workflow_nodes',
            (fence) => workflowNodePruneBatch(this.#pool, fence, id, key, this.#batchSize),
            (r) => r.deleted,
            count,
          );
          if (r === null) return false;
          if (r.deleted < this.#batchSize || r.lastKey === null) break;
          afterKey = r.lastKey;
        }
        const done = await this.#batch(
          'workflows',
          (fence) => workflowPrunedDelete(this.#pool, fence, id),
          (r) => (r.deleted ? 1 : 0),
          count,
        );
        if (done === null) return false;
      }
      if (ids.length < WORKFLOW_PAGE) return true;
    }
  }

  async #pruneWorkers(plan: RetentionPlan, count: Count): Promise<boolean> {
    const retentionS = plan.workersS;
    if (retentionS === null) return true;
    for (;;) {
      const r = await this.#batch(
        'workers',
        (fence) => workerPruneBatch(this.#pool, fence, this.#now(), retentionS, this.#batchSize),
        (r) => r.deleted,
        count,
      );
      if (r === null) return false;
      if (r.deleted < this.#batchSize) return true;
    }
  }

  /** The lateness rollups and the queues' audit trail, by age alone; false when the term was lost. */
  async #pruneAged(plan: RetentionPlan, count: Count): Promise<boolean> {
    const tables = [
      ['occurrence_minutes', plan.rollupsS],
      ['occurrence_days', plan.rollupsS],
      ['queue_changes', plan.auditS],
    ] as const;
    for (const [table, retentionS] of tables) {
      if (retentionS === null) continue;
      for (;;) {
        const r = await this.#batch(
          table,
          (fence) => agedPruneBatch(this.#pool, fence, this.#now(), table, retentionS, this.#batchSize),
          (r) => r.deleted,
          count,
        );
        if (r === null) return false;
        if (r.deleted < this.#batchSize) break;
      }
    }
    return true;
  }

  // ——— the lease ———

  async #run(): Promise<void> {
    while (this.#running) {
      try {
        const pass = await this.runPass();
        if (pass.held && Object.values(pass.deleted).some((n) => n > 0)) {
          this.#log.info({ deleted: pass.deleted, ms: Math.round(pass.durationMs) }, 'retention pass');
        }
      } catch (error) {
        this.#log.warn({ err: error }, 'retention pass failed; retrying after the interval');
      }
      if (!this.#running) return;
      await sleep(this.#intervalMs, undefined, { signal: this.#stop.signal }).catch(() => undefined);
    }
  }

  /** Holds a trusted term on return true: the current one, or a newly acquired one. */
  async #ensureTerm(): Promise<boolean> {
    if (this.#term !== null && performance.now() < this.#term.trustedUntilMs) return true;
    if (this.#term !== null) this.#lose(`term ${this.#term.epoch} outlived its trust window`);
    const sent = performance.now();
    try {
      const term = await leaseAcquire(this.#pool, this.#leaseName, this.holder, this.#ttlMs);
      if (term === null) return false;
      this.#term = { epoch: term.epoch, trustedUntilMs: sent + this.#ttlMs - TRUST_MARGIN_MS };
      // Another replica may have pruned meanwhile: the first walk by id of a term starts at the first job.
      this.#fullWalkAtMs = null;
    } catch (error) {
      this.#log.warn({ err: error }, 'maintenance lease acquire failed');
      return false;
    }
    this.metrics.role = 'leader';
    this.metrics.epoch = this.#term.epoch;
    this.#log.info({ epoch: this.#term.epoch, holder: this.holder }, 'maintenance lease taken');
    this.#renewTimer = setInterval(() => void this.#renew(), this.#renewMs);
    this.#renewTimer.unref();
    return true;
  }

  async #renew(): Promise<void> {
    const term = this.#term;
    if (term === null) return;
    const sent = performance.now();
    try {
      const renewed = await leaseRenew(this.#pool, this.#leaseName, this.holder, term.epoch, this.#ttlMs);
      if (this.#term !== term) return;
      if (renewed === null) {
        this.#lose(`lease lost: epoch ${term.epoch} is no longer held by ${this.holder}`);
        return;
      }
      term.trustedUntilMs = sent + this.#ttlMs - TRUST_MARGIN_MS;
    } catch (error) {
      // Not fatal: the term stays trusted until its window ends, and the next renewal may succeed.
      this.#log.warn({ err: error }, 'maintenance lease renewal failed');
    }
  }

  #lose(reason: string): void {
    if (this.#term === null) return;
    this.#log.warn({ reason }, 'maintenance lease lost; standing by');
    this.#term = null;
    this.metrics.role = 'standby';
    this.metrics.epoch = null;
    if (this.#renewTimer !== null) clearInterval(this.#renewTimer);
    this.#renewTimer = null;
  }

  async #release(): Promise<void> {
    const term = this.#term;
    if (term === null) return;
    this.#lose('stopped');
    try {
      await leaseRelease(this.#pool, this.#leaseName, this.holder, term.epoch);
    } catch (error) {
      this.#log.warn(
        { err: error },
        'maintenance lease release failed; another replica takes over when it expires',
      );
    }
  }
}
