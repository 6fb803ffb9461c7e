/**
 * Every statement behind the API's list routes and the dashboard's overview reads the history
 * tables through an index, never a sequential scan, once they hold a history (50,000 finished jobs
 * with their occurrences here) and the planner has statistics of it. Each statement runs as the
 * routes run it, six times (so a cached generic plan is the one checked), inside a transaction whose
 * own scan counters (pg_stat_xact_user_tables) tell which scans it made.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  historyBacklogPerMinute,
  historyLagPerMinute,
  historyThroughputPerMinute,
} from '../../src/store/history.ts';
import { historyRollJobs, historyRollLag } from '../../src/store/history-rollup.ts';
import { jobCountByState } from '../../src/store/job-counts.ts';
import { JOB_SCAN_LIMIT, jobDeadIdsSearch, jobIdsInTenant, jobSearch } from '../../src/store/job-search.ts';
import {
  occurrenceLatenessBySchedule,
  occurrenceLatenessPerMinute,
} from '../../src/store/occurrence-rollup.ts';
import { occurrenceCountAtFireTimes, occurrenceListBySchedule } from '../../src/store/occurrences.ts';
import type { PoolClient } from '../../src/store/pool.ts';
import { historyOldestRows, jobCountOpenByQueueState, scheduleLagSeconds } from '../../src/store/stats.ts';
import { workflowNodeList } from '../../src/store/workflow-nodes.ts';
import { workflowSearch } from '../../src/store/workflow-search.ts';
import {
  workflowTimelineByKeys,
  workflowTimelineCriticalPath,
  workflowTimelinePage,
} from '../../src/store/workflow-timeline.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const HISTORY = 50_000;

const TABLES = [
  'jobs',
  'job_attempts',
  'occurrences',
  'workflows',
  'workflow_nodes',
  'schedules',
  'history_minutes',
  'lag_minutes',
];

interface Scans {
  seq: Record<string, number>;
  /** Rows read from the history tables, by index or not. */
  rows: number;
  /** The same, by table. */
  read: Record<string, number>;
}

async function scans(tx: PoolClient): Promise<Scans> {
  // The jobs history is jobs_done's slices (0030) and jobs_ended (0031), counted as `jobs`, and the
  // ledger's slices (0037) as `occurrences`; a slice of a few rows (a default one, a day ahead, empty)
  // is read whole, as it should be, and its rows still count, as is a rollup of a few minutes. The open jobs'
  // partition is the backlog, not history: reading it is what counting or listing open jobs means.
  const { rows } = await tx.query<{ name: string; seq: number; read: number }>(
    `SELECT name, sum(seq)::int AS seq, sum(read)::int AS read
       FROM (SELECT CASE WHEN s.relid IN (SELECT relid FROM pg_partition_tree('jobs_done')) OR s.relname = 'jobs_ended'
                         THEN 'jobs'
                         WHEN s.relid IN (SELECT relid FROM pg_partition_tree('occurrences')) THEN 'occurrences'
                         ELSE s.relname END AS name,
                    CASE WHEN c.reltuples > 1000 OR (s.relname NOT LIKE 'jobs%' AND s.relname NOT LIKE 'occurrences%'
                                                     AND s.relname NOT IN ('history_minutes', 'lag_minutes'))
                         THEN coalesce(s.seq_scan, 0)
                         ELSE 0 END AS seq,
                    coalesce(s.seq_tup_read, 0) + coalesce(s.idx_tup_fetch, 0) AS read
               FROM pg_stat_xact_user_tables s JOIN pg_class c ON c.oid = s.relid) t
      WHERE name = ANY ($1)
      GROUP BY name`,
    [TABLES],
  );
  return {
    seq: Object.fromEntries(rows.map((r) => [r.name, r.seq])),
    rows: rows.reduce((sum, r) => sum + r.read, 0),
    read: Object.fromEntries(rows.map((r) => [r.name, r.read])),
  };
}

/**
 * Most rows one page may read: a page of 200 and what an index range reads around it. The history
 * holds 100,000 rows; a statement that walks through it shows up here even when it uses an index.
 */
const ROWS_PER_PAGE = 2_000;

