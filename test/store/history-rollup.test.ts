/**
 * The per-minute rollups behind GET /v1/history (migration 0040, store/history-rollup.ts): a read
 * over rolled minutes returns what the same read over the rows returns, for every filter, and goes
 * on returning it after retention deleted the rows; the lateness rollup waits for a scheduler that is
 * behind, so its late occurrences count where they fired; the last minute is left until it settles;
 * trigger-now and backfill into a rolled minute add themselves to it; two replicas rolling at once roll
 * each minute once; a database that had history when it migrated
 * is rolled back, jobs three hours and lateness a day, and a roll of jobs that fell further behind
 * starts three hours back; the maintenance role rolls with retention off and deletes rollups two days
 * old. History is written straight to the tables, at minutes before the database's clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import {
  historyBacklogPerMinute,
  historyLagPerMinute,
  historyThroughputPerMinute,
  type HistoryRange,
} from '../../src/store/history.ts';
import { historyRollJobs, historyRollLag, type RollDirection } from '../../src/store/history-rollup.ts';
import { occurrenceLatenessPerMinute } from '../../src/store/occurrence-rollup.ts';
import { occurrenceMaterialise, type OccurrenceInput } from '../../src/store/occurrences.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const q = db.pool;
const MINUTE = 60_000;

const { rows: clock } = await q.query<{ m: Date }>(
  `SELECT date_trunc('minute', now()) - interval '40 minutes' AS m`,
);
/** The first minute of the history: 40 minutes before the database's clock. */
const M = clock[0]?.m ?? new Date(0);
const at = (minutes: number): Date => new Date(M.getTime() + minutes * MINUTE);

await q.query(`INSERT INTO tenants (id, name) VALUES ('acme', 'Acme') ON CONFLICT DO NOTHING`);
await q.query(
  `INSERT INTO schedules (id, tenant_id, name, spec, queue, kind)
   VALUES ('00000000-0000-0000-0000-00000000000a', 'default', 'a', '* * * * *', 'q1', 'k'),
          ('00000000-0000-0000-0000-00000000000b', 'acme', 'b', '* * * * *', 'q2', 'k')`,
);
// Three occurrences of each schedule a minute for 30 minutes, late by 0 to ~3 s; and, left out of
// every lateness figure, a backfilled one, a triggered one and a skipped one.
await q.query(
  `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at, source, backfill)
   SELECT s, $1::timestamptz + i * interval '1 minute' + k * interval '7 seconds', 'enqueued',
          $1::timestamptz + i * interval '1 minute' + k * interval '7 seconds'
            + ((i * 97 + k * 37 + (s = '00000000-0000-0000-0000-00000000000b')::int * 500) % 3000)
              * interval '1 millisecond', 'schedule', false
     FROM unnest(ARRAY['00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000000b']::uuid[]) s,
          generate_series(0, 29) i, generate_series(0, 2) k
   UNION ALL SELECT '00000000-0000-0000-0000-00000000000a', $1::timestamptz + interval '5 minutes 30 seconds',
                    'enqueued', $1::timestamptz + interval '9 minutes', 'schedule', true
   UNION ALL SELECT '00000000-0000-0000-0000-00000000000a', $1::timestamptz + interval '6 minutes 30 seconds',
                    'enqueued', $1::timestamptz + interval '9 minutes', 'trigger', false
   UNION ALL SELECT '00000000-0000-0000-0000-00000000000b', $1::timestamptz + interval '7 minutes 30 seconds',
                    'skipped', $1::timestamptz + interval '9 minutes', 'schedule', false`,
  [M],
);
// 200 succeeded jobs over the 30 minutes in two queues and two tenants, some waiting 20-80 s before
// they start (across a minute's end); a failed attempt for one in seven.
await q.query(
  `INSERT INTO jobs (queue, kind, tenant_id, state, idempotency_key, created_at, run_at, started_at, finished_at,
                     attempt, lease_owner)
   SELECT 'q' || (1 + g % 2), 'k', CASE WHEN g % 3 = 0 THEN 'acme' ELSE 'default' END, 'succeeded', 's' || g,
          $1::timestamptz + g * interval '9 seconds', $1::timestamptz + g * interval '9 seconds',
          $1::timestamptz + g * interval '9 seconds' + (g % 5) * interval '20 seconds',
          $1::timestamptz + g * interval '9 seconds' + (g % 5) * interval '20 seconds' + interval '1 second',
          1 + (g % 7 = 0)::int, 'w'
     FROM generate_series(0, 199) g`,
  [M],
);
await q.query(
  `INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
   SELECT id, 1, 'w', started_at - interval '5 seconds', started_at - interval '4 seconds', 'failed', 'boom'
     FROM jobs WHERE attempt = 2`,
);
// The open jobs and the ended ones that waited: still waiting; waiting since minute 3, running since
// minute 25; due in an hour; cancelled at minute 12 without starting; dead after starting at minute 2.
await q.query(
  `INSERT INTO jobs (queue, kind, tenant_id, state, idempotency_key, created_at, run_at, started_at, finished_at,
                     lease_owner, lease_expires_at)
   SELECT 'q1', 'k', 'default', 'available', 'a' || g, $1::timestamptz + (10 + g) * interval '1 minute',
          $1::timestamptz + (10 + g) * interval '1 minute', NULL::timestamptz, NULL::timestamptz, NULL, NULL::timestamptz
     FROM generate_series(1, 5) g
   UNION ALL SELECT 'q2', 'k', 'acme', 'running', 'r', $1::timestamptz + interval '3 minutes',
                    $1::timestamptz + interval '3 minutes', $1::timestamptz + interval '25 minutes', NULL, 'w',
                    now() + interval '1 hour'
   UNION ALL SELECT 'q1', 'k', 'default', 'scheduled', 'later', $1::timestamptz, now() + interval '1 hour',
                    NULL, NULL, NULL, NULL
   UNION ALL SELECT 'q2', 'k', 'default', 'cancelled', 'c', $1::timestamptz + interval '4 minutes',
                    $1::timestamptz + interval '4 minutes', NULL, $1::timestamptz + interval '12 minutes', NULL, NULL
   UNION ALL SELECT 'q1', 'k', 'acme', 'dead', 'd', $1::timestamptz + interval '1 minute',
                    $1::timestamptz + interval '1 minute', $1::timestamptz + interval '2 minutes',
                    $1::timestamptz + interval '2 minutes 30 seconds', NULL, NULL`,
  [M],
);

