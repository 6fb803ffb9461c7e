import assert from 'node:assert/strict';
import { test } from 'node:test';
import { databaseSnapshot, startTestApi } from './support.ts';

const api = await startTestApi();

const diamond = {
  nodes: [
    { id: 'extract', queue: 'etl', kind: 'extract' },
    { id: 'transform', queue: 'etl', kind: 'transform', dependsOn: ['extract'] },
    { id: 'approve', type: 'signal', signal: 'approved', dependsOn: ['extract'] },
    { id: 'load', url: 'https://example.test/load', dependsOn: ['transform', 'approve'] },
  ],
};

test('submit a workflow, see its status and nodes; the same id and definition again is a no-op', async () => {
  const created = await api.call<{ id: string; created: boolean; nodes: number; edges: number }>(
    'POST',
    '/v1/workflows',
    {
      token: api.tokens.acme,
      body: { id: 'wf-1', name: 'nightly etl', ...diamond },
    },
  );
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(created.body, { id: 'wf-1', created: true, nodes: 4, edges: 4 });
  const again = await api.call('POST', '/v1/workflows', {
    token: api.tokens.acme,
    body: { id: 'wf-1', name: 'nightly etl', ...diamond },
  });
  assert.deepEqual([again.status, again.body.created], [200, false]);

  const status = await api.call<{ state: string; tenantId: string; nodes: Record<string, number> }>(
    'GET',
    '/v1/workflows/wf-1',
    {
      token: api.tokens.acme,
    },
  );
  assert.equal(status.body.state, 'running');
  assert.equal(status.body.tenantId, 'acme');
  assert.equal(status.body.nodes.queued, 1);
  assert.equal(status.body.nodes.pending, 3);

  const page = await api.call<{ items: { key: string; state: string }[]; next: string | null }>(
    'GET',
    '/v1/workflows/wf-1/nodes?limit=2',
    { token: api.tokens.acme },
  );
  assert.deepEqual(
    page.body.items.map((n) => n.key),
    ['approve', 'extract'],
  );
  const rest = await api.call<{ items: { key: string }[]; next: string | null }>(
    'GET',
    `/v1/workflows/wf-1/nodes?limit=2&after=${page.body.next}`,
    {
      token: api.tokens.acme,
    },
  );
  assert.deepEqual(
    rest.body.items.map((n) => n.key),
    ['load', 'transform'],
  );
  const edges = await api.call<{ items: { key: string; dependsOn: string[]; error: string | null }[] }>(
    'GET',
    '/v1/workflows/wf-1/nodes',
    { token: api.tokens.acme },
  );
  assert.deepEqual(
    edges.body.items.map((n) => [n.key, n.dependsOn, n.error]),
    [
      ['approve', ['extract'], null],
      ['extract', [], null],
      ['load', ['approve', 'transform'], null],
      ['transform', ['extract'], null],
    ],
  );
  const { rows } = await api.db.pool.query<{ kind: string }>(
    "SELECT kind FROM workflow_nodes WHERE workflow_id = 'wf-1' AND key = 'load'",
  );
  assert.equal(rows[0]?.kind, 'http.post', 'a url node is a push job');
});

