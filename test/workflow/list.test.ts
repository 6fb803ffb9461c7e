import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tenantUpsert } from '../../src/store/tenants.ts';
import { WorkflowValidationError } from '../../src/workflow/definition.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

const twoNodes = [
  { id: 'a', queue: 'q', kind: 'k' },
  { id: 'b', queue: 'q', kind: 'k', dependsOn: ['a'] },
];

await tenantUpsert(db.pool, { id: 'acme', name: 'Acme', maxRunning: null });
// Seven workflows, five of them created in one transaction (one created_at, so only the id orders
// them: the cursor must carry both), two more in their own.
const client = await db.pool.connect();
await client.query('BEGIN');
for (const id of ['w1', 'w2', 'w3', 'w4', 'w5']) {
  await workflows.submitTx(client, { id, nodes: twoNodes, tenantId: id === 'w3' ? 'acme' : undefined });
}
await client.query('COMMIT');
client.release();
await workflows.submit({ id: 'w6', name: 'nightly', nodes: twoNodes });
await workflows.submit({ id: 'w7', nodes: twoNodes, tenantId: 'acme' });
await workflows.cancel('w6');

test('workflows are listed newest first, every one once across pages, with counters from their row', async () => {
  const seen: string[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const page = await workflows.list({ limit: 2, after });
    seen.push(...page.items.map((w) => w.id));
    after = page.next ?? undefined;
    pages++;
  } while (after !== undefined);
  assert.deepEqual(seen, ['w7', 'w6', 'w5', 'w4', 'w3', 'w2', 'w1']);
  assert.equal(pages, 4);

  const [w6] = (await workflows.list({ state: 'cancelled' })).items;
  assert.deepEqual(
    {
      id: w6?.id,
      name: w6?.name,
      tenantId: w6?.tenantId,
      state: w6?.state,
      nodeCount: w6?.nodeCount,
      finished: w6?.finishedAt instanceof Date,
    },
    { id: 'w6', name: 'nightly', tenantId: 'default', state: 'cancelled', nodeCount: 2, finished: true },
  );
});

test('filters by tenant and by state', async () => {
  const acme = await workflows.list({ tenantId: 'acme' });
  assert.deepEqual(
    acme.items.map((w) => w.id),
    ['w7', 'w3'],
  );
  assert.equal(acme.next, null);
  const running = await workflows.list({ tenantId: 'default', state: 'running' });
  assert.deepEqual(
    running.items.map((w) => w.id),
    ['w5', 'w4', 'w2', 'w1'],
  );
  assert.deepEqual((await workflows.list({ tenantId: 'nobody' })).items, []);
});

test('a bad cursor, limit or state is an error naming the field', async () => {
  const field = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (error) {
      assert.ok(error instanceof WorkflowValidationError, String(error));
      return error.fields[0]?.field ?? '';
    }
    return 'no error';
  };
  assert.equal(await field(workflows.list({ after: 'not-a-cursor' })), 'after');
  assert.equal(await field(workflows.list({ after: Buffer.from('[1,2]').toString('base64url') })), 'after');
  assert.equal(await field(workflows.list({ limit: 0 })), 'limit');
  assert.equal(await field(workflows.list({ limit: 1001 })), 'limit');
  assert.equal(await field(workflows.list({ state: 'sleeping' as 'running' })), 'state');
});