test('list and overview statements use indexes on a database with history', async () => {
  await db.pool.query(`INSERT INTO tenants (id, name) VALUES ('acme', 'Acme')`);
  await db.pool.query(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind)
     SELECT CASE WHEN g % 100 = 0 THEN 'acme' ELSE 'default' END, 'plan-' || g, '* * * * *', 'q' || (g % 5), 'k'
       FROM generate_series(1, 5000) g`,
  );
  const { rows: sched } = await db.pool.query<{ id: string }>(`SELECT id FROM schedules ORDER BY id LIMIT 1`);
  const scheduleId = sched[0]?.id ?? '';
  await db.pool.query(
    `WITH s AS (SELECT array_agg(id ORDER BY id) AS ids FROM schedules),
     j AS (
       INSERT INTO jobs (queue, kind, state, idempotency_key, schedule_id, created_at, started_at, finished_at,
                         lease_owner, payload)
       SELECT 'q' || (g % 5), 'k', CASE WHEN g % 100 = 0 THEN 'dead' ELSE 'succeeded' END, 'k' || g,
              (s.ids)[1 + g % 5000], now() - g * interval '1 s', now() - g * interval '1 s',
              now() - g * interval '1 s' + interval '1 s', 'w',
              jsonb_build_object('customer', g % 1000, 'region', 'eu', 'note', repeat('x', 100))
         FROM generate_series(1, ${HISTORY}) g CROSS JOIN s
       RETURNING id, schedule_id, created_at
     )
     INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at, job_id)
     SELECT schedule_id, created_at, 'enqueued', created_at, id FROM j`,
  );
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, lease_owner, lease_expires_at, started_at)
     SELECT 'q1', 'k', 'running', 'r' || g, 'w', now() + interval '1 minute', now() FROM generate_series(1, 20) g`,
  );
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key) SELECT 'q2', 'k', 'available', 'a' || g FROM generate_series(1, 50) g`,
  );
  await db.pool.query(
    `INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome)
     SELECT id, a, 'w', created_at, created_at + interval '1 s', 'failed'
       FROM jobs CROSS JOIN generate_series(1, 3) a WHERE state = 'dead'
     UNION ALL
     -- One job in ten succeeded after a failed attempt.
     SELECT id, 1, 'w', created_at, created_at + interval '1 s', 'failed' FROM jobs
      WHERE state = 'succeeded' AND id % 10 = 0`,
  );
  await db.pool.query(
    `INSERT INTO workflows (id, tenant_id, name, failure_policy, definition_sha256, node_count, unfinished, state, finished_at)
     SELECT 'wf' || g, 'default', 'w', 'fail_fast', 'x', 1, 0, 'succeeded', now() FROM generate_series(1, 2000) g`,
  );
  await db.pool.query(
    `INSERT INTO workflow_nodes (workflow_id, key, type, state, pending_deps, queue, kind)
     SELECT 'wf' || g, 'n', 'job', 'succeeded', 0, 'q', 'k' FROM generate_series(1, 2000) g`,
  );
  // A 3,000-node chain whose nodes ran the first 3,000 jobs, each released by the one before.
  await db.pool.query(
    `INSERT INTO workflows (id, tenant_id, name, failure_policy, definition_sha256, node_count, unfinished, state, finished_at)
     VALUES ('chain', 'default', 'chain', 'fail_fast', 'x', 3000, 0, 'succeeded', now())`,
  );
  await db.pool.query(
    `INSERT INTO workflow_nodes (workflow_id, key, type, state, pending_deps, queue, kind, job_id, released_at, finished_at)
     SELECT 'chain', 'c' || lpad(g::text, 5, '0'), 'job', 'succeeded', 0, 'q', 'k', g,
            now() - (3001 - g) * interval '1 s', now() - (3000 - g) * interval '1 s'
       FROM generate_series(1, 3000) g`,
  );
  await db.pool.query(
    `UPDATE workflow_nodes n SET released_by = p.id FROM workflow_nodes p
      WHERE n.workflow_id = 'chain' AND p.workflow_id = 'chain'
        AND p.key = 'c' || lpad((substr(n.key, 2)::int - 1)::text, 5, '0')`,
  );
  await db.pool.query(
    `UPDATE workflows SET last_succeeded_node = (SELECT id FROM workflow_nodes WHERE workflow_id = 'chain' AND key = 'c03000')
      WHERE id = 'chain'`,
  );
  await db.pool.query('VACUUM ANALYZE');

  const { rows: page } = await db.pool.query<{ id: number }>(
    `SELECT id FROM jobs WHERE id % 10 = 0 ORDER BY id DESC LIMIT 100`,
  );
  const pageIds = page.map((r) => r.id);
  const from = new Date(Date.now() - 3_600_000);
  const to = new Date();
  // A lateness read aggregates every occurrence in its range (3,600 in this hour) and reads the BRIN
  // index's whole block ranges around them: bounded by the range, not by a page.
  const rangeRead = 25_000;
  // A kind or payload search reads at most its scan bound of the index's rows a page.
  const scanRead = JOB_SCAN_LIMIT + ROWS_PER_PAGE;
  const none = { customer: -1 };
  const statements: [string, (tx: PoolClient) => Promise<unknown>, number?][] = [
    ['jobs, newest', (tx) => jobSearch(tx, { limit: 100 })],
    ['jobs by state succeeded', (tx) => jobSearch(tx, { state: 'succeeded', limit: 100 })],
    ['jobs by state running', (tx) => jobSearch(tx, { state: 'running', limit: 100 })],
    ['jobs by state available', (tx) => jobSearch(tx, { state: 'available', limit: 100 })],
    ['jobs by queue', (tx) => jobSearch(tx, { queue: 'q3', limit: 100 })],
    ['jobs by tenant', (tx) => jobSearch(tx, { tenantId: 'default', limit: 100 })],
    ['jobs page 2', (tx) => jobSearch(tx, { beforeId: 20_000, limit: 100 })],
    ['dead letter list', (tx) => jobSearch(tx, { state: 'dead', limit: 200 })],
    ['jobs by kind, none matching', (tx) => jobSearch(tx, { kind: 'nothing', limit: 100 }), scanRead],
    ['jobs by payload, none matching', (tx) => jobSearch(tx, { payload: none, limit: 100 }), scanRead],
    [
      'jobs by payload, some matching',
      (tx) => jobSearch(tx, { payload: { customer: 7 }, limit: 100 }),
      scanRead,
    ],
    [
      'jobs by payload page 2',
      (tx) => jobSearch(tx, { payload: none, beforeId: 30_000, limit: 100 }),
      scanRead,
    ],
    [
      'succeeded jobs by queue and payload',
      (tx) => jobSearch(tx, { state: 'succeeded', queue: 'q1', payload: none, limit: 100 }),
      scanRead,
    ],
    ['dead jobs by payload', (tx) => jobSearch(tx, { state: 'dead', payload: none, limit: 100 }), scanRead],
    [
      'cancelled jobs by kind and payload',
      (tx) => jobSearch(tx, { state: 'cancelled', kind: 'k', payload: none, limit: 100 }),
      scanRead,
    ],
    ['available jobs by payload', (tx) => jobSearch(tx, { state: 'available', payload: none, limit: 100 })],
    ['running jobs by kind', (tx) => jobSearch(tx, { state: 'running', kind: 'nothing', limit: 100 })],
    ['dead letter retry selection', (tx) => jobDeadIdsSearch(tx, { queue: 'q0', limit: 100 })],
    ['schedule ledger', (tx) => occurrenceListBySchedule(tx, scheduleId, null, 100)],
    ['schedule ledger page 2', (tx) => occurrenceListBySchedule(tx, scheduleId, from, 100)],
    [
      // A backfill's dry run: one probe of the unique key per fire time of its range.
      'backfill: occurrences already there',
      (tx) =>
        occurrenceCountAtFireTimes(
          tx,
          scheduleId,
          Array.from({ length: 1000 }, (_, i) => new Date(from.getTime() + i * 60_000)),
        ),
    ],
    [
      'schedule lateness per day',
      (tx) => occurrenceLatenessBySchedule(tx, scheduleId, { from, to, limit: 100 }),
    ],
    ['lateness per minute', (tx) => occurrenceLatenessPerMinute(tx, { from, to, limit: 100 }), rangeRead],
    ['workflows, newest', (tx) => workflowSearch(tx, { limit: 50 })],
    // Each timeline node reads its node, its job, its first attempt and its releasing parent.
    ['workflow timeline page', (tx) => workflowTimelinePage(tx, 'chain', null, 200)],
    ['workflow timeline page 2', (tx) => workflowTimelinePage(tx, 'chain', 'c01000', 200)],
    [
      'workflow timeline selection',
      (tx) =>
        workflowTimelineByKeys(
          tx,
          'chain',
          Array.from({ length: 100 }, (_, i) => `c${String(i * 30 + 1).padStart(5, '0')}`),
        ),
    ],
    ['workflow critical path', (tx) => workflowTimelineCriticalPath(tx, 'chain', 200)],
    [
      'workflow critical path, longest',
      (tx) => workflowTimelineCriticalPath(tx, 'chain', 1000),
      5 * 1000 + ROWS_PER_PAGE,
    ],
    ['a workflow’s nodes', (tx) => workflowNodeList(tx, 'wf7', { after: null, state: null, limit: 100 })],
    // A bulk action's tenant check, for a page of 100 ids.
    ['ids in a tenant', (tx) => jobIdsInTenant(tx, pageIds, 'default')],
    ['overview: job counts', (tx) => jobCountOpenByQueueState(tx)],
    ['overview: schedule lag', (tx) => scheduleLagSeconds(tx)],
    ['overview: oldest rows', (tx) => historyOldestRows(tx)],
    ['history: lateness per minute', (tx) => historyLagPerMinute(tx, { from, to }), rangeRead],
    ['history: finished per minute', (tx) => historyThroughputPerMinute(tx, { from, to }), rangeRead],
    [
      'history: finished per minute, one queue',
      (tx) => historyThroughputPerMinute(tx, { from, to, queue: 'q1' }),
      rangeRead,
    ],
    [
      'history: finished per minute, one tenant',
      (tx) => historyThroughputPerMinute(tx, { from, to, tenantId: 'default' }),
      rangeRead,
    ],
    ['history: backlog per minute', (tx) => historyBacklogPerMinute(tx, { from, to }), rangeRead],
    // Counted up to its cap, as the jobs page's tabs ask (GET /v1/job-counts).
    ['job counts by state', (tx) => jobCountByState(tx, { cap: 1000 }), 7 * 1000 + ROWS_PER_PAGE],
    [
      'job counts by kind and payload',
      (tx) => jobCountByState(tx, { kind: 'k', payload: none, cap: JOB_SCAN_LIMIT }),
      7 * JOB_SCAN_LIMIT + ROWS_PER_PAGE,
    ],
  ];
  const failures = await check(statements);
  // A tenant's lateness reads the ids of its 50 schedules once, by index, to test each occurrence
  // against, not the schedule of each of the hour's 3,600 occurrences (a tenant holding nearly every
  // schedule reads the table whole for that, rightly).
  failures.push(
    ...(await check(
      [
        [
          'lateness per minute, one tenant',
          (tx) => occurrenceLatenessPerMinute(tx, { from, to, tenantId: 'acme', limit: 100 }),
        ],
        [
          'history: lateness per minute, one tenant',
          (tx) => historyLagPerMinute(tx, { from, to, tenantId: 'acme' }),
        ],
      ],
      { schedules: 100, occurrences: rangeRead },
    )),
  );

  // Rolled up by the maintenance role (store/history-rollup.ts), the history reads take the hour's
  // minutes from the rollups and read rows only for the minute or two after the last roll.
  await db.pool.query(
    `UPDATE history_rolled SET jobs_since = m, jobs_upto = m, lag_since = m, lag_upto = m, back_to = m
       FROM date_trunc('minute', $1::timestamptz - interval '10 minutes') m`,
    [from],
  );
  await db.pool.query(`UPDATE schedules SET next_fire_at = now() + interval '1 hour'`);
  for (const roll of [historyRollJobs, historyRollLag]) while (await rolls(roll)) continue;
  // Two days of rollups of 50 other queues before the hour, as the role keeps them: a read that
  // hashes the whole rollup instead of reading the window's range of it shows as a scan.
  await db.pool.query(
    `INSERT INTO history_minutes (minute, queue, tenant_id, succeeded, waiting)
     SELECT m, 'old-' || q, 'default', 1, 1
       FROM generate_series(date_trunc('minute', $1::timestamptz - interval '2 days'), $1::timestamptz - interval '20 minutes',
                            interval '1 minute') m, generate_series(1, 50) q`,
    [from],
  );
  await db.pool.query('ANALYZE history_minutes');
  // The attempts and occurrences after the last roll are read through BRIN indexes, in whole block
  // ranges of 128 pages: here most of either table (history-rollup.test.ts checks what the lateness
  // read takes from its rollup). The jobs are read through a B-tree: the minute or two after the roll.
  const { rows: attempts } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM job_attempts`,
  );
  const perTable = { jobs: ROWS_PER_PAGE, occurrences: rangeRead, job_attempts: attempts[0]?.n ?? 0 };
  failures.push(
    ...(await check(
      [
        ['history rolled up: lateness per minute', (tx) => historyLagPerMinute(tx, { from, to })],
        ['history rolled up: finished per minute', (tx) => historyThroughputPerMinute(tx, { from, to })],
        ['history rolled up: backlog per minute', (tx) => historyBacklogPerMinute(tx, { from, to })],
      ],
      perTable,
    )),
  );
  assert.deepEqual(failures, []);
});

