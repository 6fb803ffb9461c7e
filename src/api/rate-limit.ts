/**
 * Per-token rate limit: a token bucket per token id, refilled by monotonic time (a wall-clock step
 * must neither block nor release a burst). Each API replica keeps its own buckets, so N replicas
 * allow up to N times the rate; a limit shared across replicas would cost a database write per
 * request, more than the requests it protects against.
 */
import type { Clock } from '../clock.ts';

interface Bucket {
  tokens: number;
  atMs: number;
}

export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Takes one request from the bucket; returns 0 when allowed, else the seconds until one is. */
  take(key: string, ratePerS: number): number {
    const now = this.#clock.monotonicMs();
    const burst = ratePerS * 2;
    const bucket = this.#buckets.get(key) ?? { tokens: burst, atMs: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.atMs) / 1000) * ratePerS);
    bucket.atMs = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerS));
  }

  forget(key: string): void {
    this.#buckets.delete(key);
  }
}