/** history_rolled as a database that migrated at `since` would have it, and nothing rolled yet. */
async function rollFrom(since: Date, backTo = since): Promise<void> {
  await q.query(`TRUNCATE history_minutes, lag_minutes`);
  await q.query(
    `UPDATE history_rolled SET jobs_since = $1, jobs_upto = $1, lag_since = $1, lag_upto = $1, back_to = $2`,
    [since, backTo],
  );
}

async function rollAll(direction: RollDirection = 'forward'): Promise<void> {
  for (const roll of [historyRollJobs, historyRollLag]) {
    for (;;) {
      const r = await roll(q, direction);
      if (r.to <= r.from) break;
    }
  }
}

interface Reads {
  lag: unknown[];
  /** GET /v1/lateness's buckets. */
  lateness: unknown[];
  throughput: unknown[];
  backlog: unknown[];
}

const FILTERS: { tenantId?: string; queue?: string }[] = [
  {},
  { tenantId: 'acme' },
  { queue: 'q1' },
  { tenantId: 'default', queue: 'q2' },
];

async function reads(range: HistoryRange): Promise<Reads[]> {
  const out: Reads[] = [];
  for (const f of FILTERS) {
    out.push({
      lag: f.queue === undefined ? await historyLagPerMinute(q, { ...range, tenantId: f.tenantId }) : [],
      // Sums of lateness agree to the last bits only in the order they were added.
      lateness:
        f.queue === undefined
          ? (await occurrenceLatenessPerMinute(q, { ...range, tenantId: f.tenantId, limit: 1_440 })).map(
              (b) => ({ ...b, lagMeanS: Number(b.lagMeanS.toFixed(9)) }),
            )
          : [],
      throughput: await historyThroughputPerMinute(q, { ...range, ...f }),
      backlog: await historyBacklogPerMinute(q, { ...range, ...f }),
    });
  }
  return out;
}

