import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signalTimeoutsFire } from '../../src/store/workflow-signal-timeouts.ts';
import { WorkflowClient, WorkflowSignalUndeclaredError } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { availableKeys, claim, drain, nodeStates, succeed, workflowState } from './support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

const approval = (id: string, signal: Record<string, unknown> = {}) => ({
  id,
  nodes: [
    { id: 'draft', kind: 'k' },
    { id: 'approve', type: 'signal' as const, signal: 'approved', dependsOn: ['draft'], ...signal },
    { id: 'publish', kind: 'k', dependsOn: ['approve'] },
  ],
});

async function output(workflowId: string, key: string): Promise<unknown> {
  const { rows } = await db.pool.query<{ output: unknown }>(
    'SELECT output FROM workflow_nodes WHERE workflow_id = $1 AND key = $2',
    [workflowId, key],
  );
  return rows[0]?.output;
}

test('a signal node waits for its signal; a signal sent twice counts once', async () => {
  await workflows.submit(approval('approval'));
  assert.deepEqual(await drain(db.pool, 'approval'), ['draft']);
  assert.equal((await nodeStates(db.pool, 'approval')).approve, 'waiting');
  assert.equal((await workflows.status('approval'))?.nodes.waiting, 1);

  const results = await Promise.all([
    workflows.signal('approval', 'approved', { by: 'alice' }),
    workflows.signal('approval', 'approved', { by: 'bob' }),
  ]);
  assert.deepEqual(results.map((r) => r.accepted).sort(), [false, true]);
  assert.equal(
    results.reduce((n, r) => n + r.completed, 0),
    1,
  );
  const winner = (await output('approval', 'approve')) as { by: string };
  assert.ok(winner.by === 'alice' || winner.by === 'bob');
  assert.deepEqual(await availableKeys(db.pool, 'approval'), ['publish']);
  assert.deepEqual(await drain(db.pool, 'approval'), ['publish']);
  assert.equal(await workflowState(db.pool, 'approval'), 'succeeded');
  assert.deepEqual(await workflows.signal('approval', 'approved'), { accepted: false, completed: 0 });
  await assert.rejects(workflows.signal('missing', 'approved'), /workflow 'missing' does not exist/);
});

test('a signal no node declares is refused, naming the declared ones, and nothing is stored', async () => {
  await workflows.submit({
    id: 'two-signals',
    nodes: [
      { id: 'ship', type: 'signal', signal: 'shipped' },
      { id: 'approve', type: 'signal', signal: 'approved' },
      { id: 'again', type: 'signal', signal: 'approved', dependsOn: ['ship'] },
    ],
  });
  await assert.rejects(workflows.signal('two-signals', 'aproved', { by: 'alice' }), (e: unknown) => {
    assert.ok(e instanceof WorkflowSignalUndeclaredError);
    assert.deepEqual(e.declared, ['approved', 'shipped']);
    assert.equal(
      e.message,
      "workflow 'two-signals' has no signal node named 'aproved'; its signal nodes wait for: approved, shipped",
    );
    return true;
  });
  await workflows.submit({ id: 'no-signals', nodes: [{ id: 'a', kind: 'k' }] });
  await assert.rejects(
    workflows.signal('no-signals', 'approved'),
    /'no-signals' has no signal node named 'approved'; it has no signal nodes/,
  );
  const { rows } = await db.pool.query('SELECT * FROM workflow_signals WHERE workflow_id IN ($1, $2)', [
    'two-signals',
    'no-signals',
  ]);
  assert.deepEqual(rows, [], 'nothing stored');
  assert.deepEqual(await workflows.signal('two-signals', 'approved'), { accepted: true, completed: 1 });
});

