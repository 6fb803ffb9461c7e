/** Named statements on `queue_changes`: the audit of every pause, resume and settings change. */
import type { Queryable } from './pool.ts';

export type QueueChangeKind = 'pause' | 'resume' | 'update';

export interface QueueChangeRow {
  id: number;
  queue: string;
  at: Date;
  by: string;
  change: QueueChangeKind;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
}

/** Recorded in the transaction that made the change, so a change is never without its row. */
export async function queueChangeInsert(
  db: Queryable,
  c: { queue: string; by: string; change: QueueChangeKind; before: unknown; after: unknown },
): Promise<void> {
  await db.query(
    `INSERT INTO queue_changes (queue, by, change, before, after) VALUES ($1, $2, $3, $4::jsonb, $5::jsonb)`,
    [c.queue, c.by, c.change, JSON.stringify(c.before), JSON.stringify(c.after)],
  );
}

/** Newest first. */
export async function queueChangeList(
  db: Queryable,
  queue: string,
  limit: number,
): Promise<QueueChangeRow[]> {
  const { rows } = await db.query<QueueChangeRow>(
    `SELECT id, queue, at, by, change, before, after FROM queue_changes
      WHERE queue = $1 ORDER BY id DESC LIMIT $2`,
    [queue, limit],
  );
  return rows;
}