/** The same reads with every minute taken from the rows: the rollups' first minute moved past them. */
async function readsLive(range: HistoryRange): Promise<Reads[]> {
  const { rows } = await q.query<{ jobs_since: Date; lag_since: Date }>(`SELECT * FROM history_rolled`);
  await q.query(`UPDATE history_rolled SET jobs_since = 'infinity', lag_since = 'infinity'`);
  try {
    return await reads(range);
  } finally {
    await q.query(`UPDATE history_rolled SET jobs_since = $1, lag_since = $2`, [
      rows[0]?.jobs_since,
      rows[0]?.lag_since,
    ]);
  }
}

async function rolled(): Promise<{ jobs_upto: Date; lag_upto: Date; jobs_since: Date; lag_since: Date }> {
  const { rows } = await q.query<{ jobs_upto: Date; lag_upto: Date; jobs_since: Date; lag_since: Date }>(
    `SELECT jobs_upto, lag_upto, jobs_since, lag_since FROM history_rolled`,
  );
  const r = rows[0];
  assert.ok(r !== undefined);
  return r;
}

test('rolled minutes read as the rows do, with every filter, and outlive the rows', async () => {
  await rollFrom(at(-10));
  await rollAll();
  const { rows: now } = await q.query<{ settled: Date }>(
    `SELECT date_trunc('minute', now() - interval '60 seconds') AS settled`,
  );
  const r = await rolled();
  // Up to the last settled minute; the clock may have passed a minute's end since the roll.
  assert.ok(r.jobs_upto.getTime() <= (now[0]?.settled.getTime() ?? 0), `${r.jobs_upto.toISOString()}`);
  assert.ok(
    r.jobs_upto.getTime() >= (now[0]?.settled.getTime() ?? 0) - MINUTE,
    `${r.jobs_upto.toISOString()}`,
  );
  assert.ok(r.lag_upto.getTime() >= at(30).getTime());
  const { rows: n } = await q.query<{ jobs: number; lag: number }>(
    `SELECT (SELECT count(*) FROM history_minutes)::int AS jobs, (SELECT count(*) FROM lag_minutes)::int AS lag`,
  );
  // Two tenants and one row for all of them, for each of the 30 minutes.
  assert.equal(n[0]?.lag, 90);
  assert.ok((n[0]?.jobs ?? 0) > 30, `${n[0]?.jobs} rows`);

  // A window of rolled minutes only, and one reaching past the last roll to now.
  const windows: HistoryRange[] = [
    { from: at(-5), to: at(35) },
    { from: at(-5), to: new Date(Date.now() + MINUTE) },
  ];
  for (const w of windows) {
    const live = await readsLive(w);
    assert.deepEqual(await reads(w), live);
    const [all] = live;
    assert.ok(all !== undefined);
    assert.equal(all.lag.length, 30);
    assert.ok(all.throughput.length >= 29, `${all.throughput.length} minutes of throughput`);
  }

  // Retention deletes the succeeded jobs and the ledger: the rolled minutes still say what they held.
  const before = await reads(windows[0] as HistoryRange);
  await q.query(`DELETE FROM occurrences`);
  await q.query(`DELETE FROM jobs WHERE state = 'succeeded'`);
  assert.deepEqual(await reads(windows[0] as HistoryRange), before);
  const [gone] = await readsLive(windows[0] as HistoryRange);
  assert.deepEqual(gone?.lag, []);
});

