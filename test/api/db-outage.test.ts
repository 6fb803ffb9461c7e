/**
 * The API's database connection is cut (through a TCP proxy this test runs) and restored: while it
 * is cut, requests get 503 with Retry-After (never a 500) and /readyz reports it; afterwards the
 * same server recovers by itself. The database holds exactly the jobs whose requests succeeded.
 * Both kinds of cut: connections reset and refused, and packets dropped (held, connections left open),
 * where only the pool's connection timeout stands between a request and an endless wait.
 */
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { createApiServer } from '../../src/api/server.ts';
import { tokenMint } from '../../src/api/tokens.ts';
import { createPool } from '../../src/store/pool.ts';
import { createTestDatabase } from '../support/db.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';

const db = await createTestDatabase();

class Proxy {
  readonly #target: URL;
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  port = 0;

  constructor(target: string) {
    this.#target = new URL(target);
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(Number(this.#target.port || 5432), this.#target.hostname);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => server.listen(this.port, '127.0.0.1', r));
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** Every open connection is reset and new ones are refused. */
  async cut(): Promise<void> {
    for (const s of this.#sockets) s.resetAndDestroy();
    await new Promise<void>((r) => (this.#server === undefined ? r() : this.#server.close(() => r())));
    this.#server = undefined;
  }
}

test('a cut database connection answers 503 with Retry-After, writes nothing, and the API recovers', async () => {
  const proxy = new Proxy(db.url);
  await proxy.start();
  const url = new URL(db.url);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  const pool = createPool({ connectionString: url.toString(), max: 4 });
  const server = await createApiServer({ pool, logger: pino({ level: 'silent' }) });
  const base = await server.listen({ port: 0 });
  after(async () => {
    await server.close();
    await pool.end();
    await proxy.cut();
  });
  const { token } = await tokenMint(db.pool, { tenantId: null, name: 'outage', ratePerS: 10_000 });
  const enqueue = (key: string) =>
    fetch(`${base}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ queue: 'outage', kind: 'k', idempotencyKey: key }),
    });

  assert.equal((await enqueue('before')).status, 201);

  await proxy.cut();
  for (const key of ['during-1', 'during-2', 'during-3']) {
    const reply = await enqueue(key);
    assert.equal(reply.status, 503, await reply.text());
    assert.equal(reply.headers.get('retry-after'), '1');
  }
  const ready = await fetch(`${base}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal((await fetch(`${base}/healthz`)).status, 200, 'the process itself is alive');

  await proxy.start();
  let status = 0;
  for (let i = 0; i < 50 && status !== 201; i++) {
    status = (await enqueue('after')).status;
    if (status !== 201) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(status, 201, 'the same server recovered without a restart');
  assert.equal((await fetch(`${base}/readyz`)).status, 200);

  const { rows } = await db.pool.query<{ key: string }>(
    "SELECT idempotency_key AS key FROM jobs WHERE queue = 'outage' ORDER BY id",
  );
  assert.deepEqual(
    rows.map((r) => r.key),
    ['before', 'after'],
  );
});

test('a database that drops packets: new connections time out, requests answer 503 promptly, nothing is written, the API recovers', async () => {
  const proxy = await TcpProxy.start(db.url);
  const pool = createPool({ connectionString: proxy.urlFor(db.url), max: 4, connectionTimeoutMs: 500 });
  const server = await createApiServer({ pool, logger: pino({ level: 'silent' }) });
  const base = await server.listen({ port: 0 });
  after(async () => {
    proxy.heal();
    await server.close();
    await pool.end();
  });
  const { token } = await tokenMint(db.pool, { tenantId: null, name: 'dropped', ratePerS: 10_000 });
  const enqueue = (key: string) =>
    fetch(`${base}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ queue: 'dropped', kind: 'k', idempotencyKey: key }),
      // Without a connection timeout these requests never end: fail the test instead of hanging it.
      signal: AbortSignal.timeout(10_000),
    });

  // The cut comes before the API's pool holds a connection: every request needs a new one, whose
  // startup packet the proxy holds without closing anything.
  assert.equal(pool.totalCount, 0);
  proxy.cut();
  for (const key of ['during-1', 'during-2']) {
    const reply = await enqueue(key);
    assert.equal(reply.status, 503, await reply.text());
    assert.equal(reply.headers.get('retry-after'), '1');
  }
  assert.equal((await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(10_000) })).status, 503);

  proxy.heal();
  let status = 0;
  for (let i = 0; i < 50 && status !== 201; i++) {
    status = (await enqueue('after')).status;
    if (status !== 201) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(status, 201, 'the same server recovered without a restart');
  const { rows } = await db.pool.query<{ key: string }>(
    "SELECT idempotency_key AS key FROM jobs WHERE queue = 'dropped' ORDER BY id",
  );
  assert.deepEqual(
    rows.map((r) => r.key),
    ['after'],
  );
});
