/**
 * The slices of finished jobs: jobs_done's partitions by id (0030). A finished job moves into the
 * slice of its id, so the newest slice takes what finishes now on pages of its own, not in room
 * left on pages of old history. The maintenance role attaches each next slice before the ids
 * reach it (jobSliceEnsure).
 */
import type { Fence } from './occurrences.ts';
import type { Pool, Queryable } from './pool.ts';
import { FENCE } from './retention.ts';

/**
 * Ids per slice. 10 million: 5.5 hours at the source document's 500 jobs a second, so 30 days of
 * dead jobs kept span ~130 slices, and a slice's pages stay recent while it fills.
 */
export const JOB_SLICE_IDS = 10_000_000;

export interface JobSlice {
  name: string;
  /** The first id it holds; null: no lower bound (the first slice) or the default partition. */
  from: number | null;
  /** The id after its last; null: the default partition. */
  to: number | null;
}

/** jobs_done's partitions, by their first id (the default partition last). */
export async function jobSliceList(db: Queryable): Promise<JobSlice[]> {
  const { rows } = await db.query<{ name: string; bound: string }>(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'jobs_done'::regclass`,
  );
  const slices = rows.map((r): JobSlice => {
    const m = /FROM \((?:MINVALUE|'?(\d+)'?)\) TO \('?(\d+)'?\)/.exec(r.bound);
    if (m === null) return { name: r.name, from: null, to: null };
    return { name: r.name, from: m[1] === undefined ? null : Number(m[1]), to: Number(m[2]) };
  });
  const key = (s: JobSlice): number => (s.to === null ? Infinity : (s.from ?? -Infinity));
  return slices.sort((a, b) => key(a) - key(b));
}

/**
 * Ids left before the ids drawn pass the last slice's end: negative once jobs finish into the
 * default partition, which means the maintenance role has not run for a while.
 */
export async function jobSliceIdsLeft(db: Queryable): Promise<number> {
  const end = slicesEnd(await jobSliceList(db));
  const { rows } = await db.query<{ drawn: number }>('SELECT last_value AS drawn FROM jobs_id_seq');
  return end - (rows[0]?.drawn ?? 0);
}

/** The id after the last slice's last. */
function slicesEnd(slices: readonly JobSlice[]): number {
  return Math.max(0, ...slices.map((s) => s.to ?? 0));
}

export type SliceEnsureResult =
  { attached: JobSlice } | { attached: null; reason: 'ahead' | 'fenced' | 'busy' };

/**
 * Attaches the next slice once the ids drawn reach the middle of the last one: `size` ids from the
 * last slice's end, or from after the default partition's highest id where ids outran the slices.
 * Fenced by the maintenance lease. ATTACH locks jobs_done only against other schema changes, so
 * claims and completions go on; it waits at most `lockTimeoutMs` for the default partition (read
 * by lists of finished jobs), else reports `busy` and the next pass tries again.
 */
export async function jobSliceEnsure(
  pool: Pool,
  fence: Fence,
  size: number = JOB_SLICE_IDS,
  lockTimeoutMs = 2_000,
): Promise<SliceEnsureResult> {
  const slices = await jobSliceList(pool);
  const end = slicesEnd(slices);
  const { rows } = await pool.query<{ drawn: number; stray: number | null }>(
    `SELECT (SELECT last_value FROM jobs_id_seq) AS drawn, (SELECT max(id) FROM jobs_done_default) AS stray`,
  );
  const drawn = rows[0]?.drawn ?? 0;
  if (drawn + size / 2 < end) return { attached: null, reason: 'ahead' };
  const from = Math.max(end, (rows[0]?.stray ?? 0) + 1, drawn + 1);
  const slice: JobSlice = { name: `jobs_done_${from}`, from, to: from + size };
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
    const held = await client.query(`WITH ${FENCE} SELECT FROM fence`, [
      fence.lease,
      fence.holder,
      fence.epoch,
    ]);
    if (held.rowCount !== 1) {
      await client.query('ROLLBACK');
      return { attached: null, reason: 'fenced' };
    }
    await client.query(
      `CREATE TABLE ${slice.name} (LIKE jobs_done INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
         WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02)`,
    );
    await client.query(
      `ALTER TABLE jobs_done ATTACH PARTITION ${slice.name} FOR VALUES FROM (${from}) TO (${slice.to})`,
    );
    await client.query('COMMIT');
    return { attached: slice };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    // 55P03: a lock not granted in time. 23514: a job with an id past `drawn` finished into the
    // default partition between the read and the attach; the next pass starts after it.
    const code = (error as { code?: unknown }).code;
    if (code === '55P03' || code === '23514') return { attached: null, reason: 'busy' };
    throw error;
  } finally {
    client.release();
  }
}
