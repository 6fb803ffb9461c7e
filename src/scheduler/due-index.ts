/**
 * The due index: "what is due before T", answered without scanning every schedule. Three structures
 * behind one interface, chosen by configuration (`--due-index`), measured side by side in
 * `npm run bench due-index`:
 *
 * - heap: a binary min-heap in the leader's memory. O(log n) per insert and pop; the default, since
 *   one leader holds the whole schedule (30,000 entries are a few MB).
 * - wheel: a hierarchical timing wheel. O(1) insert and cancel, due times rounded up to its
 *   resolution; for volumes where log n is measurable.
 * - db: the database's own sorted index (schedules_due_idx), read as a bounded range per tick; no
 *   memory, nothing to rebuild on handover, one round trip per batch.
 *
 * Entries are (due time, schedule id, version). A schedule's edit, pause or delete never removes its
 * old entry physically: the in-memory indexes remember the one live (version, due time) per id and
 * discard anything else when it surfaces (a version check, the "tombstone" of the timing-wheel
 * literature), so a cancelled or edited schedule cannot fire from a stale bucket or heap slot.
 */
export interface DueEntry {
  id: string;
  dueMs: number;
  version: number;
}

export const DueIndexKind = { heap: 'heap', wheel: 'wheel', db: 'db' } as const;
export type DueIndexKind = (typeof DueIndexKind)[keyof typeof DueIndexKind];

export interface DueIndex {
  readonly kind: DueIndexKind;
  /** Live entries (for the in-memory kinds; the db kind reports 0). */
  readonly size: number;
  /** Schedules `id` at `dueMs` under `version`; any earlier entry for `id` becomes stale. */
  set(entry: DueEntry): void;
  /** Cancels `id`: every entry for it is stale from now on. */
  delete(id: string): void;
  /** Removes and returns up to `limit` live entries due at or before `nowMs`, earliest first. */
  popDue(nowMs: number, limit: number): DueEntry[] | Promise<DueEntry[]>;
  /** Earliest live due time, when the structure knows it cheaply (the heap); lets the tick sleep less. */
  nextDueMs?(): number | null;
  /**
   * Up to `limit` live entries due at or before `byMs`, in no particular order, left in place; for
   * planning ahead of the fire time (the heap: O(entries returned)).
   */
  peekDue?(byMs: number, limit: number): DueEntry[];
  clear(): void;
}

/** Orders entries by due time, then id, then version: the heap's key and the order of a batch. */
export function compareEntries(a: DueEntry, b: DueEntry): number {
  if (a.dueMs !== b.dueMs) return a.dueMs - b.dueMs;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return a.version - b.version;
}

/** The one live (version, due time) per schedule id; anything else surfacing from a structure is stale. */
export class LiveEntries {
  readonly #live = new Map<string, DueEntry>();

  get size(): number {
    return this.#live.size;
  }

  set(entry: DueEntry): void {
    this.#live.set(entry.id, entry);
  }

  delete(id: string): void {
    this.#live.delete(id);
  }

  /** True when `entry` is the live one for its id; consumes it so it cannot be returned twice. */
  take(entry: DueEntry): boolean {
    const live = this.#live.get(entry.id);
    if (live === undefined || live.version !== entry.version || live.dueMs !== entry.dueMs) return false;
    this.#live.delete(entry.id);
    return true;
  }

  isLive(entry: DueEntry): boolean {
    const live = this.#live.get(entry.id);
    return live !== undefined && live.version === entry.version && live.dueMs === entry.dueMs;
  }

  values(): IterableIterator<DueEntry> {
    return this.#live.values();
  }

  clear(): void {
    this.#live.clear();
  }
}