test('signal, cancel and resume', async () => {
  await api.call('POST', '/v1/workflows', { token: api.tokens.acme, body: { id: 'wf-2', ...diamond } });
  const signal = await api.call('POST', '/v1/workflows/wf-2/signals/approved', {
    token: api.tokens.acme,
    body: { payload: { by: 'ops' } },
  });
  assert.equal(signal.status, 200, signal.text);
  assert.equal(signal.body.accepted, true);
  const twice = await api.call('POST', '/v1/workflows/wf-2/signals/approved', { token: api.tokens.acme });
  assert.equal(twice.body.accepted, false);
  const undeclared = await api.call('POST', '/v1/workflows/wf-2/signals/aproved', { token: api.tokens.acme });
  assert.equal(undeclared.status, 404, undeclared.text);
  assert.deepEqual(undeclared.body.error, {
    code: 'signal_not_declared',
    message: "workflow 'wf-2' has no signal node named 'aproved'; its signal nodes wait for: approved",
    fields: [
      {
        field: 'params.name',
        reason: "workflow 'wf-2' has no signal node named 'aproved'; its signal nodes wait for: approved",
      },
    ],
    requestId: undeclared.headers.get('x-request-id'),
  });
  const cancel = await api.call('POST', '/v1/workflows/wf-2/cancel', { token: api.tokens.acme });
  assert.deepEqual(cancel.body, { changed: true, state: 'cancelled' });
  const cancelAgain = await api.call('POST', '/v1/workflows/wf-2/cancel', { token: api.tokens.acme });
  assert.deepEqual(cancelAgain.body, { changed: false, state: 'cancelled' });
  const resume = await api.call('POST', '/v1/workflows/wf-2/resume', { token: api.tokens.acme });
  assert.deepEqual(resume.body, { changed: true, state: 'running' });
});

test('invalid workflows are 400 naming the field (cycles, unknown dependencies, types) and write nothing', async () => {
  const before = await databaseSnapshot(api.db);
  const cases: [unknown, string][] = [
    [
      {
        nodes: [
          { id: 'a', kind: 'k', dependsOn: ['b'] },
          { id: 'b', kind: 'k', dependsOn: ['a'] },
        ],
      },
      'body.nodes',
    ],
    [{ nodes: [{ id: 'a', kind: 'k', dependsOn: ['ghost'] }] }, 'body.nodes.0.dependsOn'],
    [{ nodes: [{ id: 'a', kind: 'k', retries: -1 }] }, 'body.nodes.0.retries'],
    [{ nodes: [] }, 'body.nodes'],
    [{ nodes: [{ id: 'a', kind: 'k', url: 'https://x.test' }] }, 'body.nodes.0.kind'],
    [{ nodes: [{ id: 'a', kind: 'k' }], failurePolicy: 'yolo' }, 'body.failurePolicy'],
  ];
  for (const [body, field] of cases) {
    const r = await api.call('POST', '/v1/workflows', { token: api.tokens.acme, body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    const fields = (r.body.error as { fields: { field: string }[] }).fields.map((f) => f.field);
    assert.ok(
      fields.some((f) => f.startsWith(field)),
      `${field} in ${JSON.stringify(fields)}`,
    );
  }
  assert.equal(await databaseSnapshot(api.db), before);
});

test("tenant isolation: every workflow route answers 404 for another tenant's workflow and changes nothing", async () => {
  await api.call('POST', '/v1/workflows', { token: api.tokens.acme, body: { id: 'wf-private', ...diamond } });
  const before = await databaseSnapshot(api.db);
  const routes: [string, string, unknown][] = [
    ['GET', '/v1/workflows/wf-private', undefined],
    ['GET', '/v1/workflows/wf-private/nodes', undefined],
    ['GET', '/v1/workflows/wf-private/timeline', undefined],
    ['POST', '/v1/workflows/wf-private/cancel', undefined],
    ['POST', '/v1/workflows/wf-private/resume', undefined],
    ['POST', '/v1/workflows/wf-private/signals/approved', {}],
  ];
  for (const [method, path, body] of routes) {
    const theirs = await api.call(method, path, { token: api.tokens.globex, body });
    const none = await api.call(method, path.replace('wf-private', 'wf-none'), {
      token: api.tokens.globex,
      body,
    });
    assert.equal(theirs.status, 404, `${method} ${path}`);
    assert.equal(none.status, 404);
  }
  const reuse = await api.call('POST', '/v1/workflows', {
    token: api.tokens.globex,
    body: { id: 'wf-private', ...diamond },
  });
  assert.equal(reuse.status, 409);
  assert.doesNotMatch(reuse.text, /acme/);
  assert.equal(await databaseSnapshot(api.db), before);
});

test("completing a node's job through the pull API releases its children; failing it for good fails the node", async () => {
  await api.call('POST', '/v1/workflows', {
    token: api.tokens.acme,
    body: {
      id: 'wf-pull',
      nodes: [
        { id: 'first', queue: 'wf-pull', kind: 'k' },
        { id: 'second', queue: 'wf-pull', kind: 'k', dependsOn: ['first'], retries: 0 },
      ],
    },
  });
  const claim = async () => {
    const r = await api.call<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
      body: { worker: 'pull-w', queues: ['wf-pull'] },
    });
    assert.equal(r.status, 200, r.text);
    return r.body.jobs;
  };
  const [first] = await claim();
  assert.ok(first !== undefined);
  const done = await api.call('POST', `/v1/jobs/${first.id}/complete`, {
    body: { worker: 'pull-w', attempt: first.attempt },
  });
  assert.equal(done.status, 200, done.text);
  const [second] = await claim();
  assert.ok(second !== undefined, 'the child was released by the completion');
  const failed = await api.call('POST', `/v1/jobs/${second.id}/fail`, {
    body: { worker: 'pull-w', attempt: second.attempt, error: 'broken', retryable: false },
  });
  assert.equal(failed.body.state, 'dead');
  const status = await api.call<{ state: string; nodes: Record<string, number> }>(
    'GET',
    '/v1/workflows/wf-pull',
  );
  assert.equal(status.body.state, 'failed');
  assert.deepEqual([status.body.nodes.succeeded, status.body.nodes.failed], [1, 1]);
  const failedNodes = await api.call<{ items: { key: string; dependsOn: string[]; error: string | null }[] }>(
    'GET',
    '/v1/workflows/wf-pull/nodes?state=failed',
  );
  assert.deepEqual(
    failedNodes.body.items.map((n) => [n.key, n.dependsOn, n.error]),
    [['second', ['first'], 'broken']],
  );
});

