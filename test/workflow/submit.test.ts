import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JobClient } from '../../src/worker/job-client.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { WorkflowValidationError } from '../../src/workflow/definition.ts';
import { createTestDatabase } from '../support/db.ts';
import { availableKeys, nodeStates } from './support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

async function count(table: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]?.n ?? -1;
}

test('nodes without dependencies become available jobs in the submitting transaction', async () => {
  const r = await workflows.submit({
    id: 'etl',
    nodes: [
      { id: 'extract', queue: 'etl', kind: 'extract', payload: { table: 'users' } },
      { id: 'validate', queue: 'etl', kind: 'validate' },
      { id: 'transform', queue: 'etl', kind: 'transform', dependsOn: ['extract', 'validate'], retries: 5 },
      { id: 'load', queue: 'etl', kind: 'load', dependsOn: ['transform'], timeoutMs: 60_000 },
    ],
  });
  assert.deepEqual(r, { id: 'etl', created: true, nodes: 4, edges: 3 });
  assert.deepEqual(await availableKeys(db.pool, 'etl'), ['extract', 'validate']);
  assert.deepEqual(await nodeStates(db.pool, 'etl'), {
    extract: 'queued',
    validate: 'queued',
    transform: 'pending',
    load: 'pending',
  });
  const { rows } = await db.pool.query<{
    kind: string;
    payload: unknown;
    idempotency_key: string;
    key_generated: boolean;
    queue: string;
  }>(
    `SELECT j.kind, j.payload, j.idempotency_key, j.key_generated, j.queue FROM jobs j JOIN workflow_nodes n ON n.job_id = j.id
     WHERE n.key = 'extract'`,
  );
  assert.equal(rows[0]?.kind, 'extract');
  assert.deepEqual(rows[0]?.payload, { table: 'users' });
  assert.match(rows[0]?.idempotency_key ?? '', /^workflow:etl:\d+:1$/);
  assert.equal(rows[0]?.key_generated, true, 'unique by construction, so not in the unique key index');
  const deps = await db.pool.query<{
    key: string;
    pending_deps: number;
    max_attempts: number;
    timeout_ms: number;
  }>(
    `SELECT key, pending_deps, max_attempts, timeout_ms FROM workflow_nodes WHERE workflow_id = 'etl' ORDER BY key`,
  );
  assert.deepEqual(
    deps.rows.map((r) => [r.key, r.pending_deps, r.max_attempts, r.timeout_ms]),
    [
      ['extract', 0, 4, null],
      ['load', 1, 4, 60_000],
      ['transform', 2, 6, null],
      ['validate', 0, 4, null],
    ],
  );
});

test("a node job's key sent back to its queue returns that job; elsewhere it is an ordinary key", async () => {
  await workflows.submit({ id: 'keys', nodes: [{ id: 'only', queue: 'wfkeys', kind: 'k' }] });
  const { rows } = await db.pool.query<{ id: number; key: string }>(
    `SELECT j.id, j.idempotency_key AS key FROM jobs j JOIN workflow_nodes n ON n.job_id = j.id
     WHERE n.workflow_id = 'keys'`,
  );
  const [node] = rows;
  assert.ok(node);
  const jobs = new JobClient(db.pool);
  const before = await count('jobs');
  const again = await jobs.enqueue({ queue: 'wfkeys', kind: 'k', idempotencyKey: node.key });
  assert.deepEqual([again.id, again.created], [node.id, false]);
  assert.equal(await count('jobs'), before, 'nothing written');
  const elsewhere = await jobs.enqueueMany([
    { queue: 'wfkeys-2', kind: 'k', idempotencyKey: node.key },
    { queue: 'wfkeys-2', kind: 'k', idempotencyKey: node.key },
  ]);
  assert.deepEqual(
    elsewhere.map((r) => r.created),
    [true, false],
  );
  assert.equal(elsewhere[0]?.id, elsewhere[1]?.id);
  assert.notEqual(elsewhere[0]?.id, node.id);
});

test('the same workflow id twice is idempotent; a different definition under that id is refused', async () => {
  const spec = {
    id: 'twice',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k', dependsOn: ['a'] },
    ],
  };
  assert.equal((await workflows.submit(spec)).created, true);
  const jobsBefore = await count('jobs');
  const second = await Promise.all([workflows.submit(spec), workflows.submit(spec)]);
  assert.deepEqual(
    second.map((r) => r.created),
    [false, false],
  );
  assert.equal(await count('jobs'), jobsBefore);
  await assert.rejects(
    workflows.submit({ ...spec, nodes: [{ id: 'a', kind: 'other' }] }),
    (e: unknown) =>
      e instanceof WorkflowValidationError &&
      e.fields[0]?.field === 'id' &&
      /different definition/.test(e.message),
  );
});

