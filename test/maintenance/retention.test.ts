/**
 * Retention against real PostgreSQL with an injected clock: which rows each boundary keeps and
 * prunes, the per-queue and per-tenant overrides, workflows (a running one is never touched, a
 * finished one goes in bounded batches), the lateness aggregate outliving its rows, and a bad
 * configuration refused by field.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import { FakeClock } from '../../src/clock.ts';
import { ConfigError } from '../../src/errors.ts';
import { createLogger } from '../../src/log.ts';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { RetentionConfigError, type RetentionConfig } from '../../src/maintenance/retention-config.ts';
import { occurrenceLagSince } from '../../src/store/occurrence-lag.ts';
import {
  occurrenceLatenessBySchedule,
  occurrenceLatenessPerMinute,
} from '../../src/store/occurrence-rollup.ts';
import { occurrenceListBySchedule } from '../../src/store/occurrences.ts';
import { workflowResume } from '../../src/store/workflow-release.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { jobState, startWorker, waitUntil } from '../worker/support.ts';
import { count, DAY_MS, existingJobs, insertJobs, insertOccurrences, insertSchedule } from './support.ts';

const db = await createTestDatabase();
const log = createLogger('test');
log.level = 'silent';
// Whole seconds, so a boundary one second either side is exact in both JavaScript and PostgreSQL.
const T = new Date(Math.floor(Date.now() / 1000) * 1000);
const ago = (ms: number): Date => new Date(T.getTime() - ms);

let leaseN = 0;
/** A Maintenance with its own lease name (tests share one database) at time T, pruning without rest. */
function maintenance(retention: RetentionConfig = {}, extra: { batchSize?: number } = {}): Maintenance {
  return new Maintenance({
    pool: db.pool,
    log,
    retention,
    clock: new FakeClock(T),
    leaseName: `maintenance-test-${leaseN++}`,
    dutyCycle: 1,
    ...extra,
  });
}

test('defaults: succeeded go after 7 days, cancelled and dead after 30, open jobs never; attempts and effect keys go with their job', async () => {
  const second = 1000;
  const ids = await insertJobs(db.pool, [
    { state: 'succeeded', at: ago(7 * DAY_MS + second), effects: 2 }, // 0 pruned
    { state: 'succeeded', at: ago(7 * DAY_MS - second), attempts: 2, effects: 1 }, // 1 kept
    { state: 'cancelled', at: ago(30 * DAY_MS + second), attempts: 1 }, // 2 pruned
    { state: 'cancelled', at: ago(30 * DAY_MS - second) }, // 3 kept
    { state: 'dead', at: ago(30 * DAY_MS + second), attempts: 4 }, // 4 pruned
    { state: 'dead', at: ago(30 * DAY_MS - second), attempts: 4 }, // 5 kept
    { state: 'dead', at: ago(10 * DAY_MS) }, // 6 kept: dead stays a month
    { state: 'running', at: ago(90 * DAY_MS) }, // 7 kept
    { state: 'available', at: ago(90 * DAY_MS) }, // 8 kept
    { state: 'failed', at: ago(90 * DAY_MS) }, // 9 kept (waiting for its retry)
    { state: 'scheduled', at: ago(90 * DAY_MS) }, // 10 kept
  ]);
  const m = maintenance();
  const pass = await m.runPass();
  await m.stop();
  assert.equal(pass.held, true);
  const kept = await existingJobs(db.pool, ids);
  assert.deepEqual(
    kept,
    [1, 3, 5, 6, 7, 8, 9, 10].map((i) => ids[i]),
  );
  assert.equal(pass.deleted.jobs, 3);
  assert.equal(pass.deleted.job_attempts, 5);
  assert.equal(await count(db.pool, 'SELECT count(*) FROM job_attempts WHERE job_id = ANY ($1)', [ids]), 6);
  assert.equal(pass.deleted.job_effects, 2);
  assert.equal(await count(db.pool, 'SELECT count(*) FROM job_effects WHERE job_id = ANY ($1)', [ids]), 1);
  assert.equal(m.metrics.snapshot().pruned.jobs, 3);
  assert.equal(m.metrics.snapshot().pruned.job_effects, 2);
});