test('a signal that arrives before its node is released completes the node when it is released', async () => {
  await workflows.submit(approval('early'));
  assert.deepEqual(await workflows.signal('early', 'approved', 'yes'), { accepted: true, completed: 0 });
  assert.equal((await nodeStates(db.pool, 'early')).approve, 'pending');
  const [draft] = await claim(db.pool, 'early');
  await succeed(db.pool, [draft!.id]);
  assert.deepEqual(await nodeStates(db.pool, 'early'), {
    draft: 'succeeded',
    approve: 'succeeded',
    publish: 'queued',
  });
  assert.equal(await output('early', 'approve'), 'yes');
});

test('timeout with onTimeout fail: the node fails and the workflow fails; resume waits again', async () => {
  await workflows.submit(approval('deadline', { timeoutMs: 60_000 }));
  await drain(db.pool, 'deadline');
  assert.equal(await signalTimeoutsFire(db.pool), 0, 'not due yet by the database clock');
  const later = new Date(Date.now() + 61_000);
  assert.equal(await signalTimeoutsFire(db.pool, later), 1);
  assert.equal(await signalTimeoutsFire(db.pool, later), 0, 'applied once');
  assert.equal(await workflowState(db.pool, 'deadline'), 'failed');
  assert.deepEqual(await nodeStates(db.pool, 'deadline'), {
    draft: 'succeeded',
    approve: 'failed',
    publish: 'cancelled',
  });
  const approve = (await workflows.nodes('deadline', { state: 'failed' })).nodes[0];
  assert.match(approve?.error ?? '', /signal approved not received within 60000 ms/);

  assert.equal(await workflows.resume('deadline'), true);
  assert.equal((await nodeStates(db.pool, 'deadline')).approve, 'waiting');
  await workflows.signal('deadline', 'approved');
  assert.deepEqual(await drain(db.pool, 'deadline'), ['publish']);
  assert.equal(await workflowState(db.pool, 'deadline'), 'succeeded');
});

test('timeout with onTimeout default: the node succeeds with the default and the workflow goes on', async () => {
  await workflows.submit(
    approval('fallback', { timeoutMs: 50, onTimeout: 'default', default: { approved: 'auto' } }),
  );
  await drain(db.pool, 'fallback');
  const started = Date.now();
  while ((await signalTimeoutsFire(db.pool)) === 0) {
    assert.ok(Date.now() - started < 10_000, 'the timeout fired by the database clock');
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(await output('fallback', 'approve'), { approved: 'auto' });
  assert.deepEqual(await availableKeys(db.pool, 'fallback'), ['publish']);
  assert.deepEqual(
    await workflows.signal('fallback', 'approved', 'too late'),
    { accepted: true, completed: 0 },
    'a late signal is recorded and changes nothing',
  );
  assert.deepEqual(await output('fallback', 'approve'), { approved: 'auto' });
});

test('cancelling a workflow cancels its waiting signal node', async () => {
  await workflows.submit(approval('cancelled'));
  await drain(db.pool, 'cancelled');
  assert.equal(await workflows.cancel('cancelled'), true);
  assert.equal((await nodeStates(db.pool, 'cancelled')).approve, 'cancelled');
  assert.deepEqual(await workflows.signal('cancelled', 'approved'), { accepted: true, completed: 0 });
  assert.equal(await workflowState(db.pool, 'cancelled'), 'cancelled');
});

test('a timer skips a workflow whose row another transaction holds, and fires it on the next sweep', async () => {
  await workflows.submit(approval('busy', { timeoutMs: 60_000 }));
  await drain(db.pool, 'busy');
  const later = new Date(Date.now() + 61_000);
  const holder = await db.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM workflows WHERE id = 'busy' FOR UPDATE`);
    // Returns at once (no wait on the held row) and applies nothing.
    assert.equal(await signalTimeoutsFire(db.pool, later), 0);
    assert.equal((await nodeStates(db.pool, 'busy')).approve, 'waiting');
  } finally {
    await holder.query('ROLLBACK');
    holder.release();
  }
  assert.equal(await signalTimeoutsFire(db.pool, later), 1);
  assert.equal((await nodeStates(db.pool, 'busy')).approve, 'failed');
});
