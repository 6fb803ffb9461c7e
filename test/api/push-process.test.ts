/**
 * A `tidemark push` worker process is SIGKILLed while its target is still working on the request.
 * Another takes the job over once the lease expires and delivers it again with the same
 * Idempotency-Key: nothing is lost, and the job succeeds exactly once. And, as `tidemark worker`,
 * a push worker given SIGTERM while its database is unreachable exits within its shutdown grace,
 * saying what it could not hand back.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { jobInsertMany } from '../../src/store/job-insert.ts';
import { PUSH_KIND, PUSH_QUEUE } from '../../src/push/target.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';

const db = await createTestDatabase();
const GRACE_MS = 2000;

async function pushJob(url: string, key: string): Promise<number> {
  const [job] = await jobInsertMany(db.pool, [
    {
      queue: PUSH_QUEUE,
      kind: PUSH_KIND,
      tenantId: 'default',
      payload: { url, body: { n: 1 } },
      priority: 0,
      runAt: null,
      maxAttempts: 3,
      timeoutMs: 60_000,
      heartbeatMs: null,
      backoffBaseMs: 0,
      backoffMaxMs: 0,
      idempotencyKey: key,
    },
  ]);
  assert.ok(job !== undefined);
  return job.id;
}

test('SIGKILL of the push worker mid-request: redelivered after the lease, same key, one success', async () => {
  const seen: IncomingHttpHeaders[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    // The first delivery hangs (the target is "working"); later ones succeed.
    if (seen.length === 1) held.push(res);
    else res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/work`;
  const job = { id: await pushJob(url, 'payout-7') };

  const env = { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' };
  const first = spawnTidemark(['push', '--lease-ms', '2000'], { env });
  await first.waitFor(/push worker \S+ ready: http\(64\)/);
  for (let i = 0; seen.length === 0; i++) {
    assert.ok(i < 400, 'first delivery never arrived');
    await new Promise((r) => setTimeout(r, 50));
  }
  await first.kill('SIGKILL');

  const second = spawnTidemark(['push', '--lease-ms', '2000'], { env });
  await second.waitFor(/push worker \S+ ready: http\(64\)/);
  let state = '';
  for (let i = 0; state !== 'succeeded'; i++) {
    assert.ok(i < 600, `job still ${state}`);
    await new Promise((r) => setTimeout(r, 50));
    state =
      (await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [job.id])).rows[0]
        ?.state ?? '';
  }
  await second.kill('SIGTERM');

  const attempts = await db.pool.query<{ attempt: number; outcome: string }>(
    'SELECT attempt, outcome FROM job_attempt_history WHERE job_id = $1 ORDER BY attempt',
    [job.id],
  );
  assert.deepEqual(
    attempts.rows.map((a) => [a.attempt, a.outcome]),
    [
      [1, 'lease_lost'],
      [2, 'succeeded'],
    ],
  );
  assert.equal(seen.length, 2);
  assert.deepEqual(
    seen.map((h) => [h['idempotency-key'], h['tidemark-attempt']]),
    [
      ['payout-7', '1'],
      ['payout-7', '2'],
    ],
  );
});

test('SIGTERM with the database cut: the push worker exits within its shutdown grace, naming the request it hands back', async () => {
  const seen: string[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    seen.push(String(req.headers['tidemark-job-id']));
    req.resume();
    held.push(res); // never answers
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const proxy = await TcpProxy.start(db.url);
  const push = spawnTidemark(['push', '--shutdown-grace-ms', String(GRACE_MS)], {
    env: { DATABASE_URL: proxy.urlFor(db.url), TIDEMARK_LOG_LEVEL: 'info' },
  });
  await push.waitFor(/push worker \S+ ready/, 60_000);
  const id = await pushJob(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hang`, 'cut-1');
  for (let i = 0; !seen.includes(String(id)); i++) {
    assert.ok(i < 400, 'the request never arrived');
    await new Promise((r) => setTimeout(r, 50));
  }
  proxy.cut();
  const t0 = performance.now();
  push.child.kill('SIGTERM');
  // The shutdown grace for the request, 1 s of hand-back, 1 s to let go, and slack.
  const limitMs = GRACE_MS + 4000;
  const exit = await Promise.race([
    push.exited,
    new Promise<'hung'>((r) => setTimeout(() => r('hung'), limitMs + 10_000)),
  ]);
  const tookMs = performance.now() - t0;
  assert.notEqual(exit, 'hung', `still running after SIGTERM:\n${push.stderr.slice(-3000)}`);
  assert.ok(tookMs < limitMs, `exited ${Math.round(tookMs)} ms after SIGTERM`);
  const line = push.stderr.split('\n').find((l) => l.includes('could not hand back'));
  assert.ok(line !== undefined, `no 'could not hand back' line:\n${push.stderr.slice(-3000)}`);
  assert.deepEqual((JSON.parse(line) as { released: number[] }).released, [id]);
  proxy.heal();
});