test('trigger-now and backfill into a rolled minute add themselves to it', async () => {
  await q.query(`DELETE FROM occurrences`);
  await q.query(
    `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at)
     SELECT s, $1::timestamptz + i * interval '1 minute', 'enqueued',
            $1::timestamptz + i * interval '1 minute' + i * interval '500 milliseconds'
       FROM unnest(ARRAY['00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000000b']::uuid[]) s,
            generate_series(0, 9) i`,
    [M],
  );
  await rollFrom(at(-10));
  await rollAll();
  assert.ok((await rolled()).lag_upto > at(10));
  const { rows: versions } = await q.query<{ id: string; version: number }>(
    `SELECT id, version FROM schedules`,
  );
  const item = (name: 'a' | 'b', fireAt: Date, source: 'backfill' | 'trigger'): OccurrenceInput => {
    const scheduleId = `00000000-0000-0000-0000-00000000000${name}`;
    return {
      scheduleId,
      version: versions.find((v) => v.id === scheduleId)?.version ?? 0,
      fireAt,
      state: 'enqueued',
      reason: null,
      runAt: fireAt,
      idempotencyKey: `${source}:${scheduleId}:${fireAt.toISOString()}`,
      source,
      cancelPrevious: false,
    };
  };
  const written = await occurrenceMaterialise(
    q,
    null,
    [
      item('a', new Date(at(3).getTime() + 30_000), 'backfill'),
      item('b', new Date(at(4).getTime() + 15_000), 'trigger'),
    ],
    [],
  );
  assert.equal(written.inserted, 2);

  const window = { from: at(-5), to: at(12) };
  const [all, acme] = await reads(window);
  const live = await readsLive(window);
  assert.deepEqual(all?.lateness, live[0]?.lateness);
  assert.deepEqual(acme?.lateness, live[1]?.lateness);
  const buckets = (r: Reads | undefined): { at: Date; triggered: number }[] =>
    (r?.lateness ?? []) as { at: Date; triggered: number }[];
  assert.deepEqual(
    buckets(all)
      .filter((b) => b.triggered > 0)
      .map((b) => b.at),
    [at(3), at(4)],
  );

  // Backfills written while the minutes are being rolled are counted once, whichever commits first.
  await rollFrom(at(-10));
  await Promise.all([
    rollAll(),
    ...Array.from({ length: 20 }, (_, i) =>
      occurrenceMaterialise(
        q,
        null,
        [item('b', new Date(at(i % 10).getTime() + 20_000 + i * 1_000), 'backfill')],
        [],
      ),
    ),
  ]);
  await rollAll();
  const [raced] = await reads(window);
  assert.deepEqual(raced?.lateness, (await readsLive(window))[0]?.lateness);
  assert.equal(
    buckets(raced).reduce((n, b) => n + b.triggered, 0),
    22,
  );
});

test('the lateness rollup waits for a scheduler that is behind, and counts its late occurrences where they fired', async () => {
  await q.query(`DELETE FROM occurrences`);
  await q.query(
    `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at)
     SELECT '00000000-0000-0000-0000-00000000000a', $1::timestamptz + i * interval '1 minute', 'enqueued',
            $1::timestamptz + i * interval '1 minute' + interval '200 milliseconds'
       FROM generate_series(0, 5) i`,
    [M],
  );
  // The scheduler has materialised schedule a up to minute 6's fire time and no further.
  await q.query(`UPDATE schedules SET next_fire_at = $1 WHERE name = 'a'`, [at(6)]);
  await rollFrom(at(-10));
  await rollAll();
  assert.equal((await rolled()).lag_upto.toISOString(), at(6).toISOString());
  // A paused schedule holds nothing back.
  await q.query(`UPDATE schedules SET paused = true, next_fire_at = $1 WHERE name = 'b'`, [at(1)]);
  await rollAll();
  assert.equal((await rolled()).lag_upto.toISOString(), at(6).toISOString());

  // It catches up: minute 6's occurrence is written now, 30-odd minutes late.
  await q.query(
    `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at)
     VALUES ('00000000-0000-0000-0000-00000000000a', $1, 'enqueued', now())`,
    [at(6)],
  );
  await q.query(`UPDATE schedules SET next_fire_at = now() + interval '1 hour' WHERE name = 'a'`);
  await rollAll();
  assert.ok((await rolled()).lag_upto > at(7));
  const lag = await historyLagPerMinute(q, { from: at(-5), to: at(20) });
  assert.equal(lag.length, 7);
  const late = lag.find((m) => m.at.getTime() === at(6).getTime());
  assert.ok(late !== undefined && late.count === 1 && late.p99S > 30 * 60, JSON.stringify(late));
  assert.deepEqual(lag, (await readsLive({ from: at(-5), to: at(20) }))[0]?.lag);
  await q.query(`UPDATE schedules SET paused = false, next_fire_at = NULL`);
});