test('the charts of finished jobs, backlog and lateness keep one generic plan, not one planned per call over every slice', async () => {
  const to = new Date();
  const from = new Date(to.getTime() - 3_600_000);
  const { rows: sched } = await db.pool.query<{ id: string }>(`SELECT id FROM schedules ORDER BY id LIMIT 1`);
  const scheduleId = sched[0]?.id ?? '';
  const client = await db.pool.connect();
  try {
    for (const filter of [{}, { queue: 'q1' }, { tenantId: 'default', queue: 'q2' }]) {
      for (let i = 0; i < 7; i++) {
        await historyThroughputPerMinute(client, { from, to, ...filter });
        await historyBacklogPerMinute(client, { from, to, ...filter });
      }
    }
    for (let i = 0; i < 7; i++) {
      await historyLagPerMinute(client, { from, to });
      await occurrenceLatenessPerMinute(client, { from, to, limit: 100 });
      await occurrenceLatenessBySchedule(client, scheduleId, { from, to, limit: 100 });
    }
    const { rows } = await client.query<{ name: string; generic: number }>(
      `SELECT name, generic_plans::int AS generic FROM pg_prepared_statements
        WHERE name IN ('historyThroughputPerMinute', 'historyThroughputPerMinuteOf', 'historyBacklogPerMinute',
                       'historyLagPerMinute', 'occurrenceLatenessPerMinute', 'occurrenceLatenessBySchedule')
        ORDER BY name`,
    );
    assert.deepEqual(
      rows.map((r) => [r.name, r.generic > 0]),
      [
        ['historyBacklogPerMinute', true],
        ['historyLagPerMinute', true],
        ['historyThroughputPerMinute', true],
        ['historyThroughputPerMinuteOf', true],
        ['occurrenceLatenessBySchedule', true],
        ['occurrenceLatenessPerMinute', true],
      ],
    );
  } finally {
    client.release();
  }
});

