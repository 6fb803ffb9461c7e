import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobInsertMany } from '../../src/store/job-insert.ts';
import { createLogger } from '../../src/log.ts';
import {
  jobClaimBatch,
  jobCompleteMany,
  jobCompleteOutsideWorkflows,
  jobFailMany,
  leaseRenewMany,
} from '../../src/store/jobs.ts';
import { createPool, withTransaction, type PoolClient } from '../../src/store/pool.ts';
import { Completer } from '../../src/worker/completer.ts';
import { jobInsertOf } from '../../src/contract/job.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { nodeStates } from '../workflow/support.ts';

const db = await createTestDatabase();
const workflows = new WorkflowClient(db.pool);

/** Claims n jobs of the queue, enqueueing them first unless `enqueue` is false. */
async function claimed(queue: string, n: number, enqueue = true) {
  if (enqueue) {
    await jobInsertMany(
      db.pool,
      Array.from({ length: n }, () => jobInsertOf({ queue, kind: 'k', maxAttempts: 5 }, 'default')),
    );
  }
  const jobs = await jobClaimBatch(db.pool, {
    queue,
    limit: n,
    owner: 'w1',
    leaseMs: 60_000,
    tenantCursor: '',
    limited: false,
  });
  assert.equal(jobs.length, n);
  // In id order: a claim returns its jobs in no particular order.
  return jobs.map((j) => ({ id: j.id, attempt: j.attempt })).sort((x, y) => x.id - y.id);
}

