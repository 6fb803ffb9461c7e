/**
 * client.workflows.timeline on workflows run by a real Worker: each node's first start and last
 * finish from its job's attempts, pages and selections, and the critical path (from the node that
 * finished last, back through the parent that finished last).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, NonRetryableError, RetryAfterError, type TimelineNode } from '../../src/index.ts';
import { WorkflowValidationError } from '../../src/workflow/definition.ts';
import { createTestDatabase } from '../support/db.ts';
import { Worker } from '../../src/worker/worker.ts';
import { createLogger } from '../../src/log.ts';
import { waitUntil } from '../worker/support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });
const failedOnce = new Set<string>();

/** Runs `fn` with a worker serving queue tl, stopped before the test ends. */
async function withWorker(fn: () => Promise<void>): Promise<void> {
  const worker = new Worker({
    pool: db.pool,
    connectionString: db.url,
    queues: [{ name: 'tl', concurrency: 4 }],
    pollMs: 50,
    leaseMs: 2000,
    log: createLogger('timeline-worker'),
    handlers: {
      // Sleeps payload.ms; payload.failFirst: the first attempt fails and is retried 30 ms later.
      step: async (ctx) => {
        const p = ctx.payload as { ms: number; failFirst?: string; fatal?: boolean };
        await new Promise((r) => setTimeout(r, p.ms));
        if (p.fatal === true) throw new NonRetryableError('fatal step');
        if (p.failFirst !== undefined && !failedOnce.has(p.failFirst)) {
          failedOnce.add(p.failFirst);
          throw new RetryAfterError('first attempt fails', 30);
        }
      },
    },
  });
  await worker.start();
  try {
    await fn();
  } finally {
    await worker.stop();
  }
}

async function finished(id: string): Promise<string> {
  return waitUntil(`workflow ${id} to finish`, async () => {
    const s = await client.workflows.status(id);
    return s !== null && s.state !== 'running' ? s.state : undefined;
  });
}

const ms = (d: Date | null): number => d?.getTime() ?? Number.NaN;
const keys = (nodes: TimelineNode[]): string[] => nodes.map((n) => n.key);