test('a job pruned takes its effect keys along: its idempotency key enqueued again runs the effect again', async () => {
  // A database of its own: the other tests' fixtures hold running jobs a worker would reap.
  const own = await createTestDatabase();
  const ran: boolean[] = [];
  await startWorker(
    own,
    { mail: async (ctx) => ran.push((await ctx.once('email', () => Promise.resolve())).ran) },
    { queues: [{ name: 'fx', concurrency: 1 }] },
  );
  const client = new Client({ pool: own.pool });
  const first = await client.jobs.enqueue({ queue: 'fx', kind: 'mail', idempotencyKey: 'report-7' });
  await waitUntil('the first succeeded', async () => (await jobState(own.pool, first.id)) === 'succeeded');
  const effects = () => count(own.pool, 'SELECT count(*) FROM job_effects WHERE job_id = $1', [first.id]);
  assert.equal(await effects(), 1);
  // Kept a minute in this queue, pruned by a pass two minutes on.
  const m = new Maintenance({
    pool: own.pool,
    log,
    retention: { queues: { fx: { succeeded: '1m' } } },
    clock: new FakeClock(new Date(Date.now() + 120_000)),
    leaseName: `maintenance-test-${leaseN++}`,
    dutyCycle: 1,
  });
  const pass = await m.runPass();
  await m.stop();
  assert.equal(await jobState(own.pool, first.id), undefined);
  assert.equal(pass.deleted.job_effects, 1);
  assert.equal(await effects(), 0);
  const again = await client.jobs.enqueue({ queue: 'fx', kind: 'mail', idempotencyKey: 'report-7' });
  assert.notEqual(again.id, first.id);
  await waitUntil('the second succeeded', async () => (await jobState(own.pool, again.id)) === 'succeeded');
  assert.deepEqual(ran, [true, true], "the new job ran its effect, not skipped by the pruned job's key");
});

test('a pass walks the jobs by id from the first one it kept; dead and cancelled jobs behind it still go', async () => {
  // A database of its own: where the walk by id resumes depends on every job in the table.
  const own = await createTestDatabase();
  const clock = new FakeClock(T);
  const lease = `maintenance-test-${leaseN++}`;
  const term = () => new Maintenance({ pool: own.pool, log, clock, leaseName: lease, dutyCycle: 1 });
  const ids = await insertJobs(own.pool, [
    { state: 'dead', at: ago(10 * DAY_MS) }, // 0 due at +20 d, by the dead walk
    { state: 'succeeded', at: ago(10 * DAY_MS) }, // 1 due now
    { state: 'cancelled', at: ago(10 * DAY_MS) }, // 2 due at +20 d, by the cancelled walk
    { state: 'succeeded', at: ago(5 * DAY_MS) }, // 3 due at +2 d: the next walk by id starts here
    { state: 'succeeded', at: ago(1 * DAY_MS) }, // 4 due at +6 d
  ]);
  const left = async () => (await existingJobs(own.pool, ids)).map((id) => ids.indexOf(id));
  const m = term();
  const pass = async (days: number): Promise<number[]> => {
    clock.advance(days * DAY_MS);
    assert.equal((await m.runPass()).held, true);
    return left();
  };
  assert.deepEqual(await pass(0), [0, 2, 3, 4]);
  assert.deepEqual(await pass(3), [0, 2, 4]);
  // Re-run behind where the walk by id now starts, and succeeded (10 days ago, as the row says).
  await own.pool.query(`UPDATE jobs SET state = 'succeeded' WHERE id = $1`, [ids[2]]);
  assert.deepEqual(await pass(4), [0, 2], 'the walk by id starts after it');
  await m.stop();
  // The next term's first walk by id starts from the first job (so does a pass a day after the last such walk).
  const next = term();
  assert.equal((await next.runPass()).held, true);
  assert.deepEqual(await left(), [0]);
  clock.advance(14 * DAY_MS);
  assert.equal((await next.runPass()).held, true);
  await next.stop();
  assert.deepEqual(await left(), [], 'the dead walk, 30 days after it died');
});

