import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { Client } from '../../src/client.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { queueUpsert } from '../../src/store/queues.ts';
import { JobValidationError } from '../../src/worker/errors.ts';
import { JobNotFoundError } from '../../src/worker/job-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });

/** Collects the payloads of tidemark_jobs wake-ups; `end` delivers what is pending, then stops. */
async function listenForWakeUps(): Promise<{ woken: string[]; end: () => Promise<void> }> {
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  const woken: string[] = [];
  listener.on('notification', (n) => woken.push(n.payload ?? ''));
  await listener.query('LISTEN tidemark_jobs');
  return {
    woken,
    async end() {
      await listener.query('SELECT 1');
      await listener.end();
    },
  };
}

async function jobCount(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs');
  return rows[0]?.n ?? -1;
}

test('enqueue writes an available job that get returns with an empty attempt history', async () => {
  const job = await client.jobs.enqueue({ queue: 'mail', kind: 'send', payload: { to: 'a@example.com' } });
  assert.equal(job.created, true);
  const got = await client.jobs.get(job.id);
  assert.ok(got);
  assert.equal(got.state, 'available');
  assert.equal(got.tenantId, 'default');
  assert.equal(got.maxAttempts, 4, 'first try plus 3 retries by default');
  assert.deepEqual(got.payload, { to: 'a@example.com' });
  assert.deepEqual(got.attempts, []);
});

test('a key already present in the queue returns the existing job; another queue gets its own', async () => {
  const first = await client.jobs.enqueue({ queue: 'billing', kind: 'charge', idempotencyKey: 'invoice-7' });
  const again = await client.jobs.enqueue({
    queue: 'billing',
    kind: 'charge',
    idempotencyKey: 'invoice-7',
    payload: { x: 1 },
  });
  assert.equal(again.id, first.id);
  assert.equal(again.created, false);
  const other = await client.jobs.enqueue({ queue: 'billing2', kind: 'charge', idempotencyKey: 'invoice-7' });
  assert.notEqual(other.id, first.id);
  const { rows } = await db.pool.query(`SELECT id FROM jobs WHERE idempotency_key = 'invoice-7'`);
  assert.equal(rows.length, 2);
});