test('a diamond run by a worker: first start and last finish per node, and the critical path', async () => {
  // a → (b, c) → d; c is the slow branch, and its first attempt fails.
  await client.workflows.submit({
    id: 'diamond',
    name: 'diamond',
    nodes: [
      { id: 'a', queue: 'tl', kind: 'step', payload: { ms: 50 } },
      { id: 'b', queue: 'tl', kind: 'step', payload: { ms: 20 }, dependsOn: ['a'] },
      { id: 'c', queue: 'tl', kind: 'step', payload: { ms: 300, failFirst: 'c' }, dependsOn: ['a'] },
      { id: 'd', queue: 'tl', kind: 'step', payload: { ms: 50 }, dependsOn: ['b', 'c'] },
    ],
  });
  await withWorker(async () => assert.equal(await finished('diamond'), 'succeeded'));

  const t = await client.workflows.timeline('diamond');
  assert.ok(t !== null);
  assert.deepEqual(keys(t.nodes), ['a', 'b', 'c', 'd']);
  assert.equal(t.next, null);
  for (const n of t.nodes) {
    assert.equal(n.state, 'succeeded');
    assert.ok(ms(n.releasedAt) <= ms(n.startedAt), `${n.key}: released before it started`);
    assert.ok(ms(n.startedAt) < ms(n.finishedAt), `${n.key}: started before it finished`);
  }
  const [a, b, c, d] = t.nodes as [TimelineNode, TimelineNode, TimelineNode, TimelineNode];
  // c ran twice: its start is its first attempt's, before the start its job row holds now.
  assert.equal(c.attempts, 2);
  const { rows } = await db.pool.query<{ first: Date; last: Date }>(
    `SELECT (SELECT started_at FROM job_attempts WHERE job_id = j.id AND attempt = 1) AS first,
            j.started_at AS last FROM jobs j WHERE j.id = $1`,
    [c.jobId],
  );
  assert.equal(ms(c.startedAt), ms(rows[0]?.first ?? null));
  assert.ok(ms(c.startedAt) < ms(rows[0]?.last ?? null), 'the second attempt started later');
  // d waits for both; the one that finished last released it.
  assert.ok(ms(c.finishedAt) > ms(b.finishedAt));
  assert.equal(d.releasedBy, 'c');
  assert.ok(ms(d.startedAt) >= ms(c.finishedAt));
  assert.equal(ms(d.finishedAt), Math.max(...t.nodes.map((n) => ms(n.finishedAt))));
  assert.deepEqual([a.releasedBy, b.releasedBy, c.releasedBy], [null, 'a', 'a']);

  assert.deepEqual(keys(t.criticalPath), ['a', 'c', 'd'], 'root first, through the slow branch');
  assert.equal(t.criticalPathComplete, true);
  assert.deepEqual(
    t.nodes.map((n) => n.critical),
    [true, false, true, true],
  );

  // Pages, a selection, the path alone, and a path cut short.
  const first = await client.workflows.timeline('diamond', { limit: 2 });
  assert.deepEqual([keys(first?.nodes ?? []), first?.next], [['a', 'b'], 'b']);
  const second = await client.workflows.timeline('diamond', { limit: 2, after: 'b' });
  assert.deepEqual([keys(second?.nodes ?? []), second?.next], [['c', 'd'], 'd']);
  const picked = await client.workflows.timeline('diamond', { keys: ['d', 'b', 'nope', 'd'] });
  assert.deepEqual([keys(picked?.nodes ?? []), picked?.next], [['b', 'd'], null]);
  const pathOnly = await client.workflows.timeline('diamond', { limit: 0 });
  assert.deepEqual([pathOnly?.nodes, keys(pathOnly?.criticalPath ?? [])], [[], ['a', 'c', 'd']]);
  const cut = await client.workflows.timeline('diamond', { pathLimit: 2 });
  assert.deepEqual([keys(cut?.criticalPath ?? []), cut?.criticalPathComplete], [['c', 'd'], false]);

  assert.equal(await client.workflows.timeline('no-such-workflow'), null);
});

test('a failed workflow: its path ends at the failed node', async () => {
  await client.workflows.submit({
    id: 'breaks',
    nodes: [
      { id: 'x', queue: 'tl', kind: 'step', payload: { ms: 10 } },
      { id: 'y', queue: 'tl', kind: 'step', payload: { ms: 80, fatal: true }, dependsOn: ['x'] },
      { id: 'z', queue: 'tl', kind: 'step', payload: { ms: 10 }, dependsOn: ['y'] },
    ],
  });
  await withWorker(async () => assert.equal(await finished('breaks'), 'failed'));
  const t = await client.workflows.timeline('breaks');
  assert.deepEqual(keys(t?.criticalPath ?? []), ['x', 'y']);
  const byKey = new Map((t?.nodes ?? []).map((n) => [n.key, n]));
  assert.equal(byKey.get('y')?.state, 'failed');
  assert.ok(byKey.get('y')?.finishedAt instanceof Date);
  assert.deepEqual([byKey.get('z')?.startedAt, byKey.get('z')?.finishedAt], [null, null]);
});

test('bad options name the field', async () => {
  const cases: [Parameters<typeof client.workflows.timeline>[1], string][] = [
    [{ limit: -1 }, 'limit'],
    [{ limit: 1001 }, 'limit'],
    [{ limit: 2.5 }, 'limit'],
    [{ pathLimit: 1001 }, 'pathLimit'],
    [{ keys: ['a'], after: 'a' }, 'keys'],
    [{ keys: Array.from({ length: 1001 }, (_, i) => `k${i}`) }, 'keys'],
  ];
  for (const [options, field] of cases) {
    await assert.rejects(client.workflows.timeline('diamond', options), (e: unknown) => {
      assert.ok(e instanceof WorkflowValidationError, String(e));
      assert.deepEqual(
        e.fields.map((f) => f.field),
        [field],
      );
      return true;
    });
  }
});
