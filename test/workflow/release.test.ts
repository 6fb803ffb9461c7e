import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withTransaction } from '../../src/store/pool.ts';
import { workflowJobsSucceeded } from '../../src/store/workflow-release.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { availableKeys, claim, drain, failFinally, nodeStates, succeed, workflowState } from './support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

const diamond = (id: string) => ({
  id,
  nodes: [
    { id: 'a', kind: 'k' },
    { id: 'b', kind: 'k', dependsOn: ['a'] },
    { id: 'c', kind: 'k', dependsOn: ['a'] },
    { id: 'd', kind: 'k', dependsOn: ['b', 'c'] },
  ],
});

test('a node is released when its last dependency succeeds, in that completion transaction', async () => {
  await workflows.submit(diamond('diamond'));
  const [a] = await claim(db.pool, 'diamond');
  await succeed(db.pool, [a!.id]);
  assert.deepEqual(await availableKeys(db.pool, 'diamond'), ['b', 'c']);
  const [b] = await claim(db.pool, 'diamond', ['b']);
  await succeed(db.pool, [b!.id]);
  assert.deepEqual(await availableKeys(db.pool, 'diamond'), ['c'], 'd still waits for c');
  const [c] = await claim(db.pool, 'diamond', ['c']);
  await succeed(db.pool, [c!.id]);
  assert.deepEqual(await availableKeys(db.pool, 'diamond'), ['d']);
  assert.equal(await workflowState(db.pool, 'diamond'), 'running');
  const [d] = await claim(db.pool, 'diamond');
  await succeed(db.pool, [d!.id]);
  assert.equal(await workflowState(db.pool, 'diamond'), 'succeeded');

  const status = await workflows.status('diamond');
  assert.ok(status !== null);
  assert.equal(status.nodes.succeeded, 4);
  assert.notEqual(status.finishedAt, null);
  assert.deepEqual(
    status.criticalPath.map((p) => p.node),
    ['a', 'c', 'd'],
    'c released d, so the path runs through c',
  );
});

test('a rolled-back completion releases nothing; the retried completion releases once', async () => {
  await workflows.submit(diamond('rollback'));
  const [a] = await claim(db.pool, 'rollback');
  await assert.rejects(
    withTransaction(db.pool, async (tx) => {
      await tx.query(`UPDATE jobs SET state = 'succeeded' WHERE id = $1`, [a!.id]);
      await workflowJobsSucceeded(tx, [a!.id]);
      throw new Error('connection lost before COMMIT');
    }),
    /connection lost/,
  );
  assert.deepEqual(await availableKeys(db.pool, 'rollback'), []);
  assert.deepEqual((await nodeStates(db.pool, 'rollback')).a, 'queued');
  await succeed(db.pool, [a!.id]);
  await succeed(db.pool, [a!.id]);
  assert.deepEqual(await availableKeys(db.pool, 'rollback'), ['b', 'c']);
  const { rows } = await db.pool.query<{ pending_deps: number }>(
    `SELECT pending_deps FROM workflow_nodes WHERE workflow_id = 'rollback' AND key = 'd'`,
  );
  assert.equal(rows[0]?.pending_deps, 2, 'a duplicate success report decrements nothing');
});

