import assert from 'node:assert/strict';
import { test } from 'node:test';
import { databaseSnapshot, startTestApi } from './support.ts';

const api = await startTestApi();

interface Enqueued {
  id: number;
  created: boolean;
  idempotencyKey: string;
}
interface Claimed {
  id: number;
  attempt: number;
  idempotencyKey: string;
  deadline: string | null;
}

async function claim(worker: string, queues: string[], limit = 10, leaseMs = 30_000): Promise<Claimed[]> {
  const reply = await api.call<{ jobs: Claimed[] }>('POST', '/v1/workers/claim', {
    body: { worker, queues, limit, leaseMs },
  });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.jobs;
}

test('enqueue one job, the same key again returns it, and many in one request', async () => {
  const one = await api.call<Enqueued>('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { queue: 'mail', kind: 'send', payload: { to: 'a@b.c' }, idempotencyKey: 'k1' },
  });
  assert.equal(one.status, 201);
  assert.equal(one.body.created, true);
  const again = await api.call<Enqueued>('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { queue: 'mail', kind: 'send', idempotencyKey: 'k1' },
  });
  assert.equal(again.status, 200);
  assert.deepEqual([again.body.id, again.body.created], [one.body.id, false]);

  const many = await api.call<{ items: Enqueued[] }>('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { jobs: Array.from({ length: 50 }, (_, i) => ({ queue: 'bulk', kind: 'n', payload: { i } })) },
  });
  assert.equal(many.status, 201);
  assert.equal(many.body.items.length, 50);
  const { rows } = await api.db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM jobs WHERE queue = 'bulk' AND tenant_id = 'acme'",
  );
  assert.equal(rows[0]?.n, 50);
});

test('enqueue rejects bad input naming every field, and writes nothing', async () => {
  const before = await databaseSnapshot(api.db);
  const bad = await api.call('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { queue: 'has space', kind: '', priority: 'high', runAt: 'tomorrow', maxAttempts: 0, extra: true },
  });
  assert.equal(bad.status, 400);
  const fields = (bad.body.error as { fields: { field: string }[] }).fields.map((f) => f.field).sort();
  assert.deepEqual(fields, [
    'body.extra',
    'body.kind',
    'body.maxAttempts',
    'body.priority',
    'body.queue',
    'body.runAt',
  ]);
  const neither = await api.call('POST', '/v1/jobs', { token: api.tokens.acme, body: { queue: 'q' } });
  assert.equal(neither.status, 400);
  assert.match(neither.text, /body\.kind.*exactly one of kind/);
  const badItem = await api.call('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: {
      jobs: [
        { queue: 'q', kind: 'ok' },
        { queue: 'q', kind: 'x', timeoutMs: -1 },
      ],
    },
  });
  assert.equal(badItem.status, 400);
  assert.match(badItem.text, /body\.jobs\.1\.timeoutMs/);
  const otherTenant = await api.call('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { kind: 'x', tenantId: 'globex' },
  });
  assert.equal(otherTenant.status, 404);
  assert.equal(await databaseSnapshot(api.db), before);
});

test('a key used by another tenant in the same queue is a conflict, never the other job', async () => {
  await api.call('POST', '/v1/jobs', {
    token: api.tokens.globex,
    body: { queue: 'shared', kind: 'k', idempotencyKey: 'same' },
  });
  const before = await databaseSnapshot(api.db);
  const clash = await api.call('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: {
      jobs: [
        { queue: 'shared', kind: 'k', idempotencyKey: 'fresh' },
        { queue: 'shared', kind: 'k', idempotencyKey: 'same' },
      ],
    },
  });
  assert.equal(clash.status, 409);
  assert.doesNotMatch(clash.text, /"id"/);
  assert.equal(await databaseSnapshot(api.db), before, 'the whole request was rolled back');
});

test('list filters by queue, state, kind and time, pages newest first, and shows attempts', async () => {
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await api.call<Enqueued>('POST', '/v1/jobs', {
      token: api.tokens.globex,
      body: { queue: 'pages', kind: 'p' },
    });
    ids.push(r.body.id);
  }
  const first = await api.call<{ items: { id: number }[]; next: number | null }>(
    'GET',
    '/v1/jobs?queue=pages&limit=2',
    {
      token: api.tokens.globex,
    },
  );
  assert.deepEqual(
    first.body.items.map((j) => j.id),
    [ids[4], ids[3]],
  );
  const second = await api.call<{ items: { id: number }[]; next: number | null }>(
    `GET`,
    `/v1/jobs?queue=pages&limit=2&before=${first.body.next}`,
    { token: api.tokens.globex },
  );
  assert.deepEqual(
    second.body.items.map((j) => j.id),
    [ids[2], ids[1]],
  );
  const future = await api.call<{ items: unknown[] }>(
    'GET',
    '/v1/jobs?queue=pages&createdFrom=2999-01-01T00:00:00Z',
    {
      token: api.tokens.globex,
    },
  );
  assert.equal(future.body.items.length, 0);
  const byState = await api.call<{ items: unknown[] }>('GET', '/v1/jobs?queue=pages&state=available&kind=p', {
    token: api.tokens.globex,
  });
  assert.equal(byState.body.items.length, 5);
  assert.equal((await api.call('GET', '/v1/jobs?state=bogus')).status, 400);
  assert.equal((await api.call('GET', '/v1/jobs?limit=0')).status, 400);

  const shown = await api.call('GET', `/v1/jobs/${ids[0]}`, { token: api.tokens.globex });
  assert.equal(shown.status, 200);
  assert.deepEqual(shown.body.attempts, []);
  assert.equal((await api.call('GET', '/v1/jobs/abc')).status, 400);
  assert.equal((await api.call('GET', '/v1/jobs/99999999')).status, 404);
});

