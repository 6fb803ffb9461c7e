/**
 * Fuzzing the API with fast-check. The main test walks every route and every parameter that
 * /openapi.json describes (path, query and each body property, and the body as a whole) with
 * hostile values (fuzz-values.ts); the others send near-valid bodies to the schedule, job and
 * workflow routes, to reach the checks behind the schema. For every request: no 5xx; a refusal has
 * the one error shape with a known code, and a 400 names the fields; a refused request leaves the
 * database unchanged; and in the walk, a request the server accepts (2xx) is one the document allows
 * (the value checked with Ajv against the operation's own schema). Seeded: the seed is printed first and reported by fast-check on a failure;
 * replay with TIDEMARK_FUZZ_SEED=<seed>.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { ERROR_CODES } from '../../src/api/errors.ts';
import { hostileInside, hostileJson, hostileText, urlEncode } from './fuzz-values.ts';
import { databaseSnapshot, startTestApi, type TestApi } from './support.ts';

const api = await startTestApi();
const RUNS = Number(process.env.TIDEMARK_FUZZ_RUNS ?? 60);
/** Requests for the OpenAPI walk, shared out over its parameters (at least 4 each). */
const WALK_REQUESTS = Number(process.env.TIDEMARK_FUZZ_REQUESTS ?? 1500);
const SEED = Number(process.env.TIDEMARK_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`fuzz seed ${SEED} (replay with TIDEMARK_FUZZ_SEED=${SEED})`);

const stats = {
  requests: 0,
  serverErrors: 0,
  byStatus: new Map<number, number>(),
  routes: new Set<string>(),
  parameters: new Set<string>(),
};
after(() => {
  const statuses = [...stats.byStatus].sort((x, y) => x[0] - y[0]).map(([s, n]) => `${s}: ${n}`);
  console.log(
    `fuzz: ${stats.requests} requests, ${stats.routes.size} routes, ${stats.parameters.size} parameters walked; ` +
      `${stats.serverErrors} answered 5xx; by status { ${statuses.join(', ')} }`,
  );
});

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

type Body = undefined | { raw: string } | { json: unknown };

async function check(t: TestApi, method: string, path: string, body: unknown, token: string): Promise<void> {
  void (await send(t, method, path, body === undefined ? undefined : { json: body }, token));
}

/** A JSON body as the server reads it: JSON has no NaN or Infinity, which JSON.stringify writes as null. */
function asSent(json: unknown): unknown {
  const text = JSON.stringify(json) as string | undefined;
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}

async function send(t: TestApi, method: string, path: string, body: Body, token: string): Promise<number> {
  const before = await databaseSnapshot(t.db);
  const rawBody = body === undefined ? undefined : 'raw' in body ? body.raw : JSON.stringify(body.json);
  const reply = await t.call<{
    error?: { code?: string; message?: string; requestId?: string; fields?: { field: string }[] };
  }>(method, path, { token, ...(rawBody === undefined ? {} : { rawBody }) });
  stats.requests++;
  stats.byStatus.set(reply.status, (stats.byStatus.get(reply.status) ?? 0) + 1);
  const what = `${method} ${path.slice(0, 300)} ${(rawBody ?? '').slice(0, 300)} → ${reply.status} ${reply.text.slice(0, 500)}`;
  if (reply.status >= 500) stats.serverErrors++;
  assert.ok(reply.status < 500, what);
  if (reply.status < 400) return reply.status;
  const error = reply.body.error;
  assert.ok(
    error !== undefined && typeof error.code === 'string' && error.code in ERROR_CODES,
    `error shape: ${what}`,
  );
  assert.equal(typeof error.message, 'string', what);
  assert.equal(typeof error.requestId, 'string', what);
  if (reply.status === 400) {
    assert.ok(error.fields !== undefined && error.fields.length > 0, `a 400 names the field: ${what}`);
    for (const f of error.fields) assert.match(f.field, /^(body|query|params)(\.|$)/, what);
  }
  assert.equal(await databaseSnapshot(t.db), before, `${what} changed the database`);
  return reply.status;
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
    { numRuns: RUNS, seed: SEED },
  );
  await fc.assert(
    fc.asyncProperty(scheduleBody, async (body) => {
      const { name: _name, tenantId: _tenant, ...patch } = body;
      await check(api, 'PATCH', `/v1/schedules/${seed.body.id}`, patch, api.tokens.acme);
    }),
    { numRuns: RUNS, seed: SEED },
  );
});

test('fuzz POST /v1/jobs (one and many)', async () => {
  await fc.assert(
    fc.asyncProperty(jobBody, tokens, async (body, who) =>
      check(api, 'POST', '/v1/jobs', body, api.tokens[who]),
    ),
    { numRuns: RUNS, seed: SEED },
  );
});

test('fuzz POST /v1/workflows', async () => {
  await fc.assert(
    fc.asyncProperty(workflowBody, tokens, async (body, who) =>
      check(api, 'POST', '/v1/workflows', body, api.tokens[who]),
    ),
    { numRuns: RUNS, seed: SEED },
  );
});