test('queue overrides win over tenant overrides, which win over the defaults; forever keeps', async () => {
  const ids = await insertJobs(db.pool, [
    { state: 'succeeded', at: ago(2 * 3_600_000), queue: 'fast' }, // 0 pruned: fast keeps 1 h
    { state: 'succeeded', at: ago(30 * 60_000), queue: 'fast' }, // 1 kept
    { state: 'succeeded', at: ago(2 * 3_600_000), queue: 'fast', tenant: 'keeper' }, // 2 pruned: queue wins
    { state: 'succeeded', at: ago(60 * DAY_MS), tenant: 'keeper' }, // 3 kept: keeper keeps forever
    { state: 'dead', at: ago(3 * DAY_MS), tenant: 'brief' }, // 4 pruned: brief keeps dead 2 d
    { state: 'dead', at: ago(3 * DAY_MS) }, // 5 kept: default 30 d
    { state: 'succeeded', at: ago(8 * DAY_MS), queue: 'audit' }, // 6 kept: audit keeps 90 d
  ]);
  const m = maintenance({
    queues: { fast: { succeeded: '1h' }, audit: { succeeded: '90d' } },
    tenants: { keeper: { succeeded: 'forever' }, brief: { dead: '2d' } },
  });
  await m.runPass();
  await m.stop();
  assert.deepEqual(
    await existingJobs(db.pool, ids),
    [1, 3, 5, 6].map((i) => ids[i]),
  );
});

test('occurrences go after 30 days, rolled up first: history, lag and lateness per minute still answer', async () => {
  const s = await insertSchedule(db.pool, 'every-minute', 'acme');
  const old = new Date(ago(31 * DAY_MS).getTime() - (ago(31 * DAY_MS).getTime() % 60_000)); // a whole minute
  const minute = (n: number): Date => new Date(old.getTime() + n * 60_000);
  await insertOccurrences(db.pool, s, [
    { fireAt: minute(0), lagMs: 500 },
    { fireAt: minute(0), lagMs: 3_000, source: 'trigger' },
    { fireAt: minute(1), lagMs: 4_000 },
    { fireAt: minute(2), state: 'skipped' },
    { fireAt: minute(3), state: 'missed' },
    { fireAt: ago(30 * DAY_MS - 1000), lagMs: 100 }, // kept: one second inside the boundary
    { fireAt: ago(60_000), lagMs: 250 }, // kept
  ]);
  const before = await occurrenceLatenessPerMinute(db.pool, {
    from: minute(0),
    to: T,
    tenantId: 'acme',
    limit: 100,
  });
  const beforeDays = await occurrenceLatenessBySchedule(db.pool, s, { from: minute(0), to: T, limit: 100 });

  const m = maintenance();
  const pass = await m.runPass();
  await m.stop();
  assert.equal(pass.deleted.occurrences, 5);
  assert.equal(await count(db.pool, 'SELECT count(*) FROM occurrences WHERE schedule_id = $1', [s]), 2);

  // The aggregate answers exactly what the rows did.
  const after = await occurrenceLatenessPerMinute(db.pool, {
    from: minute(0),
    to: T,
    tenantId: 'acme',
    limit: 100,
  });
  assert.deepEqual(after, before);
  assert.deepEqual(
    await occurrenceLatenessBySchedule(db.pool, s, { from: minute(0), to: T, limit: 100 }),
    beforeDays,
  );
  const first = after[0];
  assert.ok(first);
  assert.equal(first.at.getTime(), minute(0).getTime());
  assert.equal(first.scheduled, 1);
  assert.equal(first.triggered, 1);
  assert.equal(after[1]?.late, 1);
  assert.equal(after[1]?.lagMaxS, 4);
  assert.deepEqual(
    after.slice(0, 4).map((b) => [b.scheduled, b.skipped, b.missed]),
    [
      [1, 0, 0],
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 1],
    ],
  );
  // Another tenant sees none of it.
  assert.deepEqual(
    await occurrenceLatenessPerMinute(db.pool, { from: minute(0), to: T, tenantId: 'other', limit: 100 }),
    [],
  );
  // The ledger and the lag reader still answer for what is left.
  const ledger = await occurrenceListBySchedule(db.pool, s, null, 10);
  assert.equal(ledger.length, 2);
  assert.equal(ledger[0]?.lagMs, 250);
  const lag = await occurrenceLagSince(db.pool, 0, 100);
  assert.ok(lag.some((r) => r.lagSeconds === 0.25));

  // A second pass deletes nothing and counts nothing twice.
  const again = maintenance();
  assert.equal((await again.runPass()).deleted.occurrences, 0);
  await again.stop();
  assert.deepEqual(
    await occurrenceLatenessPerMinute(db.pool, { from: minute(0), to: T, tenantId: 'acme', limit: 100 }),
    before,
  );
});

