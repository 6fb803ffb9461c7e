/**
 * Time partitions against batched deletes, for the history retention prunes (src/store/retention.ts).
 * Two copies of the jobs table side by side: `plain` with every index jobs has, and `parted`,
 * range-partitioned by day of finished_at with a default partition for unfinished rows (a running
 * job has no finished_at) and the same indexes except the unique ones, which PostgreSQL allows on a
 * partitioned table only if they contain the partition key (the real table, partitioned by state
 * and id since migration 0030, keeps its callers' keys unique in job_keys instead).
 *
 * Per trial (alternating the two, BENCH_PARTITION_TRIALS, default 3), on ROWS running jobs spread
 * over DAYS days:
 * - complete them all, 1,000 per statement, as the completer does: for `parted` every completion
 *   moves its row out of the default partition (a delete and an insert);
 * - prune the oldest day: 5,000-row DELETEs by id page for `plain` (as jobPruneBatch), DETACH and
 *   DROP of its partition for `parted`; then the VACUUM the deletes leave to do.
 * Each is reported in ms and in WAL bytes per row (pg_current_wal_lsn), which the machine's load
 * does not change.
 */
import { performance } from 'node:perf_hooks';
import type { Pool } from '../src/store/pool.ts';
import { benchDatabase } from './db.ts';
import { median, type Bench, type BenchRow } from './table.ts';

const ROWS = Number(process.env.BENCH_PARTITION_ROWS ?? 300_000);
const DAYS = 3;
const TRIALS = Number(process.env.BENCH_PARTITION_TRIALS ?? 3);
const COMPLETE_BATCH = 1_000;
const DELETE_BATCH = 5_000;
const DAY0 = '2026-01-01';

type Kind = 'plain' | 'parted';
interface Trial {
  completeMs: number;
  completeWal: number;
  pruneMs: number;
  pruneWal: number;
  vacuumMs: number;
  vacuumWal: number;
}

const INDEXES = [
  `(queue, tenant_id, priority DESC, run_at, id) WHERE state = 'available'`,
  `(run_at) WHERE state IN ('scheduled', 'failed')`,
  `(queue, finished_at DESC, id) WHERE state = 'dead'`,
  `(id) WHERE state = 'dead'`,
  `(id) WHERE state = 'cancelled'`,
];

async function walNow(pool: Pool): Promise<string> {
  const { rows } = await pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  return rows[0]?.lsn ?? '0/0';
}

/** Runs `fn` and returns its duration and the WAL it wrote (the bench is the database's only user). */
async function measured(pool: Pool, fn: () => Promise<void>): Promise<{ ms: number; wal: number }> {
  const from = await walNow(pool);
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const { rows } = await pool.query<{ b: number }>(
    'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS b',
    [from],
  );
  return { ms, wal: rows[0]?.b ?? Number.NaN };
}

