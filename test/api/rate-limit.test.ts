import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { tokenMint } from '../../src/api/tokens.ts';
import { startTestApi } from './support.ts';

const clock = new FakeClock(new Date('2026-01-05T09:00:00Z'));
const api = await startTestApi({ clock });

test('a token over its rate gets 429 with Retry-After; others are unaffected; time refills it', async () => {
  const slow = (await tokenMint(api.db.pool, { tenantId: 'acme', name: 'slow', ratePerS: 2 })).token;
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await api.call('GET', '/v1/tokens', { token: slow })).status);
  // A burst of twice the rate (4) passes authentication (403: not an admin), then 429.
  assert.deepEqual(statuses, [403, 403, 403, 403, 429, 429]);
  const limited = await api.call('GET', '/v1/tokens', { token: slow });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '1');
  assert.equal((limited.body.error as { code: string }).code, 'rate_limited');

  assert.equal((await api.call('GET', '/v1/tokens', { token: api.tokens.admin })).status, 200, 'per token');

  clock.advance(1000);
  assert.equal((await api.call('GET', '/v1/tokens', { token: slow })).status, 403, 'refilled after a second');
});

test('a wall-clock jump neither blocks nor refills a bucket (monotonic time)', async () => {
  const t = (await tokenMint(api.db.pool, { tenantId: 'acme', name: 'jump', ratePerS: 1 })).token;
  for (let i = 0; i < 2; i++) assert.equal((await api.call('GET', '/v1/tenants', { token: t })).status, 403);
  assert.equal((await api.call('GET', '/v1/tenants', { token: t })).status, 429);
  clock.jumpWall(3_600_000);
  assert.equal((await api.call('GET', '/v1/tenants', { token: t })).status, 429);
});
