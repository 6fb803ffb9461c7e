/**
 * A worker whose database connections are cut mid-job (through a TCP proxy this test runs and
 * breaks): the completion written during the outage is retried until it lands, once; the LISTEN
 * connection comes back by itself, so new work still wakes the worker without waiting for a poll.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Client } from '../../src/client.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';
import { attemptsOf, jobState, waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });

/** Forwards TCP to PostgreSQL; `cut()` drops every connection and refuses new ones until `restore()`. */
class Proxy {
  readonly #sockets = new Set<Socket>();
  #down = false;
  readonly #server = createServer((inbound) => {
    if (this.#down) {
      inbound.destroy();
      return;
    }
    const target = new URL(db.url);
    const outbound = connect(Number(target.port || 5432), target.hostname);
    for (const s of [inbound, outbound]) {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
      s.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    return address.port;
  }

  cut(): void {
    this.#down = true;
    for (const s of this.#sockets) s.destroy();
  }

  restore(): void {
    this.#down = false;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

test('connections cut mid-job: the completion is retried and lands once; LISTEN reconnects', async () => {
  const proxy = new Proxy();
  const port = await proxy.listen();
  after(() => proxy.close());
  const url = new URL(db.url);
  url.host = `127.0.0.1:${port}`;
  const worker = spawnTidemark(
    [
      'worker',
      '--handlers',
      'test/worker/fixtures/handlers.ts',
      '--queue',
      'cut:2',
      '--lease-ms',
      '6000',
      '--poll-ms',
      '10000',
    ],
    { env: { DATABASE_URL: url.toString(), TIDEMARK_LOG_LEVEL: 'warn' } },
  );
  await worker.waitFor(/worker \S+ ready/, 60_000);

  const dir = mkdtempSync(join(tmpdir(), 'tidemark-cut-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const gate = join(dir, 'open');
  const job = await client.jobs.enqueue({ queue: 'cut', kind: 'gate', payload: { file: gate } });
  await worker.waitFor(new RegExp(`gated ${job.id}\\n`));
  proxy.cut();
  writeFileSync(gate, '');
  await worker.waitFor(new RegExp(`opened ${job.id}\\n`)); // finished while the database is unreachable
  await waitUntil('a failed completion write', () =>
    Promise.resolve(worker.stderr.includes('completion write failed')),
  );
  assert.equal(await jobState(db.pool, job.id), 'running', 'the completion could not be written yet');
  const { rows: clock } = await db.pool.query<{ at: Date }>('SELECT clock_timestamp() AS at');
  proxy.restore();

  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded', 10_000);
  assert.deepEqual(
    (await attemptsOf(db.pool, job.id)).map((a) => a.outcome),
    ['succeeded'],
  );

  // Polls are 10 s apart: a prompt start means the LISTEN connection is back. It is waited for by
  // its session (opened since the restore, its LISTEN run), not for a fixed time.
  await waitUntil('the LISTEN connection back', async () => {
    const { rowCount } = await db.pool.query(
      `SELECT 1 FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'tidemark-worker-listen'
          AND backend_start > $1 AND state = 'idle' AND query LIKE 'LISTEN%'`,
      [clock[0]?.at],
    );
    return (rowCount ?? 0) > 0;
  });
  const next = await client.jobs.enqueue({ queue: 'cut', kind: 'pause', payload: { ms: 1 } });
  const t0 = Date.now();
  await waitUntil('next succeeded', async () => (await jobState(db.pool, next.id)) === 'succeeded', 15_000);
  assert.ok(Date.now() - t0 < 5000, `the next job took ${Date.now() - t0} ms to run after a NOTIFY`);
  await worker.kill('SIGTERM');
});