test('a finished workflow goes in bounded batches; a running one and a recent one stay; a marked one cannot be resumed', async () => {
  const workflows = new WorkflowClient(db.pool);
  const chain = (id: string, n: number) => ({
    id,
    nodes: Array.from({ length: n }, (_, i) => ({
      id: `n${i}`,
      kind: 'k',
      dependsOn: i === 0 ? [] : [`n${i - 1}`],
    })),
  });
  await workflows.submit(chain('wf-done', 2_500));
  await workflows.submit(chain('wf-running', 50));
  await workflows.submit(chain('wf-recent', 50));
  await workflows.submit(chain('wf-failed', 50));
  await db.pool.query(
    `UPDATE workflows SET state = 'succeeded', finished_at = $1, created_at = $1 WHERE id = 'wf-done'`,
    [ago(8 * DAY_MS)],
  );
  await db.pool.query(`UPDATE workflows SET created_at = $1 WHERE id = 'wf-running'`, [ago(90 * DAY_MS)]);
  await db.pool.query(`UPDATE workflows SET state = 'succeeded', finished_at = $1 WHERE id = 'wf-recent'`, [
    ago(6 * DAY_MS),
  ]);
  await db.pool.query(`UPDATE workflows SET state = 'failed', finished_at = $1 WHERE id = 'wf-failed'`, [
    ago(31 * DAY_MS),
  ]);
  await db.pool.query(`INSERT INTO workflow_signals (workflow_id, name) VALUES ('wf-done', 'go')`);

  const batches: number[] = [];
  const m = new Maintenance({
    pool: db.pool,
    log,
    clock: new FakeClock(T),
    leaseName: 'maintenance-workflows',
    dutyCycle: 1,
    batchSize: 1_000,
    onBatch: (b) => {
      if (b.table === 'workflow_nodes') batches.push(b.deleted);
    },
  });
  const pass = await m.runPass();
  await m.stop();
  assert.deepEqual(batches.slice(0, 3), [1_000, 1_000, 500]);
  assert.equal(pass.deleted.workflows, 2);
  assert.equal(pass.deleted.workflow_nodes, 2_550);
  const left = await db.pool.query<{ id: string; nodes: number }>(
    `SELECT w.id, (SELECT count(*) FROM workflow_nodes n WHERE n.workflow_id = w.id)::int AS nodes
       FROM workflows w ORDER BY w.id`,
  );
  assert.deepEqual(left.rows, [
    { id: 'wf-recent', nodes: 50 },
    { id: 'wf-running', nodes: 50 },
  ]);
  assert.equal(
    await count(db.pool, `SELECT count(*) FROM workflow_signals WHERE workflow_id = 'wf-done'`),
    0,
  );

  // A workflow whose pruning has begun (marked, nodes partly gone) is gone for resume.
  await workflows.submit(chain('wf-half', 10));
  await db.pool.query(
    `UPDATE workflows SET state = 'failed', finished_at = $1, pruned_at = $1 WHERE id = 'wf-half'`,
    [ago(40 * DAY_MS)],
  );
  const resumed = await withTransaction(db.pool, (tx) => workflowResume(tx, 'wf-half'));
  assert.equal(resumed.ok, false);
  assert.equal(resumed.state, null);
});

test('two replicas never prune at once: the standby gets nothing, a deposed holder is fenced out', async () => {
  const lease = 'maintenance-pair';
  const make = (holder: string): Maintenance =>
    new Maintenance({ pool: db.pool, log, clock: new FakeClock(T), leaseName: lease, holder, dutyCycle: 1 });
  const a = make('a');
  const b = make('b');
  const ids = await insertJobs(db.pool, [
    { state: 'succeeded', at: ago(8 * DAY_MS) },
    { state: 'succeeded', at: ago(8 * DAY_MS) },
  ]);
  assert.equal((await a.runPass()).held, true);
  assert.deepEqual(await existingJobs(db.pool, ids), []);
  assert.equal((await b.runPass()).held, false);
  assert.equal(b.isLeader, false);

  // a's term ends in the database (as when a is cut off past its TTL); b takes over; a, which has
  // not noticed yet, deletes nothing: its statement is fenced by the old epoch.
  await db.pool.query(
    `UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE name = $1`,
    [lease],
  );
  const more = await insertJobs(db.pool, [{ state: 'succeeded', at: ago(8 * DAY_MS) }]);
  assert.equal(a.isLeader, true);
  const bPass = b.runPass();
  const aPass = await a.runPass();
  assert.equal((await bPass).held, true);
  if (aPass.held) {
    // a ran first on a term the database still honoured? Impossible: its expiry had passed.
    assert.fail(`deposed holder pruned: ${JSON.stringify(aPass.deleted)}`);
  }
  assert.equal(aPass.deleted.jobs, 0);
  assert.equal(a.isLeader, false);
  assert.deepEqual(await existingJobs(db.pool, more), []);
  await a.stop();
  await b.stop();
});