async function states(ids: number[]) {
  const { rows } = await db.pool.query<{ id: number; state: string; last_error: string | null }>(
    'SELECT id, state, last_error FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows;
}

test('a batch of failures in any order gives each job its own outcome and error', async () => {
  const [a, b, c, d] = await claimed('fail-batch', 4);
  assert.ok(a && b && c && d);
  // Out of id order on purpose: the statement sorts the batch and finds each job's entry by position.
  const failed = await withTransaction(db.pool, (tx) =>
    jobFailMany(tx, 'w1', [
      { ...d, outcome: 'failed', error: 'error of d', retryable: true },
      { ...b, outcome: 'timed_out', error: 'error of b', retryable: true },
      { ...c, outcome: 'cancelled', error: 'error of c', retryable: false },
      { ...a, outcome: 'failed', error: 'error of a', retryable: false },
    ]),
  );
  assert.equal(failed.length, 4);
  assert.deepEqual(await states([a.id, b.id, c.id, d.id]), [
    { id: a.id, state: 'dead', last_error: 'error of a' },
    { id: b.id, state: 'failed', last_error: 'error of b' },
    { id: c.id, state: 'cancelled', last_error: 'error of c' },
    { id: d.id, state: 'failed', last_error: 'error of d' },
  ]);
  const { rows } = await db.pool.query<{ job_id: number; outcome: string }>(
    'SELECT job_id, outcome FROM job_attempt_history WHERE job_id = ANY ($1::bigint[]) ORDER BY job_id',
    [[a.id, b.id, c.id, d.id]],
  );
  assert.deepEqual(
    rows.map((r) => r.outcome),
    ['failed', 'timed_out', 'cancelled', 'failed'],
  );
});

test('a completion batch writes only attempts still owned, whatever their order in the batch', async () => {
  const [a, b, c] = await claimed('complete-batch', 3);
  assert.ok(a && b && c);
  const done = await withTransaction(db.pool, (tx) =>
    jobCompleteMany(tx, 'w1', [
      c,
      { id: a.id, attempt: a.attempt + 1 }, // an attempt that is not the job's: refused
      b,
    ]),
  );
  assert.deepEqual(
    done.sort((x, y) => x - y),
    [b.id, c.id],
  );
  assert.deepEqual(
    (await states([a.id, b.id, c.id])).map((r) => r.state),
    ['running', 'succeeded', 'succeeded'],
  );
  // Another owner's completion and renewal of the running one change nothing.
  assert.deepEqual(await withTransaction(db.pool, (tx) => jobCompleteMany(tx, 'w2', [a])), []);
  assert.deepEqual(await leaseRenewMany(db.pool, 'w2', [a], 60_000), []);
  const renewed = await leaseRenewMany(db.pool, 'w1', [b, a, c], 60_000);
  assert.deepEqual(
    renewed.map((r) => r.id),
    [a.id],
  );
});

test('the same job twice in one batch is written once, for its later attempt', async () => {
  const [a] = await claimed('dup-batch', 1);
  assert.ok(a);
  const done = await withTransaction(db.pool, (tx) =>
    jobCompleteMany(tx, 'w1', [a, { id: a.id, attempt: a.attempt - 1 }]),
  );
  assert.deepEqual(done, [a.id]);
});

test('plain completions are one statement; a workflow node among them is left to the completion with its release', async () => {
  await workflows.submit({
    id: 'told-wrong',
    nodes: [
      { id: 'a', kind: 'k', queue: 'told-wrong' },
      { id: 'b', kind: 'k', queue: 'told-wrong', dependsOn: ['a'] },
    ],
  });
  const [node] = await claimed('told-wrong', 1, false);
  const plain = await claimed('plain-batch', 2);
  assert.ok(node);
  // The statement alone completes the plain jobs and leaves the node's job running.
  const [first, ...rest] = plain;
  assert.ok(first);
  assert.deepEqual(await jobCompleteOutsideWorkflows(db.pool, 'w1', [node, first]), [first.id]);
  assert.deepEqual(
    (await states([node.id])).map((r) => r.state),
    ['running'],
  );
  // The completer, told that the node's job is a plain one, still finishes it with its release.
  const completer = new Completer(db.pool, 'w1', createLogger('test-completer'), 1000, () => undefined);
  completer.succeed(node, undefined);
  for (const ref of rest) completer.succeed(ref, undefined);
  await completer.flush();
  assert.deepEqual(
    (await states([node.id, ...plain.map((r) => r.id)])).map((r) => r.state),
    ['succeeded', 'succeeded', 'succeeded'],
  );
  assert.deepEqual(await nodeStates(db.pool, 'told-wrong'), { a: 'succeeded', b: 'queued' });
});

/**
 * The completer's connections to the database asked for at once while `run` goes on: a pool whose
 * connect is counted from the moment it is called (not when a connection is ready, which on a loaded
 * machine can come after the statement before it has ended), with the same database behind it.
 */
async function peakConnections(run: (completer: Completer) => Promise<void>): Promise<number> {
  let open = 0;
  let peak = 0;
  const pool = createPool({ connectionString: db.url, max: 10 });
  const connect = pool.connect.bind(pool);
  const counted = async (): Promise<PoolClient> => {
    peak = Math.max(peak, ++open);
    let client: PoolClient;
    try {
      client = await connect();
    } catch (error) {
      open--;
      throw error;
    }
    const release = client.release.bind(client);
    client.release = (err?: Error | boolean) => {
      open--;
      release(err);
    };
    return client;
  };
  // pool.query checks a connection out through connect's callback form.
  const either = (
    done?: (err: Error | undefined, client?: PoolClient) => void,
  ): Promise<PoolClient> | void => {
    if (done === undefined) return counted();
    counted().then(
      (client) => done(undefined, client),
      (err: Error) => done(err),
    );
  };
  Object.assign(pool, { connect: either });
  try {
    await run(new Completer(pool, 'w1', createLogger('test-completer'), 1000, () => undefined));
  } finally {
    await pool.end();
  }
  return peak;
}

async function rootsClaimed(id: string, n: number) {
  await workflows.submit({
    id,
    nodes: Array.from({ length: n }, (_, i) => ({ id: `n${i}`, kind: 'k', queue: `lanes-${id}` })),
  });
  return claimed(`lanes-${id}`, n, false);
}

test("one workflow's node successes are written two statements at a time; different workflows' side by side", async () => {
  const one = await rootsClaimed('lanes-one', 60);
  const peakOne = await peakConnections(async (completer) => {
    // Six batches, each handed in while the one before is being written.
    for (let i = 0; i < one.length; i += 10) {
      for (const ref of one.slice(i, i + 10)) completer.succeed(ref, 'lanes-one');
      await new Promise((r) => setImmediate(r));
    }
    await completer.flush();
  });
  assert.equal(peakOne, 2, 'a third statement of the workflow waited for one of the first two');
  assert.deepEqual(new Set(Object.values(await nodeStates(db.pool, 'lanes-one'))), new Set(['succeeded']));

  const ids = Array.from({ length: 12 }, (_, i) => `lanes-many-${i}`);
  const many = await Promise.all(ids.map((id) => rootsClaimed(id, 2)));
  const peakMany = await peakConnections(async (completer) => {
    ids.forEach((id, i) => {
      for (const ref of many[i] ?? []) completer.succeed(ref, id);
    });
    await completer.flush();
  });
  assert.ok(peakMany > 1, `twelve workflows' successes took ${peakMany} connection at a time`);
  for (const id of ids) {
    assert.deepEqual(new Set(Object.values(await nodeStates(db.pool, id))), new Set(['succeeded']));
  }
});
