/**
 * Signal-node timeouts fire in a deployment of only workers (`tidemark worker`, or a library Worker): every worker runs
 * the timer, and two of them never apply one timeout twice. Nothing in this test fires timeouts
 * itself; the workers are real processes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from '../../src/worker/worker.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark, type TidemarkProcess } from '../support/processes.ts';

const HANDLERS = fileURLToPath(new URL('./fixtures/handlers.ts', import.meta.url));
const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);
await db.pool.query('CREATE TABLE wf_exec (node text, job_id bigint, attempt int, pid int)');

function worker(): TidemarkProcess {
  return spawnTidemark(['worker', '--handlers', HANDLERS, '--queue', 'wf:5', '--poll-ms', '100'], {
    env: { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' },
  });
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('two tidemark worker processes fire signal timeouts, each exactly once', async () => {
  const workers = [worker(), worker()];
  try {
    await Promise.all(workers.map((w) => w.waitFor(/ready/)));
    await workflows.submit({
      id: 'auto-approve',
      nodes: [
        {
          id: 'approve',
          type: 'signal',
          signal: 'approved',
          timeoutMs: 300,
          onTimeout: 'default',
          default: { auto: true },
        },
        {
          id: 'after',
          queue: 'wf',
          kind: 'record',
          payload: { node: 'after', sync: true },
          dependsOn: ['approve'],
        },
      ],
    });
    await workflows.submit({
      id: 'deadline',
      nodes: [{ id: 'approve', type: 'signal', signal: 'approved', timeoutMs: 300 }],
    });
    await until(
      'both workflows to end',
      async () =>
        (await workflows.status('auto-approve'))?.state === 'succeeded' &&
        (await workflows.status('deadline'))?.state === 'failed',
      30_000,
    );
    const { rows } = await db.pool.query<{
      workflow_id: string;
      state: string;
      output: unknown;
      error: string | null;
    }>(
      `SELECT workflow_id, state, output, error FROM workflow_nodes WHERE key = 'approve' ORDER BY workflow_id`,
    );
    assert.deepEqual(
      rows.map((r) => [r.workflow_id, r.state, r.output]),
      [
        ['auto-approve', 'succeeded', { auto: true }],
        ['deadline', 'failed', null],
      ],
    );
    assert.match(rows[1]?.error ?? '', /signal approved not received within 300 ms/);
    const exec = await db.pool.query<{ node: string; n: number }>(
      'SELECT node, count(*)::int AS n FROM wf_exec GROUP BY node',
    );
    assert.deepEqual(exec.rows, [{ node: 'after', n: 1 }], 'the released node ran once');
    const counters = await db.pool.query<{ id: string; unfinished: number; failed_nodes: number }>(
      'SELECT id, unfinished, failed_nodes FROM workflows ORDER BY id',
    );
    assert.deepEqual(counters.rows, [
      { id: 'auto-approve', unfinished: 0, failed_nodes: 0 },
      { id: 'deadline', unfinished: 0, failed_nodes: 1 },
    ]);
  } finally {
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
  }
});

test('a Worker made by the library from a connection string alone fires signal timeouts too', async () => {
  const worker = new Worker({
    connectionString: db.url,
    handlers: { noop: () => Promise.resolve() },
    queues: [{ name: 'library-wf', concurrency: 1 }],
    pollMs: 100,
  });
  await worker.start();
  try {
    await workflows.submit({
      id: 'library-deadline',
      nodes: [{ id: 'approve', type: 'signal', signal: 'approved', timeoutMs: 200 }],
    });
    await until(
      'the signal node to time out',
      async () => (await workflows.status('library-deadline'))?.state === 'failed',
      30_000,
    );
  } finally {
    await worker.stop();
  }
  // Its backends leave pg_stat_activity a moment after the pool closes their sockets; the other
  // test's worker processes (same application name) are ending too.
  await until(
    "stop() to end the worker's own pool",
    async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'tidemark-worker' AND datname = current_database()",
      );
      return rows[0]?.n === 0;
    },
    // Under the pool's 10-s idle timeout, so a pool left open fails this.
    5_000,
  );
});
