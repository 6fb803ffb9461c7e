/**
 * The API's reads of `jobs`: filtered, tenant-scoped, paged listings (newest first) and the
 * dead-letter selection for bulk re-runs. The worker layer's own statements stay in jobs.ts.
 */
import { JOB_COLUMNS, type JobRow, type JobState } from './jobs.ts';
import type { Queryable } from './pool.ts';

export interface JobSearchFilter {
  tenantId?: string;
  queue?: string;
  state?: JobState;
  kind?: string;
  /** created_at ≥ this */
  createdFrom?: Date;
  /** created_at < this */
  createdTo?: Date;
  /** Ids below this one: the cursor of the previous page. */
  beforeId?: number;
  limit: number;
}

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
 * Newest first by id (the primary key), so paging costs one index range per page. The cursor is a
 * bound even when absent (coalesce): `$7 IS NULL OR id < $7` cannot bound a cached generic plan's
 * index scan, and a second page walked down from the newest job (30,000 rows read for a page of
 * 100, test/api/list-plans.test.ts).
 */
export async function jobSearch(db: Queryable, f: JobSearchFilter): Promise<JobRow[]> {
  const indexed = f.state === undefined ? undefined : INDEXED_STATE[f.state];
  const { rows } = await db.query<JobRow>({
    name: indexed === undefined ? 'jobSearch' : `jobSearch:${f.state}`,
    text: `SELECT ${JOB_COLUMNS} FROM jobs
            WHERE ${indexed ?? 'true'} AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR queue = $2)
              AND ($3::text IS NULL OR state = $3) AND ($4::text IS NULL OR kind = $4)
              AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at < $6)
              AND id < coalesce($7::bigint, 9223372036854775807)
            ORDER BY id DESC LIMIT $8`,
    values: [
      f.tenantId ?? null,
      f.queue ?? null,
      f.state ?? null,
      f.kind ?? null,
      f.createdFrom ?? null,
      f.createdTo ?? null,
      f.beforeId ?? null,
      f.limit,
    ],
  });
  return rows;
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
