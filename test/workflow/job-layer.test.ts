/**
 * The job layer's own cancel and dead-letter retry (client.jobs and the API both use jobCancel and
 * jobRetryMany) reach the workflow in the same transaction: a node never stays behind its job.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobFailMany } from '../../src/store/jobs.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { availableKeys, claim, drain, failFinally, nodeStates, workflowState } from './support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);
const jobs = new JobClient(db.pool);

async function jobOf(workflowId: string, key: string): Promise<number> {
  const { rows } = await db.pool.query<{ job_id: number }>(
    'SELECT job_id FROM workflow_nodes WHERE workflow_id = $1 AND key = $2',
    [workflowId, key],
  );
  const id = rows[0]?.job_id;
  assert.ok(id !== undefined && id !== null, `${workflowId}/${key} has a job`);
  return id;
}

async function counters(id: string): Promise<{ unfinished: number; failed_nodes: number }> {
  const { rows } = await db.pool.query<{ unfinished: number; failed_nodes: number }>(
    'SELECT unfinished, failed_nodes FROM workflows WHERE id = $1',
    [id],
  );
  return rows[0] ?? { unfinished: -1, failed_nodes: -1 };
}

test('cancelling a waiting node job through client.jobs fails the node under fail_fast in that transaction', async () => {
  await workflows.submit({
    id: 'jc-ff',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k' },
      { id: 'c', kind: 'k', dependsOn: ['a'] },
    ],
  });
  const job = await jobs.cancel(await jobOf('jc-ff', 'a'));
  assert.equal(job?.state, 'cancelled');
  assert.deepEqual(await nodeStates(db.pool, 'jc-ff'), { a: 'failed', b: 'cancelled', c: 'cancelled' });
  assert.equal(await workflowState(db.pool, 'jc-ff'), 'failed');
  const status = await workflows.status('jc-ff');
  assert.ok(status !== null);
  assert.match(status.error ?? '', /node a failed/);
  const { rows } = await db.pool.query<{ error: string }>(
    `SELECT error FROM workflow_nodes WHERE workflow_id = 'jc-ff' AND key = 'a'`,
  );
  assert.match(rows[0]?.error ?? '', /cancelled/);
  assert.deepEqual(await counters('jc-ff'), { unfinished: 0, failed_nodes: 1 });
  // Cancelling it again changes nothing.
  await jobs.cancel(await jobOf('jc-ff', 'a'));
  assert.deepEqual(await counters('jc-ff'), { unfinished: 0, failed_nodes: 1 });
});

test('cancelling a node job under continue skips only its descendants; the rest runs, then the workflow fails', async () => {
  await workflows.submit({
    id: 'jc-cont',
    failurePolicy: 'continue',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k' },
      { id: 'c', kind: 'k', dependsOn: ['a'] },
    ],
  });
  await jobs.cancel(await jobOf('jc-cont', 'a'));
  assert.deepEqual(await nodeStates(db.pool, 'jc-cont'), { a: 'failed', b: 'queued', c: 'skipped' });
  assert.equal(await workflowState(db.pool, 'jc-cont'), 'running');
  assert.deepEqual(await drain(db.pool, 'jc-cont'), ['b']);
  assert.equal(await workflowState(db.pool, 'jc-cont'), 'failed');
});

test('a running node job cancelled through client.jobs is finished as cancelled by its worker path, failing the node', async () => {
  await workflows.submit({ id: 'jc-run', nodes: [{ id: 'a', kind: 'k' }] });
  const [a] = await claim(db.pool, 'jc-run');
  const job = await jobs.cancel(a!.id);
  assert.equal(job?.state, 'running', 'a running job is only asked to stop');
  assert.deepEqual(await nodeStates(db.pool, 'jc-run'), { a: 'queued' });
  // The worker holding it aborts the handler and records the attempt, which ends the job cancelled.
  await db.pool.query(`UPDATE jobs SET lease_owner = 'w1' WHERE id = $1`, [a!.id]);
  const [failed] = await withTransaction(db.pool, (tx) =>
    jobFailMany(tx, 'w1', [{ id: a!.id, attempt: 1, outcome: 'failed', error: 'aborted', retryable: true }]),
  );
  assert.equal(failed?.state, 'cancelled');
  assert.deepEqual(await nodeStates(db.pool, 'jc-run'), { a: 'failed' });
  assert.equal(await workflowState(db.pool, 'jc-run'), 'failed');
});

test('re-running a dead node job resumes its failed workflow: the node keeps that job and the workflow succeeds', async () => {
  await workflows.submit({
    id: 'rd-ff',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k' },
      { id: 'c', kind: 'k', dependsOn: ['a'] },
    ],
  });
  const aJob = await jobOf('rd-ff', 'a');
  const [a] = await claim(db.pool, 'rd-ff', ['a']);
  await failFinally(db.pool, [a!.id]);
  assert.equal(await workflowState(db.pool, 'rd-ff'), 'failed');
  assert.deepEqual(await nodeStates(db.pool, 'rd-ff'), { a: 'failed', b: 'cancelled', c: 'cancelled' });

  assert.equal(await jobs.retry(aJob), true);
  assert.equal(await workflowState(db.pool, 'rd-ff'), 'running');
  assert.deepEqual(await nodeStates(db.pool, 'rd-ff'), { a: 'queued', b: 'queued', c: 'pending' });
  assert.equal(await jobOf('rd-ff', 'a'), aJob, 'the node follows the retried job, no second job');
  assert.deepEqual(await availableKeys(db.pool, 'rd-ff'), ['a', 'b']);
  assert.deepEqual((await drain(db.pool, 'rd-ff')).sort(), ['a', 'b', 'c']);
  assert.equal(await workflowState(db.pool, 'rd-ff'), 'succeeded');
  assert.deepEqual(await counters('rd-ff'), { unfinished: 0, failed_nodes: 0 });
  const { rows } = await db.pool.query<{ id: number; attempt: number }>(
    `SELECT j.id, j.attempt FROM jobs j JOIN workflow_nodes n ON j.idempotency_key LIKE 'workflow:rd-ff:' || n.id || ':%'
     WHERE n.workflow_id = 'rd-ff' AND n.key = 'a'`,
  );
  assert.deepEqual(rows, [{ id: aJob, attempt: 2 }], 'a ran twice, both times as its one job');
});

test('bulk retryDead of both dead nodes under continue: both follow their jobs, every skipped descendant runs', async () => {
  await workflows.submit({
    id: 'rd-cont',
    failurePolicy: 'continue',
    nodes: [
      { id: 'x', kind: 'k' },
      { id: 'y', kind: 'k' },
      { id: 'r', kind: 'k' },
      { id: 'w', kind: 'k', dependsOn: ['x'] },
      { id: 'z', kind: 'k', dependsOn: ['x', 'y'] },
    ],
  });
  const xJob = await jobOf('rd-cont', 'x');
  const failed = await claim(db.pool, 'rd-cont', ['x', 'y']);
  await failFinally(
    db.pool,
    failed.map((j) => j.id),
  );
  assert.deepEqual(await nodeStates(db.pool, 'rd-cont'), {
    x: 'failed',
    y: 'failed',
    r: 'queued',
    w: 'skipped',
    z: 'skipped',
  });
  assert.equal(await workflowState(db.pool, 'rd-cont'), 'running');

  assert.deepEqual(
    await jobs.retryDead(),
    failed.map((j) => j.id).sort((p, q) => p - q),
  );
  // Both dead jobs were re-run by the bulk retry: both nodes follow, nothing stays skipped.
  assert.deepEqual(await nodeStates(db.pool, 'rd-cont'), {
    x: 'queued',
    y: 'queued',
    r: 'queued',
    w: 'pending',
    z: 'pending',
  });
  assert.equal(await jobOf('rd-cont', 'x'), xJob);
  assert.deepEqual(await counters('rd-cont'), { unfinished: 5, failed_nodes: 0 });
  assert.deepEqual((await drain(db.pool, 'rd-cont')).sort(), ['r', 'w', 'x', 'y', 'z']);
  assert.equal(await workflowState(db.pool, 'rd-cont'), 'succeeded');
});

test('re-running only one of two dead nodes under continue keeps the shared descendant skipped', async () => {
  await workflows.submit({
    id: 'rd-one',
    failurePolicy: 'continue',
    nodes: [
      { id: 'x', kind: 'k' },
      { id: 'y', kind: 'k' },
      { id: 'r', kind: 'k' },
      { id: 'w', kind: 'k', dependsOn: ['x'] },
      { id: 'z', kind: 'k', dependsOn: ['x', 'y'] },
    ],
  });
  const xJob = await jobOf('rd-one', 'x');
  const failed = await claim(db.pool, 'rd-one', ['x', 'y']);
  await failFinally(
    db.pool,
    failed.map((j) => j.id),
  );
  assert.equal(await jobs.retry(xJob), true);
  assert.deepEqual(await nodeStates(db.pool, 'rd-one'), {
    x: 'queued',
    y: 'failed',
    r: 'queued',
    w: 'pending',
    z: 'skipped',
  });
  assert.deepEqual(await counters('rd-one'), { unfinished: 3, failed_nodes: 1 });
  assert.deepEqual((await drain(db.pool, 'rd-one')).sort(), ['r', 'w', 'x']);
  assert.equal(await workflowState(db.pool, 'rd-one'), 'failed', 'y is still failed');
  assert.deepEqual(await counters('rd-one'), { unfinished: 0, failed_nodes: 1 });
});