async function create(pool: Pool, kind: Kind): Promise<void> {
  await pool.query(`DROP TABLE IF EXISTS hist_${kind}`);
  if (kind === 'plain') {
    await pool.query(`CREATE TABLE hist_plain (LIKE jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    await pool.query(`ALTER TABLE hist_plain ADD PRIMARY KEY (id)`);
    await pool.query(`CREATE UNIQUE INDEX ON hist_plain (queue, idempotency_key) WHERE NOT key_generated`);
  } else {
    await pool.query(
      `CREATE TABLE hist_parted (LIKE jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (finished_at)`,
    );
    // Not a primary key: a key must include finished_at, which is null until the job finishes.
    await pool.query(`ALTER TABLE hist_parted ADD UNIQUE (id, finished_at)`);
    await pool.query(`CREATE TABLE hist_parted_open PARTITION OF hist_parted DEFAULT`);
    for (let d = 0; d < DAYS; d++) {
      await pool.query(
        `CREATE TABLE hist_parted_d${d} PARTITION OF hist_parted
           FOR VALUES FROM ('${DAY0}'::date + ${d}) TO ('${DAY0}'::date + ${d + 1})`,
      );
    }
  }
  for (const [i, index] of INDEXES.entries())
    await pool.query(`CREATE INDEX hist_${kind}_${i} ON hist_${kind} ${index}`);
}

async function trial(pool: Pool, kind: Kind): Promise<Trial> {
  await create(pool, kind);
  const table = `hist_${kind}`;
  await pool.query(
    `INSERT INTO ${table} (id, queue, kind, tenant_id, payload, state, attempt, idempotency_key, key_generated,
                           lease_owner, lease_expires_at, started_at, run_at, created_at)
     SELECT g, 'q', 'k', 'default', '{"n":1}', 'running', 1, 'job-' || g, true,
            'w', now() + interval '1 hour', now(), now(), now()
       FROM generate_series(1, $1) g`,
    [ROWS],
  );
  await pool.query(`VACUUM ANALYZE ${table}`);
  // Rows finish in id order, a DAYS-th of them on each day: the oldest day is the first ids.
  const complete = await measured(pool, async () => {
    for (let from = 1; from <= ROWS; from += COMPLETE_BATCH) {
      await pool.query(
        `UPDATE ${table} SET state = 'succeeded', lease_expires_at = NULL,
                finished_at = '${DAY0}'::timestamptz + make_interval(days => ((id - 1) * ${DAYS} / $3)::int)
          WHERE id = ANY (ARRAY(SELECT generate_series($1::bigint, $2::bigint)))`,
        [from, Math.min(ROWS, from + COMPLETE_BATCH - 1), ROWS],
      );
    }
  });
  const dayEnd = `'${DAY0}'::timestamptz + interval '1 day'`;
  const prune = await measured(pool, async () => {
    if (kind === 'parted') {
      await pool.query(`ALTER TABLE hist_parted DETACH PARTITION hist_parted_d0`);
      await pool.query(`DROP TABLE hist_parted_d0`);
      return;
    }
    for (let after = 0; ;) {
      const { rows } = await pool.query<{ last: number | null }>(
        `WITH scan AS (SELECT id FROM hist_plain WHERE id > $1 ORDER BY id LIMIT ${DELETE_BATCH}),
              del AS (DELETE FROM hist_plain h WHERE h.id = ANY (ARRAY(SELECT id FROM scan))
                        AND h.state = 'succeeded' AND h.finished_at < ${dayEnd} RETURNING 1)
         SELECT (SELECT max(id) FROM scan) AS last, (SELECT count(*) FROM del) AS n`,
        [after],
      );
      const last = rows[0]?.last ?? null;
      if (last === null || last > ROWS / DAYS) break;
      after = last;
    }
  });
  const vacuum = await measured(pool, async () => {
    await pool.query(`VACUUM ${table}`);
  });
  await pool.query(`DROP TABLE ${table}`);
  const pruned = ROWS / DAYS;
  return {
    completeMs: complete.ms,
    completeWal: complete.wal / ROWS,
    pruneMs: prune.ms,
    pruneWal: prune.wal / pruned,
    vacuumMs: vacuum.ms,
    vacuumWal: vacuum.wal / pruned,
  };
}

export const bench: Bench = async () => {
  const db = await benchDatabase();
  try {
    const runs: Record<Kind, Trial[]> = { plain: [], parted: [] };
    for (let t = 0; t < TRIALS; t++) {
      for (const kind of ['plain', 'parted'] as const) {
        process.stderr.write(`bench partitions: ${kind} (${t + 1} of ${TRIALS})…\n`);
        runs[kind].push(await trial(db.pool, kind));
      }
    }
    const m = (kind: Kind, k: keyof Trial): number => median(runs[kind].map((r) => r[k]));
    const row = (name: string, ms: keyof Trial, wal: keyof Trial, rows: number, note: string): BenchRow[] =>
      (['plain', 'parted'] as const).map((kind) => ({
        group: 'partitions',
        name: `${name}: ${kind === 'plain' ? 'one table (batched deletes)' : 'daily partitions'}`,
        value: `${((m(kind, ms) / rows) * 1000).toFixed(1)} µs/row, ${m(kind, wal).toFixed(0)} B WAL/row`,
        note: `median of ${TRIALS}; ${note}`,
      }));
    return [
      ...row('complete (1,000 per statement)', 'completeMs', 'completeWal', ROWS, `${ROWS} rows`),
      ...row(
        'prune one day',
        'pruneMs',
        'pruneWal',
        ROWS / DAYS,
        `${ROWS / DAYS} rows; DELETE ${DELETE_BATCH} per statement vs DETACH + DROP`,
      ),
      ...row('vacuum after the prune', 'vacuumMs', 'vacuumWal', ROWS / DAYS, 'per pruned row'),
    ];
  } finally {
    await db.close();
  }
};
