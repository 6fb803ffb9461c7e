/**
 * A worker's own pool keeps the connections a burst opened through an idle gap longer than pg's
 * 10 s default (ROLE_IDLE_TIMEOUT_MS), so the next burst finds them open and warm.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jobInsertOf } from '../../src/contract/job.ts';
import { createLogger } from '../../src/log.ts';
import { jobInsertMany } from '../../src/store/job-insert.ts';
import { createPool } from '../../src/store/pool.ts';
import { Worker } from '../../src/worker/worker.ts';
import { createTestDatabase } from '../support/db.ts';
import { waitUntil } from './support.ts';

const db = await createTestDatabase();

/** pg closes a connection idle this long by default. */
const PG_DEFAULT_IDLE_MS = 10_000;

async function workerConnections(): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = $1 AND application_name = 'tidemark-worker' ORDER BY pid`,
    [db.name],
  );
  return rows.map((r) => r.pid);
}

test('a pool closes a connection once it has been idle for its idleTimeoutMs', async () => {
  const pool = createPool({ connectionString: db.url, max: 2, idleTimeoutMs: 200 });
  try {
    await pool.query('SELECT 1');
    assert.equal(pool.totalCount, 1);
    await waitUntil('the idle connection closed', () => Promise.resolve(pool.totalCount === 0), 5000);
  } finally {
    await pool.end();
  }
});

test("a worker's connections stay open through an idle gap longer than pg's default", async () => {
  const worker = new Worker({
    connectionString: db.url,
    handlers: { noop: () => Promise.resolve() },
    queues: [{ name: 'burst', concurrency: 1000 }],
    // Nothing on a timer during the gap (polls, the registry's heartbeat), which would keep a
    // connection busy whatever the pool's timeout: the gap stays idle.
    pollMs: 60_000,
    registryHeartbeatMs: 60_000,
    log: createLogger('test-worker'),
  });
  await worker.start();
  try {
    const n = 5000;
    await jobInsertMany(
      db.pool,
      Array.from({ length: n }, () => jobInsertOf({ queue: 'burst', kind: 'noop' }, 'default')),
    );
    await waitUntil(
      'the burst run',
      async () => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs WHERE queue = 'burst' AND state = 'succeeded'`,
        );
        return rows[0]?.n === n;
      },
      60_000,
    );
    const opened = await workerConnections();
    assert.ok(opened.length >= 1, 'the burst used no connection of its own');
    // The idle gap is the scenario itself, not a wait for something to happen.
    await sleep(PG_DEFAULT_IDLE_MS + 1500);
    const after = await workerConnections();
    assert.deepEqual(
      opened.filter((pid) => !after.includes(pid)),
      [],
      'connections the burst opened were closed while idle',
    );
  } finally {
    await worker.stop();
  }
});
