/**
 * Scheduler metrics kept in process, for the API issue to export (Prometheus). Samples are kept in
 * fixed rings so a long-running leader uses constant memory; percentiles are over the last ring.
 */
import { BucketCounter, type HistogramCounts } from '../histogram.ts';

export const SchedulerRole = {
  starting: 'starting',
  standby: 'standby',
  leader: 'leader',
  stopped: 'stopped',
  lost: 'lost',
} as const;
export type SchedulerRole = (typeof SchedulerRole)[keyof typeof SchedulerRole];

class Ring {
  readonly #values: Float64Array;
  #next = 0;
  #count = 0;

  constructor(size: number) {
    this.#values = new Float64Array(size);
  }

  push(value: number): void {
    this.#values[this.#next] = value;
    this.#next = (this.#next + 1) % this.#values.length;
    this.#count = Math.min(this.#count + 1, this.#values.length);
  }

  percentile(p: number): number | null {
    if (this.#count === 0) return null;
    const sorted = Array.from(this.#values.subarray(0, this.#count)).sort((a, b) => a - b);
    const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
    return sorted[rank] ?? null;
  }
}

export interface SchedulerMetricsSnapshot {
  role: SchedulerRole;
  epoch: number | null;
  ticks: number;
  /** Occurrence rows written (enqueued, skipped or missed) by this process. */
  occurrences: number;
  jobsEnqueued: number;
  /** Occurrences another writer had already written (unique key hit). */
  conflicts: number;
  /** Due entries dropped because the schedule had changed (version) or gone. */
  stale: number;
  /** Due schedules written with the plan made before their fire time (planAheadMs). */
  plannedAhead: number;
  lastTickOccurrences: number;
  tickMs: { p50: number | null; p99: number | null; max: number };
  /** Materialised time − fire time, over the last 65,536 enqueued occurrences. */
  lagMs: { p50: number | null; p99: number | null; max: number };
  /** Every tick and every occurrence since the process started, in seconds (Prometheus histograms). */
  tickSeconds: HistogramCounts;
  lagSeconds: HistogramCounts;
}

export class SchedulerMetrics {
  role: SchedulerRole = 'starting';
  epoch: number | null = null;
  ticks = 0;
  occurrences = 0;
  jobsEnqueued = 0;
  conflicts = 0;
  stale = 0;
  plannedAhead = 0;
  lastTickOccurrences = 0;
  readonly #tick = new Ring(4096);
  readonly #lag = new Ring(65_536);
  readonly #tickSeconds = new BucketCounter();
  readonly #lagSeconds = new BucketCounter();
  #tickMax = 0;
  #lagMax = 0;

  recordTick(durationMs: number, occurrences: number): void {
    this.ticks++;
    this.lastTickOccurrences = occurrences;
    this.#tick.push(durationMs);
    this.#tickSeconds.observe(durationMs / 1000);
    this.#tickMax = Math.max(this.#tickMax, durationMs);
  }

  recordLag(lagMs: number): void {
    this.#lag.push(lagMs);
    this.#lagSeconds.observe(lagMs / 1000);
    this.#lagMax = Math.max(this.#lagMax, lagMs);
  }

  snapshot(): SchedulerMetricsSnapshot {
    return {
      role: this.role,
      epoch: this.epoch,
      ticks: this.ticks,
      occurrences: this.occurrences,
      jobsEnqueued: this.jobsEnqueued,
      conflicts: this.conflicts,
      stale: this.stale,
      plannedAhead: this.plannedAhead,
      lastTickOccurrences: this.lastTickOccurrences,
      tickMs: { p50: this.#tick.percentile(50), p99: this.#tick.percentile(99), max: this.#tickMax },
      lagMs: { p50: this.#lag.percentile(50), p99: this.#lag.percentile(99), max: this.#lagMax },
      tickSeconds: this.#tickSeconds.snapshot(),
      lagSeconds: this.#lagSeconds.snapshot(),
    };
  }
}
