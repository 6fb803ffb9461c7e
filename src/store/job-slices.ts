/**
 * The slices of succeeded jobs: jobs_done's partitions by id (0030, 0031). A job that succeeds moves
 * into the slice of its id, so the newest slice takes what finishes now on pages of its own, not in
 * room left on pages of old history. The maintenance role attaches each next slice before the ids
 * reach it (jobSliceEnsure) and drops those retention has emptied (jobSliceDropEmpty).
 */
import { ID_MAX, ID_MIN } from './id-bounds.ts';
import type { Fence } from './occurrences.ts';
import type { Pool, Queryable } from './pool.ts';
import {
  partitionChangeFenced,
  partitionDetach,
  partitionsDetachedDrop,
  partitionsLockForDetach,
} from './partition-change.ts';
import { SliceListKept, sliceFirstRow, sliceWindows, type SliceWindow } from './slice-windows.ts';

/**
 * Ids per slice. 10 million: 5.5 hours at the source document's 500 jobs a second, so the default 7
 * days of succeeded jobs span ~31 slices, and a slice's pages stay recent while it fills.
 */
export const JOB_SLICE_IDS = 10_000_000;

export interface JobSlice {
  name: string;
  /** The first id it holds; null: no lower bound (the first slice) or the default partition. */
  from: number | null;
  /** The id after its last; null: the default partition. */
  to: number | null;
}

/** A slice with an end: any partition of jobs_done but the default one. */
export type BoundedSlice = JobSlice & { to: number };

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
export async function jobSliceIdsLeft(db: Queryable, slices?: readonly JobSlice[]): Promise<number> {
  return slicesEnd(slices ?? (await jobSliceList(db))) - (await idsDrawn(db));
}

/** The last job id the sequence has handed out. */
async function idsDrawn(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ drawn: number }>('SELECT last_value AS drawn FROM jobs_id_seq');
  return rows[0]?.drawn ?? 0;
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
 * by lists of succeeded jobs), else reports `busy` and the next pass tries again.
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
  const slice = { name: `jobs_done_${from}`, from, to: from + size };
  const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, (client) =>
    jobSliceAttach(client, slice),
  );
  // 23514 (busy too): a job with an id past `drawn` finished into the default partition between the
  // read and the attach; the next pass starts after it.
  if (typeof r === 'string') return { attached: null, reason: r };
  jobSliceListForget(pool);
  return { attached: slice };
}

/** Creates `slice` (its `from` and `to` set) and attaches it to jobs_done, in the caller's transaction. */
export async function jobSliceAttach(db: Queryable, slice: BoundedSlice): Promise<void> {
  const from = slice.from === null ? 'MINVALUE' : String(slice.from);
  await db.query(
    // Index cleanup on: retention deletes from a slice's front (migration 0033).
    `CREATE TABLE ${slice.name} (LIKE jobs_done INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
       WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02,
             vacuum_index_cleanup = on)`,
  );
  await db.query(
    `ALTER TABLE jobs_done ATTACH PARTITION ${slice.name} FOR VALUES FROM (${from}) TO (${slice.to})`,
  );
}

/**
 * Each try's wait for jobs_done before a slice's detach: completions queue behind the wait, so it is
 * kept near what a completion holds jobs_done for (a few ms), not the 200 ms the ledger's detach
 * waits.
 */
export const JOBS_DONE_LOCK_TRY_MS = 20;

/**
 * Slices this many from the newest are past (job_slices_past, migration 0044): the newest is
 * attached half a slice ahead of the ids, the one before holds the ids drawn now, and jobs finish
 * into those two. A past slice notes when a job last finished into it.
 */
const SLICES_PRESENT = 2;

export interface SlicesPastResult {
  tracked: BoundedSlice[];
  reason: 'fenced' | 'busy' | null;
}

/**
 * Starts noting finishes into the slices that fell behind the newest two since the last pass
 * (jobSlicesPastMark), fenced by the maintenance lease. CREATE TRIGGER waits for the jobs finishing
 * into the slice then, at most `lockTimeoutMs`, else reports `busy` and the next pass tries again.
 */
