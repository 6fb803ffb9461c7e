/**
 * The database's sorted index as the due index: each pop is one bounded range read of
 * schedules_due_idx (`next_fire_at <= now ORDER BY next_fire_at, id LIMIT n`). Nothing lives in
 * memory, so set/delete are no-ops: the tick's own advance of next_fire_at is what removes an entry,
 * and an edit, pause or delete changes the row the next read sees.
 */
import { scheduleListDue } from '../store/schedules.ts';
import type { Queryable } from '../store/pool.ts';
import type { DueEntry, DueIndex } from './due-index.ts';

export class DbDueIndex implements DueIndex {
  readonly kind = 'db';
  readonly size = 0;
  readonly #db: Queryable;

  constructor(db: Queryable) {
    this.#db = db;
  }

  set(): void {}

  delete(): void {}

  async popDue(nowMs: number, limit: number): Promise<DueEntry[]> {
    const rows = await scheduleListDue(this.#db, new Date(nowMs), limit);
    return rows.map((r) => ({ id: r.id, dueMs: r.nextFireAt.getTime(), version: r.version }));
  }

  clear(): void {}
}
