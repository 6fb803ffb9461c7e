/**
 * Counts per state under a filter, and bulk cancel, retry and discard of a selection or of
 * everything matching a filter, page by page; a tenant's token reaches only its own jobs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApi } from './support.ts';

const api = await startTestApi();

interface Bulk {
  done: number[];
  notDone: number[];
  next: number | null;
}

async function ok<T>(method: string, path: string, body?: unknown, token = api.tokens.admin): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function states(ids: number[]): Promise<string[]> {
  const { rows } = await api.db.pool.query<{ state: string }>(
    'SELECT state FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows.map((r) => r.state);
}

const enqueue = async (queue: string, token = api.tokens.admin): Promise<number> =>
  (await ok<{ id: number }>('POST', '/v1/jobs', { queue, kind: 'k', maxAttempts: 1 }, token)).id;

test('counts per state, then cancel a selection and retry everything matching a filter, a page at a time', async () => {
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(await enqueue('bulk'));
  const counts = await ok<{ counts: Record<string, number>; cap: number }>(
    'GET',
    '/v1/job-counts?queue=bulk',
  );
  assert.equal(counts.counts.available, 5);
  assert.equal(counts.counts.cancelled, 0);
  assert.equal(counts.cap, 10_000);

  const [a, b] = ids;
  assert.ok(a !== undefined && b !== undefined);
  const cancelled = await ok<Bulk>('POST', '/v1/jobs/bulk', { action: 'cancel', ids: [a, b, 999_999] });
  assert.deepEqual(cancelled, { done: [a, b], notDone: [999_999], next: null });
  assert.deepEqual(await states(ids), ['cancelled', 'cancelled', 'available', 'available', 'available']);
  const cancelledCount = async (): Promise<number> =>
    (await ok<{ counts: Record<string, number> }>('GET', '/v1/job-counts?queue=bulk')).counts.cancelled ?? -1;
  // Kept as a count (job_ended_counts), which each cancel and re-run changes with its job.
  assert.equal(await cancelledCount(), 2);

  // Retry all cancelled jobs in the queue, two per request, following the cursor.
  const retried: number[] = [];
  let before: number | undefined;
  for (;;) {
    const page: Bulk = await ok<Bulk>('POST', '/v1/jobs/bulk', {
      action: 'retry',
      filter: { queue: 'bulk', state: 'cancelled' },
      limit: 1,
      ...(before === undefined ? {} : { before }),
    });
    retried.push(...page.done);
    if (page.next === null) break;
    before = page.next;
  }
  assert.deepEqual(retried.sort(), [a, b].sort());
  assert.deepEqual(await states(ids), ['available', 'available', 'available', 'available', 'available']);
  assert.equal(await cancelledCount(), 0);

  // Discard touches dead jobs only.
  const discard = await ok<Bulk>('POST', '/v1/jobs/bulk', { action: 'discard', ids: [a] });
  assert.deepEqual(discard, { done: [], notDone: [a], next: null });
});

test('a tenant token acts on its own jobs only; bad bodies are 400s naming the field', async () => {
  const mine = await enqueue('bulk-t', api.tokens.acme);
  const theirs = await enqueue('bulk-t', api.tokens.globex);
  const reply = await ok<Bulk>(
    'POST',
    '/v1/jobs/bulk',
    { action: 'cancel', ids: [mine, theirs] },
    api.tokens.acme,
  );
  assert.deepEqual(reply, { done: [mine], notDone: [theirs], next: null });
  assert.deepEqual(await states([mine, theirs]), ['cancelled', 'available']);
  const counted = await ok<{ counts: Record<string, number> }>(
    'GET',
    '/v1/job-counts?queue=bulk-t',
    undefined,
    api.tokens.acme,
  );
  assert.equal(counted.counts.available, 0);
  assert.equal(counted.counts.cancelled, 1);

  const both = await api.call<{ error: { fields: { field: string }[] } }>('POST', '/v1/jobs/bulk', {
    body: { action: 'cancel', ids: [mine], filter: { queue: 'bulk-t' } },
  });
  assert.equal(both.status, 400);
  assert.equal(both.body.error.fields[0]?.field, 'body.ids');
  const neither = await api.call('POST', '/v1/jobs/bulk', { body: { action: 'retry' } });
  assert.equal(neither.status, 400);
  const badAction = await api.call('POST', '/v1/jobs/bulk', { body: { action: 'explode', ids: [1] } });
  assert.equal(badAction.status, 400);
  assert.deepEqual(await states([mine, theirs]), ['cancelled', 'available']);
});
