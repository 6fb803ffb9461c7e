/**
 * The API's reads of `jobs`: filtered, tenant-scoped, paged listings (newest first) and the
 * dead-letter selection for bulk re-runs. The worker layer's own statements stay in jobs.ts.
 */
import { JOB_COLUMNS, type JobRow, type JobState } from './jobs.ts';
import { ID_MAX } from './id-bounds.ts';
import { idWindowBounds, jobSliceWindows } from './job-slices.ts';
import type { Queryable } from './pool.ts';

export interface JobSearchFilter {
  tenantId?: string;
  queue?: string;
  state?: JobState;
  kind?: string;
  /** A JSON document the payload must contain (`@>`), as text or as an object. */
  payload?: Record<string, unknown>;
  /** created_at ≥ this */
  createdFrom?: Date;
  /** created_at < this */
  createdTo?: Date;
  /** Ids below this one: the cursor of the previous page. */
  beforeId?: number;
  limit: number;
}

export interface JobSearchPage {
  rows: JobRow[];
  /** The cursor for the next page (pass as beforeId), or null when nothing is left below. */
  next: number | null;
  /**
   * The scan bound (JOB_SCAN_LIMIT jobs read) ended the page before `limit` of them matched the kind
   * or payload filter; `next` is the last job read, so the next page goes on from there.
   */
  cutShort: boolean;
}

/**
 * Most jobs one page of a kind or payload search reads. Neither has an index: a GIN index on payload
 * would cost every enqueue (jsonb_path_ops: +35–45% WAL per enqueued job here; jsonb_ops about 3×),
 * so the search filters the index-driven page (newest first, by state, tenant, queue, cursor) and
 * stops after this many rows: 2.5–5 ms for 10,000 jobs of 200-byte payloads, 7–19 ms for 20,000.
 */
export const JOB_SCAN_LIMIT = 10_000;

/**
 * The states other than succeeded, each with the predicate of its own partial index (0003, 0016,
 * 0021). A page of them is read from that index, which holds only those rows; through the primary
 * key it would walk back through the finished history to find them (330 ms for 20 running jobs
 * behind a million finished ones). Each state gets its own statement: a parameter cannot select a
 * partial index. Succeeded jobs are most of the table, so the primary key finds a page of them at
 * once.
 */
const INDEXED_STATE: Partial<Record<JobState, string>> = {
  available: `state = 'available'`,
  scheduled: `state = 'scheduled'`,
  failed: `state = 'failed'`,
  running: `state = 'running' AND lease_expires_at IS NOT NULL`,
  dead: `state = 'dead'`,
  cancelled: `state = 'cancelled'`,
};

/**
 * The states read newest first straight from an index in id order (the primary key; jobs_dead_id_idx
 * and jobs_cancelled_id_idx, 0021), where a page can stop early. The open states' indexes are in
 * claim order: a page of them reads every row of the state and sorts, so a filter on them costs no
 * more rows and needs no bound.
 */
const BY_ID = new Set<JobState | undefined>([undefined, 'succeeded', 'dead', 'cancelled']);

/** The reads that span jobs_done's slices of succeeded jobs (0030, 0031), a range of them at a time. */
const SLICED = new Set<JobState | undefined>([undefined, 'succeeded']);

/**
 * Newest first by id (the primary key), so paging costs one index range per page. The states in
 * finished jobs' slices are read a range of slices at a time, newest first (jobSliceWindows), until
 * the page is full. The cursor is a bound even when absent: `$7 IS NULL OR id < $7` cannot bound a
 * cached generic plan's index scan, and a second page walked down from the newest job (30,000 rows
 * read for a page of 100, test/api/list-plans.test.ts).
 *
 * Kind and payload are not in any index. Where the page is read in id order, a search by them reads
 * at most JOB_SCAN_LIMIT rows of that index (below the cursor) and numbers them; every other
 * condition is checked on those rows, and the outer query keeps the matches, the last row read where
 * the bound stopped the scan and the last row of the range, until the page is full. Both stream, so
 * a page that fills early stops early.
 */
