/**
 * Node successes of one workflow from two workers. Written in transactions, the second waits for the
 * first on the workflow's row before it touches any node, then sees the first's decrements. Written
 * alone (one statement each, as the worker's completer does first), they run side by side and meet
 * only on a shared child. Either way exactly one of them sees the child's counter reach zero. Real
 * statements on separate connections, held at a lock while the other runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobCompleteMany } from '../../src/store/jobs.ts';
import { withTransaction, type PoolClient } from '../../src/store/pool.ts';
import { needsTransaction, workflowJobsSucceeded } from '../../src/store/workflow-release.ts';
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

async function node(
  key: string,
  workflow = 'side',
): Promise<{ state: string; pending: number; jobs: number }> {
  const { rows } = await db.pool.query<{ state: string; pending: number; jobs: number }>(
    `SELECT n.state, n.pending_deps AS pending,
            (SELECT count(*)::int FROM jobs j WHERE j.idempotency_key LIKE 'workflow:' || $2 || ':' || n.id || ':%') AS jobs
     FROM workflow_nodes n WHERE n.workflow_id = $2 AND n.key = $1`,
    [key, workflow],
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

/** Connections whose statement matching `pattern` waits for a lock. */
async function waitingIn(pattern: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
    [pattern],
  );
  return rows[0]?.n ?? 0;
}

test('successes written alone run side by side; a child they share is released once', async () => {
  await workflows.submit({
    id: 'alone',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k' },
      { id: 'z', kind: 'k', dependsOn: ['a', 'b'] },
    ],
  });
  const roots = await claim(db.pool, 'alone', ['a', 'b']);
  const a = roots.find((j) => j.key === 'a');
  const b = roots.find((j) => j.key === 'b');
  assert.ok(a && b);
  // The shared child held by a third transaction: each success stops at it, after its own node.
  const holder = await db.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM workflow_nodes WHERE workflow_id = 'alone' AND key = 'z' FOR UPDATE`);
    const writes = [a, b].map((j) =>
      jobCompleteMany(db.pool, 'test', [{ id: j.id, attempt: 1 }], undefined, { alone: true }),
    );
    // Both wait at the child at once: neither waits for the other's commit on the workflow row.
    await waitUntil(
      'both successes to wait at the shared child',
      async () => (await waitingIn('WITH done AS%')) === 2,
    );
    // Each has updated its own node: neither waited for the other on the workflow's row.
    for (const key of ['a', 'b']) {
      await assert.rejects(
        db.pool.query(
          `SELECT 1 FROM workflow_nodes WHERE workflow_id = 'alone' AND key = $1 FOR UPDATE NOWAIT`,
          [key],
        ),
        (e: unknown) => (e as { code?: string }).code === '55P03',
        key,
      );
    }
    await holder.query('COMMIT');
    assert.deepEqual(await Promise.all(writes), [[a.id], [b.id]]);
  } finally {
    holder.release();
  }
  assert.deepEqual(await node('z', 'alone'), { state: 'queued', pending: 0, jobs: 1 });
  assert.equal((await node('a', 'alone')).state, 'succeeded');
  assert.equal((await node('b', 'alone')).state, 'succeeded');
  const [z] = await claim(db.pool, 'alone', ['z']);
  assert.ok(z);
  assert.deepEqual(
    await jobCompleteMany(db.pool, 'test', [{ id: z.id, attempt: 1 }], undefined, { alone: true }),
    [z.id],
  );
  assert.equal((await workflows.status('alone'))?.state, 'succeeded');
});

test('a success written alone that would release a signal node keeps nothing; in a transaction it does', async () => {
  await workflows.submit({
    id: 'gate',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k' },
      { id: 'wait', type: 'signal', signal: 'go', dependsOn: ['a'] },
      { id: 'c', kind: 'k', dependsOn: ['b'] },
    ],
  });
  const roots = await claim(db.pool, 'gate', ['a', 'b']);
  const batch = roots.map((j) => ({ id: j.id, attempt: 1 }));
  await assert.rejects(jobCompleteMany(db.pool, 'test', batch, undefined, { alone: true }), (e: unknown) =>
    needsTransaction(e),
  );
  // Nothing of the statement was kept: the jobs still run, their nodes are queued, the children wait.
  const { rows } = await db.pool.query<{ state: string }>(
    'SELECT state FROM jobs WHERE id = ANY($1) ORDER BY id',
    [roots.map((j) => j.id)],
  );
  assert.deepEqual(
    rows.map((r) => r.state),
    ['running', 'running'],
  );
  assert.deepEqual(await node('a', 'gate'), { state: 'queued', pending: 0, jobs: 1 });
  assert.deepEqual(await node('wait', 'gate'), { state: 'pending', pending: 1, jobs: 0 });
  assert.deepEqual(await node('c', 'gate'), { state: 'pending', pending: 1, jobs: 0 });
  const written = await withTransaction(db.pool, (tx) => jobCompleteMany(tx, 'test', batch));
  assert.equal(written.length, 2);
  assert.equal((await node('wait', 'gate')).state, 'waiting');
  assert.deepEqual(await node('c', 'gate'), { state: 'queued', pending: 0, jobs: 1 });
});

test('a success written alone locks the workflows its keys name; a job no named workflow owns keeps it from landing', async () => {
  await workflows.submit({
    id: 'named',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k', dependsOn: ['a'] },
    ],
  });
  const [a] = await claim(db.pool, 'named', ['a']);
  assert.ok(a);
  const ref = [{ id: a.id, attempt: 1 }];
  // Named wrong: the node would be left queued, so nothing is kept.
  await assert.rejects(
    jobCompleteMany(db.pool, 'test', ref, undefined, { alone: true, workflows: ['side'] }),
    (e: unknown) => needsTransaction(e),
  );
  assert.deepEqual(await node('a', 'named'), { state: 'queued', pending: 0, jobs: 1 });
  assert.deepEqual(await node('b', 'named'), { state: 'pending', pending: 1, jobs: 0 });
  assert.deepEqual(
    await jobCompleteMany(db.pool, 'test', ref, undefined, { alone: true, workflows: ['named'] }),
    [a.id],
  );
  assert.equal((await node('a', 'named')).state, 'succeeded');
  assert.deepEqual(await node('b', 'named'), { state: 'queued', pending: 0, jobs: 1 });
});
