/**
 * The API's input boundary, on the cases an independent run found: text PostgreSQL cannot store,
 * JSON nested without bound, integers written loosely, impossible dates, `__proto__` keys. Each is a
 * 400 naming the field, and changes nothing; a loosely written id never acts on another job.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_JSON_DEPTH } from '../../src/input.ts';
import { databaseSnapshot, startTestApi, type Reply } from './support.ts';

const api = await startTestApi();

type ErrorReply = { error: { code: string; message: string; fields?: { field: string; reason: string }[] } };

function assertRefused(reply: Reply<ErrorReply>, field: string, reason?: RegExp): void {
  assert.equal(reply.status, 400, reply.text);
  assert.equal(reply.body.error.code, 'invalid_request');
  const named = reply.body.error.fields?.find((f) => f.field === field);
  assert.ok(named, `names ${field}: ${reply.text}`);
  if (reason !== undefined) assert.match(named.reason, reason);
}

test('NUL and unpaired surrogates in bodies, queries and paths are 400 naming the field', async () => {
  const before = await databaseSnapshot(api.db);
  const target = { queue: 'q', kind: 'k' };
  const cases: [string, string, unknown, string, RegExp][] = [
    ['POST', '/v1/schedules', { name: 'a\u0000b', spec: '* * * * *', target }, 'body.name', /NUL/],
    [
      'POST',
      '/v1/schedules',
      { name: 'a', spec: '* * * * *', target: { ...target, payload: { x: '\ud800' } } },
      'body.target.payload.x',
      /unpaired surrogate \(U\+D800\)/,
    ],
    ['POST', '/v1/jobs', { kind: 'k', payload: ['ok', 'b\u0000'] }, 'body.payload.1', /NUL/],
    ['POST', '/v1/jobs', { kind: 'k', idempotencyKey: '\udc00x' }, 'body.idempotencyKey', /U\+DC00/],
    [
      'POST',
      '/v1/jobs',
      { kind: 'k', payload: { 'k\u0000': 1 } },
      'body.payload.k\u0000',
      /key contains a NUL/,
    ],
    ['GET', '/v1/jobs?kind=%00', undefined, 'query.kind', /NUL/],
    ['GET', '/v1/schedules?after=%ED%A0%80', undefined, 'query.after', /./],
    ['GET', '/v1/workflows/%00', undefined, 'params.id', /NUL/],
    ['POST', '/v1/workflows/w/signals/a%00', {}, 'params.name', /NUL/],
  ];
  for (const [method, path, body, field, reason] of cases) {
    const reply = await api.call<ErrorReply>(method, path, { body });
    if (path.includes('%ED%A0%80')) {
      // Invalid UTF-8 decodes to U+FFFD, which PostgreSQL stores: accepted, not a 500.
      assert.equal(reply.status, 200, reply.text);
      continue;
    }
    assertRefused(reply, field, reason);
  }
  assert.equal(await databaseSnapshot(api.db), before);
});

test(`JSON nested deeper than ${MAX_JSON_DEPTH} is refused without recursion, on every route`, async () => {
  const deep = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;
  for (const n of [MAX_JSON_DEPTH + 1, 5000, 200_000]) {
    const job = await api.call<ErrorReply>('POST', '/v1/jobs', {
      rawBody: `{"kind":"k","payload":${deep(n)}}`,
    });
    assertRefused(job, `body.payload${'.0'.repeat(MAX_JSON_DEPTH - 1)}`, /nested deeper than 64/);
    const claim = await api.call<ErrorReply>('POST', '/v1/workers/claim', {
      rawBody: `{"worker":"w","queues":["q"],"cursors":${deep(n)}}`,
    });
    assertRefused(claim, `body.cursors${'.0'.repeat(MAX_JSON_DEPTH - 1)}`);
  }
  const ok = await api.call('POST', '/v1/jobs', {
    rawBody: `{"kind":"k","payload":${deep(MAX_JSON_DEPTH - 1)}}`,
  });
  assert.equal(ok.status, 201, ok.text);
});

test('ids and integer query parameters accept only canonical decimal: never another job', async () => {
  const jobs: { id: number }[] = [];
  for (let i = 0; i < 10; i++) {
    jobs.push(
      (await api.call<{ id: number }>('POST', '/v1/jobs', { body: { kind: 'k', queue: 'ids' } })).body,
    );
  }
  const nine = jobs.find((j) => j.id % 10 === 9) ?? jobs[9];
  assert.ok(nine !== undefined);
  const n = nine.id;
  const before = await databaseSnapshot(api.db);
  for (const id of [
    `${n}.5`,
    `+${n}`,
    `0x${n.toString(16)}`,
    `${n}e0`,
    `%20${n}`,
    `0${n}`,
    `${n}.0`,
    'true',
    '-0',
    `${n}%20`,
  ]) {
    const cancel = await api.call<ErrorReply>('POST', `/v1/jobs/${id}/cancel`);
    assert.ok(cancel.status === 400 || cancel.status === 404, `${id} → ${cancel.status}`);
    if (cancel.status === 400) assertRefused(cancel, 'params.id');
    const read = await api.call<ErrorReply>('GET', `/v1/jobs/${id}`);
    assert.ok(read.status === 400 || read.status === 404, `GET ${id} → ${read.status}`);
  }
  assert.equal(await databaseSnapshot(api.db), before, 'no job was cancelled');
  for (const [query, field] of [
    ['limit=1.5', 'query.limit'],
    ['limit=true', 'query.limit'],
    ['limit=0x10', 'query.limit'],
    ['limit=1e400', 'query.limit'],
    ['limit=' + '9'.repeat(400), 'query.limit'],
    ['limit=1&limit=2', 'query.limit'],
    ['before=1.5', 'query.before'],
    ['before=99999999999999999999', 'query.before'],
  ] as const) {
    assertRefused(await api.call<ErrorReply>('GET', `/v1/jobs?${query}`), field);
  }
  const page = await api.call<{ items: unknown[] }>('GET', `/v1/jobs?limit=2&before=${n}`);
  assert.equal(page.status, 200, page.text);
  assert.equal(page.body.items.length, 2);
});

test('date-times must exist in the calendar, and the refusal names the field', async () => {
  const before = await databaseSnapshot(api.db);
  for (const runAt of [
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '0000-01-01T00:00:00Z',
    '2026-01-01T00:00:00+24:00',
  ]) {
    assertRefused(
      await api.call<ErrorReply>('POST', '/v1/jobs', { body: { kind: 'k', runAt } }),
      'body.runAt',
    );
  }
  const feb30 = await api.call<ErrorReply>('POST', '/v1/jobs', {
    body: { kind: 'k', runAt: '2026-02-30T00:00:00Z' },
  });
  assertRefused(feb30, 'body.runAt', /2026-02 has no day 30/);
  assertRefused(
    await api.call<ErrorReply>('GET', '/v1/jobs?createdFrom=2026-02-30T00:00:00Z'),
    'query.createdFrom',
  );
  assert.equal(await databaseSnapshot(api.db), before);
  const leap = await api.call('POST', '/v1/jobs', {
    body: { kind: 'k', runAt: '2028-02-29T12:00:00+01:00' },
  });
  assert.equal(leap.status, 201, leap.text);
});

test('a __proto__ key is refused naming it, never read as a prototype or as bad JSON', async () => {
  const before = await databaseSnapshot(api.db);
  const reply = await api.call<ErrorReply>('POST', '/v1/jobs', {
    rawBody: '{"kind":"k","payload":{"a":{"__proto__":{"polluted":true}}}}',
  });
  assertRefused(reply, 'body.payload.a.__proto__', /not accepted as a key/);
  const top = await api.call<ErrorReply>('POST', '/v1/jobs', { rawBody: '{"kind":"k","__proto__":{}}' });
  assertRefused(top, 'body.__proto__');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(await databaseSnapshot(api.db), before);
  const bad = await api.call<ErrorReply>('POST', '/v1/jobs', { rawBody: '{"kind":' });
  assertRefused(bad, 'body', /not valid JSON/);
});

test('bodies that the server does not need may be left out, even with a JSON content type', async () => {
  const job = await api.call<{ id: number }>('POST', '/v1/jobs', { body: { kind: 'k', queue: 'opt' } });
  const cancel = await api.call('POST', `/v1/jobs/${job.body.id}/cancel`);
  assert.equal(cancel.status, 200, cancel.text);
  const retry = await api.call('POST', `/v1/jobs/${job.body.id}/retry`, { rawBody: '' });
  assert.equal(retry.status, 200, retry.text);
});

test('path segments: a 200-character workflow id reaches its route; an over-long one is a 400 naming params', async () => {
  const id = 'ü'.repeat(200);
  const submitted = await api.call('POST', '/v1/workflows', {
    body: { id, nodes: [{ id: 'a', kind: 'k' }] },
  });
  assert.equal(submitted.status, 201, submitted.text);
  const shown = await api.call('GET', `/v1/workflows/${encodeURIComponent(id)}`);
  assert.equal(shown.status, 200, shown.text);
  assertRefused(
    await api.call<ErrorReply>('GET', `/v1/workflows/${'x'.repeat(3000)}`),
    'params',
    /longer than 2048/,
  );
  assertRefused(await api.call<ErrorReply>('GET', '/v1/workflows/%E0%A4%A'), 'params', /percent-encoded/);
});
