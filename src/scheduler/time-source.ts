/**
 * The scheduler's "now". Two sources, chosen by `--time-source`:
 *
 * - db (default): the database's clock, sampled at every lease statement and advanced between
 *   samples by the monotonic clock. A step of this host's wall clock (NTP, an operator, faketime)
 *   changes nothing; a step of the database's clock shows up as a discontinuity at the next sample.
 * - host: this process's wall clock, read at every tick. Exists so the forward/backward jump rules
 *   can be exercised on a real process with faketime, and for deployments that trust their hosts.
 *
 * Either way fire times only move forward (next_fire_at is always computed after the last decided
 * occurrence) and the unique key holds, so a clock that jumps back re-fires nothing, and one that
 * jumps forward makes occurrences late, which the misfire policy then decides on.
 */
import type { Clock } from '../clock.ts';

export const TimeSourceKind = { db: 'db', host: 'host' } as const;
export type TimeSourceKind = (typeof TimeSourceKind)[keyof typeof TimeSourceKind];

/** A jump larger than this between expected and observed time is logged as a discontinuity. */
export const JUMP_THRESHOLD_MS = 1000;

export interface Jump {
  source: TimeSourceKind;
  /** Observed minus expected: positive when the clock jumped forward. */
  deltaMs: number;
}

export class SchedulerTime {
  readonly kind: TimeSourceKind;
  readonly #clock: Clock;
  readonly #onJump: (jump: Jump) => void;
  #baseMs: number | null = null;
  #baseMono = 0;
  /** host: wall − monotonic at the previous reading, to notice steps of the wall clock. */
  #hostOffset: number | null = null;

  constructor(kind: TimeSourceKind, clock: Clock, onJump: (jump: Jump) => void) {
    this.kind = kind;
    this.#clock = clock;
    this.#onJump = onJump;
  }

  /** Feeds a reading of the database's clock taken by a statement sent at `sentMono`. */
  sampleDb(dbNow: Date, sentMono: number): void {
    const receivedMono = this.#clock.monotonicMs();
    // The server read its clock somewhere in the round trip; the midpoint halves the error.
    const atMono = (sentMono + receivedMono) / 2;
    const observed = dbNow.getTime();
    if (this.kind === 'db' && this.#baseMs !== null) {
      const expected = this.#baseMs + (atMono - this.#baseMono);
      const deltaMs = observed - expected;
      if (Math.abs(deltaMs) > JUMP_THRESHOLD_MS) this.#onJump({ source: 'db', deltaMs });
    }
    this.#baseMs = observed;
    this.#baseMono = atMono;
  }

  /** Whether now() can answer (db: after the first sample). */
  get ready(): boolean {
    return this.kind === 'host' || this.#baseMs !== null;
  }

  nowMs(): number {
    if (this.kind === 'host') {
      const wall = this.#clock.now().getTime();
      const offset = wall - this.#clock.monotonicMs();
      if (this.#hostOffset !== null && Math.abs(offset - this.#hostOffset) > JUMP_THRESHOLD_MS) {
        this.#onJump({ source: 'host', deltaMs: offset - this.#hostOffset });
      }
      this.#hostOffset = offset;
      return wall;
    }
    if (this.#baseMs === null) throw new Error('scheduler time: no database clock sample yet');
    return this.#baseMs + (this.#clock.monotonicMs() - this.#baseMono);
  }
}