test('GET /v1/workflows lists newest first; a tenant token sees only its own; a bad cursor is a 400', async () => {
  for (const [id, token] of [
    ['list-a1', api.tokens.acme],
    ['list-g1', api.tokens.globex],
    ['list-a2', api.tokens.acme],
  ] as const) {
    const r = await api.call('POST', '/v1/workflows', { token, body: { id, ...diamond } });
    assert.equal(r.status, 201, r.text);
  }
  type Page = {
    items: { id: string; tenantId: string; state: string; nodeCount: number }[];
    next: string | null;
  };
  const mine = await api.call<Page>('GET', '/v1/workflows?limit=1000', { token: api.tokens.acme });
  assert.equal(mine.status, 200, mine.text);
  const ids = mine.body.items.map((w) => w.id);
  assert.deepEqual(
    ids.filter((id) => id.startsWith('list-')),
    ['list-a2', 'list-a1'],
  );
  assert.ok(mine.body.items.every((w) => w.tenantId === 'acme'));
  const theirs = await api.call('GET', '/v1/workflows?tenantId=globex', { token: api.tokens.acme });
  assert.equal(theirs.status, 404, 'another tenant is not found, as any other missing tenant');

  const all = await api.call<Page>('GET', '/v1/workflows?limit=2');
  assert.deepEqual(
    all.body.items.map((w) => w.id),
    ['list-a2', 'list-g1'],
  );
  const rest = await api.call<Page>('GET', `/v1/workflows?limit=2&after=${all.body.next}`);
  assert.equal(rest.body.items[0]?.id, 'list-a1');
  const globex = await api.call<Page>('GET', '/v1/workflows?tenantId=globex&state=running');
  assert.deepEqual(
    globex.body.items.map((w) => [w.id, w.nodeCount]),
    [['list-g1', 4]],
  );

  const bad = await api.call<{ error: { fields: { field: string }[] } }>('GET', '/v1/workflows?after=xyz');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.fields[0]?.field, 'query.after');
});