test('two concurrent first submissions of one id create it once', async () => {
  const spec = { id: 'race', nodes: Array.from({ length: 500 }, (_, i) => ({ id: `n${i}`, kind: 'k' })) };
  const results = await Promise.all([workflows.submit(spec), workflows.submit(spec)]);
  assert.deepEqual(results.map((r) => r.created).sort(), [false, true]);
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM workflow_nodes WHERE workflow_id = 'race'`,
  );
  assert.equal(rows[0]?.n, 500);
});

test('an invalid workflow writes nothing', async () => {
  const before = [await count('workflows'), await count('workflow_nodes'), await count('jobs')];
  await assert.rejects(
    workflows.submit({
      id: 'bad',
      nodes: [
        { id: 'a', kind: 'k', dependsOn: ['c'] },
        { id: 'b', kind: 'k', dependsOn: ['a'] },
        { id: 'c', kind: 'k', dependsOn: ['b'] },
      ],
    }),
    /nodes: the dependencies form a cycle: a -> b -> c -> a/,
  );
  await assert.rejects(
    workflows.submit({ id: 'bad', tenantId: 'nobody', nodes: [{ id: 'a', kind: 'k' }] }),
    /tenantId: no tenant 'nobody'/,
  );
  assert.deepEqual([await count('workflows'), await count('workflow_nodes'), await count('jobs')], before);
});

// 20,000 nodes keep the suite lean on a shared machine; `npm run bench workflow` submits 100,000.
test('a 20,000-node workflow is stored with the children of each node and only its roots enqueued', async () => {
  const nodes = Array.from({ length: 20_000 }, (_, i) => ({
    id: `n${i}`,
    kind: 'k',
    dependsOn: i < 100 ? [] : [`n${i % 100}`, `n${i - 100}`],
  }));
  const r = await workflows.submit({ id: 'big', nodes });
  assert.equal(r.nodes, 20_000);
  // Nodes 100-199 name the same node twice; a repeated dependency is one edge.
  assert.equal(r.edges, 19_900 * 2 - 100);
  const { rows } = await db.pool.query<{ queued: number; edges: number }>(
    `SELECT (SELECT count(*)::int FROM workflow_nodes WHERE workflow_id = 'big' AND state = 'queued') AS queued,
            (SELECT count(*)::int FROM workflow_nodes p, unnest(p.children) AS e(child_id)
             JOIN workflow_nodes c ON c.id = e.child_id AND c.workflow_id = 'big'
             WHERE p.workflow_id = 'big') AS edges`,
  );
  assert.deepEqual(rows[0], { queued: 100, edges: r.edges });
  // Every node's parents, read back through the children arrays, are the ones it named.
  const parents = await db.pool.query<{ key: string; parents: string[] }>(
    `SELECT c.key, array_agg(p.key ORDER BY p.key) AS parents
     FROM workflow_nodes p, unnest(p.children) AS e(child_id), workflow_nodes c
     WHERE p.workflow_id = 'big' AND c.id = e.child_id AND c.key IN ('n100', 'n5099')
     GROUP BY c.key ORDER BY c.key`,
  );
  assert.deepEqual(parents.rows, [
    { key: 'n100', parents: ['n0'] },
    { key: 'n5099', parents: ['n4999', 'n99'] },
  ]);
});

test('deleting a workflow row removes its nodes (the cascade 0006 keeps as a trigger)', async () => {
  await workflows.submit({
    id: 'doomed',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k', dependsOn: ['a'] },
    ],
  });
  await workflows.submit({
    id: 'kept',
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k', dependsOn: ['a'] },
    ],
  });
  const nodesBefore = await count('workflow_nodes');
  await db.pool.query(`DELETE FROM workflows WHERE id = 'doomed'`);
  const { rows } = await db.pool.query<{ workflow_id: string }>(
    'SELECT DISTINCT workflow_id FROM workflow_nodes WHERE workflow_id IN ($1, $2)',
    ['doomed', 'kept'],
  );
  assert.deepEqual(rows, [{ workflow_id: 'kept' }]);
  assert.equal(await count('workflow_nodes'), nodesBefore - 2);
});
