/**
 * The statements of a workflow node's completion find nodes by their job (workflow_nodes_job_idx),
 * whatever the planner's statistics say: after an ANALYZE that saw two workflows and one queued node
 * each, the lock statement read every node of each workflow and the success update every queued
 * node, per completion batch; so does the generic plan a connection keeps for the named success
 * statement, written alone or in a transaction. And the completion reads its jobs by primary key
 * where the jobs table's statistics are those of a nearly empty one: in a transaction with
 * withTransaction's byIndex and without, and written alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobCompleteMany } from '../../src/store/jobs.ts';
import { withTransaction, type PoolClient } from '../../src/store/pool.ts';
import { workflowNodeJobsSucceed } from '../../src/store/workflow-nodes.ts';
import { workflowLockByJobs } from '../../src/store/workflows.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { claim, succeed } from './support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

/** Index scans this transaction has made so far, by index name. */
async function indexScans(tx: PoolClient): Promise<Record<string, number>> {
  const { rows } = await tx.query<{ name: string; n: number }>(
    `SELECT indexrelname AS name, pg_stat_get_xact_numscans(indexrelid)::int AS n
     FROM pg_stat_user_indexes WHERE relname = 'workflow_nodes'`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.n]));
}

function fanOut(id: string, children: number) {
  return {
    id,
    nodes: [
      { id: 'root', kind: 'k' },
      ...Array.from({ length: children }, (_, i) => ({ id: `c${i}`, kind: 'k', dependsOn: ['root'] })),
    ],
  };
}

test('completing workflow nodes finds them by job, not by scanning a workflow or every queued node', async () => {
  await workflows.submit(fanOut('plan-a', 2000));
  await workflows.submit(fanOut('plan-b', 4000));
  // Analysed while each workflow has one queued node (its root).
  await db.pool.query('ANALYZE workflows, workflow_nodes');
  const [root] = await claim(db.pool, 'plan-a', ['root']);
  assert.ok(root);
  await succeed(db.pool, [root.id]);
  const children = await claim(db.pool, 'plan-a');
  assert.equal(children.length, 2000);
  // Planned for its parameters, and as the plan a connection keeps for the named statement.
  for (const [mode, how] of [
    ['auto', false],
    ['force_generic_plan', false],
    ['auto', true],
    ['force_generic_plan', true],
    ['auto', 'named'],
    ['force_generic_plan', 'named'],
  ] as const) {
    const jobIds = children.slice(0, 500).map((j) => j.id);
    const tx = await db.pool.connect();
    try {
      await tx.query('BEGIN');
      await tx.query(`SET LOCAL plan_cache_mode = ${mode}`);
      const before = await indexScans(tx);
      const locked = await workflowLockByJobs(tx, jobIds);
      assert.deepEqual(
        locked.map((w) => w.id),
        ['plan-a'],
      );
      const succeeded = await workflowNodeJobsSucceed(tx, jobIds, undefined, undefined, {
        alone: how !== false,
        workflows: how === 'named' ? ['plan-a'] : undefined,
      });
      assert.deepEqual(
        succeeded.locked.map((w) => w.id),
        ['plan-a'],
      );
      const after = await indexScans(tx);
      const used = Object.keys(after).filter((name) => (after[name] ?? 0) > (before[name] ?? 0));
      assert.deepEqual(used.sort(), ['workflow_nodes_job_idx'], `${mode}, alone ${how}`);
      const { rows } = await tx.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM workflow_nodes WHERE workflow_id = 'plan-a' AND state = 'succeeded'`,
      );
      assert.equal(rows[0]?.n, 501);
      await tx.query('ROLLBACK');
    } finally {
      tx.release();
    }
  }
});

test('a completion transaction reads its jobs by primary key where the statistics saw the jobs table nearly empty', async () => {
  // A database of its own: the statistics are what this test sets them to.
  const own = await createTestDatabase();
  await own.pool.query('ANALYZE jobs');
  const { rows } = await own.pool.query<{ id: number }>(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, attempt, lease_owner, lease_expires_at, started_at)
     SELECT 'plan', 'k', 'running', 'plan-' || g, true, 1, 'w1', now() + interval '1 hour', now()
     FROM generate_series(1, 20000) g RETURNING id`,
  );
  const refs = rows.filter((_, i) => i % 40 === 0).map((r) => ({ id: r.id, attempt: 1 }));
  const complete = (batch: typeof refs, byIndex: boolean, mode: string, alone: boolean) =>
    withTransaction(
      own.pool,
      async (tx) => {
        await tx.query(`SET LOCAL plan_cache_mode = ${mode}`);
        // Rows read by scanning the open jobs' partition, and index scans of its primary key, by
        // the completion. (A transaction's counts can include earlier ones on the connection not
        // yet reported.)
        const counts = async () =>
          (
            await tx.query<{ scanned: number; pkey: number }>(
              `SELECT pg_stat_get_xact_tuples_returned('jobs_open'::regclass)::int AS scanned,
                      pg_stat_get_xact_numscans('jobs_open_pkey'::regclass)::int AS pkey`,
            )
          ).rows[0] ?? { scanned: 0, pkey: 0 };
        const before = await counts();
        // Alone, the statement runs outside a transaction, without byIndex: here in one, to read
        // its counts.
        const written = await jobCompleteMany(tx, 'w1', batch, undefined, { alone });
        const after = await counts();
        return {
          written: written.length,
          scanned: after.scanned - before.scanned,
          pkey: after.pkey - before.pkey,
        };
      },
      { byIndex },
    );
  // Planned as usual, with table scans off (byIndex), and as the generic plan a connection keeps
  // for the named statement, the batch reads the open jobs by key; so does the statement written
  // alone, which has no byIndex.
  const sixth = Math.floor(refs.length / 6);
  for (const [k, byIndex, mode, alone] of [
    [0, false, 'auto', false],
    [1, true, 'auto', false],
    [2, true, 'force_generic_plan', false],
    [3, false, 'auto', true],
    [4, false, 'force_generic_plan', true],
  ] as const) {
    const batch = refs.slice(k * sixth, (k + 1) * sixth);
    const r = await complete(batch, byIndex, mode, alone);
    const what = `byIndex ${byIndex}, ${mode}, alone ${alone}`;
    assert.equal(r.written, batch.length);
    assert.ok(r.scanned < 1000, `jobs not scanned (${what}): ${JSON.stringify(r)}`);
    assert.ok(r.pkey > 0, `read by jobs_open_pkey (${what})`);
  }
});
