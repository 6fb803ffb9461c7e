/**
 * Numbers a worker keeps in process, per queue, for the API issue to export: backlog depth (sampled
 * from the database), running, claim latency, start lag (start − run_at, the database's clock) and
 * attempt outcomes. Latencies keep the most recent 1,024 samples, enough for a p99.
 */
import { BucketCounter, type HistogramCounts } from '../histogram.ts';
import type { AttemptOutcome } from '../store/jobs.ts';

const WINDOW = 1024;

/** Recent samples (ms) for quantiles, and every sample since start in a histogram (seconds). */
class Window {
  readonly #samples: number[] = [];
  readonly #histogram = new BucketCounter();
  #next = 0;

  add(value: number): void {
    this.#histogram.observe(value / 1000);
    if (this.#samples.length < WINDOW) this.#samples.push(value);
    else this.#samples[this.#next] = value;
    this.#next = (this.#next + 1) % WINDOW;
  }

  summary(): LatencySummary {
    const sorted = [...this.#samples].sort((a, b) => a - b);
    const at = (p: number): number | null =>
      sorted.length === 0
        ? null
        : (sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? null);
    return {
      count: sorted.length,
      p50: at(0.5),
      p99: at(0.99),
      max: sorted.at(-1) ?? null,
      seconds: this.#histogram.snapshot(),
    };
  }
}

export interface LatencySummary {
  /** Samples in the window (the most recent ≤ 1,024). */
  count: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
  /** Every sample since start, in seconds. */
  seconds: HistogramCounts;
}

export interface QueueMetrics {
  queue: string;
  concurrency: number;
  running: number;
  /** Due and unclaimed, cluster-wide, as last sampled; null before the first sample. */
  backlog: number | null;
  claimed: number;
  claimLatencyMs: LatencySummary;
  startLagMs: LatencySummary;
  outcomes: Record<AttemptOutcome, number>;
}

export class QueueStats {
  readonly queue: string;
  readonly concurrency: number;
  running = 0;
  backlog: number | null = null;
  claimed = 0;
  readonly claimLatency = new Window();
  readonly startLag = new Window();
  readonly outcomes: Record<AttemptOutcome, number> = {
    succeeded: 0,
    failed: 0,
    timed_out: 0,
    cancelled: 0,
    lease_lost: 0,
    released: 0,
  };

  constructor(queue: string, concurrency: number) {
    this.queue = queue;
    this.concurrency = concurrency;
  }

  snapshot(): QueueMetrics {
    return {
      queue: this.queue,
      concurrency: this.concurrency,
      running: this.running,
      backlog: this.backlog,
      claimed: this.claimed,
      claimLatencyMs: this.claimLatency.summary(),
      startLagMs: this.startLag.summary(),
      outcomes: { ...this.outcomes },
    };
  }
}