test('pull API: claim, heartbeat with progress, complete; a stale owner gets 409 and changes nothing', async () => {
  const { body } = await api.call<Enqueued>('POST', '/v1/jobs', {
    body: { queue: 'pull', kind: 'work', timeoutMs: 60_000 },
  });
  const [job] = await claim('w-1', ['pull']);
  assert.ok(job !== undefined);
  assert.equal(job.id, body.id);
  assert.equal(job.attempt, 1);
  assert.ok(job.deadline !== null);
  assert.deepEqual(await claim('w-2', ['pull']), [], 'a claimed job is not claimed twice');

  const hb = await api.call('POST', `/v1/jobs/${job.id}/heartbeat`, {
    body: { worker: 'w-1', attempt: 1, progress: { done: 3 } },
  });
  assert.deepEqual([hb.status, hb.body], [200, { cancelRequested: false }]);
  const stale = await api.call('POST', `/v1/jobs/${job.id}/complete`, {
    body: { worker: 'w-2', attempt: 1 },
  });
  assert.equal(stale.status, 409);
  const ok = await api.call('POST', `/v1/jobs/${job.id}/complete`, { body: { worker: 'w-1', attempt: 1 } });
  assert.deepEqual([ok.status, ok.body], [200, { state: 'succeeded' }]);
  assert.equal(
    (await api.call('POST', `/v1/jobs/${job.id}/complete`, { body: { worker: 'w-1', attempt: 1 } })).status,
    409,
  );

  const shown = await api.call<{
    state: string;
    progress: unknown;
    attempts: { outcome: string; worker: string }[];
  }>('GET', `/v1/jobs/${job.id}`);
  assert.equal(shown.body.state, 'succeeded');
  assert.deepEqual(shown.body.progress, { done: 3 });
  assert.deepEqual(
    shown.body.attempts.map((a) => [a.worker, a.outcome]),
    [['w-1', 'succeeded']],
  );
});

test('pull API: fail retries with backoff, then the dead letter; retry from the dead letter', async () => {
  const { body } = await api.call<Enqueued>('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { queue: 'flaky', kind: 'f', maxAttempts: 2, backoffBaseMs: 0, backoffMaxMs: 0 },
  });
  const [first] = await claim('w', ['flaky']);
  assert.equal(first?.id, body.id);
  const failed = await api.call('POST', `/v1/jobs/${body.id}/fail`, {
    body: { worker: 'w', attempt: 1, error: 'boom' },
  });
  assert.equal(failed.body.state, 'failed');
  await api.db.pool.query("UPDATE jobs SET state = 'available' WHERE id = $1", [body.id]); // the promoter's job
  const [second] = await claim('w', ['flaky']);
  assert.equal(second?.attempt, 2);
  const dead = await api.call('POST', `/v1/jobs/${body.id}/fail`, {
    body: { worker: 'w', attempt: 2, error: 'boom again' },
  });
  assert.equal(dead.body.state, 'dead');

  const listed = await api.call<{ items: { id: number }[] }>('GET', '/v1/dead-letter?queue=flaky', {
    token: api.tokens.acme,
  });
  assert.deepEqual(
    listed.body.items.map((j) => j.id),
    [body.id],
  );
  const hidden = await api.call<{ items: unknown[] }>('GET', '/v1/dead-letter?queue=flaky', {
    token: api.tokens.globex,
  });
  assert.deepEqual(hidden.body.items, []);
  const notMine = await api.call('POST', '/v1/dead-letter/retry', {
    token: api.tokens.globex,
    body: { ids: [body.id] },
  });
  assert.deepEqual(notMine.body, { retried: [], notRetried: [body.id] });
  const retried = await api.call('POST', '/v1/dead-letter/retry', {
    token: api.tokens.acme,
    body: { queue: 'flaky' },
  });
  assert.deepEqual(retried.body, { retried: [body.id], notRetried: [] });
  const job = await api.call<{ state: string; maxAttempts: number }>('GET', `/v1/jobs/${body.id}`);
  assert.deepEqual([job.body.state, job.body.maxAttempts], ['available', 3]);
  const both = await api.call('POST', '/v1/dead-letter/retry', { body: { ids: [1], queue: 'x' } });
  assert.equal(both.status, 400);
});