test('timeline: a node per page or selection with its times, the critical path, and 400s naming the parameter', async () => {
  await api.call('POST', '/v1/workflows', {
    token: api.tokens.acme,
    body: {
      id: 'wf-times',
      nodes: [
        { id: 'one', queue: 'wf-times', kind: 'k' },
        { id: 'two', queue: 'wf-times', kind: 'k', dependsOn: ['one'] },
        { id: 'three', queue: 'wf-times', kind: 'k', dependsOn: ['one'] },
      ],
    },
  });
  const finish = async (): Promise<void> => {
    const r = await api.call<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
      body: { worker: 'tl-w', queues: ['wf-times'], limit: 1 },
    });
    const job = r.body.jobs[0];
    assert.ok(job !== undefined);
    const done = await api.call('POST', `/v1/jobs/${job.id}/complete`, {
      body: { worker: 'tl-w', attempt: job.attempt },
    });
    assert.equal(done.status, 200, done.text);
  };
  await finish();
  await finish();
  interface Node {
    key: string;
    state: string;
    jobId: number | null;
    attempts: number | null;
    releasedBy: string | null;
    startedAt: string | null;
    finishedAt: string | null;
    critical: boolean;
  }
  interface Timeline {
    state: string;
    criticalPath: Node[];
    criticalPathComplete: boolean;
    items: Node[];
    next: string | null;
  }
  const t = await api.call<Timeline>('GET', '/v1/workflows/wf-times/timeline', { token: api.tokens.acme });
  assert.equal(t.status, 200, t.text);
  // one, then whichever of two and three was claimed second; the other is still queued.
  const byKey = new Map(t.body.items.map((n) => [n.key, n]));
  assert.deepEqual([...byKey.keys()], ['one', 'three', 'two']);
  const second = byKey.get('two')?.state === 'succeeded' ? 'two' : 'three';
  const waiting = second === 'two' ? 'three' : 'two';
  assert.deepEqual(
    [second, waiting].map((k) => {
      const n = byKey.get(k);
      return [n?.state, n?.attempts, n?.releasedBy, n?.finishedAt !== null];
    }),
    [
      ['succeeded', 1, 'one', true],
      ['queued', 0, 'one', false],
    ],
  );
  assert.deepEqual([byKey.get('one')?.releasedBy, byKey.get('one')?.attempts], [null, 1]);
  assert.deepEqual(
    t.body.criticalPath.map((n) => n.key),
    ['one', second],
    'so far: to the node that finished last',
  );
  assert.equal(t.body.criticalPathComplete, true);

  const picked = await api.call<Timeline>('GET', '/v1/workflows/wf-times/timeline?key=two&key=one&limit=0');
  assert.deepEqual(
    picked.body.items.map((n) => n.key),
    ['one', 'two'],
  );
  const one = await api.call<Timeline>('GET', '/v1/workflows/wf-times/timeline?key=three&pathLimit=0');
  assert.deepEqual([one.body.items.map((n) => n.key), one.body.criticalPath], [['three'], []]);
  const paged = await api.call<Timeline>('GET', '/v1/workflows/wf-times/timeline?limit=1&after=one');
  assert.deepEqual([paged.body.items.map((n) => n.key), paged.body.next], [['three'], 'three']);

  const cases: [string, string][] = [
    ['limit=1001', 'query.limit'],
    ['limit=-1', 'query.limit'],
    ['pathLimit=5000', 'query.pathLimit'],
    ['key=one&after=one', 'query.key'],
    ['keys=one', 'query.keys'],
  ];
  for (const [q, field] of cases) {
    const r = await api.call('GET', `/v1/workflows/wf-times/timeline?${q}`);
    assert.equal(r.status, 400, `${q}: ${r.text}`);
    const fields = (r.body as unknown as { error: { fields: { field: string }[] } }).error.fields.map(
      (f) => f.field,
    );
    assert.ok(fields.includes(field), `${q}: ${field} in ${JSON.stringify(fields)}`);
  }
  assert.equal((await api.call('GET', '/v1/workflows/wf-none/timeline')).status, 404);
});
