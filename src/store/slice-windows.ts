/**
 * The ranges a newest-first read of a table in slices (partitions by a range of one key) takes in
 * turn. Read across every slice at once, PostgreSQL plans and starts each of them and, with a
 * default partition, merges them all rather than reading the newest first; bounded by a range it
 * prunes the slices outside it at planning.
 */
import type { Queryable } from './pool.ts';

/** A range of the slices' key, [from, to); null: unbounded on that side. */
export interface SliceWindow<T> {
  from: T | null;
  to: T | null;
}

/**
 * Below `to` (exclusive; null: no upper bound): the newest `first` slices, then the next 2 × `first`,
 * 4 × `first`, … down to no lower bound. `starts` are the slices' first keys, oldest first (null: no
 * lower bound), those at or past `to` left out. The ranges meet end to end, so a slice attached or
 * dropped since `starts` was read leaves nothing unread: it only makes a range span more or fewer.
 */
export function sliceWindows<T>(
  starts: readonly (T | null)[],
  to: T | null,
  first: number,
): SliceWindow<T>[] {
  const newest = [...starts].reverse();
  const windows: SliceWindow<T>[] = [];
  let upper = to;
  for (let taken = 0, group = first; taken < newest.length; taken += group, group *= 2) {
    const from = newest[Math.min(newest.length, taken + group) - 1] ?? null;
    windows.push({ from, to: upper });
    upper = from;
  }
  const last = windows.at(-1);
  if (last === undefined) windows.push({ from: null, to });
  else last.from = null;
  return windows;
}

/**
 * A slice list kept for each pool or client and read again once older than SLICE_LIST_MS: reading
 * the catalog takes 1.4 ms with 130 slices, as long as a page. A list older than that only makes a
 * range span more or fewer slices than meant.
 */
export class SliceListKept<S> {
  readonly #read: (db: Queryable) => Promise<S[]>;
  readonly #kept = new WeakMap<Queryable, { at: number; slices: S[] }>();

  constructor(read: (db: Queryable) => Promise<S[]>) {
    this.#read = read;
  }

  /** The list, read now when `fresh` or when the kept one is older than SLICE_LIST_MS. */
  async get(db: Queryable, fresh = false): Promise<S[]> {
    const kept = this.#kept.get(db);
    if (!fresh && kept !== undefined && Date.now() - kept.at < SLICE_LIST_MS) return kept.slices;
    const slices = await this.#read(db);
    this.#kept.set(db, { at: Date.now(), slices });
    return slices;
  }

  /** Drops the list kept for `db`, after a change of the slices made through it. */
  forget(db: Queryable): void {
    this.#kept.delete(db);
  }

  /**
   * The first non-null `probe` of the slices, oldest first; null when none gives one. A slice
   * attached since the list was read is the newest: looked for only when the kept ones give none.
   */
  async firstOf<T>(db: Queryable, probe: (slice: S) => Promise<T | null>): Promise<T | null> {
    for (const fresh of [false, true]) {
      for (const s of await this.get(db, fresh)) {
        const found = await probe(s);
        if (found !== null) return found;
      }
    }
    return null;
  }
}

/**
 * `column` of the row with the lowest id in slice `name`, a read of the front of its primary key;
 * null when the slice is empty or was dropped since its list was read.
 */
export async function sliceFirstRow(db: Queryable, name: string, column: string): Promise<Date | null> {
  try {
    const { rows } = await db.query<{ at: Date }>(
      `SELECT ${column} AS at FROM "${name}" ORDER BY id LIMIT 1`,
    );
    return rows[0]?.at ?? null;
  } catch (error) {
    // 42P01: dropped since the list was read.
    if ((error as { code?: unknown }).code === '42P01') return null;
    throw error;
  }
}

const SLICE_LIST_MS = 10_000;