test('cancel a pending job; cancel a running one reaches its heartbeat; retry only what can be retried', async () => {
  const pending = await api.call<Enqueued>('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { queue: 'c', kind: 'c' },
  });
  const c = await api.call<{ previousState: string; job: { state: string } }>(
    'POST',
    `/v1/jobs/${pending.body.id}/cancel`,
    {
      token: api.tokens.acme,
    },
  );
  assert.deepEqual([c.body.previousState, c.body.job.state], ['available', 'cancelled']);
  const r = await api.call<{ state: string }>('POST', `/v1/jobs/${pending.body.id}/retry`, {
    token: api.tokens.acme,
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'available');
  const again = await api.call('POST', `/v1/jobs/${pending.body.id}/retry`, { token: api.tokens.acme });
  assert.equal(again.status, 409, 'an available job cannot be retried');

  const [running] = await claim('w-c', ['c']);
  assert.equal(running?.id, pending.body.id);
  await api.call('POST', `/v1/jobs/${pending.body.id}/cancel`, { token: api.tokens.acme });
  const hb = await api.call('POST', `/v1/jobs/${pending.body.id}/heartbeat`, {
    token: api.tokens.acme,
    body: {},
  });
  assert.deepEqual(
    hb.body,
    { cancelRequested: true },
    'a heartbeat without worker/attempt uses the current attempt',
  );
});

test("tenant isolation: every job route answers 404 for another tenant's job and changes nothing", async () => {
  const { body } = await api.call<Enqueued>('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { queue: 'iso', kind: 'i' },
  });
  const [claimed] = await claim('w-iso', ['iso']);
  assert.equal(claimed?.id, body.id);
  const before = await databaseSnapshot(api.db);
  const routes: [string, string, unknown][] = [
    ['GET', `/v1/jobs/${body.id}`, undefined],
    ['POST', `/v1/jobs/${body.id}/cancel`, undefined],
    ['POST', `/v1/jobs/${body.id}/retry`, undefined],
    ['POST', `/v1/jobs/${body.id}/heartbeat`, { progress: 1 }],
    ['POST', `/v1/jobs/${body.id}/complete`, { worker: 'w-iso', attempt: 1 }],
    ['POST', `/v1/jobs/${body.id}/fail`, { worker: 'w-iso', attempt: 1, error: 'x' }],
  ];
  for (const [method, path, reqBody] of routes) {
    const theirs = await api.call(method, path, { token: api.tokens.globex, body: reqBody });
    const missing = await api.call(method, path.replace(String(body.id), '987654321'), {
      token: api.tokens.globex,
      body: reqBody,
    });
    assert.equal(theirs.status, 404, `${method} ${path}`);
    assert.deepEqual(
      { ...(theirs.body.error as object), requestId: '', message: '' },
      { ...(missing.body.error as object), requestId: '', message: '' },
      'indistinguishable from a missing job',
    );
  }
  const list = await api.call<{ items: { id: number }[] }>('GET', '/v1/jobs?queue=iso', {
    token: api.tokens.globex,
  });
  assert.deepEqual(list.body.items, []);
  assert.equal((await api.call('GET', '/v1/jobs?tenantId=acme', { token: api.tokens.globex })).status, 404);
  assert.equal(
    (
      await api.call('POST', '/v1/workers/claim', {
        token: api.tokens.globex,
        body: { worker: 'x', queues: ['iso'] },
      })
    ).status,
    403,
  );
  assert.equal(await databaseSnapshot(api.db), before);
});

test("a running job's detail includes its running attempt, unfinished, after the finished ones", async () => {
  type Detail = {
    state: string;
    attempts: { attempt: number; worker: string; finishedAt: string | null; outcome: string | null }[];
  };
  const job = await api.call<{ id: number }>('POST', '/v1/jobs', {
    body: { queue: 'running-history', kind: 'k', backoffBaseMs: 0 },
  });
  const claim = (worker: string) =>
    api.call('POST', '/v1/workers/claim', { body: { worker, queues: ['running-history'], limit: 1 } });
  assert.equal((await claim('w1')).status, 200);
  const running = await api.call<Detail>('GET', `/v1/jobs/${job.body.id}`);
  assert.equal(running.body.state, 'running');
  assert.deepEqual(
    running.body.attempts.map((a) => [a.attempt, a.worker, a.finishedAt, a.outcome]),
    [[1, 'w1', null, null]],
  );

  const failed = await api.call('POST', `/v1/jobs/${job.body.id}/fail`, {
    body: { worker: 'w1', attempt: 1, error: 'boom' },
  });
  assert.equal(failed.status, 200, failed.text);
  // Due for its retry now, as when its backoff has passed.
  await api.db.pool.query("UPDATE jobs SET state = 'available', run_at = now() WHERE id = $1", [job.body.id]);
  assert.equal((await claim('w2')).status, 200);
  const second = await api.call<Detail>('GET', `/v1/jobs/${job.body.id}`);
  assert.deepEqual(
    second.body.attempts.map((a) => [a.attempt, a.worker, a.finishedAt === null, a.outcome]),
    [
      [1, 'w1', false, 'failed'],
      [2, 'w2', true, null],
    ],
  );
});