interface Parameter {
  name: string;
  in: string;
  schema: Schema & { type?: string };
}
interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}
interface Schema {
  $ref?: string;
  properties?: Record<string, Schema>;
  anyOf?: Schema[];
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

/** A valid body for each operation that takes one: the walk puts one hostile value at a time into it. */
const VALID_BODIES: Record<string, unknown> = {
  createSchedule: {
    name: 'fuzz-walk',
    spec: '0 9 * * 1-5',
    timeZone: 'Europe/Berlin',
    target: { queue: 'q', kind: 'k', payload: { a: [1, 'b'] } },
    misfire: { policy: 'latest', cap: 5 },
  },
  updateSchedule: { spec: '0 10 * * *', target: { queue: 'q', kind: 'k', payload: { a: 1 } } },
  backfillSchedule: { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z', dryRun: true },
  enqueueJobs: { queue: 'q', kind: 'k', payload: { a: { b: 'c' } }, runAt: '2030-01-01T00:00:00Z' },
  retryJob: { extraAttempts: 1 },
  retryDeadJobs: { ids: [1, 2] },
  discardDeadJobs: { ids: [1, 2] },
  bulkJobs: { action: 'retry', ids: [1, 2] },
  submitWorkflow: {
    name: 'walk',
    nodes: [
      { id: 'a', kind: 'k', payload: { x: 1 } },
      { id: 'b', kind: 'k', dependsOn: ['a'] },
    ],
  },
  signalWorkflow: { payload: { ok: true } },
  claimJobs: { worker: 'w', queues: ['nothing-here'], limit: 1 },
  heartbeatJob: { progress: { pct: 5 } },
  completeJob: { worker: 'w', attempt: 1 },
  failJob: { worker: 'w', attempt: 1, error: 'boom' },
  createToken: { name: 'walk', tenantId: 'acme' },
  putTenant: { name: 'Walk' },
  updateQueue: { maxRunning: 5 },
};

// ajv-formats is CommonJS with its plugin on `default` once loaded from ESM.
const addFormats = addFormatsModule.default;

/**
 * Whether the document allows a value: Ajv (formats in full mode, so 2026-02-30 is no date) against
 * the schema, with the document's components for its references. Path and query values are text;
 * a typed parameter is read from its text the way OpenAPI means it (an integer is digits).
 */
function documentOracle(
  doc: OpenApi,
): (schema: Schema & { type?: string }, value: unknown, text: boolean) => string | null {
  const ajv = new Ajv({ strict: false, allErrors: false });
  addFormats(ajv);
  const compiled = new Map<Schema, ValidateFunction>();
  return (schema, value, text) => {
    let validate = compiled.get(schema);
    if (validate === undefined) {
      validate = ajv.compile({ ...schema, components: doc.components });
      compiled.set(schema, validate);
    }
    let typed = value;
    if (text && typeof value === 'string') {
      const types = [schema.type, ...(schema.anyOf ?? []).map((b) => (b as { type?: string }).type)];
      if ((types.includes('integer') || types.includes('number')) && /^-?(0|[1-9][0-9]*)$/.test(value))
        typed = Number(value);
      else if (types.includes('boolean') && (value === 'true' || value === 'false')) typed = value === 'true';
    }
    return validate(typed) ? null : ajv.errorsText(validate.errors);
  };
}

function bodyProperties(doc: OpenApi, schema: Schema | undefined): string[] {
  if (schema === undefined) return [];
  const resolved =
    schema.$ref === undefined ? schema : doc.components.schemas[schema.$ref.split('/').at(-1) ?? ''];
  const names = new Set(Object.keys(resolved?.properties ?? {}));
  for (const branch of resolved?.anyOf ?? []) for (const n of bodyProperties(doc, branch)) names.add(n);
  return [...names];
}

test('fuzz every route and parameter of /openapi.json with hostile values', async () => {
  const doc = (await api.call<OpenApi>('GET', '/openapi.json', { token: null })).body;
  const acme = api.tokens.acme;
  const schedule = await api.call<{ id: string }>('POST', '/v1/schedules', {
    token: acme,
    body: { name: 'walk-fixture', spec: '0 9 * * *', target: { queue: 'q', kind: 'k' } },
  });
  const doomed = await api.call<{ id: string }>('POST', '/v1/schedules', {
    token: acme,
    body: { name: 'walk-delete', spec: '0 9 * * *', target: { queue: 'q', kind: 'k' } },
  });
  const job = await api.call<{ id: number }>('POST', '/v1/jobs', {
    token: acme,
    body: { queue: 'wq', kind: 'k' },
  });
  await api.call('POST', '/v1/workflows', {
    token: acme,
    body: {
      id: 'walk-wf',
      nodes: [
        { id: 's', type: 'signal', signal: 'go' },
        { id: 'a', kind: 'k', dependsOn: ['s'] },
      ],
    },
  });
  const token = await api.call<{ id: string }>('POST', '/v1/tokens', { body: { name: 'walk-revoke' } });
  for (const r of [schedule, doomed, job, token]) assert.ok(r.status < 300, JSON.stringify(r.body));
  // The id each path parameter keeps while another parameter of the request gets the hostile value.
  const fixture = (path: string, method: string, name: string): string => {
    if (path.startsWith('/v1/schedules/')) return method === 'delete' ? doomed.body.id : schedule.body.id;
    if (path.startsWith('/v1/jobs/')) return String(job.body.id);
    if (path.startsWith('/v1/workflows/')) return name === 'name' ? 'go' : 'walk-wf';
    if (path.startsWith('/v1/tokens/')) return token.body.id;
    if (path.startsWith('/v1/tenants/')) return method === 'put' ? 'walk-tenant' : 'acme';
    if (path.startsWith('/v1/queues/')) return 'walk-queue';
    throw new Error(`no fixture for ${method} ${path} {${name}}`);
  };

  type Slot = {
    path: string;
    method: string;
    op: Operation;
    part: 'params' | 'query' | 'body';
    name: string | null;
  };
  const slots: Slot[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      stats.routes.add(`${method.toUpperCase()} ${path}`);
      for (const p of op.parameters ?? []) {
        if (p.in === 'path' || p.in === 'query')
          slots.push({ path, method, op, part: p.in === 'path' ? 'params' : 'query', name: p.name });
      }
      // A query parameter the route does not declare.
      slots.push({ path, method, op, part: 'query', name: 'unknownParam' });
      const schema = op.requestBody?.content['application/json']?.schema;
      if (op.requestBody !== undefined) {
        assert.ok(op.operationId in VALID_BODIES, `add a valid body for ${op.operationId} to VALID_BODIES`);
        slots.push({ path, method, op, part: 'body', name: null });
        for (const name of bodyProperties(doc, schema)) slots.push({ path, method, op, part: 'body', name });
      }
    }
  }
  const runs = Math.max(4, Math.floor(WALK_REQUESTS / slots.length));
  const allows = documentOracle(doc);

  for (const [i, slot] of slots.entries()) {
    stats.parameters.add(
      `${slot.method.toUpperCase()} ${slot.path} ${slot.part}${slot.name === null ? '' : `.${slot.name}`}`,
    );
    const valid = VALID_BODIES[slot.op.operationId];
    const hostile: fc.Arbitrary<Body | string> =
      slot.part !== 'body'
        ? hostileText
        : slot.name === null
          ? fc.oneof(
              hostileJson.map((json) => ({ json })),
              hostileInside(valid).map((json) => ({ json })),
              fc
                .constantFrom(
                  '{"a":',
                  '[',
                  '"\\ud800"',
                  '{"x":"\\u0000"}',
                  '{"__proto__":{"a":1}}',
                  '1e999999',
                  'nul',
                )
                .map((raw) => ({ raw })),
            )
          : hostileInside((valid as Record<string, unknown>)[slot.name] ?? null).map((v) => ({
              json: { ...(valid as Record<string, unknown>), [slot.name ?? '']: v },
            }));
    await fc.assert(
      fc.asyncProperty(
        hostile,
        fc.constantFrom<'admin' | 'acme'>('admin', 'admin', 'admin', 'acme'),
        async (value, who) => {
          const text = typeof value === 'string' ? value : '';
          const path = slot.path.replace(/\{(\w+)\}/g, (_, name: string) =>
            urlEncode(
              slot.part === 'params' && slot.name === name ? text : fixture(slot.path, slot.method, name),
            ),
          );
          const query = slot.part === 'query' ? `?${urlEncode(slot.name ?? '')}=${urlEncode(text)}` : '';
          const body: Body =
            typeof value === 'string' ? (valid === undefined ? undefined : { json: valid }) : value;
          const status = await send(api, slot.method.toUpperCase(), `${path}${query}`, body, api.tokens[who]);
          if (status >= 300) return;
          // Accepted: then the document allows what was sent in the hostile slot.
          const where = `${slot.method.toUpperCase()} ${slot.path} ${slot.part}.${slot.name ?? ''}`;
          const param = slot.op.parameters?.find(
            (p) => p.name === slot.name && p.in === (slot.part === 'params' ? 'path' : 'query'),
          );
          const bodySchema = slot.op.requestBody?.content['application/json']?.schema;
          const verdict =
            slot.part === 'body'
              ? bodySchema !== undefined && body !== undefined && 'json' in body
                ? allows(bodySchema, asSent(body.json), false)
                : null
              : param !== undefined
                ? allows(param.schema, text, true)
                : null;
          assert.equal(
            verdict,
            null,
            `${where}: accepted ${JSON.stringify(value).slice(0, 300)}, which the document forbids`,
          );
        },
      ),
      { numRuns: runs, seed: SEED + i, endOnFailure: true },
    );
  }
});
