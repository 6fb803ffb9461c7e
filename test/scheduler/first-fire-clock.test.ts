/**
 * The database's clock decides a schedule's first fire time, whatever the clock of the process that
 * creates, edits, resumes or triggers it says. Each case runs in a real process whose wall clock
 * faketime sets 5 minutes slow or fast: once through the library (a script using Client) and once
 * through `tidemark api`. Both skews fail on a build that reads the calling process's clock: 5 min
 * slow puts the first fire time before the schedule existed (the scheduler would backfill), 5 min
 * fast puts it minutes late (the first minutes are skipped).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tokenMint } from '../../src/api/tokens.ts';
import { dbClockNow } from '../../src/store/leases.ts';
import { createTestDatabase } from '../support/db.ts';
import { LIBFAKETIME, spawnTidemark } from '../support/processes.ts';

const db = await createTestDatabase();
const SCRIPT = fileURLToPath(new URL('./fixtures/schedule-edits.ts', import.meta.url));
const MINUTE = 60_000;

interface Seen {
  hostNow: string;
  created: string;
  interval: { anchorAt: string; nextFireAt: string };
  updated: string;
  resumed: string;
  firedAt: string;
}

function fakeTimeEnv(offset: string): Record<string, string> {
  if (LIBFAKETIME === undefined)
    throw new Error('libfaketime not found: install the Debian package `faketime`');
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

async function throughLibrary(offset: string): Promise<Seen> {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), SCRIPT, `lib${offset}`], {
    env: { ...process.env, DATABASE_URL: db.url, ...fakeTimeEnv(offset) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  assert.equal(code, 0, `script failed:\n${stderr}`);
  return JSON.parse(stdout) as Seen;
}

async function throughApi(offset: string): Promise<Seen> {
  const api = spawnTidemark(['api', '--port', '0'], {
    env: { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' },
    faketime: offset,
  });
  try {
    const url = (await api.waitFor(/listening on (http:\/\/\S+)/))[1];
    const { token } = await tokenMint(db.pool, { tenantId: null, name: `clock ${offset}` });
    const call = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await response.json()) as Record<string, unknown>;
      assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const target = { queue: 'q', kind: 'k' };
    const name = `api${offset}`;
    const cron = await call('POST', '/v1/schedules', { name: `${name}-cron`, spec: '* * * * *', target });
    const interval = await call('POST', '/v1/schedules', {
      name: `${name}-interval`,
      spec: 'every 10m',
      target,
    });
    const updated = await call('PATCH', `/v1/schedules/${String(cron.id)}`, { spec: '*/2 * * * *' });
    const paused = await call('POST', '/v1/schedules', {
      name: `${name}-paused`,
      spec: '* * * * *',
      paused: true,
      target,
    });
    const resumed = await call('POST', `/v1/schedules/${String(paused.id)}/resume`);
    const triggered = await call('POST', `/v1/schedules/${String(interval.id)}/trigger`);
    const { rows } = await db.pool.query<{ anchor_at: Date }>(
      'SELECT anchor_at FROM schedules WHERE id = $1',
      [interval.id],
    );
    // The API process's clock, as its faketime sees it, is not in any response: the library case checks it.
    return {
      hostNow: new Date().toISOString(),
      created: String(cron.nextFireAt),
      interval: { anchorAt: rows[0]!.anchor_at.toISOString(), nextFireAt: String(interval.nextFireAt) },
      updated: String(updated.nextFireAt),
      resumed: String(resumed.nextFireAt),
      firedAt: String(triggered.firedAt),
    };
  } finally {
    await api.kill('SIGTERM');
  }
}

/** The first fire times the database's clock implies, for edits made between `before` and `after`. */
function assertOnDbClock(seen: Seen, before: Date, after: Date, label: string): void {
  const ms = (iso: string): number => new Date(iso).getTime();
  const within = (iso: string, lo: number, hi: number, what: string): void => {
    const t = ms(iso);
    assert.ok(
      t >= lo && t <= hi,
      `${label} ${what}: ${iso} is not within ${new Date(lo).toISOString()} … ${new Date(hi).toISOString()}`,
    );
  };
  const b = before.getTime();
  const a = after.getTime();
  // `* * * * *` fires at the next whole minute after the database's now; `*/2` within two.
  within(seen.created, b + 1, Math.ceil(a / MINUTE) * MINUTE, 'created cron');
  within(seen.updated, b + 1, Math.ceil(a / (2 * MINUTE)) * 2 * MINUTE, 'updated cron');
  within(seen.resumed, b + 1, Math.ceil(a / MINUTE) * MINUTE, 'resumed cron');
  // An interval counts from its creation on the database's clock.
  within(seen.interval.anchorAt, b, a, 'interval anchor');
  assert.equal(
    ms(seen.interval.nextFireAt),
    ms(seen.interval.anchorAt) + 10 * MINUTE,
    `${label} interval first fire`,
  );
  within(seen.firedAt, b, a, 'trigger');
}

for (const [offset, skewMs] of [
  ['-5m', -5 * MINUTE],
  ['+5m', 5 * MINUTE],
] as const) {
  test(`a library process ${offset} off the database's clock: first fire times follow the database`, async () => {
    const before = await dbClockNow(db.pool);
    const seen = await throughLibrary(offset);
    const after = await dbClockNow(db.pool);
    const hostSkew = new Date(seen.hostNow).getTime() - after.getTime();
    assert.ok(Math.abs(hostSkew - skewMs) < 30_000, `faketime moved the script's clock by ${hostSkew} ms`);
    assertOnDbClock(seen, before, after, `library ${offset}`);
  });

  test(`tidemark api ${offset} off the database's clock: first fire times follow the database`, async () => {
    const before = await dbClockNow(db.pool);
    const seen = await throughApi(offset);
    const after = await dbClockNow(db.pool);
    assertOnDbClock(seen, before, after, `api ${offset}`);
  });
}