export async function jobSlicesPastTrack(
  pool: Pool,
  fence: Fence,
  lockTimeoutMs = 2_000,
): Promise<SlicesPastResult> {
  const untracked = await slicesPastUntracked(pool);
  if (untracked.length === 0) return { tracked: [], reason: null };
  const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, async (client) => {
    // Read again in the fenced transaction: another replica's pass may have tracked them since.
    const still = await slicesPastUntracked(client);
    await jobSlicesPastMark(client, still);
    return still;
  });
  if (typeof r === 'string') return { tracked: [], reason: r };
  return { tracked: r, reason: null };
}

/** The slices behind the newest two that no trigger notes finishes into yet, oldest first. */
async function slicesPastUntracked(db: Queryable): Promise<BoundedSlice[]> {
  const bounded = (await jobSliceList(db)).filter((s): s is BoundedSlice => s.to !== null);
  const past = bounded.slice(0, Math.max(0, bounded.length - SLICES_PRESENT));
  if (past.length === 0) return [];
  const { rows } = await db.query<{ name: string }>('SELECT name FROM job_slices_past');
  const tracked = new Set(rows.map((r) => r.name));
  return past.filter((s) => !tracked.has(s.name));
}

/**
 * In the caller's transaction: `slices` note from now on when a job finishes into them, starting at
 * now, which covers every job that finished into them before. Past slices must stay the oldest ones
 * (a read takes every slice after the last past one), so `slices` are the oldest not yet past.
 */
export async function jobSlicesPastMark(db: Queryable, slices: readonly BoundedSlice[]): Promise<void> {
  for (const s of slices) {
    await db.query(
      `CREATE TRIGGER ${s.name}_finished AFTER INSERT ON ${s.name}
         FOR EACH ROW EXECUTE FUNCTION tidemark_job_slice_finished()`,
    );
    await db.query(
      `INSERT INTO job_slices_past (name, from_id, to_id, finished_at) VALUES ($1, $2, $3, now())`,
      [s.name, s.from ?? ID_MIN, s.to],
    );
  }
}

export interface SliceDropResult {
  dropped: JobSlice[];
  reason: 'fenced' | 'busy' | null;
}

/**
 * Drops the slices that retention and vacuum have emptied: behind the ids drawn, not the newest,
 * with no pages left (vacuum truncates an emptied table to none) and no open job whose id falls in
 * them, so none can finish into them. With dead and cancelled jobs in jobs_ended (0031), a slice
 * empties once its succeeded jobs pass their retention, and the slices stay as many as that period
 * holds: ~31 at 500 jobs/s and the default 7 days. DETACH takes jobs_done for itself, so claims'
 * completions wait behind it for the ~2 ms it holds, and behind its wait: each of its tries waits
 * at most `lockTimeoutMs` (partitionsLockForDetach); once they are spent it reports `busy` and the
 * next pass tries again.
 */
export async function jobSliceDropEmpty(
  pool: Pool,
  fence: Fence,
  lockTimeoutMs = JOBS_DONE_LOCK_TRY_MS,
): Promise<SliceDropResult> {
  const drawn = await idsDrawn(pool);
  const sliced = (await jobSliceList(pool)).filter((s) => s.to !== null);
  const behind = sliced.slice(0, -1).filter((s) => (s.to ?? Infinity) <= drawn);
  if (behind.length === 0) return { dropped: [], reason: null };
  // Only those empty now are locked: the others are being pruned, and autovacuum holds them.
  const empty = await emptySlices(pool, behind);
  if (empty.length === 0) return { dropped: [], reason: null };
  const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, async (client) => {
    await partitionsLockForDetach(
      client,
      'jobs_done',
      empty.map((s) => s.name),
      lockTimeoutMs,
    );
    // Checked again under the lock: no job can finish into a slice while jobs_done is held.
    const dropped = await emptySlices(client, empty);
    for (const s of dropped) {
      await jobSliceDetach(client, s);
    }
    return dropped;
  });
  if (typeof r === 'string') return { dropped: [], reason: r };
  jobSliceListForget(pool);
  await partitionsDetachedDrop(pool);
  return { dropped: r, reason: null };
}

/**
 * In the caller's transaction, holding jobs_done: detaches `slice` (partitionsDetachedDrop drops it
 * once the caller has committed) and deletes its past row and how far its children were deleted.
 */
