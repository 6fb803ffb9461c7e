/**
 * Node successes of one workflow from two workers: the second waits for the first on the workflow's
 * row before it touches any node, then sees the first's decrements, so exactly one of them sees a
 * shared child's counter reach zero. Two real transactions on two connections, the first held open
 * while the second runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PoolClient } from '../../src/store/pool.ts';
import { workflowJobsSucceeded } from '../../src/store/workflow-release.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { waitUntil } from '../worker/support.ts';
import { createTestDatabase } from '../support/db.ts';
import { claim, succeed } from './support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

/** Opens a transaction that records these jobs' success with their release, left uncommitted. */
async function succeedOpen(tx: PoolClient, jobIds: number[]): Promise<void> {
  await tx.query('BEGIN');
  await tx.query(`UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE id = ANY($1)`, [jobIds]);
  await workflowJobsSucceeded(tx, jobIds);
}

async function node(key: string): Promise<{ state: string; pending: number; jobs: number }> {
  const { rows } = await db.pool.query<{ state: string; pending: number; jobs: number }>(
    `SELECT n.state, n.pending_deps AS pending,
            (SELECT count(*)::int FROM jobs j WHERE j.idempotency_key LIKE 'workflow:side:' || n.id || ':%') AS jobs
     FROM workflow_nodes n WHERE n.workflow_id = 'side' AND n.key = $1`,
    [key],
  );
  const row = rows[0];
  assert.ok(row, key);
  return row;
}

test('two successes of one workflow commit one after the other; a child they share is released once', async () => {
  await workflows.submit({
    id: 'side',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k' },
      { id: 'ca', kind: 'k', dependsOn: ['a'] },
      { id: 'cb', kind: 'k', dependsOn: ['b'] },
      { id: 'z', kind: 'k', dependsOn: ['ca', 'cb'] },
    ],
  });
  const first = await db.pool.connect();
  const second = await db.pool.connect();
  const { rows: pids } = await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  /** Until the second transaction waits for a lock in a statement matching `pattern`. */
  const secondWaitsIn = (what: string, pattern: string): Promise<true> =>
    waitUntil(what, async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock' AND query LIKE $2`,
        [pids[0]?.pid, pattern],
      );
      return rows[0]?.n === 1;
    });
  try {
    // Disjoint children: the second waits for the first on the workflow row, before its nodes. (The
    // wait is in the one statement of a completion's workflow part, workflowNodeJobsSucceed.)
    const roots = await claim(db.pool, 'side', ['a', 'b']);
    const a = roots.find((j) => j.key === 'a');
    const b = roots.find((j) => j.key === 'b');
    assert.ok(a && b);
    await succeedOpen(first, [a.id]);
    const alone = (async () => {
      await succeedOpen(second, [b.id]);
      await second.query('COMMIT');
    })();
    await secondWaitsIn('the second to wait for the first', 'WITH done AS%');
    // It waits before any node: neither its own node nor its child is locked yet.
    for (const key of ['b', 'cb']) {
      const { rows } = await db.pool.query(
        `SELECT 1 FROM workflow_nodes WHERE workflow_id = 'side' AND key = $1 FOR UPDATE NOWAIT`,
        [key],
      );
      assert.equal(rows.length, 1, key);
    }
    assert.equal((await node('cb')).state, 'pending');
    await first.query('COMMIT');
    await alone;
    assert.equal((await node('ca')).state, 'queued');
    assert.equal((await node('cb')).state, 'queued');

    // A shared child: the second waits for the first and then sees its decrement.
    const jobs = await claim(db.pool, 'side', ['ca', 'cb']);
    const ca = jobs.find((j) => j.key === 'ca');
    const cb = jobs.find((j) => j.key === 'cb');
    assert.ok(ca && cb);
    await succeedOpen(first, [ca.id]);
    const shared = (async () => {
      await succeedOpen(second, [cb.id]);
      await second.query('COMMIT');
    })();
    await secondWaitsIn('the second to wait again', 'WITH done AS%');
    await first.query('COMMIT');
    await shared;
    assert.deepEqual(await node('z'), { state: 'queued', pending: 0, jobs: 1 });

    const [z] = await claim(db.pool, 'side', ['z']);
    assert.ok(z);
    await succeed(db.pool, [z.id]);
    const status = await workflows.status('side');
    assert.equal(status?.state, 'succeeded');
  } finally {
    first.release();
    second.release();
  }
});
