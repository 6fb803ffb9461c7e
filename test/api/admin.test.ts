import assert from 'node:assert/strict';
import { test } from 'node:test';
import { databaseSnapshot, startTestApi } from './support.ts';

const api = await startTestApi();

test('health and readiness answer without a token; /v1 needs one', async () => {
  assert.deepEqual((await api.call('GET', '/healthz', { token: null })).body, { status: 'ok' });
  const ready = await api.call('GET', '/readyz', { token: null });
  assert.equal(ready.status, 200);
  assert.equal(ready.body.status, 'ready');
  const none = await api.call('GET', '/v1/tenants', { token: null });
  assert.equal(none.status, 401);
  assert.equal((none.body.error as { code: string }).code, 'unauthorized');
  assert.equal((await api.call('GET', '/v1/tenants', { token: 'tdm_made_up' })).status, 401);
  assert.equal(
    (await api.call('GET', '/v1/tenants', { headers: { authorization: 'Basic abc' }, token: null })).status,
    401,
  );
});

test('tokens: created by an admin, stored hashed, shown once, revoked at once', async () => {
  const created = await api.call('POST', '/v1/tokens', { body: { name: 'ci', tenantId: 'acme' } });
  assert.equal(created.status, 201);
  const token = created.body.token as string;
  assert.match(token, /^tdm_[A-Za-z0-9_-]{43}$/);
  const stored = await api.db.pool.query<{ hash: Buffer }>('SELECT hash FROM api_tokens WHERE id = $1', [
    created.body.id,
  ]);
  assert.equal(stored.rows[0]?.hash.length, 32);
  assert.ok(!stored.rows[0]?.hash.toString('utf8').includes(token.slice(4)), 'only the hash is stored');

  const listed = await api.call<{ items: { id: string }[] }>('GET', '/v1/tokens?tenantId=acme');
  assert.ok(listed.body.items.some((t) => t.id === created.body.id));
  assert.ok(!listed.text.includes(token), 'listing never shows a secret');

  assert.equal((await api.call('GET', '/v1/jobs', { token })).status === 401, false, 'the new token works');
  const me = await api.call('GET', '/v1/whoami', { token });
  assert.deepEqual(me.body, { tokenId: created.body.id, tenantId: 'acme', admin: false });
  const admin = await api.call<{ tenantId: string | null; admin: boolean }>('GET', '/v1/whoami');
  assert.deepEqual([admin.body.tenantId, admin.body.admin], [null, true]);
  assert.equal((await api.call('DELETE', `/v1/tokens/${String(created.body.id)}`)).status, 200);
  assert.equal((await api.call('GET', '/v1/tenants', { token })).status, 401, 'revoked token is refused');
  assert.equal((await api.call('GET', '/v1/whoami', { token })).status, 401);
  assert.equal((await api.call('DELETE', `/v1/tokens/${String(created.body.id)}`)).status, 404);

  const badTenant = await api.call('POST', '/v1/tokens', { body: { name: 'x', tenantId: 'nope' } });
  assert.equal(badTenant.status, 400);
  assert.deepEqual(badTenant.body.error, {
    code: 'invalid_request',
    message: 'body.tenantId: no tenant nope',
    fields: [{ field: 'body.tenantId', reason: 'no tenant nope' }],
    requestId: badTenant.headers.get('x-request-id'),
  });
});

test('admin routes refuse tenant tokens with 403', async () => {
  for (const [method, path, body] of [
    ['POST', '/v1/tokens', { name: 'x' }],
    ['GET', '/v1/tokens', undefined],
    ['GET', '/v1/tenants', undefined],
    ['PUT', '/v1/tenants/acme', { name: 'Mine now' }],
    ['PATCH', '/v1/queues/q', { maxRunning: 1 }],
    ['GET', '/v1/queues', undefined],
  ] as const) {
    const before = await databaseSnapshot(api.db);
    const reply = await api.call(method, path, { token: api.tokens.acme, body });
    assert.equal(reply.status, 403, `${method} ${path}`);
    assert.equal(await databaseSnapshot(api.db), before, `${method} ${path} changed nothing`);
  }
});

