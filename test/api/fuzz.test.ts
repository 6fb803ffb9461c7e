/**
 * Fuzzing the schedule, job and workflow routes with fast-check: bodies that are near-valid (each
 * field either a good value or anything at all), arbitrary JSON, and arbitrary path and query text.
 * No request may get a 5xx, and a request answered with an error must leave the database unchanged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { databaseSnapshot, startTestApi, type TestApi } from './support.ts';

const api = await startTestApi();
const RUNS = Number(process.env.TIDEMARK_FUZZ_RUNS ?? 60);

/**
 * Near-valid bodies: a well-formed body (with edge values: int4 bounds, huge numbers, empty strings),
 * then up to two mutations (a field replaced by any JSON, a field removed, an unknown field added).
 */
function mutated<T extends Record<string, unknown>>(
  valid: fc.Arbitrary<T>,
): fc.Arbitrary<Record<string, unknown>> {
  const mutation = fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.string({ maxLength: 12 }), value: fc.jsonValue() }),
    fc.record({
      op: fc.constant('drop' as const),
      key: fc.string({ maxLength: 12 }),
      value: fc.constant(null),
    }),
  );
  return fc.tuple(valid, fc.array(mutation, { maxLength: 2 }), fc.nat()).map(([body, mutations, pick]) => {
    const out: Record<string, unknown> = { ...body };
    const keys = Object.keys(out);
    for (const m of mutations) {
      // Mostly mutate a key the body has, sometimes an unknown one.
      const key = keys.length > 0 && pick % 4 !== 0 ? (keys[pick % keys.length] ?? m.key) : m.key;
      if (m.op === 'set') out[key] = m.value;
      else delete out[key];
    }
    return out;
  });
}

const int = fc.oneof(
  fc.integer({ min: -5, max: 100_000 }),
  fc.constantFrom(0, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1.5),
);

const target = fc.oneof(
  fc.record({ queue: fc.constantFrom('q', 'reports'), kind: fc.constantFrom('k', 'build') }),
  fc.record({ url: fc.constantFrom('https://x.test/a', 'http://127.0.0.1:9/x'), payload: fc.jsonValue() }),
  fc.record({
    queue: fc.constant('q'),
    kind: fc.constant('k'),
    priority: int,
    maxAttempts: int,
    timeoutMs: int,
  }),
);

const scheduleBody = mutated(
  fc.record(
    {
      name: fc.string({ minLength: 1, maxLength: 20 }),
      spec: fc.constantFrom(
        '0 9 * * 1-5',
        'every weekday at 9am',
        'every 90s',
        '*/5 * * * *',
        'at 2999-01-01T00:00:00Z',
        '61 * * * *',
        'every',
        '@yearly',
      ),
      timeZone: fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Nowhere/Land'),
      target,
      misfire: fc.record(
        { policy: fc.constantFrom('all', 'latest', 'skip'), cap: int, startingDeadlineMs: int },
        { requiredKeys: [] },
      ),
      overlap: fc.constantFrom('allow', 'forbid', 'replace', 'buffer_one'),
      jitterMs: int,
      dstGap: fc.constantFrom('shift', 'skip'),
      tenantId: fc.constantFrom('acme', 'globex', 'nobody'),
    },
    { requiredKeys: ['name', 'spec', 'target'] },
  ),
);

const job = fc.record(
  {
    queue: fc.constantFrom('q', 'mail', 'a b'),
    kind: fc.constantFrom('k', 'send'),
    payload: fc.jsonValue(),
    priority: int,
    runAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    maxAttempts: int,
    timeoutMs: int,
    heartbeatMs: int,
    backoffBaseMs: int,
    backoffMaxMs: int,
    idempotencyKey: fc.string({ maxLength: 30 }),
    tenantId: fc.constantFrom('acme', 'globex', 'nobody'),
  },
  { requiredKeys: ['kind'] },
);
const jobBody = fc.oneof(
  mutated(job),
  fc.array(mutated(job), { maxLength: 4 }).map((jobs) => ({ jobs })),
);

const node = fc.oneof(
  fc.record(
    {
      id: fc.constantFrom('a', 'b', 'c', 'd'),
      kind: fc.constantFrom('k', ''),
      dependsOn: fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'z'), { maxLength: 3 }),
      retries: int,
      timeoutMs: int,
      priority: int,
    },
    { requiredKeys: ['id', 'kind'] },
  ),
  fc.record(
    {
      id: fc.constantFrom('s', 'a'),
      type: fc.constant('signal'),
      signal: fc.constant('go'),
      timeoutMs: int,
      onTimeout: fc.constantFrom('fail', 'default'),
    },
    { requiredKeys: ['id', 'type', 'signal'] },
  ),
);
const workflowBody = mutated(
  fc.record(
    {
      id: fc.string({ minLength: 1, maxLength: 10 }),
      failurePolicy: fc.constantFrom('fail_fast', 'continue'),
      nodes: fc.array(mutated(node), { minLength: 1, maxLength: 5 }),
      tenantId: fc.constantFrom('acme', 'globex'),
    },
    { requiredKeys: ['nodes'] },
  ),
);

