/**
 * Failure story 3: the scheduler's clock moves back five minutes, then forward to five minutes
 * ahead, while the process runs (libfaketime reading its offset from a file the test rewrites;
 * the monotonic clock is left alone, as NTP leaves it).
 *
 * - time source `host` (the process's wall clock decides what is due): going back fires nothing
 *   again and nothing early; going forward makes five minutes of occurrences late at once, and
 *   each schedule's misfire policy decides: `all` runs them (up to its cap), `latest` runs one,
 *   `skip` runs those within its grace and records the rest as missed.
 * - time source `db` (the default): the jumps change nothing at all.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createTestDatabase } from '../support/db.ts';
import { assertLedgerConsistent, insertSchedules } from './helpers.ts';
import { nextWholeSecond, sleep, startScheduler } from './processes.ts';

const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
].find((p) => existsSync(p));

async function offsetFile(): Promise<{ path: string; set(offset: string): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-faketime-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'offset');
  const set = (offset: string): Promise<void> => writeFile(path, `${offset}\n`);
  await set('+0');
  return { path, set };
}

function fakeTimeEnv(path: string): Record<string, string> {
  assert.ok(LIBFAKETIME !== undefined, 'libfaketime not found: install the Debian package `faketime`');
  return {
    LD_PRELOAD: LIBFAKETIME,
    FAKETIME_TIMESTAMP_FILE: path,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}

interface Row {
  misfire_policy: string;
  state: string;
  fire_at: Date;
  reason: string | null;
}

test('host clock: back 5 min fires nothing twice; forward to +5 min applies each misfire policy', async () => {
  const db = await createTestDatabase();
  const clock = await offsetFile();
  for (const policy of ['all', 'latest', 'skip']) {
    await insertSchedules(db.pool, 1, {
      spec: 'every 2s',
      nextFireAt: nextWholeSecond(1000),
      prefix: policy,
      misfirePolicy: policy,
    });
  }
  // Round the first fire time to the 2 s grid the schedules use (anchored at the Unix epoch).
  await db.pool.query(
    `UPDATE schedules SET next_fire_at = to_timestamp(ceil(extract(epoch FROM next_fire_at) / 2) * 2)`,
  );
  const scheduler = startScheduler(db.url, ['--time-source', 'host'], { env: fakeTimeEnv(clock.path) });
  await scheduler.waitFor(/leading epoch=1/);
  await sleep(4500);
  const before = await db.pool.query<{ n: number; last: Date }>(
    'SELECT count(*)::int AS n, max(fire_at) AS last FROM occurrences',
  );
  assert.ok(before.rows[0]!.n >= 3, 'the schedules fired normally first');

  await clock.set('-5m');
  // A fire time that came due just before the clock moved may still be on its way (a tick's write
  // takes tens of ms, more on a loaded machine): let it land, then count. At most one fire time of
  // the three schedules, and none later than the one after `before`.
  await sleep(500);
  const settled = await db.pool.query<{ n: number; last: Date }>(
    'SELECT count(*)::int AS n, max(fire_at) AS last FROM occurrences',
  );
  assert.ok(settled.rows[0]!.n - before.rows[0]!.n <= 3, 'only a fire already due was still written');
  assert.ok(settled.rows[0]!.last.getTime() - before.rows[0]!.last.getTime() <= 2000);
  await sleep(3000);
  const during = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM occurrences');
  assert.equal(
    during.rows[0]!.n,
    settled.rows[0]!.n,
    'with the clock 5 min back nothing fires (again or early)',
  );

  await clock.set('+5m');
  await sleep(2500);
  assert.equal((await scheduler.kill('SIGTERM')).code, 0, scheduler.stderr);
  assert.match(scheduler.stderr, /clock jump of -(29|30)\d{4} ms seen on the host clock/);
  assert.match(scheduler.stderr, /clock jump of (59|60)\d{4} ms seen on the host clock/);

  await assertLedgerConsistent(db.pool, null);
  const { rows } = await db.pool.query<Row>(
    `SELECT s.misfire_policy, o.state, o.fire_at, o.reason
       FROM occurrences o JOIN schedules s ON s.id = o.schedule_id
      WHERE o.fire_at > $1 ORDER BY o.fire_at`,
    [settled.rows[0]!.last],
  );
  const of = (policy: string, state: string): Row[] =>
    rows.filter((r) => r.misfire_policy === policy && r.state === state);
  const summary = (policy: string): Row[] =>
    of(policy, 'missed').filter((r) => r.reason?.startsWith('misfire cap'));
  // About 150 occurrences (5 min at 2 s) fell due at once; the cap (100) lists the latest 100.
  assert.equal(of('all', 'enqueued').length >= 100, true, 'all: runs the listed ones');
  assert.equal(summary('all').length, 1, 'all: the older, unlisted ones are one summary row');
  const latestRun = of('latest', 'enqueued');
  const latestJump = latestRun.filter((r) => r.fire_at.getTime() > Date.now() + 200_000);
  assert.equal(latestJump.length >= 1, true);
  assert.ok(of('latest', 'missed').length >= 99, 'latest: the rest are missed');
  const skipRun = of('skip', 'enqueued');
  const skipMissed = of('skip', 'missed').filter((r) => !r.reason?.startsWith('misfire cap'));
  assert.ok(skipMissed.length >= 60, 'skip: those older than the 60 s grace are missed');
  const newestMissed = Math.max(...skipMissed.map((r) => r.fire_at.getTime()));
  const jumpRuns = skipRun.filter((r) => r.fire_at.getTime() > newestMissed);
  assert.ok(
    jumpRuns.length >= 28 && jumpRuns.length <= 33,
    `skip: ~30 within the grace ran, got ${jumpRuns.length}`,
  );
  // The forward jump was decided in one tick: what ran of it is at most 60 s old relative to the newest.
  const newest = Math.max(...jumpRuns.map((r) => r.fire_at.getTime()));
  for (const r of jumpRuns) assert.ok(newest - r.fire_at.getTime() <= 62_000);
});

test('database clock (default): the same jumps on the scheduler host change nothing', async () => {
  const db = await createTestDatabase();
  const clock = await offsetFile();
  await insertSchedules(db.pool, 20, {
    spec: 'every 1s',
    nextFireAt: nextWholeSecond(1000),
    misfirePolicy: 'skip',
  });
  const scheduler = startScheduler(db.url, [], { env: fakeTimeEnv(clock.path) });
  await scheduler.waitFor(/leading epoch=1/);
  await sleep(2500);
  await clock.set('-5m');
  await sleep(2500);
  await clock.set('+5m');
  await sleep(2500);
  assert.equal((await scheduler.kill('SIGTERM')).code, 0, scheduler.stderr);
  const ledger = await assertLedgerConsistent(db.pool, 1000);
  const { rows } = await db.pool.query<{ missed: number; maxlag: number }>(
    `SELECT count(*) FILTER (WHERE state <> 'enqueued')::int AS missed,
            max(extract(epoch FROM materialised_at - fire_at))::float8 AS maxlag FROM occurrences`,
  );
  assert.equal(rows[0]!.missed, 0, 'no occurrence was missed or skipped');
  assert.ok(ledger.enqueued >= 20 * 6, `kept firing every second through both jumps (${ledger.enqueued})`);
  assert.ok(rows[0]!.maxlag < 60, 'nothing was minutes late');
});
