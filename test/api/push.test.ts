/**
 * Push jobs run by a Worker with pushHandlers() against HTTP servers this test runs: retries on 503
 * and timeouts, none on 400, Retry-After honoured, one Idempotency-Key across attempts, progress
 * heartbeats from a slow target, a bound on concurrent requests per host, a cancel that aborts the
 * request, and a LISTEN wake-up that starts a push job in a worker whose poll is a minute long.
 * Outcomes are asserted on the database.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { pushHandlers, retryAfterMs, type PushOptions } from '../../src/push/handler.ts';
import { pushTarget } from '../../src/push/target.ts';
import { Worker } from '../../src/worker/worker.ts';
import { startTestApi } from './support.ts';

const api = await startTestApi();

async function pushWorker(queue: string, pollMs: number, push: PushOptions): Promise<Worker> {
  const worker = new Worker({
    pool: api.db.pool,
    connectionString: api.db.url,
    handlers: pushHandlers(push),
    queues: [{ name: queue, concurrency: 8 }],
    log: pino({ level: 'silent' }),
    leaseMs: 3000,
    pollMs,
  });
  await worker.start();
  after(() => worker.stop());
  return worker;
}

// The poll drives only retries here (the maintenance pass promotes them); new jobs come by NOTIFY.
await pushWorker('http', 100, { perHostConcurrency: 2, requestTimeoutMs: 10_000 });

interface Seen {
  headers: IncomingMessage['headers'];
  body: string;
}

type Respond = (seen: Seen, res: ServerResponse, n: number) => void | Promise<void>;

async function target(respond: Respond): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const s = { headers: req.headers, body };
      seen.push(s);
      void Promise.resolve(respond(s, res, seen.length)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => {
    // A request this test left unanswered must not hold the server open.
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  server.unref();
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, seen };
}

async function enqueue(url: string, extra: Record<string, unknown> = {}): Promise<number> {
  const r = await api.call<{ id: number }>('POST', '/v1/jobs', {
    token: api.tokens.acme,
    body: { url, payload: { hello: 'world' }, backoffBaseMs: 0, backoffMaxMs: 0, ...extra },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

async function settled(
  id: number,
  timeoutMs = 20_000,
): Promise<{
  state: string;
  progress: unknown;
  runAt: string;
  attempts: { outcome: string; error: string | null }[];
}> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await api.call<{
      state: string;
      progress: unknown;
      runAt: string;
      attempts: { outcome: string; error: string | null }[];
    }>('GET', `/v1/jobs/${id}`);
    if (['succeeded', 'dead', 'cancelled'].includes(r.body.state)) return r.body;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${r.body.state}: ${r.text}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('503 is retried with the same Idempotency-Key; the body and headers are what was asked', async () => {
  const t = await target((_s, res, n) => {
    res.statusCode = n < 3 ? 503 : 200;
    res.end();
  });
  const id = await enqueue(t.url, { idempotencyKey: 'order-42', timeoutMs: 5000 });
  const job = await settled(id);
  assert.equal(job.state, 'succeeded');
  assert.deepEqual(
    job.attempts.map((a) => a.outcome),
    ['failed', 'failed', 'succeeded'],
  );
  assert.equal(t.seen.length, 3, 'exactly one request per attempt');
  assert.deepEqual(new Set(t.seen.map((s) => s.headers['idempotency-key'])), new Set(['order-42']));
  assert.deepEqual(
    t.seen.map((s) => s.headers['tidemark-attempt']),
    ['1', '2', '3'],
  );
  assert.deepEqual(new Set(t.seen.map((s) => s.headers['tidemark-job-id'])), new Set([String(id)]));
  assert.ok(t.seen.every((s) => !Number.isNaN(Date.parse(String(s.headers['tidemark-deadline'])))));
  assert.deepEqual(JSON.parse(t.seen[0]?.body ?? ''), { hello: 'world' });
});

test('a timeout is retried (recorded as timed_out); 400 fails at once into the dead letter', async () => {
  const slow = await target((_s, res, n) => {
    if (n === 1) return; // never answers: the request times out
    res.end('ok');
  });
  const timedOut = await settled(await enqueue(slow.url, { timeoutMs: 300 }));
  assert.equal(timedOut.state, 'succeeded');
  assert.deepEqual(
    timedOut.attempts.map((a) => a.outcome),
    ['timed_out', 'succeeded'],
  );

  const rejecting = await target((_s, res) => {
    res.statusCode = 400;
    res.end('bad');
  });
  const dead = await settled(await enqueue(rejecting.url, { maxAttempts: 5 }));
  assert.equal(dead.state, 'dead');
  assert.equal(dead.attempts.length, 1);
  assert.match(dead.attempts[0]?.error ?? '', /answered 400/);
  assert.equal(rejecting.seen.length, 1, 'no retry after a 4xx');
});

test('429 with Retry-After holds the next attempt back at least that long', async () => {
  const t = await target((_s, res, n) => {
    res.statusCode = n === 1 ? 429 : 200;
    if (n === 1) res.setHeader('retry-after', '30');
    res.end();
  });
  const id = await enqueue(t.url);
  const deadline = Date.now() + 10_000;
  let row: { state: string; wait_s: number } | undefined;
  while (Date.now() < deadline) {
    ({
      rows: [row],
    } = await api.db.pool.query<{ state: string; wait_s: number }>(
      'SELECT state, extract(epoch FROM run_at - now())::float8 AS wait_s FROM jobs WHERE id = $1',
      [id],
    ));
    if (row?.state === 'failed') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(row?.state, 'failed');
  assert.ok(
    (row?.wait_s ?? 0) > 25,
    `next attempt in ${row?.wait_s} s, Retry-After was 30 s (backoff was 0)`,
  );
  assert.equal(t.seen.length, 1);
  await api.call('POST', `/v1/jobs/${id}/cancel`);
});

test('a slow target heartbeats progress through the API with its job id, then succeeds', async () => {
  const t = await target(async (s, res) => {
    const id = String(s.headers['tidemark-job-id']);
    for (const pct of [25, 50, 75]) {
      const hb = await fetch(`${api.url}/v1/jobs/${id}/heartbeat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.tokens.acme}`, 'content-type': 'application/json' },
        body: JSON.stringify({ progress: { pct } }),
      });
      assert.equal(hb.status, 200);
      await new Promise((r) => setTimeout(r, 100));
    }
    res.end();
  });
  const job = await settled(await enqueue(t.url));
  assert.equal(job.state, 'succeeded');
  assert.deepEqual(job.progress, { pct: 75 });
});

test('at most perHostConcurrency requests run against one host at once', async () => {
  let active = 0;
  let peak = 0;
  const t = await target(async (_s, res) => {
    active++;
    peak = Math.max(peak, active);
    await new Promise((r) => setTimeout(r, 150));
    active--;
    res.end();
  });
  const ids = await Promise.all(Array.from({ length: 6 }, () => enqueue(t.url)));
  for (const id of ids) assert.equal((await settled(id)).state, 'succeeded');
  assert.equal(t.seen.length, 6);
  assert.equal(peak, 2);
});

test('a cancel reaches the request in flight: the connection is closed and the job ends cancelled', async () => {
  let closed = false;
  const t = await target((_s, res) => {
    // Never answers; the worker's abort closes the connection.
    res.on('close', () => (closed = true));
  });
  const id = await enqueue(t.url, { timeoutMs: 60_000 });
  await until('the request arrived', () => t.seen.length === 1);
  const cancel = await api.call('POST', `/v1/jobs/${id}/cancel`);
  assert.equal(cancel.status, 200, cancel.text);
  const job = await settled(id);
  assert.equal(job.state, 'cancelled');
  assert.deepEqual(
    job.attempts.map((a) => a.outcome),
    ['cancelled'],
  );
  await until('the connection closed', () => closed);
});

test('a job waiting for its host slot stops waiting when cancelled, and never sends its request', async () => {
  await pushWorker('http-one', 100, { perHostConcurrency: 1 });
  const held: ServerResponse[] = [];
  const t = await target((_s, res) => void held.push(res));
  const first = await enqueue(t.url, { queue: 'http-one', timeoutMs: 60_000 });
  await until('the first request arrived', () => t.seen.length === 1);
  const second = await enqueue(t.url, { queue: 'http-one', timeoutMs: 60_000 });
  for (let i = 0; ; i++) {
    const r = await api.call<{ state: string }>('GET', `/v1/jobs/${second}`);
    if (r.body.state === 'running') break;
    assert.ok(i < 500, `second job still ${r.body.state}`);
    await new Promise((res) => setTimeout(res, 20));
  }
  assert.equal((await api.call('POST', `/v1/jobs/${second}/cancel`)).status, 200);
  // Well within the worker's 5 s timeout grace, after which even a handler that kept waiting ends.
  const cancelled = await settled(second, 3000);
  assert.equal(cancelled.state, 'cancelled');
  held[0]?.end();
  assert.equal((await settled(first)).state, 'succeeded');
  assert.equal(t.seen.length, 1, 'the cancelled job never reached the host');
});

test('requestTimeoutMs caps the job timeout: a target that never answers times out at the cap', async () => {
  await pushWorker('http-capped', 100, { requestTimeoutMs: 300 });
  const t = await target(() => undefined);
  const job = await settled(
    await enqueue(t.url, { queue: 'http-capped', timeoutMs: 60_000, maxAttempts: 1 }),
  );
  assert.equal(job.state, 'dead');
  assert.deepEqual(
    job.attempts.map((a) => a.outcome),
    ['timed_out'],
  );
  assert.match(job.attempts[0]?.error ?? '', /no answer within 300 ms/);
  assert.ok(
    Date.parse(String(t.seen[0]?.headers['tidemark-deadline'])) - Date.now() < 5000,
    'Tidemark-Deadline is the capped one',
  );
});

test('a push job into an idle worker whose poll is 60 s starts by its LISTEN wake-up', async () => {
  await pushWorker('http-listen', 60_000, {});
  const t = await target((_s, res) => void res.end());
  // The first job may be claimed by the worker's first claim; once it is done, every claim loop is
  // asleep for the rest of the minute, and only the NOTIFY of the second insert can wake one.
  assert.equal((await settled(await enqueue(t.url, { queue: 'http-listen' }))).state, 'succeeded');
  const started = Date.now();
  const second = await enqueue(t.url, { queue: 'http-listen' });
  await until('the second request arrived', () => t.seen.length === 2, 5000);
  assert.ok(Date.now() - started < 5000);
  assert.equal((await settled(second, 5000)).state, 'succeeded');
});

test('Retry-After is read as seconds or as an HTTP date', () => {
  const now = Date.parse('2026-01-05T09:00:00Z');
  assert.equal(retryAfterMs('120', now), 120_000);
  assert.equal(retryAfterMs('Mon, 05 Jan 2026 09:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('Mon, 05 Jan 2026 08:00:00 GMT', now), 0, 'a date in the past means now');
  assert.equal(retryAfterMs('soon', now), null);
  assert.equal(retryAfterMs(null, now), null);
});

test('pushTarget and pushHandlers refuse bad input naming the field', () => {
  assert.deepEqual(pushTarget('https://example.com/hook', { a: 1 }), {
    queue: 'http',
    kind: 'http.post',
    payload: { url: 'https://example.com/hook', body: { a: 1 } },
  });
  assert.throws(() => pushTarget('not a url'), /^TypeError: url: not a URL$/);
  assert.throws(() => pushTarget('ftp://example.com/x'), /^TypeError: url: ftp: is not http or https$/);
  assert.throws(
    () => pushHandlers({ perHostConcurrency: 0 }),
    /^TypeError: push.perHostConcurrency: must be a positive integer, got 0$/,
  );
  assert.throws(
    () => pushHandlers({ requestTimeoutMs: 1.5 }),
    /^TypeError: push.requestTimeoutMs: must be a positive integer, got 1.5$/,
  );
});