const pathText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    '00000000-0000-4000-8000-000000000000',
    '1',
    '-1',
    '99999999999999999999',
    '%00',
    '..%2f..',
    '1e3',
    ' ',
  ),
);

async function check(t: TestApi, method: string, path: string, body: unknown, token: string): Promise<void> {
  const before = await databaseSnapshot(t.db);
  const reply = await t.call(method, path, {
    token,
    ...(body === undefined ? {} : { rawBody: JSON.stringify(body) }),
  });
  assert.ok(reply.status < 500, `${method} ${path} ${JSON.stringify(body)} → ${reply.status} ${reply.text}`);
  if (reply.status >= 400) {
    assert.equal(
      await databaseSnapshot(t.db),
      before,
      `${method} ${path} → ${reply.status} changed the database`,
    );
  }
}

const tokens = fc.constantFrom<'admin' | 'acme'>('admin', 'acme');

test('fuzz POST /v1/schedules and PATCH /v1/schedules/{id}', async () => {
  const seed = await api.call<{ id: string }>('POST', '/v1/schedules', {
    token: api.tokens.acme,
    body: { name: 'fuzz-seed', spec: '0 9 * * *', target: { queue: 'q', kind: 'k' } },
  });
  assert.equal(seed.status, 201);
  await fc.assert(
    fc.asyncProperty(scheduleBody, tokens, async (body, who) =>
      check(api, 'POST', '/v1/schedules', body, api.tokens[who]),
    ),
    { numRuns: RUNS },
  );
  await fc.assert(
    fc.asyncProperty(scheduleBody, async (body) => {
      const { name: _name, tenantId: _tenant, ...patch } = body;
      await check(api, 'PATCH', `/v1/schedules/${seed.body.id}`, patch, api.tokens.acme);
    }),
    { numRuns: RUNS },
  );
});

test('fuzz POST /v1/jobs (one and many)', async () => {
  await fc.assert(
    fc.asyncProperty(jobBody, tokens, async (body, who) =>
      check(api, 'POST', '/v1/jobs', body, api.tokens[who]),
    ),
    { numRuns: RUNS },
  );
});

test('fuzz POST /v1/workflows', async () => {
  await fc.assert(
    fc.asyncProperty(workflowBody, tokens, async (body, who) =>
      check(api, 'POST', '/v1/workflows', body, api.tokens[who]),
    ),
    { numRuns: RUNS },
  );
});

test('fuzz arbitrary JSON bodies, path parameters and query strings on every resource route', async () => {
  const routes: [string, string][] = [
    ['GET', '/v1/schedules/:p'],
    ['PATCH', '/v1/schedules/:p'],
    ['POST', '/v1/schedules/:p/trigger'],
    ['GET', '/v1/schedules/:p/occurrences?:q'],
    ['GET', '/v1/schedules?:q'],
    ['GET', '/v1/jobs?:q'],
    ['GET', '/v1/jobs/:p'],
    ['POST', '/v1/jobs/:p/cancel'],
    ['POST', '/v1/jobs/:p/retry'],
    ['POST', '/v1/jobs/:p/heartbeat'],
    ['POST', '/v1/jobs/:p/fail'],
    ['GET', '/v1/dead-letter?:q'],
    ['POST', '/v1/dead-letter/retry'],
    ['GET', '/v1/workflows/:p'],
    ['GET', '/v1/workflows/:p/nodes?:q'],
    ['POST', '/v1/workflows/:p/signals/:p'],
    ['POST', '/v1/workflows/:p/resume'],
    ['POST', '/v1/workers/claim'],
  ];
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...routes),
      pathText,
      fc.dictionary(
        fc.constantFrom('limit', 'before', 'after', 'state', 'queue', 'tenantId', 'createdFrom', 'x'),
        fc.string({ maxLength: 12 }),
      ),
      fc.option(fc.jsonValue(), { nil: undefined }),
      tokens,
      async ([method, template], p, query, body, who) => {
        const path = template
          .replaceAll(':p', encodeURIComponent(p))
          .replace(':q', new URLSearchParams(query).toString());
        await check(api, method, path, method === 'GET' ? undefined : body, api.tokens[who]);
      },
    ),
    { numRuns: RUNS * 3 },
  );
});