test('one key enqueued at once on many connections makes one job, finished or not; a rolled-back enqueue leaves the key free', async () => {
  const enqueue = () => client.jobs.enqueue({ queue: 'race-keys', kind: 'k', idempotencyKey: 'once' });
  const many = (n: number) =>
    Promise.all([
      ...Array.from({ length: n }, enqueue),
      client.jobs.enqueueMany(
        Array.from({ length: 3 }, () => ({ queue: 'race-keys', kind: 'k', idempotencyKey: 'once' })),
      ),
    ]);
  const [first, ...rest] = await many(8);
  assert.ok(first !== undefined && !Array.isArray(first));
  const ids = new Set(rest.flatMap((r) => (Array.isArray(r) ? r.map((j) => j.id) : [r.id])));
  ids.add(first.id);
  assert.equal(ids.size, 1, 'every enqueue got the one job');
  assert.equal(
    [first, ...rest].flatMap((r) => (Array.isArray(r) ? r : [r])).filter((j) => j.created).length,
    1,
  );
  // Finished, the job still holds its key: it moved to jobs_done, the key stays in job_keys.
  await client.jobs.cancel(first.id);
  const after = await client.jobs.enqueue({ queue: 'race-keys', kind: 'k', idempotencyKey: 'once' });
  assert.deepEqual([after.id, after.created], [first.id, false]);

  await assert.rejects(
    withTransaction(db.pool, async (tx) => {
      await client.jobs.enqueueTx(tx, { queue: 'race-keys', kind: 'k', idempotencyKey: 'rolled-back' });
      throw new Error('caller aborts');
    }),
    /caller aborts/,
  );
  const fresh = await client.jobs.enqueue({ queue: 'race-keys', kind: 'k', idempotencyKey: 'rolled-back' });
  assert.equal(fresh.created, true);
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE queue = 'race-keys'`,
  );
  assert.equal(rows[0]?.n, 2);
});

test('a job without a key gets job-<id>-<random>; sent back as a key, it returns that job on every path', async () => {
  const generated = /^job-(\d+)-[0-9a-f]{16}$/;
  const one = await client.jobs.enqueue({ queue: 'gen', kind: 'k' });
  const inTx = await withTransaction(db.pool, (tx) => client.jobs.enqueueTx(tx, { queue: 'gen', kind: 'k' }));
  const few = await client.jobs.enqueueMany([
    { queue: 'gen', kind: 'k' },
    { queue: 'gen', kind: 'k', idempotencyKey: 'given' },
    { queue: 'gen', kind: 'k', runAt: new Date(Date.now() + 3_600_000) },
  ]);
  const copied = await client.jobs.enqueueMany(
    Array.from({ length: 600 }, () => ({ queue: 'gen', kind: 'k' })),
  );
  const made = [one, inTx, few[0], few[2], ...copied].map((r) => {
    assert.ok(r);
    return r;
  });
  for (const r of made) assert.equal(generated.exec(r.idempotencyKey)?.[1], String(r.id), r.idempotencyKey);
  assert.equal(
    new Set(made.map((r) => r.idempotencyKey.slice(-16))).size,
    made.length,
    'random parts differ',
  );
  const { rows } = await db.pool.query<{ key: string; generated: boolean }>(
    `SELECT idempotency_key AS key, key_generated AS generated FROM jobs WHERE id = ANY ($1::bigint[])`,
    [[one.id, few[1]?.id, copied[0]?.id]],
  );
  assert.deepEqual(rows.map((r) => r.generated).sort(), [false, true, true], 'only the given key is indexed');

  const before = await jobCount();
  const sentBack = [one, inTx, few[0], copied[599]].map((r) => ({
    queue: 'gen',
    kind: 'k',
    idempotencyKey: r?.idempotencyKey,
  }));
  const again = [
    await client.jobs.enqueue(sentBack[0] ?? { queue: 'gen', kind: 'k' }),
    await withTransaction(db.pool, (tx) =>
      client.jobs.enqueueTx(tx, sentBack[1] ?? { queue: 'gen', kind: 'k' }),
    ),
    ...(await client.jobs.enqueueMany([
      ...sentBack.slice(2),
      { queue: 'gen', kind: 'k', idempotencyKey: 'given' },
    ])),
  ];
  assert.deepEqual(
    again.map((r) => [r.id, r.created]),
    [one, inTx, few[0], copied[599], few[1]].map((r) => [r?.id, false]),
  );
  assert.equal(await jobCount(), before, 'nothing written');

  // Keys are per queue; a key of the generated form that names no job of the queue is a caller's key.
  const elsewhere = await client.jobs.enqueue({
    queue: 'gen-2',
    kind: 'k',
    idempotencyKey: one.idempotencyKey,
  });
  assert.equal(elsewhere.created, true);
  const twice = await client.jobs.enqueue({ queue: 'gen-2', kind: 'k', idempotencyKey: one.idempotencyKey });
  assert.deepEqual([twice.id, twice.created], [elsewhere.id, false]);
  const unknown = `job-${one.id}-0123456789abcdef`;
  const [u1, u2] = await client.jobs.enqueueMany([
    { queue: 'gen', kind: 'k', idempotencyKey: unknown },
    { queue: 'gen', kind: 'k', idempotencyKey: unknown },
  ]);
  assert.deepEqual(
    [u1?.created, u2?.created, u1?.id === u2?.id, u1?.id === one.id],
    [true, false, true, false],
  );
});

test('enqueueMany answers in input order, de-duplicating keys within the call and against the table', async () => {
  const before = await client.jobs.enqueue({ queue: 'bulk', kind: 'k', idempotencyKey: 'b-0' });
  const result = await client.jobs.enqueueMany([
    { queue: 'bulk', kind: 'k', idempotencyKey: 'b-1' },
    { queue: 'bulk', kind: 'k', idempotencyKey: 'b-0' },
    { queue: 'bulk', kind: 'k', idempotencyKey: 'b-1' },
    { queue: 'bulk', kind: 'k', idempotencyKey: 'b-2', runAt: new Date(Date.now() + 3_600_000) },
  ]);
  assert.deepEqual(
    result.map((r) => [r.idempotencyKey, r.created]),
    [
      ['b-1', true],
      ['b-0', false],
      ['b-1', false],
      ['b-2', true],
    ],
  );
  assert.equal(result[1]?.id, before.id);
  assert.equal(result[2]?.id, result[0]?.id);
  assert.equal(
    (await client.jobs.get(result[3]!.id))?.state,
    'scheduled',
    'a future run_at waits as scheduled',
  );
});

test('bad input names the field and writes nothing', async () => {
  const count = await jobCount();
  await assert.rejects(client.jobs.enqueue({ queue: 'no spaces', kind: 'k' }), (e: Error) => {
    assert.ok(e instanceof JobValidationError);
    assert.match(e.message, /^queue: /);
    return true;
  });
  await assert.rejects(
    client.jobs.enqueueMany([
      { queue: 'ok', kind: 'k' },
      { queue: 'ok', kind: 'k', maxAttempts: 0 },
    ]),
    /^JobValidationError: jobs\.1\.maxAttempts: Expected integer to be greater or equal to 1/,
  );
  await assert.rejects(
    client.jobs.enqueue({ queue: 'ok', kind: '' }),
    /kind: Expected string length greater or equal to 1/,
  );
  await assert.rejects(client.jobs.enqueue({ queue: 'ok', kind: 'k', tenantId: 'Upper' }), /tenantId: /);
  await assert.rejects(
    client.jobs.enqueue({ queue: 'ok', kind: 'k', runAt: new Date('nope') }),
    /runAt: must be a valid Date/,
  );
  await assert.rejects(
    client.jobs.enqueue({ queue: 'ok', kind: 'k', payload: { n: 1n } }),
    /payload: must be JSON-serialisable/,
  );
  await assert.rejects(
    client.jobs.enqueue({ queue: 'ok', kind: 'k', backoffBaseMs: 10, backoffMaxMs: 5 }),
    /backoffMaxMs: must be at least backoffBaseMs/,
  );
  await assert.rejects(client.jobs.list({ limit: 0 }), /limit: must be an integer from 1 to 1000/);
  assert.equal(await jobCount(), count);
});

test("enqueueTx joins the caller's transaction: rolled back, the job never existed", async () => {
  const count = await jobCount();
  await assert.rejects(
    withTransaction(db.pool, async (tx) => {
      await client.jobs.enqueueTx(tx, { queue: 'tx', kind: 'k' });
      throw new Error('caller aborts');
    }),
    /caller aborts/,
  );
  assert.equal(await jobCount(), count);
  const committed = await withTransaction(db.pool, (tx) =>
    client.jobs.enqueueTx(tx, { queue: 'tx', kind: 'k' }),
  );
  assert.equal((await client.jobs.get(committed.id))?.queue, 'tx');
});

test("a queue's max_attempts is the default for its jobs; the job may override it", async () => {
  await queueUpsert(db.pool, 'strict', { maxAttempts: 7 });
  const a = await client.jobs.enqueue({ queue: 'strict', kind: 'k' });
  const b = await client.jobs.enqueue({ queue: 'strict', kind: 'k', maxAttempts: 2 });
  assert.equal((await client.jobs.get(a.id))?.maxAttempts, 7);
  assert.equal((await client.jobs.get(b.id))?.maxAttempts, 2);
});

test('a large batch of fresh jobs (written with COPY) keeps every field, in input order', async () => {
  await queueUpsert(db.pool, 'copied', { maxAttempts: 9 });
  const { woken, end } = await listenForWakeUps();
  // Text COPY escapes backslash, tab, newline and carriage return: every one of them must come back.
  const awkward = { s: 'tab\there\nnew\r\\back \u00e9 \u{1F600} "q"', n: [1, null, { d: true }] };
  const input = Array.from({ length: 1_200 }, (_, i) => ({
    queue: i % 2 === 0 ? 'copied' : 'copied-2',
    kind: i === 7 ? 'kind\twith\\tab' : 'k',
    tenantId: i % 3 === 0 ? 'acme' : undefined,
    payload: i === 5 ? awkward : { i },
    priority: i % 4,
    ...(i === 9
      ? { maxAttempts: 2, timeoutMs: 1500, heartbeatMs: 300, backoffBaseMs: 10, backoffMaxMs: 20 }
      : {}),
  }));
  const result = await withTransaction(db.pool, (tx) => client.jobs.enqueueManyTx(tx, input));
  assert.equal(result.length, input.length);
  assert.ok(result.every((r) => r.created));
  assert.equal(new Set(result.map((r) => r.id)).size, input.length, 'every job its own id');
  for (let i = 1; i < result.length; i++) assert.ok((result[i]?.id ?? 0) > (result[i - 1]?.id ?? 0));
  const { rows } = await db.pool.query<{ id: number; key: string; state: string; due: boolean }>(
    `SELECT id, idempotency_key AS key, state, run_at <= now() AS due FROM jobs WHERE id = ANY ($1::bigint[])`,
    [result.map((r) => r.id)],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  result.forEach((r) => {
    assert.equal(byId.get(r.id)?.key, r.idempotencyKey);
    assert.equal(byId.get(r.id)?.state, 'available');
    assert.equal(byId.get(r.id)?.due, true);
  });
  const job = async (i: number) => {
    const got = await client.jobs.get(result[i]?.id ?? 0);
    assert.ok(got);
    return got;
  };
  assert.deepEqual((await job(5)).payload, awkward);
  assert.equal((await job(7)).kind, 'kind\twith\\tab');
  assert.equal((await job(0)).tenantId, 'acme');
  assert.equal((await job(1)).tenantId, 'default');
  assert.equal((await job(2)).maxAttempts, 9, "the queue's max_attempts");
  assert.equal((await job(3)).maxAttempts, 4, 'built-in default for a queue without one');
  assert.equal((await job(3)).priority, 3);
  const nine = await job(9);
  assert.deepEqual(
    [nine.maxAttempts, nine.timeoutMs, nine.heartbeatMs, nine.backoffBaseMs, nine.backoffMaxMs],
    [2, 1500, 300, 10, 20],
  );
  // Workers are woken by COPY as by INSERT: the statement trigger notifies once per queue.
  await end();
  assert.deepEqual(woken.sort(), ['copied', 'copied-2']);
});

test('a lone enqueue names its job in the wake-up, a batch only its queue; a job due later wakes no one', async () => {
  const { woken, end } = await listenForWakeUps();
  const one = await client.jobs.enqueue({ queue: 'wake-one', kind: 'k' });
  await client.jobs.enqueueMany([
    { queue: 'wake-many', kind: 'k' },
    { queue: 'wake-many', kind: 'k' },
  ]);
  await client.jobs.enqueue({ queue: 'wake-later', kind: 'k', runAt: new Date(Date.now() + 60_000) });
  // A job due later needs none: the promotion that makes it available wakes its queue.
  await waitUntil('two wake-ups', () => Promise.resolve(woken.length >= 2), 3000);
  await new Promise((r) => setTimeout(r, 100));
  await end();
  assert.deepEqual(woken.sort(), [`wake-one ${one.id}`, 'wake-many'].sort());
});

test('lone enqueues at once, in the commit or after it, each name their job in one wake-up', async () => {
  const { woken, end } = await listenForWakeUps();
  // The first goes alone (its NOTIFY is in its commit); those beside it send theirs after theirs.
  const jobs = await Promise.all(
    Array.from({ length: 6 }, () => client.jobs.enqueue({ queue: 'wake-together', kind: 'k' })),
  );
  await waitUntil('six wake-ups', () => Promise.resolve(woken.length >= 6), 3000);
  await new Promise((r) => setTimeout(r, 100));
  await end();
  assert.deepEqual(woken.sort(), jobs.map((j) => `wake-together ${j.id}`).sort());
});

test("a lone enqueue in the caller's transaction is woken for when that transaction commits", async () => {
  const { woken, end } = await listenForWakeUps();
  const job = await withTransaction(db.pool, async (tx) => {
    const inserted = await client.jobs.enqueueTx(tx, { queue: 'wake-tx', kind: 'k' });
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(woken, [], 'nothing before the commit');
    return inserted;
  });
  await waitUntil('the wake-up', () => Promise.resolve(woken.length >= 1), 3000);
  await end();
  assert.deepEqual(woken, [`wake-tx ${job.id}`]);
});

test('a large batch rolled back with its transaction leaves nothing', async () => {
  const count = await jobCount();
  await assert.rejects(
    withTransaction(db.pool, async (tx) => {
      await client.jobs.enqueueManyTx(
        tx,
        Array.from({ length: 1_000 }, () => ({ queue: 'copied-rollback', kind: 'k' })),
      );
      throw new Error('caller aborts');
    }),
    /caller aborts/,
  );
  assert.equal(await jobCount(), count);
});

test('list filters by queue, state, tenant and kind, newest first, with paging', async () => {
  for (let i = 0; i < 3; i++)
    await client.jobs.enqueue({ queue: 'listed', kind: i === 0 ? 'x' : 'y', tenantId: 't1' });
  const all = await client.jobs.list({ queue: 'listed' });
  assert.equal(all.length, 3);
  assert.ok(all[0]!.id > all[1]!.id);
  assert.equal((await client.jobs.list({ queue: 'listed', kind: 'x' })).length, 1);
  assert.equal((await client.jobs.list({ queue: 'listed', tenantId: 'default' })).length, 0);
  assert.equal((await client.jobs.list({ queue: 'listed', state: 'available', limit: 2 })).length, 2);
  assert.equal((await client.jobs.list({ queue: 'listed', beforeId: all[1]!.id })).length, 1);
});

test('cancel of a pending job is immediate; a finished job is left as it is', async () => {
  const job = await client.jobs.enqueue({ queue: 'cancel', kind: 'k' });
  const cancelled = await client.jobs.cancel(job.id);
  assert.equal(cancelled?.state, 'cancelled');
  assert.ok(cancelled?.finishedAt instanceof Date);
  await db.pool.query(`UPDATE jobs SET state = 'succeeded' WHERE id = $1`, [job.id]);
  assert.equal((await client.jobs.cancel(job.id))?.state, 'succeeded');
  await assert.rejects(client.jobs.cancel(987654321), (e: unknown) => {
    assert.ok(e instanceof JobNotFoundError && e.code === 'not_found', String(e));
    return true;
  });
  await assert.rejects(client.jobs.retry(987654321), JobNotFoundError);
  assert.equal(await client.jobs.get(987654321), null, 'a read of a missing id is null');
});

test('a success written before 0019 (attempt row, lease_owner cleared) is in the history once', async () => {
  const job = await client.jobs.enqueue({ queue: 'old-success', kind: 'k' });
  await db.pool.query(
    `UPDATE jobs SET state = 'succeeded', attempt = 1, started_at = now() - interval '1 second',
                     finished_at = now(), lease_owner = NULL WHERE id = $1`,
    [job.id],
  );
  await db.pool.query(
    `INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome)
     VALUES ($1, 1, 'w-old', now() - interval '1 second', now(), 'succeeded')`,
    [job.id],
  );
  const got = await client.jobs.get(job.id);
  assert.deepEqual(
    got?.attempts.map((a) => [a.attempt, a.worker, a.outcome]),
    [[1, 'w-old', 'succeeded']],
  );
});

test('the dead letter lists dead jobs with their history; retry re-runs one, retryDead many', async () => {
  const ids: number[] = [];
  for (let i = 0; i < 3; i++)
    ids.push((await client.jobs.enqueue({ queue: 'dlq', kind: 'k', maxAttempts: 1 })).id);
  // A factory for the state: two attempts' worth of history, as a worker would have left it.
  await db.pool.query(
    `UPDATE jobs SET state = 'dead', attempt = 1, last_error = 'boom', finished_at = now() WHERE id = ANY ($1)`,
    [ids],
  );
  await db.pool.query(
    `INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
     SELECT id, 1, 'w', now() - interval '1 second', now(), 'failed', 'boom' FROM unnest($1::bigint[]) AS id`,
    [ids],
  );
  const dead = await client.jobs.deadLetter({ queue: 'dlq' });
  assert.equal(dead.length, 3);
  assert.equal(dead[0]?.lastError, 'boom');
  assert.equal(dead[0]?.attempts[0]?.outcome, 'failed');
  assert.ok((dead[0]?.attempts[0]?.durationMs ?? 0) >= 999);

  assert.equal(await client.jobs.retry(ids[0]!), true);
  const again = await client.jobs.get(ids[0]!);
  assert.equal(again?.state, 'available');
  assert.equal(again?.maxAttempts, 2, 'one more attempt than used');
  assert.equal(again?.attempts.length, 1, 'history is kept');
  assert.equal(await client.jobs.retry(ids[0]!), false, 'an available job is not re-run');

  assert.deepEqual((await client.jobs.retryDead({ queue: 'dlq' })).sort(), ids.slice(1).sort());
  assert.equal((await client.jobs.deadLetter({ queue: 'dlq' })).length, 0);
});
