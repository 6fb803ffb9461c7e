/**
 * A node's success transaction starts the jobs it releases on the completing worker (ReleaseTake):
 * a chain's next step is leased in the statement that creates it, with no claim between. Told in
 * the database: such a job's started_at is its created_at (one transaction's now()); a job claimed
 * afterwards started in a later transaction. A transaction takes at most two per node succeeding in
 * it. Where the claim would not take a job lock-free (a cluster-wide limit) or the worker does not
 * serve the child's queue, the child is claimed as usual.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { queueUpsert } from '../../src/store/queues.ts';
import { QueueClient } from '../../src/worker/queue-client.ts';
import type { NodeSpec } from '../../src/workflow/definition.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { startWorker, waitUntil } from '../worker/support.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

function chain(queues: string[]): NodeSpec[] {
  return queues.map((queue, i) => ({
    id: `n${i}`,
    queue,
    kind: 'step',
    ...(i > 0 ? { dependsOn: [`n${i - 1}`] } : {}),
  }));
}

interface NodeRun {
  key: string;
  inRelease: boolean;
  owner: string | null;
  attempt: number;
}

/** Each node's job once the workflow has succeeded: whether it started in its release transaction. */
async function runsOf(workflowId: string): Promise<NodeRun[]> {
  await waitUntil(`workflow ${workflowId} succeeded`, async () => {
    const { rows } = await db.pool.query<{ state: string }>('SELECT state FROM workflows WHERE id = $1', [
      workflowId,
    ]);
    return rows[0]?.state === 'succeeded';
  });
  const { rows } = await db.pool.query<NodeRun>(
    `SELECT n.key, j.started_at = j.created_at AS "inRelease", j.lease_owner AS owner, j.attempt
       FROM workflow_nodes n JOIN jobs j ON j.id = n.job_id
      WHERE n.workflow_id = $1 ORDER BY n.key`,
    [workflowId],
  );
  return rows;
}

test('each step of a chain starts in the transaction that released it, once, on the completing worker', async () => {
  const ran = new Map<string, number>();
  const worker = await startWorker(
    db,
    {
      step: (ctx) => {
        ran.set(ctx.idempotencyKey, (ran.get(ctx.idempotencyKey) ?? 0) + 1);
        return Promise.resolve();
      },
    },
    { queues: [{ name: 'take', concurrency: 2 }] },
  );
  await workflows.submit({ id: 'chain', nodes: chain(Array<string>(6).fill('take')) });
  const runs = await runsOf('chain');
  assert.equal(runs.length, 6);
  // The first node is claimed from the queue; every later one is taken by its parent's success.
  assert.deepEqual(
    runs.map((r) => [r.key, r.inRelease]),
    [
      ['n0', false],
      ['n1', true],
      ['n2', true],
      ['n3', true],
      ['n4', true],
      ['n5', true],
    ],
  );
  for (const r of runs) {
    assert.equal(r.owner, worker.id, r.key);
    assert.equal(r.attempt, 1, r.key);
  }
  assert.equal(ran.size, 6);
  assert.ok(
    [...ran.values()].every((n) => n === 1),
    'every node ran once',
  );
});

test('a success takes up to two of the children it releases; the rest of a fan-out is claimed', async () => {
  await startWorker(db, { step: () => Promise.resolve() }, { queues: [{ name: 'fan', concurrency: 8 }] });
  const nodes: NodeSpec[] = [
    { id: 'n0', queue: 'fan', kind: 'step' },
    ...['n1', 'n2', 'n3'].map((id) => ({ id, queue: 'fan', kind: 'step', dependsOn: ['n0'] })),
  ];
  await workflows.submit({ id: 'fan', nodes });
  const runs = await runsOf('fan');
  assert.equal(runs.find((r) => r.key === 'n0')?.inRelease, false);
  // n0's success is one node in its transaction: two of its three children start in it.
  assert.equal(runs.filter((r) => r.inRelease).length, 2);
});

test('a child in a queue under a cluster-wide limit, or one this worker does not serve, is claimed as usual', async () => {
  await queueUpsert(db.pool, 'limited', { maxRunning: 5 });
  const step = { step: () => Promise.resolve() };
  await startWorker(db, step, {
    queues: [
      { name: 'free', concurrency: 2 },
      { name: 'limited', concurrency: 2 },
    ],
  });
  const other = await startWorker(db, step, { queues: [{ name: 'elsewhere', concurrency: 2 }] });
  await workflows.submit({ id: 'mixed', nodes: chain(['free', 'limited', 'free', 'elsewhere', 'free']) });
  const runs = await runsOf('mixed');
  assert.deepEqual(
    runs.map((r) => [r.key, r.inRelease]),
    [
      ['n0', false],
      ['n1', false], // limited: claimed under the queue's lock
      ['n2', true], // released by n1's success on the worker serving 'free'
      ['n3', false], // not a queue of the worker that released it
      ['n4', false], // released on the worker that serves only 'elsewhere'
    ],
  );
  assert.equal(runs.find((r) => r.key === 'n3')?.owner, other.id);
});

test('a child in a paused queue is neither taken nor claimed until the queue resumes', async () => {
  const queues = new QueueClient(db.pool);
  await queues.pause('held');
  await startWorker(
    db,
    { step: () => Promise.resolve() },
    {
      queues: [
        { name: 'open', concurrency: 2 },
        { name: 'held', concurrency: 2 },
      ],
    },
  );
  await workflows.submit({ id: 'paused', nodes: chain(['open', 'held']) });
  const held = await waitUntil('n1 released into the paused queue', async () => {
    const { rows } = await db.pool.query<{ state: string }>(
      `SELECT j.state FROM workflow_nodes n JOIN jobs j ON j.id = n.job_id
        WHERE n.workflow_id = 'paused' AND n.key = 'n1'`,
    );
    return rows[0]?.state;
  });
  assert.equal(held, 'available');
  await queues.resume('held');
  const runs = await runsOf('paused');
  assert.deepEqual(
    runs.map((r) => [r.key, r.inRelease]),
    [
      ['n0', false],
      ['n1', false],
    ],
  );
});