test('tenants: create, replace quota, show, list', async () => {
  const created = await api.call('PUT', '/v1/tenants/initech', { body: { name: 'Initech', maxRunning: 5 } });
  assert.equal(created.status, 201);
  assert.equal(created.body.maxRunning, 5);
  const replaced = await api.call('PUT', '/v1/tenants/initech', {
    body: { name: 'Initech Inc', maxRunning: null },
  });
  assert.equal(replaced.status, 200);
  assert.equal(replaced.body.maxRunning, null);
  assert.equal((await api.call('GET', '/v1/tenants/initech')).body.name, 'Initech Inc');
  assert.equal((await api.call('GET', '/v1/tenants/nobody')).status, 404);
  const list = await api.call<{ items: { id: string }[] }>('GET', '/v1/tenants');
  assert.deepEqual(
    list.body.items.map((t) => t.id),
    ['acme', 'default', 'globex', 'initech'],
  );

  const bad = await api.call('PUT', '/v1/tenants/Bad%20Id', { body: { name: '', maxRunning: 0, extra: 1 } });
  assert.equal(bad.status, 400);
  const fields = (bad.body.error as { fields: { field: string }[] }).fields.map((f) => f.field).sort();
  assert.deepEqual(fields, ['params.id']);
  const badBody = await api.call('PUT', '/v1/tenants/ok', { body: { name: '', maxRunning: 0, extra: 1 } });
  const bodyFields = (badBody.body.error as { fields: { field: string }[] }).fields
    .map((f) => f.field)
    .sort();
  assert.deepEqual(bodyFields, ['body.extra', 'body.maxRunning', 'body.name']);
  assert.equal((await api.call('GET', '/v1/tenants/ok')).status, 404, 'nothing was written');
});

test('queues: defaults when unconfigured, patch merges, limits are checked', async () => {
  const fresh = await api.call('GET', '/v1/queues/emails');
  assert.deepEqual(fresh.body, {
    name: 'emails',
    maxRunning: null,
    maxAttempts: 4,
    backoffBaseMs: 1000,
    backoffMaxMs: 3_600_000,
    timeoutMs: null,
    configured: false,
    paused: false,
    pausedAt: null,
    pausedBy: null,
  });
  const created = await api.call('PATCH', '/v1/queues/emails', { body: { maxRunning: 3 } });
  assert.equal(created.status, 201);
  const patched = await api.call('PATCH', '/v1/queues/emails', {
    body: { maxAttempts: 7, timeoutMs: 60_000 },
  });
  assert.equal(patched.status, 200);
  assert.equal(patched.body.maxRunning, 3, 'fields left out keep their value');
  assert.equal(patched.body.maxAttempts, 7);
  const bad = await api.call('PATCH', '/v1/queues/emails', {
    body: { backoffBaseMs: 10_000, backoffMaxMs: 5 },
  });
  assert.equal(bad.status, 400);
  assert.match(bad.text, /body\.backoffMaxMs/);
  const huge = await api.call('PATCH', '/v1/queues/emails', { body: { maxAttempts: 2 ** 31 } });
  assert.equal(huge.status, 400, 'int4 overflow is a 400, not a database error');
  const list = await api.call<{ items: { name: string }[] }>('GET', '/v1/queues');
  assert.deepEqual(
    list.body.items.map((q) => q.name),
    ['emails'],
  );
});

test('malformed requests: bad JSON, wrong type, oversized, unknown route — never a 5xx', async () => {
  const badJson = await api.call('PUT', '/v1/tenants/x', { rawBody: '{"name": ' });
  assert.equal(badJson.status, 400);
  const proto = await api.call('PUT', '/v1/tenants/x', {
    rawBody: '{"name":"a","__proto__":{"admin":true}}',
  });
  assert.equal(proto.status, 400);
  const wrongType = await api.call('PUT', '/v1/tenants/x', {
    rawBody: '<a/>',
    headers: { 'content-type': 'application/xml' },
  });
  assert.equal(wrongType.status, 415);
  const text = await api.call('PUT', '/v1/tenants/x', {
    rawBody: 'name=a',
    headers: { 'content-type': 'text/plain' },
  });
  assert.equal(text.status, 400, 'a text body is not the object the schema asks for');
  const big = await api.call('PUT', '/v1/tenants/x', { body: { name: 'x'.repeat(2 * 1024 * 1024) } });
  assert.equal(big.status, 413);
  assert.equal((big.body.error as { code: string }).code, 'payload_too_large');
  const missing = await api.call('GET', '/v1/nothing-here');
  assert.equal(missing.status, 404);
  assert.equal((await api.call('GET', '/v1/tenants/x')).status, 404, 'none of these wrote a tenant');
});