export async function jobSliceDetach(db: Queryable, slice: JobSlice): Promise<void> {
  await partitionDetach(db, 'jobs_done', slice.name);
  await db.query('DELETE FROM job_slices_past WHERE name = $1', [slice.name]);
  await db.query('DELETE FROM job_slice_walks WHERE name = $1', [slice.name]);
}

/** Those of `slices` with no pages and no open job in their range of ids. */
async function emptySlices(db: Queryable, slices: readonly JobSlice[]): Promise<JobSlice[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT s.name FROM unnest($1::text[], $2::bigint[], $3::bigint[]) s (name, from_id, to_id)
      WHERE pg_relation_size(s.name::regclass) = 0
        AND NOT EXISTS (SELECT FROM jobs_open o
                         WHERE o.id >= s.from_id AND o.id < s.to_id)`,
    [slices.map((s) => s.name), slices.map((s) => s.from ?? ID_MIN), slices.map((s) => s.to)],
  );
  const empty = new Set(rows.map((r) => r.name));
  return slices.filter((s) => empty.has(s.name));
}

/** A range of ids, [from, to); null: unbounded on that side. */
export type IdWindow = SliceWindow<number>;

/**
 * The id ranges a newest-first read of succeeded jobs takes in turn, below `below` (exclusive): the
 * newest 2 slices (the newest is attached half a slice ahead of the ids, so it is mostly empty),
 * then the next 4, the next 8, … down to no lower bound (sliceWindows). A page read across all
 * slices at once plans and starts every slice (16 ms for a page of 50 with 130 slices); a page that
 * fills in the newest slices plans two.
 */
export async function jobSliceWindows(db: Queryable, below: number | null): Promise<IdWindow[]> {
  const starts = (await sliceStarts(db)).filter((from) => below === null || (from ?? -Infinity) < below);
  return sliceWindows(starts, below, 2);
}

/** The slices, oldest first, the default partition left out. */
const slicesKept = new SliceListKept(async (db) =>
  (await jobSliceList(db)).filter((s): s is BoundedSlice => s.to !== null),
);

/** Drops the slice list kept for `db`, after a change of the slices made through it. */
export function jobSliceListForget(db: Queryable): void {
  slicesKept.forget(db);
}

/** The slices' first ids (null: the first slice's MINVALUE), oldest first. */
async function sliceStarts(db: Queryable): Promise<(number | null)[]> {
  return (await slicesKept.get(db)).map((s) => s.from);
}

/**
 * When the oldest job left in the slices was made, null when they hold none: the slices probed
 * oldest first, one statement each on its primary key, until one holds a row. One statement over
 * jobs_done reads the first row of every slice (its default partition rules out an ordered Append):
 * 142 pages with 35 slices, where this reads ~4 unless retention has emptied the oldest.
 */
export async function jobSliceOldestCreated(db: Queryable): Promise<Date | null> {
  return slicesKept.firstOf(db, (s) => sliceFirstRow(db, s.name, 'created_at'));
}

/**
 * The end of the slice that holds id `afterId + 1`: the next slice's first id, or null for the last
 * slice (the default partition beyond it has no end). From the slice list read at most every 10 s
 * (SliceListKept); an older list only makes the range longer or shorter than the slice.
 */
export async function jobSliceEndAfter(db: Queryable, afterId: number): Promise<number | null> {
  const next = (await sliceStarts(db)).find((from) => from !== null && from > afterId + 1);
  return next ?? null;
}

/**
 * The slice that holds id `afterId + 1`, from the slice list read at most every 10 s; null
 * when none does (the default partition's ids, or a slice dropped since).
 */
export async function jobSliceAt(db: Queryable, afterId: number): Promise<BoundedSlice | null> {
  const id = afterId + 1;
  const holds = (s: BoundedSlice): boolean => (s.from ?? -Infinity) <= id && id < s.to;
  return (await slicesKept.get(db)).find(holds) ?? null;
}

/** Bounds of an IdWindow as two bigint parameters; the cursor-less ends become the type's limits. */
export function idWindowBounds(w: IdWindow): [string, string] {
  return [w.from === null ? ID_MIN : String(w.from), w.to === null ? ID_MAX : String(w.to)];
}