async function rolls(roll: typeof historyRollJobs): Promise<boolean> {
  const r = await roll(db.pool, 'forward');
  return r.to > r.from;
}

/**
 * Runs each statement as the routes do and names those that scanned a history table or read too
 * many rows: in all, or with `perTable`, from each table it names.
 */
async function check(
  statements: [string, (tx: PoolClient) => Promise<unknown>, number?][],
  perTable?: Record<string, number>,
): Promise<string[]> {
  const failures: string[] = [];
  const tx = await db.pool.connect();
  try {
    for (const [name, run, maxRows = ROWS_PER_PAGE] of statements) {
      await tx.query('BEGIN');
      for (let i = 0; i < 5; i++) await run(tx);
      const before = await scans(tx);
      await run(tx);
      const after = await scans(tx);
      await tx.query('ROLLBACK');
      const scanned = TABLES.filter((t) => (after.seq[t] ?? 0) > (before.seq[t] ?? 0));
      if (scanned.length > 0) failures.push(`${name}: sequential scan of ${scanned.join(', ')}`);
      const read = after.rows - before.rows;
      if (perTable === undefined && read > maxRows) failures.push(`${name}: read ${read} rows`);
      for (const [table, most] of Object.entries(perTable ?? {})) {
        const n = (after.read[table] ?? 0) - (before.read[table] ?? 0);
        if (n > most) failures.push(`${name}: read ${n} rows of ${table}`);
      }
    }
  } finally {
    tx.release();
  }
  return failures;
}