test('two replicas rolling at once roll each minute once', async () => {
  const contents = async (): Promise<unknown[]> =>
    (
      await q.query<{ t: string; minute: Date; k: string; v: string }>(
        `SELECT 'jobs' AS t, minute, queue || '/' || tenant_id AS k, succeeded || '/' || failed || '/' || waiting AS v
           FROM history_minutes
         UNION ALL
         SELECT 'lag', minute, tenant_id, scheduled || '/' || p50_s || '/' || p99_s FROM lag_minutes
         ORDER BY 1, 2, 3`,
      )
    ).rows;
  await rollFrom(at(-10));
  await rollAll();
  const alone = await contents();
  await rollFrom(at(-10));
  await Promise.all([rollAll(), rollAll(), rollAll()]);
  assert.deepEqual(await contents(), alone);
});

test('a database that held history when it migrated is rolled back: jobs three hours at most, lateness a day', async () => {
  const since = at(20);
  await rollFrom(since, at(-10));
  await rollAll('back');
  await rollAll();
  const r = await rolled();
  assert.equal(r.jobs_since.toISOString(), at(-10).toISOString());
  assert.equal(r.lag_since.toISOString(), at(-10).toISOString());
  const w = { from: at(-5), to: at(35) };
  assert.deepEqual(await reads(w), await readsLive(w));

  await rollFrom(at(20), new Date(at(20).getTime() - 3 * 86_400_000));
  await rollAll('back');
  const after = await rolled();
  await reach(after.jobs_since, '3 hours');
  await reach(after.lag_since, '1 day');
});

test('a roll of jobs after the last one fell three hours behind starts three hours back', async () => {
  await rollFrom(new Date(Date.now() - 5 * 3_600_000));
  await rollAll();
  const r = await rolled();
  // The jobs' rolled minutes start again three hours back; the lateness's go on from where they were.
  await reach(r.jobs_since, '3 hours');
  assert.ok(r.jobs_upto > at(30));
  assert.ok(r.lag_since.getTime() < Date.now() - 4 * 3_600_000);
  assert.ok(r.lag_upto > at(30));
  const w = { from: at(-5), to: at(35) };
  assert.deepEqual(await reads(w), await readsLive(w));
});

/** `first` is the minute `ago` before the database's clock (or the one after, if a minute ended since). */
async function reach(first: Date, ago: string): Promise<void> {
  const { rows } = await q.query<{ m: Date }>(`SELECT date_trunc('minute', now() - $1::interval) AS m`, [
    ago,
  ]);
  const m = rows[0]?.m.getTime() ?? 0;
  assert.ok(first.getTime() >= m - MINUTE && first.getTime() <= m, `${first.toISOString()}, ${ago} ago`);
}

test('the maintenance role rolls with retention off, and deletes rollups two days old', async () => {
  await rollFrom(at(-10));
  const old = new Date(Date.now() - 3 * 86_400_000);
  await q.query(`UPDATE history_rolled SET jobs_since = $1, lag_since = $1`, [old]);
  await q.query(
    `INSERT INTO history_minutes (minute, queue, tenant_id, succeeded) VALUES (date_trunc('minute', $1::timestamptz), 'q1', 'default', 1)`,
    [old],
  );
  await q.query(
    `INSERT INTO lag_minutes (minute, tenant_id, scheduled, p50_s, p99_s) VALUES (date_trunc('minute', $1::timestamptz), '', 1, 0, 0)`,
    [old],
  );
  const role = new Maintenance({ pool: q, log: pino({ level: 'silent' }), retention: { enabled: false } });
  try {
    const pass = await role.runPass();
    assert.equal(pass.held, true);
  } finally {
    await role.stop();
  }
  const r = await rolled();
  assert.ok(r.jobs_upto > at(30) && r.lag_upto > at(30));
  const twoDays = Date.now() - 2 * 86_400_000;
  for (const since of [r.jobs_since, r.lag_since]) {
    assert.ok(
      since.getTime() >= twoDays - 2 * MINUTE && since.getTime() <= twoDays + MINUTE,
      since.toISOString(),
    );
  }
  const { rows } = await q.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM history_minutes WHERE minute < $1) + (SELECT count(*) FROM lag_minutes WHERE minute < $1) AS n`,
    [new Date(twoDays)],
  );
  assert.equal(Number(rows[0]?.n), 0);
  const { rows: kept } = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM history_minutes`);
  assert.ok((kept[0]?.n ?? 0) > 0);
});
