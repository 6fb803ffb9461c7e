/**
 * Cumulative bucket counts of observed values, kept the way a Prometheus histogram keeps them, in
 * constant memory: the scheduler and workers count their latencies here and the API exports them
 * as real histograms (aggregatable across processes, unlike per-process quantiles).
 */

export interface HistogramCounts {
  /** Upper bounds, ascending; the implicit last bucket is +Inf. */
  bounds: readonly number[];
  /** Observations ≤ each bound (cumulative), one per bound. */
  cumulative: number[];
  sum: number;
  count: number;
}

/** Seconds, from 1 ms to 5 min: claim and tick latencies sit low, occurrence lag can reach minutes. */
export const LATENCY_BOUNDS_S: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
];

export class BucketCounter {
  readonly #bounds: readonly number[];
  readonly #perBucket: number[];
  #sum = 0;
  #count = 0;

  constructor(bounds: readonly number[] = LATENCY_BOUNDS_S) {
    this.#bounds = bounds;
    this.#perBucket = bounds.map(() => 0);
  }

  observe(value: number): void {
    this.#sum += value;
    this.#count++;
    const i = this.#bounds.findIndex((b) => value <= b);
    if (i >= 0) this.#perBucket[i] = (this.#perBucket[i] ?? 0) + 1;
  }

  snapshot(): HistogramCounts {
    let running = 0;
    const cumulative = this.#perBucket.map((n) => (running += n));
    return { bounds: this.#bounds, cumulative, sum: this.#sum, count: this.#count };
  }
}
