/**
 * How many jobs each state holds under a filter, for the jobs page's tabs. Each state is counted by
 * its own statement with its partial index's predicate (the open ones, dead and cancelled: 0003,
 * 0016, 0021), and every count stops after reading `cap` rows: succeeded jobs are most of the table,
 * and "10,000+" tells an operator as much as the exact figure would, without reading millions of rows.
 * Dead and cancelled jobs are a month of history, so without a tenant or a search their counts per
 * queue are read from job_ended_counts (0036) instead.
 */
import pg from 'pg';
import type { JobState } from './jobs.ts';
import { idWindowBounds, jobSliceWindows } from './job-slices.ts';
import type { Queryable } from './pool.ts';

const PREDICATE: Record<JobState, string> = {
  scheduled: `state = 'scheduled'`,
  available: `state = 'available'`,
  running: `state = 'running' AND lease_expires_at IS NOT NULL`,
  succeeded: `state = 'succeeded'`,
  failed: `state = 'failed'`,
  dead: `state = 'dead'`,
  cancelled: `state = 'cancelled'`,
};

/**
 * Succeeded jobs have no index of their own (most rows are succeeded): their count reads the
 * primary key from the newest, as the job list does, rather than the whole table.
 */
const BY_NEWEST = 'ORDER BY id DESC';

export interface JobCountFilter {
  tenantId?: string;
  queue?: string;
  kind?: string;
  /** A JSON document the payload must contain (`@>`). */
  payload?: Record<string, unknown>;
  /** Rows read per state at most: a count that read this many is a lower bound. */
  cap: number;
}

export interface JobCounts {
  counts: Record<JobState, number>;
  /** false: the state holds more rows than `cap` under the indexed filters, so its count is at least this. */
  exact: Record<JobState, boolean>;
}

/**
 * With a kind or payload filter, the states whose index is in id order (succeeded: the primary key;
 * dead and cancelled: 0021) count among the newest `cap` rows of that index, every other condition
 * checked on them, as the job list reads them (job-search.ts): a search never reads more than `cap`
 * rows of a state. The open states' indexes hold only the work in flight; their counts read up to
 * `cap` rows matching state, tenant and queue, as without a search.
 */
const SCAN_BY_ID: Partial<Record<JobState, string>> = {
  succeeded: 'true',
  dead: `state = 'dead'`,
  cancelled: `state = 'cancelled'`,
};

export async function jobCountByState(db: Queryable, f: JobCountFilter): Promise<JobCounts> {
  const states = Object.keys(PREDICATE) as JobState[];
  const search = f.kind !== undefined || f.payload !== undefined;
  // Only the filters given go into a statement: the generic plan of `($1 IS NULL OR tenant_id = $1)`
  // fetches every row to test it, where an unfiltered count reads its index alone (10,000 cancelled
  // jobs: 3.4 ms against 1.0). $1 is the cap, then the filters given, in this order.
  const values: unknown[] = [f.cap];
  const given = (column: string, value: unknown, cast: string, op = '='): string | null => {
    if (value === undefined) return null;
    values.push(value);
    return `${column} ${op} $${values.length}::${cast}`;
  };
  const and = (conditions: (string | null)[]): string =>
    conditions.filter((c) => c !== null).join(' AND ') || 'true';
  const scoped = and([given('tenant_id', f.tenantId, 'text'), given('queue', f.queue, 'text')]);
  const payload = f.payload === undefined ? undefined : JSON.stringify(f.payload);
  const matches = and([given('kind', f.kind, 'text'), given('payload', payload, 'jsonb', '@>')]);
  const variant = [f.tenantId, f.queue, f.kind, f.payload]
    .map((v, i) => (v === undefined ? '' : 'tqkp'[i]))
    .join('');
  const windowed = `id >= $${values.length + 1}::bigint AND id < $${values.length + 2}::bigint`;
  const countOf = async (state: JobState): Promise<readonly [JobState, { n: number; read: number }]> => {
    if ((state === 'dead' || state === 'cancelled') && f.tenantId === undefined && !search) {
      // Kept per queue and state (job_ended_counts, 0036); the counts have no tenant.
      const { rows } = await db.query<{ n: number }>({
        name: 'jobCountByState:ended:kept',
        text: `SELECT least(coalesce(sum(n), 0), $3)::int AS n FROM job_ended_counts
                  WHERE state = $1 AND n > 0 AND ($2::text IS NULL OR queue = $2)`,
        values: [state, f.queue ?? null, f.cap],
      });
      const n = rows[0]?.n ?? 0;
      return [state, { n, read: n }] as const;
    }
    const byId = search ? SCAN_BY_ID[state] : undefined;
    const text = (inWindow: string): string =>
      byId === undefined
        ? `SELECT (count(*) FILTER (WHERE hit))::int AS n, count(*)::int AS read FROM (
               SELECT ${matches} AS hit FROM jobs WHERE ${PREDICATE[state]} AND ${scoped} AND ${inWindow}
                ${state === 'succeeded' ? BY_NEWEST : ''}
                LIMIT $1) capped`
        : `SELECT (count(*) FILTER (WHERE ${PREDICATE[state]} AND ${scoped} AND ${matches}))::int AS n,
                    count(*)::int AS read
               FROM (SELECT * FROM jobs WHERE ${byId} AND ${inWindow} ${BY_NEWEST} LIMIT $1) newest`;
    if (state !== 'succeeded') {
      const name = `jobCountByState:${state}:${variant}${byId === undefined ? '' : ':scan'}`;
      const { rows } = await db.query<{ n: number; read: number }>({ name, text: text('true'), values });
      return [state, rows[0] ?? { n: 0, read: 0 }] as const;
    }
    // Succeeded jobs fill jobs_done's slices: counted a range of slices at a time, newest first
    // (jobSliceWindows), each statement unnamed so its plan prunes the other slices, the cap
    // reached in the newest range. Dead and cancelled jobs are a few in every slice; a range at
    // a time would start every slice all the same, in more statements.
    const total = { n: 0, read: 0 };
    for (const w of await jobSliceWindows(db, null)) {
      const { rows } = await db.query<{ n: number; read: number }>(text(windowed), [
        f.cap - total.read,
        ...values.slice(1),
        ...idWindowBounds(w),
      ]);
      total.n += rows[0]?.n ?? 0;
      total.read += rows[0]?.read ?? 0;
      if (total.read >= f.cap) break;
    }
    return [state, total] as const;
  };
  // On a pool the states are counted side by side, each on a connection; a client runs one
  // statement at a time (pg refuses a second query sent while one runs, from its next major version).
  const counts: (readonly [JobState, { n: number; read: number }])[] = [];
  if (db instanceof pg.Pool) counts.push(...(await Promise.all(states.map(countOf))));
  else for (const state of states) counts.push(await countOf(state));
  return {
    counts: Object.fromEntries(counts.map(([state, r]) => [state, r.n])) as Record<JobState, number>,
    exact: Object.fromEntries(counts.map(([state, r]) => [state, r.read < f.cap])) as Record<
      JobState,
      boolean
    >,
  };
}