test('parents finishing in one batch and in concurrent transactions release a fan-in exactly once', async () => {
  const width = 200;
  await workflows.submit({
    id: 'fanin',
    nodes: [
      ...Array.from({ length: width }, (_, i) => ({ id: `p${i}`, kind: 'k' })),
      ...['x', 'y', 'z'].map((id) => ({
        id,
        kind: 'k',
        dependsOn: Array.from({ length: width }, (_, i) => `p${i}`),
      })),
    ],
  });
  const jobs = await claim(db.pool, 'fanin');
  assert.equal(jobs.length, width);
  // Eight concurrent completion transactions with overlapping children, in shuffled order: they queue
  // on the workflow row instead of deadlocking on x, y and z.
  const ids = jobs.map((j) => j.id).sort(() => Math.random() - 0.5);
  const slices = Array.from({ length: 8 }, (_, k) => ids.filter((_, i) => i % 8 === k));
  await Promise.all(slices.map((s) => succeed(db.pool, s)));
  assert.deepEqual(await availableKeys(db.pool, 'fanin'), ['x', 'y', 'z']);
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE kind = 'k' AND idempotency_key LIKE 'workflow:fanin:%'`,
  );
  assert.equal(rows[0]?.n, width + 3);
  // One claim takes all three; a batch comes back in no particular order.
  assert.deepEqual((await drain(db.pool, 'fanin')).sort(), ['x', 'y', 'z']);
  assert.equal(await workflowState(db.pool, 'fanin'), 'succeeded');
});

test('no level barrier: a slow branch delays only its own descendants', async () => {
  await workflows.submit({
    id: 'nolevels',
    nodes: [
      { id: 'slow', kind: 'k' },
      { id: 'fast', kind: 'k' },
      { id: 'after-slow', kind: 'k', dependsOn: ['slow'] },
      { id: 'after-fast', kind: 'k', dependsOn: ['fast'] },
      { id: 'after-after-fast', kind: 'k', dependsOn: ['after-fast'] },
    ],
  });
  await claim(db.pool, 'nolevels', ['slow']);
  const [fast] = await claim(db.pool, 'nolevels', ['fast']);
  await succeed(db.pool, [fast!.id]);
  const [af] = await claim(db.pool, 'nolevels', ['after-fast']);
  await succeed(db.pool, [af!.id]);
  assert.deepEqual(await availableKeys(db.pool, 'nolevels'), ['after-after-fast']);
  assert.equal((await nodeStates(db.pool, 'nolevels'))['after-slow'], 'pending');
});

const policyGraph = (id: string, failurePolicy: 'fail_fast' | 'continue') => ({
  id,
  failurePolicy,
  nodes: [
    { id: 'root', kind: 'k' },
    { id: 'bad', kind: 'k', dependsOn: ['root'] },
    { id: 'bad-child', kind: 'k', dependsOn: ['bad'] },
    { id: 'bad-grandchild', kind: 'k', dependsOn: ['bad-child', 'other'] },
    { id: 'other', kind: 'k', dependsOn: ['root'] },
    { id: 'other-child', kind: 'k', dependsOn: ['other'] },
    { id: 'busy', kind: 'k', dependsOn: ['root'] },
    { id: 'busy-child', kind: 'k', dependsOn: ['busy'] },
  ],
});

test('fail_fast: a node out of retries fails the workflow, cancels what has not started, lets running nodes finish', async () => {
  await workflows.submit(policyGraph('ff', 'fail_fast'));
  const [root] = await claim(db.pool, 'ff');
  await succeed(db.pool, [root!.id]);
  const [busy] = await claim(db.pool, 'ff', ['busy']);
  const [bad] = await claim(db.pool, 'ff', ['bad']);
  const otherJob = await db.pool.query<{ job_id: number }>(
    `SELECT job_id FROM workflow_nodes WHERE workflow_id = 'ff' AND key = 'other'`,
  );
  await failFinally(db.pool, [bad!.id], 'disk full');

  assert.equal(await workflowState(db.pool, 'ff'), 'failed');
  assert.deepEqual(await nodeStates(db.pool, 'ff'), {
    root: 'succeeded',
    bad: 'failed',
    'bad-child': 'cancelled',
    'bad-grandchild': 'cancelled',
    other: 'cancelled',
    'other-child': 'cancelled',
    busy: 'queued',
    'busy-child': 'cancelled',
  });
  const j = await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [
    otherJob.rows[0]?.job_id,
  ]);
  assert.equal(j.rows[0]?.state, 'cancelled', "the not-yet-started node's job is cancelled");
  const status = await workflows.status('ff');
  assert.ok(status !== null);
  assert.equal(status.error, 'node bad failed: disk full', 'which node failed, and why');
  assert.equal(status.jobs.running, 1);

  // The running node finishes and is recorded; nothing downstream starts.
  await succeed(db.pool, [busy!.id]);
  assert.equal((await nodeStates(db.pool, 'ff')).busy, 'succeeded');
  assert.deepEqual(await availableKeys(db.pool, 'ff'), []);
  assert.equal(await workflowState(db.pool, 'ff'), 'failed');

  // Resume: only the failed and never-run nodes run; root and busy never run again.
  assert.equal(await workflows.resume('ff'), true);
  assert.deepEqual(await availableKeys(db.pool, 'ff'), ['bad', 'busy-child', 'other']);
  const ran = await drain(db.pool, 'ff');
  assert.deepEqual(ran.sort(), ['bad', 'bad-child', 'bad-grandchild', 'busy-child', 'other', 'other-child']);
  assert.equal(await workflowState(db.pool, 'ff'), 'succeeded');
  // Executions per node, over every job ever created for it (keys are workflow:<id>:<node>:<run>).
  const { rows } = await db.pool.query<{ key: string; executions: number }>(
    `SELECT n.key, sum(j.attempt)::int AS executions
     FROM workflow_nodes n JOIN jobs j ON j.idempotency_key LIKE 'workflow:ff:' || n.id || ':%'
     WHERE n.workflow_id = 'ff' GROUP BY n.key HAVING sum(j.attempt) <> 1 ORDER BY n.key`,
  );
  assert.deepEqual(rows, [{ key: 'bad', executions: 2 }], 'only the failed node ran again');
  assert.equal((await workflows.status('ff'))?.generation, 2);
});

test('continue: everything not downstream of the failure runs, then the workflow fails; resume finishes it', async () => {
  await workflows.submit(policyGraph('cont', 'continue'));
  const [root] = await claim(db.pool, 'cont');
  await succeed(db.pool, [root!.id]);
  const [bad] = await claim(db.pool, 'cont', ['bad']);
  await failFinally(db.pool, [bad!.id]);
  assert.equal(await workflowState(db.pool, 'cont'), 'running');
  const ran = await drain(db.pool, 'cont');
  assert.deepEqual(ran.sort(), ['busy', 'busy-child', 'other', 'other-child']);
  assert.equal(await workflowState(db.pool, 'cont'), 'failed');
  assert.equal(
    (await workflows.status('cont'))?.error,
    'node bad failed: boom',
    'which node failed, and why',
  );
  assert.deepEqual(await nodeStates(db.pool, 'cont'), {
    root: 'succeeded',
    bad: 'failed',
    'bad-child': 'skipped',
    'bad-grandchild': 'skipped',
    other: 'succeeded',
    'other-child': 'succeeded',
    busy: 'succeeded',
    'busy-child': 'succeeded',
  });
  assert.equal(await workflows.resume('cont'), true);
  assert.deepEqual(await drain(db.pool, 'cont'), ['bad', 'bad-child', 'bad-grandchild']);
  assert.equal(await workflowState(db.pool, 'cont'), 'succeeded');
  assert.equal(
    (await workflows.status('cont'))?.error,
    null,
    'a resumed workflow that succeeds has no error',
  );
  assert.equal(await workflows.resume('cont'), false, 'a succeeded workflow is not resumed');
});

test('continue: with several failed nodes the error names the first to fail, why, and how many failed', async () => {
  await workflows.submit(policyGraph('cont2', 'continue'));
  const [root] = await claim(db.pool, 'cont2');
  await succeed(db.pool, [root!.id]);
  const [bad] = await claim(db.pool, 'cont2', ['bad']);
  await failFinally(db.pool, [bad!.id], 'disk full');
  const [other] = await claim(db.pool, 'cont2', ['other']);
  await failFinally(db.pool, [other!.id], 'timeout');
  await drain(db.pool, 'cont2');
  assert.equal(await workflowState(db.pool, 'cont2'), 'failed');
  assert.equal((await workflows.status('cont2'))?.error, 'node bad failed: disk full (2 nodes failed)');
});

test('cancel stops what has not started; running nodes finish; resume picks up from there', async () => {
  await workflows.submit(diamond('cancel'));
  const [a] = await claim(db.pool, 'cancel');
  assert.equal(await workflows.cancel('cancel'), true);
  assert.equal(await workflows.cancel('cancel'), false);
  assert.deepEqual(await nodeStates(db.pool, 'cancel'), {
    a: 'queued',
    b: 'cancelled',
    c: 'cancelled',
    d: 'cancelled',
  });
  await succeed(db.pool, [a!.id]);
  assert.deepEqual(await availableKeys(db.pool, 'cancel'), []);
  assert.equal(await workflowState(db.pool, 'cancel'), 'cancelled');
  assert.equal(await workflows.resume('cancel'), true);
  assert.deepEqual((await drain(db.pool, 'cancel')).sort(), ['b', 'c', 'd']);
  assert.equal(await workflowState(db.pool, 'cancel'), 'succeeded');
});

test('status counts nodes per state and pages through the nodes in key order', async () => {
  await workflows.submit({
    id: 'paged',
    nodes: Array.from({ length: 250 }, (_, i) => ({
      id: `n${String(i).padStart(3, '0')}`,
      kind: 'k',
      dependsOn: i < 50 ? [] : ['n000'],
    })),
  });
  await claim(db.pool, 'paged', ['n001']);
  const status = await workflows.status('paged');
  assert.ok(status !== null);
  assert.deepEqual(
    { queued: status.nodes.queued, pending: status.nodes.pending, jobs: status.jobs },
    { queued: 50, pending: 200, jobs: { available: 49, running: 1 } },
  );
  const keys: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await workflows.nodes('paged', { after, limit: 100 });
    keys.push(...page.nodes.map((n) => n.key));
    if (page.next === null) break;
    after = page.next;
  }
  assert.equal(keys.length, 250);
  assert.deepEqual(keys, [...keys].sort());
  const running = await workflows.nodes('paged', { state: 'queued', limit: 10 });
  assert.equal(running.nodes.length, 10);
  assert.ok(running.nodes.every((n) => n.jobId !== null && n.state === 'queued'));
  const n001 = (await workflows.nodes('paged', { after: 'n000', limit: 1 })).nodes[0];
  assert.deepEqual([n001?.jobState, n001?.attempt], ['running', 1]);
  assert.equal(await workflows.status('nope'), null, 'a read of a missing id is null');
  await assert.rejects(workflows.nodes('paged', { limit: 0 }), /limit: must be an integer/);
});