test('two running replicas: every batch of one ends before any batch of the other begins', async () => {
  const lease = 'maintenance-overlap';
  const spans: { who: string; start: number; end: number }[] = [];
  const make = (who: string): Maintenance =>
    new Maintenance({
      pool: db.pool,
      log,
      clock: new FakeClock(T),
      leaseName: lease,
      holder: who,
      leaseTtlMs: 3_000,
      renewEveryMs: 500,
      intervalMs: 20,
      batchSize: 50,
      dutyCycle: 1,
      onBatch: (x) => spans.push({ who, start: x.startedMs, end: x.endedMs }),
    });
  const a = make('a');
  const b = make('b');
  await insertJobs(
    db.pool,
    Array.from({ length: 400 }, () => ({ state: 'succeeded' as const, at: ago(8 * DAY_MS) })),
  );
  a.start();
  b.start();
  const deadline = Date.now() + 30_000;
  while (
    (await count(db.pool, `SELECT count(*) FROM jobs WHERE state = 'succeeded' AND finished_at < $1`, [
      ago(7 * DAY_MS),
    ])) > 0
  ) {
    assert.ok(Date.now() < deadline, 'pruning did not finish within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  // Hand over: a stops (releasing the lease if it held it) and more rows arrive for the other.
  const first = a.isLeader ? a : b;
  await first.stop();
  await insertJobs(
    db.pool,
    Array.from({ length: 200 }, () => ({ state: 'succeeded' as const, at: ago(8 * DAY_MS) })),
  );
  while (
    (await count(db.pool, `SELECT count(*) FROM jobs WHERE state = 'succeeded' AND finished_at < $1`, [
      ago(7 * DAY_MS),
    ])) > 0
  ) {
    assert.ok(Date.now() < deadline, 'the second replica did not take over within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  await a.stop();
  await b.stop();
  const sorted = spans.sort((x, y) => x.start - y.start);
  assert.ok(new Set(sorted.map((s) => s.who)).size === 2, 'both replicas pruned at some point');
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1];
    const cur = sorted[i];
    if (prev === undefined || cur === undefined || prev.who === cur.who) continue;
    assert.ok(
      cur.start >= prev.end,
      `${cur.who} began at ${cur.start} before ${prev.who} ended at ${prev.end}`,
    );
  }
});

test('the lateness rollups and the queues audit trail go after 400 days; forever keeps them', async () => {
  const old = ago(400 * DAY_MS + 60_000);
  const young = ago(400 * DAY_MS - 60_000);
  const insert = async (): Promise<void> => {
    await db.pool.query(
      `INSERT INTO occurrence_minutes (minute, tenant_id, scheduled) VALUES ($1, 'aged', 1), ($2, 'aged', 1)
       ON CONFLICT DO NOTHING`,
      [old, young],
    );
    await db.pool.query(
      `INSERT INTO occurrence_days (schedule_id, day, tenant_id, scheduled)
       VALUES (gen_random_uuid(), $1, 'aged', 1), (gen_random_uuid(), $2, 'aged', 1)`,
      [old, young],
    );
    await db.pool.query(
      `INSERT INTO queue_changes (queue, at, by, change, before, after)
       VALUES ('aged', $1, 'ops', 'pause', '{}', '{}'), ('aged', $2, 'ops', 'resume', '{}', '{}')`,
      [old, young],
    );
  };
  const left = async (): Promise<number[]> => [
    await count(db.pool, `SELECT count(*) FROM occurrence_minutes WHERE tenant_id = 'aged'`),
    await count(db.pool, `SELECT count(*) FROM occurrence_days WHERE tenant_id = 'aged'`),
    await count(db.pool, `SELECT count(*) FROM queue_changes WHERE queue = 'aged'`),
  ];
  await insert();
  const forever = maintenance({ rollups: 'forever', audit: 'forever' });
  const kept = await forever.runPass();
  await forever.stop();
  assert.deepEqual(
    [kept.deleted.occurrence_minutes, kept.deleted.occurrence_days, kept.deleted.queue_changes],
    [0, 0, 0],
  );
  assert.deepEqual(await left(), [2, 2, 2]);

  const m = maintenance({}, { batchSize: 1 });
  const pass = await m.runPass();
  await m.stop();
  assert.deepEqual(
    [pass.deleted.occurrence_minutes, pass.deleted.occurrence_days, pass.deleted.queue_changes],
    [1, 1, 1],
  );
  assert.deepEqual(await left(), [1, 1, 1], 'the rows younger than 400 days stay');
  const { rows } = await db.pool.query<{ change: string }>(
    `SELECT change FROM queue_changes WHERE queue = 'aged'`,
  );
  assert.deepEqual(rows, [{ change: 'resume' }]);
});

test('a bad retention configuration or pacing is refused, naming the field, before anything runs', async () => {
  const cases: [unknown, string, RegExp][] = [
    [{ succeded: '7d' }, 'retention.succeded', /unknown field/],
    [{ succeeded: '-3d' }, 'retention.succeeded', /not a duration/],
    [{ dead: '30 days' }, 'retention.dead', /not a duration/],
    [{ occurrences: 10_000 }, 'retention.occurrences', /shorter than the minimum of 60 s/],
    [{ queues: { emails: { succeded: '1d' } } }, 'retention.queues.emails.succeded', /unknown field/],
    [{ queues: { 'bad name': { succeeded: '1d' } } }, 'retention.queues.bad name', /not a valid queue name/],
    [{ tenants: { acme: { dead: true } } }, 'retention.tenants.acme.dead', /expected a duration/],
    [{ tenants: [] }, 'retention.tenants', /expected an object/],
    [{ enabled: 'yes' }, 'retention.enabled', /expected true or false/],
    [{ rollups: '7d' }, 'retention.rollups', /shorter than the longest occurrences setting/],
    [{ tenants: { acme: { occurrences: '500d' } } }, 'retention.rollups', /400d is shorter than/],
    [{ audit: 'soon' }, 'retention.audit', /not a duration/],
  ];
  const leasesBefore = await count(db.pool, 'SELECT count(*) FROM leases');
  for (const [retention, field, reason] of cases) {
    assert.throws(
      () => new Maintenance({ pool: db.pool, log, retention: retention as RetentionConfig }),
      (error: unknown) =>
        error instanceof RetentionConfigError && error.field === field && reason.test(error.message),
      `${JSON.stringify(retention)} should be refused at ${field}`,
    );
  }
  for (const [options, reason] of [
    [{ dutyCycle: 0 }, /^dutyCycle: 0 must be in \(0, 1\]/],
    [{ sliceSumDutyCycle: 1.5 }, /^sliceSumDutyCycle: 1.5 must be in \(0, 1\]/],
    [{ sliceSumDutyCycle: Number.NaN }, /^sliceSumDutyCycle: NaN must be in \(0, 1\]/],
    // From JavaScript, where nothing checks the option's type.
    [{ spreadSlices: 'no' as unknown as boolean }, /^spreadSlices: "no" must be true or false/],
  ] as const) {
    assert.throws(
      () => new Maintenance({ pool: db.pool, log, ...options }),
      (error: unknown) => error instanceof ConfigError && reason.test(error.message),
      `${JSON.stringify(options)} should be refused`,
    );
  }
  assert.equal(await count(db.pool, 'SELECT count(*) FROM leases'), leasesBefore);
  // Switched off: a pass holds the lease and deletes nothing.
  const ids = await insertJobs(db.pool, [{ state: 'succeeded', at: ago(400 * DAY_MS) }]);
  const off = maintenance({ enabled: false });
  assert.equal(off.enabled, false);
  const pass = await off.runPass();
  await off.stop();
  assert.equal(pass.deleted.jobs, 0);
  assert.deepEqual(await existingJobs(db.pool, ids), ids);
  // Clean up for the other tests of this file, which share the database.
  await db.pool.query('DELETE FROM jobs WHERE id = ANY ($1)', [ids]);
});
