/**
 * The worker writes a node's success as one statement, and in a transaction when its release takes
 * more: here a signal node whose signal came before it was released succeeds at once, and the job
 * after it runs, each job once. Beside it, a wide step of another workflow is written in parts side
 * by side and its join still starts once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { startWorker, waitUntil } from './support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

test('node successes written alone, with a signal release taking the transaction', async () => {
  const ran: string[] = [];
  await workflows.submit({
    id: 'gated',
    nodes: [
      { id: 'a', queue: 'q', kind: 'k', payload: { node: 'gated.a' } },
      { id: 'gate', type: 'signal', signal: 'go', dependsOn: ['a'] },
      { id: 'b', queue: 'q', kind: 'k', payload: { node: 'gated.b' }, dependsOn: ['gate'] },
    ],
  });
  await workflows.signal('gated', 'go', { by: 'test' });
  const wide = 300;
  await workflows.submit({
    id: 'wide',
    nodes: [
      ...Array.from({ length: wide }, (_, i) => ({
        id: `s${i}`,
        queue: 'q',
        kind: 'k',
        payload: { node: `s${i}` },
      })),
      {
        id: 'join',
        queue: 'q',
        kind: 'k',
        payload: { node: 'join' },
        dependsOn: Array.from({ length: wide }, (_, i) => `s${i}`),
      },
    ],
  });
  await startWorker(
    db,
    {
      k: (job) => {
        ran.push((job.payload as { node: string }).node);
        return Promise.resolve();
      },
    },
    { queues: [{ name: 'q', concurrency: 400 }] },
  );
  await waitUntil('both workflows to succeed', async () => {
    const states = await Promise.all(
      ['gated', 'wide'].map(async (id) => (await workflows.status(id))?.state),
    );
    return states.every((s) => s === 'succeeded');
  });
  const counts = new Map<string, number>();
  for (const node of ran) counts.set(node, (counts.get(node) ?? 0) + 1);
  assert.equal(ran.length, wide + 3, 'every job ran');
  assert.deepEqual(
    [...counts.values()].filter((n) => n !== 1),
    [],
    'no job ran twice',
  );
  assert.ok(ran.indexOf('gated.a') < ran.indexOf('gated.b'));
  const { rows } = await db.pool.query<{ state: string; output: unknown }>(
    `SELECT state, output FROM workflow_nodes WHERE workflow_id = 'gated' AND key = 'gate'`,
  );
  assert.deepEqual(rows, [{ state: 'succeeded', output: { by: 'test' } }]);
});
