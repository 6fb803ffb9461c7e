/**
 * Jobs by kind and by payload: the filter an operator types (a JSON object the payload contains, or
 * key=value pairs), through GET /v1/jobs, the per-state counts, the bulk actions' filter and
 * client.jobs.search; a search reads a bounded slice of the history per page and says when that
 * bound ended the page; a filter that does not parse, or an unknown one, is refused naming it.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import { payloadFilterParse } from '../../src/contract/payload-filter.ts';
import { ValidationError } from '../../src/errors.ts';
import { JOB_SCAN_LIMIT } from '../../src/store/job-search.ts';
import { databaseSnapshot, startTestApi } from './support.ts';

const api = await startTestApi();
const client = new Client({ pool: api.db.pool });

interface JobPage {
  items: { id: number; payload: unknown }[];
  next: number | null;
  cutShort: boolean;
}

interface Refusal {
  error: { code: string; fields: { field: string; reason: string }[] };
}

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const reply = await api.call<T>(method, path, { body });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

const q = (filter: string): string => encodeURIComponent(filter);

test('the filter as an operator types it: JSON containment or key=value pairs, dotted keys nest', () => {
  const parsed = (text: string) => {
    const r = payloadFilterParse(text);
    return 'filter' in r ? r.filter : r.problem;
  };
  const problem = (text: string): string => {
    const r = payloadFilterParse(text);
    return 'problem' in r ? r.problem : `parsed as ${JSON.stringify(r.filter)}`;
  };
  assert.deepEqual(parsed('{"customer": 42}'), { customer: 42 });
  assert.deepEqual(parsed('customer=42'), { customer: 42 });
  assert.deepEqual(parsed('customer=42 region=eu'), { customer: 42, region: 'eu' });
  assert.deepEqual(parsed('order.id=A-17 order.paid=true'), { order: { id: 'A-17', paid: true } });
  assert.deepEqual(parsed('customer="42" note="two words"'), { customer: '42', note: 'two words' });
  assert.deepEqual(parsed('tags=["urgent"]'), { tags: ['urgent'] });
  assert.match(problem('{"customer": 42'), /^is not valid JSON \(.*\): write key=value pairs/);
  assert.match(problem('[1]'), /^must be a JSON object, not an array/);
  assert.match(problem('customer'), /^"customer" is not key=value/);
  assert.match(problem('a=1 a=2'), /^a is given twice/);
  assert.match(problem('a=1 a.b=2'), /^a is given a value and keys inside it/);
  assert.match(problem('note="open'), /never closed/);
  assert.match(problem('{"__proto__": {"x": 1}}'), /__proto__ is not accepted as a key/);
});

test('every filter docs/api.md shows reads as the object it says', async () => {
  const doc = await readFile(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const start = doc.indexOf('### Searching jobs by kind and payload');
  const section = doc.slice(start, doc.indexOf('\n#', start + 4));
  const rows = [...section.matchAll(/^\| `([^`]+)`\s+\|/gm)].map((m) => m[1] ?? '').slice(1);
  const expected: Record<string, unknown> = {
    '{"customer": 42}': { customer: 42 },
    'customer=42': { customer: 42 },
    'customer=42 region=eu': { customer: 42, region: 'eu' },
    'order.id=A-17': { order: { id: 'A-17' } },
    'customer="42" note="two words"': { customer: '42', note: 'two words' },
    'tags=["urgent"]': { tags: ['urgent'] },
  };
  assert.deepEqual(rows, Object.keys(expected));
  for (const text of rows) assert.deepEqual(payloadFilterParse(text), { filter: expected[text] }, text);
});

test('GET /v1/jobs and the counts by kind and payload; the client gives the same page', async () => {
  const jobs = [
    { queue: 'orders', kind: 'charge', payload: { customer: 42, region: 'eu', order: { id: 'A-17' } } },
    { queue: 'orders', kind: 'charge', payload: { customer: 43, region: 'eu' } },
    { queue: 'orders', kind: 'refund', payload: { customer: 42, region: 'us' } },
    { queue: 'orders', kind: 'charge', payload: { customer: '42' } },
  ];
  const { items } = await ok<{ items: { id: number }[] }>('POST', '/v1/jobs', { jobs });
  const [a, , c, d] = items.map((i) => i.id);

  const ids = async (query: string) =>
    (await ok<JobPage>('GET', `/v1/jobs?queue=orders&${query}`)).items.map((j) => j.id);
  assert.deepEqual(await ids(`payload=${q('{"customer": 42}')}`), [c, a]);
  assert.deepEqual(await ids(`payload=${q('customer=42')}`), [c, a]);
  assert.deepEqual(await ids(`payload=${q('customer="42"')}`), [d]);
  assert.deepEqual(await ids(`payload=${q('customer=42 region=eu')}`), [a]);
  assert.deepEqual(await ids(`payload=${q('order.id=A-17')}`), [a]);
  assert.deepEqual(await ids(`kind=refund&payload=${q('customer=42')}`), [c]);
  const page = await ok<JobPage>('GET', `/v1/jobs?queue=orders&payload=${q('customer=42')}`);
  assert.deepEqual([page.next, page.cutShort], [null, false]);

  const counts = await ok<{ counts: Record<string, number>; exact: Record<string, boolean> }>(
    'GET',
    `/v1/job-counts?queue=orders&kind=charge&payload=${q('region=eu')}`,
  );
  assert.equal(counts.counts.available, 2);
  assert.equal(counts.exact.available, true);

  const found = await client.jobs.search({ queue: 'orders', payload: { customer: 42 } });
  assert.deepEqual(
    found.items.map((j) => j.id),
    [c, a],
  );
  const typed = await client.jobs.search({ queue: 'orders', kind: 'charge', payload: 'customer=42' });
  assert.deepEqual(
    typed.items.map((j) => j.id),
    [a],
  );
});

test(`a search reads at most ${JOB_SCAN_LIMIT} jobs a page, says when that cut the page short, and pages on from where it stopped`, async () => {
  // One match, then more than a scan's worth of newer jobs that do not match.
  const { id: old } = await ok<{ id: number }>('POST', '/v1/jobs', {
    queue: 'deep',
    kind: 'k',
    payload: { customer: 7 },
  });
  await api.db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, payload, finished_at)
     SELECT 'deep', 'k', 'succeeded', 'deep-' || g, '{"customer": 1}', now() FROM generate_series(1, $1) g`,
    [JOB_SCAN_LIMIT + 50],
  );
  const first = await ok<JobPage>('GET', `/v1/jobs?queue=deep&payload=${q('customer=7')}`);
  assert.deepEqual(first.items, []);
  assert.equal(first.cutShort, true);
  assert.ok(first.next !== null && first.next > old);
  const second = await ok<JobPage>(
    'GET',
    `/v1/jobs?queue=deep&payload=${q('customer=7')}&before=${first.next}`,
  );
  assert.deepEqual(
    second.items.map((j) => j.id),
    [old],
  );
  assert.equal(second.cutShort, false);

  const counts = await ok<{ counts: Record<string, number>; exact: Record<string, boolean> }>(
    'GET',
    `/v1/job-counts?queue=deep&payload=${q('customer=1')}`,
  );
  assert.equal(counts.exact.succeeded, false, 'the count stopped at its bound');
  assert.ok((counts.counts.succeeded ?? 0) > 0);
  assert.equal(counts.exact.available, true);
  assert.equal(counts.counts.available, 0, 'customer 7’s job is not customer 1’s');

  const viaClient = await client.jobs.search({ queue: 'deep', payload: { customer: 7 } });
  assert.deepEqual([viaClient.items.length, viaClient.cutShort, viaClient.next], [0, true, first.next]);
});

test('bulk retry of everything matching kind and payload touches only those jobs', async () => {
  const kill = async (customer: number, kind: string): Promise<number> => {
    const { id } = await ok<{ id: number }>('POST', '/v1/jobs', {
      queue: 'billing-p',
      kind,
      payload: { customer },
      maxAttempts: 1,
    });
    const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
      worker: 'w',
      queues: ['billing-p'],
      limit: 1,
    });
    const job = jobs[0];
    assert.equal(job?.id, id);
    await ok('POST', `/v1/jobs/${id}/fail`, {
      worker: 'w',
      attempt: job.attempt,
      error: 'x',
      retryable: false,
    });
    return id;
  };
  const hit1 = await kill(42, 'charge');
  const other = await kill(43, 'charge');
  const hit2 = await kill(42, 'charge');
  const refund = await kill(42, 'refund');
  const counts = await ok<{ counts: Record<string, number> }>(
    'GET',
    `/v1/job-counts?queue=billing-p&kind=charge&payload=${q('customer=42')}`,
  );
  assert.equal(counts.counts.dead, 2);
  const done: number[] = [];
  let before: number | null = null;
  do {
    const r: { done: number[]; next: number | null } = await ok('POST', '/v1/jobs/bulk', {
      action: 'retry',
      filter: { queue: 'billing-p', state: 'dead', kind: 'charge', payload: 'customer=42' },
      limit: 1,
      ...(before === null ? {} : { before }),
    });
    done.push(...r.done);
    before = r.next;
  } while (before !== null);
  assert.deepEqual(done.sort(), [hit1, hit2].sort());
  const { rows } = await api.db.pool.query<{ id: number; state: string }>(
    'SELECT id::int, state FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id',
    [[hit1, other, hit2, refund]],
  );
  assert.deepEqual(
    rows.map((r) => r.state),
    ['available', 'dead', 'available', 'dead'],
  );
});

test('a filter that does not parse, or an unknown one, is refused naming it, and changes nothing', async () => {
  const refused = async (method: string, path: string, body?: unknown) => {
    const reply = await api.call<Refusal>(method, path, { body });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error.code, 'invalid_request');
    return reply.body.error.fields;
  };
  const bad = await refused('GET', `/v1/jobs?payload=${q('{"customer": 42')}`);
  assert.equal(bad[0]?.field, 'query.payload');
  assert.match(bad[0]?.reason ?? '', /^is not valid JSON/);
  assert.equal((await refused('GET', `/v1/job-counts?payload=${q('customer')}`))[0]?.field, 'query.payload');
  assert.equal((await refused('GET', '/v1/jobs?customer=42'))[0]?.field, 'query.customer');
  assert.equal((await refused('GET', '/v1/jobs?kind='))[0]?.field, 'query.kind');

  const before = await databaseSnapshot(api.db);
  const bulk = await refused('POST', '/v1/jobs/bulk', {
    action: 'discard',
    filter: { state: 'dead', payload: '[1, 2]' },
  });
  assert.equal(bulk[0]?.field, 'body.filter.payload');
  const unknown = await refused('POST', '/v1/jobs/bulk', {
    action: 'discard',
    filter: { state: 'dead', customer: 42 },
  });
  assert.equal(unknown[0]?.field, 'body.filter.customer');
  assert.equal(await databaseSnapshot(api.db), before);

  await assert.rejects(
    client.jobs.search({ payload: '{"customer": ' }),
    (e: unknown) =>
      e instanceof ValidationError && e.fields[0]?.field === 'payload' && /not valid JSON/.test(e.message),
  );
  await assert.rejects(
    client.jobs.search({ customer: 42 } as never),
    (e: unknown) => e instanceof ValidationError && e.fields[0]?.field === 'customer',
  );
});
