/**
 * Time is injected, never read ad hoc: wall time positions fire times, monotonic time measures
 * intervals and timeouts. Tests pass a `FakeClock` to move either one at will.
 */
import { performance } from 'node:perf_hooks';

export interface Clock {
  /** Wall-clock time: only for positioning schedules, never for measuring durations. */
  now(): Date;
  /** Milliseconds from an arbitrary origin that never jumps; for intervals, timeouts and deadlines. */
  monotonicMs(): number;
}

export const systemClock: Clock = {
  now: () => new Date(),
  monotonicMs: () => performance.now(),
};

export class FakeClock implements Clock {
  #wallMs: number;
  #monotonicMs = 0;

  constructor(start: Date) {
    this.#wallMs = start.getTime();
  }

  now(): Date {
    return new Date(this.#wallMs);
  }

  monotonicMs(): number {
    return this.#monotonicMs;
  }

  /** Time passes: both clocks move together. */
  advance(ms: number): void {
    this.#wallMs += ms;
    this.#monotonicMs += ms;
  }

  /** The wall clock jumps (NTP step, operator error); monotonic time does not. */
  jumpWall(ms: number): void {
    this.#wallMs += ms;
  }
}