export async function jobSearch(db: Queryable, f: JobSearchFilter): Promise<JobSearchPage> {
  const indexed = f.state === undefined ? undefined : INDEXED_STATE[f.state];
  const residual = f.kind !== undefined || f.payload !== undefined;
  const values = [
    f.tenantId ?? null,
    f.queue ?? null,
    f.state ?? null,
    f.kind ?? null,
    f.createdFrom ?? null,
    f.createdTo ?? null,
    f.beforeId ?? null,
    f.limit,
    f.payload === undefined ? null : JSON.stringify(f.payload),
  ];
  const matches = `($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR queue = $2)
                AND ($3::text IS NULL OR state = $3)
                AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at < $6)
                AND ($4::text IS NULL OR kind = $4) AND ($9::jsonb IS NULL OR payload @> $9::jsonb)`;
  if (!BY_ID.has(f.state) || (!residual && !SLICED.has(f.state))) {
    const { rows } = await db.query<JobRow>({
      name: `jobSearch:${f.state}`,
      text: `SELECT ${JOB_COLUMNS} FROM jobs WHERE ${indexed ?? 'true'} AND ${matches}
                AND id < coalesce($7::bigint, ${ID_MAX})
              ORDER BY id DESC LIMIT $8`,
      values,
    });
    return { rows, next: rows.length === f.limit ? (rows.at(-1)?.id ?? null) : null, cutShort: false };
  }
  // The range's bounds prune the other slices as each statement starts, its cached generic plan
  // too. Named: planning each range afresh cost a third of a first page's time beside 8 days.
  const below = f.beforeId ?? null;
  const windows = SLICED.has(f.state) ? await jobSliceWindows(db, below) : [{ from: null, to: below }];
  const inWindow = `id >= $7::bigint AND id < $10::bigint`;
  const found: JobRow[] = [];
  let left = Math.max(JOB_SCAN_LIMIT, f.limit);
  for (const w of windows) {
    const want = f.limit - found.length;
    const [from, to] = idWindowBounds(w);
    const windowValues = [...values.slice(0, 6), from, want, values[8], to];
    if (!residual) {
      const { rows } = await db.query<JobRow>({
        name: `jobSearchWindow:${f.state}`,
        text: `SELECT ${JOB_COLUMNS} FROM jobs WHERE ${indexed ?? 'true'} AND ${matches} AND ${inWindow}
          ORDER BY id DESC LIMIT $8`,
        values: windowValues,
      });
      found.push(...rows);
      if (found.length === f.limit) return { rows: found, next: found.at(-1)?.id ?? null, cutShort: false };
      continue;
    }
    const { rows } = await db.query<JobRow & { hit: boolean; scanned: number; last_read: boolean }>(
      `SELECT * FROM (
         SELECT ${JOB_COLUMNS}, ${matches} AS hit,
                (row_number() OVER newest)::int AS scanned, lead(id) OVER newest IS NULL AS last_read
           FROM jobs WHERE ${indexed ?? 'true'} AND ${inWindow}
          WINDOW newest AS (ORDER BY id DESC)
          ORDER BY id DESC LIMIT $11) read
       WHERE hit OR scanned = $11 OR last_read
       ORDER BY id DESC LIMIT $8`,
      [...windowValues, left],
    );
    const tail = rows.at(-1);
    for (const { hit, scanned: _scanned, last_read: _last, ...row } of rows) if (hit) found.push(row);
    if (found.length === f.limit) return { rows: found, next: found.at(-1)?.id ?? null, cutShort: false };
    if (tail === undefined) continue;
    if (tail.scanned === left) return { rows: found, next: tail.id, cutShort: true };
    left -= tail.scanned;
  }
  return { rows: found, next: null, cutShort: false };
}

/** Which of these ids exist in the tenant (any tenant, for undefined), optionally in one state. */
export async function jobIdsInTenant(
  db: Queryable,
  ids: readonly number[],
  tenantId: string | undefined,
  state?: JobState,
): Promise<number[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: number }>(
    `SELECT id FROM jobs WHERE id = ANY ($1::bigint[]) AND ($2::text IS NULL OR tenant_id = $2)
        AND ($3::text IS NULL OR state = $3) ORDER BY id`,
    [ids, tenantId ?? null, state ?? null],
  );
  return rows.map((r) => r.id);
}

/** Dead jobs matching a filter, oldest death first (jobs_dead_idx), for a bulk re-run. */
export async function jobDeadIdsSearch(
  db: Queryable,
  f: { tenantId?: string; queue?: string; kind?: string; limit: number },
): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `SELECT id FROM jobs WHERE state = 'dead' AND ($1::text IS NULL OR tenant_id = $1)
        AND ($2::text IS NULL OR queue = $2) AND ($3::text IS NULL OR kind = $3)
      ORDER BY finished_at, id LIMIT $4`,
    [f.tenantId ?? null, f.queue ?? null, f.kind ?? null, f.limit],
  );
  return rows.map((r) => r.id);
}
