/**
 * The timing-wheel due index: hierarchical, LEVELS wheels of 64 slots, the finest slot
 * `resolutionMs` wide (Varghese & Lauck's scheme, as in the classic Linux timer wheel). Insert and
 * cancel are O(1) with no comparisons; an entry rides down a level each time the finer wheel
 * wraps. Entries beyond the top wheel's span wait in a small heap ("far") until they come in range.
 *
 * Precision: the wheel only looks at a slot once time has reached it, so a due time is noticed
 * at the next tick of the caller; entries of the slot that contains `now` but are not yet due wait
 * in `ready`, so popDue never returns anything early.
 *
 * Cancel is a version check: the live map holds one (version, due time) per id and an entry that
 * does not match is dropped when its slot is drained, so a paused, deleted or edited schedule never
 * fires from a bucket it was put in earlier.
 */
import { compareEntries, LiveEntries, type DueEntry, type DueIndex } from './due-index.ts';
import { HeapDueIndex } from './heap-index.ts';

const SLOTS = 64;
const LEVELS = 5;
// The span of each level in ticks: 64, 64², …; an entry goes to the lowest level whose span covers it.
const SPANS = Array.from({ length: LEVELS + 1 }, (_, l) => SLOTS ** l);

export interface WheelOptions {
  /** Width of a finest slot. Default 10 ms: far below the 1 s tick, so rounding never shows. */
  resolutionMs?: number;
  /** Where the wheel's cursor starts (nothing due before it can be placed in a slot). */
  startMs: number;
}

export class WheelDueIndex implements DueIndex {
  readonly kind = 'wheel';
  readonly #resolutionMs: number;
  readonly #live = new LiveEntries();
  readonly #slots: DueEntry[][][];
  readonly #counts: number[];
  /** The last tick whose finest slot has been drained. */
  #cursor: number;
  /** Drained (due within the current tick or earlier) but not yet handed out; sorted when #sorted. */
  #ready: DueEntry[] = [];
  #sorted = true;
  /** Entries beyond the top wheel's span, keyed by due time. */
  readonly #far = new HeapDueIndex();

  constructor(options: WheelOptions) {
    this.#resolutionMs = options.resolutionMs ?? 10;
    if (!(this.#resolutionMs >= 1))
      throw new RangeError(`resolutionMs: must be ≥ 1, got ${options.resolutionMs}`);
    this.#cursor = this.#tick(options.startMs);
    this.#slots = Array.from({ length: LEVELS }, () => Array.from({ length: SLOTS }, () => []));
    this.#counts = new Array<number>(LEVELS).fill(0);
  }

  get size(): number {
    return this.#live.size;
  }

  set(entry: DueEntry): void {
    this.#live.set(entry);
    this.#place(entry);
  }

  delete(id: string): void {
    this.#live.delete(id);
  }

  popDue(nowMs: number, limit: number): DueEntry[] {
    this.#advanceTo(this.#tick(nowMs));
    if (!this.#sorted) {
      this.#ready.sort(compareEntries);
      this.#sorted = true;
    }
    const out: DueEntry[] = [];
    let i = 0;
    for (; i < this.#ready.length && out.length < limit; i++) {
      const e = this.#ready[i] as DueEntry;
      if (e.dueMs > nowMs) break;
      if (this.#live.take(e)) out.push(e);
    }
    this.#ready.splice(0, i);
    return out;
  }

  clear(): void {
    this.#live.clear();
    for (const level of this.#slots) for (let s = 0; s < SLOTS; s++) level[s] = [];
    this.#counts.fill(0);
    this.#ready = [];
    this.#far.clear();
  }

  #tick(ms: number): number {
    return Math.floor(ms / this.#resolutionMs);
  }

  #place(entry: DueEntry): void {
    const tick = this.#tick(entry.dueMs);
    const delta = tick - this.#cursor;
    if (delta <= 0) {
      this.#ready.push(entry);
      this.#sorted = false;
      return;
    }
    for (let level = 0; level < LEVELS; level++) {
      if (delta < (SPANS[level + 1] as number)) {
        const slot = Math.floor(tick / (SPANS[level] as number)) % SLOTS;
        (this.#slots[level] as DueEntry[][])[slot]?.push(entry);
        this.#counts[level] = (this.#counts[level] as number) + 1;
        return;
      }
    }
    this.#far.set(entry);
  }

  #advanceTo(target: number): void {
    this.#pullFar();
    while (this.#cursor < target) {
      let tick = this.#cursor + 1;
      // Skip runs of ticks in which nothing can happen: when levels below k are empty, the next
      // event is the next multiple of 64^k (a cascade of level k). Bounds an advance over an idle
      // hour to a handful of steps instead of 360,000 slot visits.
      let k = 0;
      while (k < LEVELS && this.#counts[k] === 0) k++;
      if (k === LEVELS) {
        this.#cursor = target;
        this.#pullFar();
        break;
      }
      if (k > 0) {
        const span = SPANS[k] as number;
        tick = Math.min(target, Math.ceil(tick / span) * span);
      }
      this.#cursor = tick;
      for (let level = LEVELS - 1; level >= 1; level--) {
        if (tick % (SPANS[level] as number) === 0)
          this.#cascade(level, Math.floor(tick / (SPANS[level] as number)) % SLOTS);
      }
      this.#drain(0, tick % SLOTS);
      this.#pullFar();
    }
  }

  #cascade(level: number, slot: number): void {
    const entries = this.#take(level, slot);
    for (const e of entries) if (this.#live.isLive(e)) this.#place(e);
  }

  #drain(level: number, slot: number): void {
    const entries = this.#take(level, slot);
    for (const e of entries) {
      if (!this.#live.isLive(e)) continue;
      this.#ready.push(e);
      this.#sorted = false;
    }
  }

  #take(level: number, slot: number): DueEntry[] {
    const slots = this.#slots[level] as DueEntry[][];
    const entries = slots[slot] as DueEntry[];
    if (entries.length > 0) {
      slots[slot] = [];
      this.#counts[level] = (this.#counts[level] as number) - entries.length;
    }
    return entries;
  }

  /** Moves far entries whose due time has come within the top wheel's span into the wheel. */
  #pullFar(): void {
    if (this.#far.size === 0) return;
    const horizon = (this.#cursor + (SPANS[LEVELS] as number) - 1) * this.#resolutionMs;
    for (const e of this.#far.popDue(horizon, Number.MAX_SAFE_INTEGER))
      if (this.#live.isLive(e)) this.#place(e);
  }
}
